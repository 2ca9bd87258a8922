"""Concurrency curves of a run with live knob changes use the steps' segments, never a mean across a flip."""

from tunebench.core.sessions import best_to_best, tps_by_threads


def step(n, threads, tps, segments=None):
    out = {"step": n, "config": 0, "group": "main", "threads": threads, "tps": tps}
    if segments:
        out["segments"] = segments
    return out


def seg(tps, after=None):
    return {"from": None, "to": None, "after": after, "groups": {"main": {"tps": tps}}}


def test_a_flip_splits_its_step_and_carries_over_to_later_steps():
    flip = {"name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2"}
    session = {"id": 1, "workload": "oltp", "summary": {"steps": [
        step(1, 4, 5000.0),
        step(2, 16, 7000.0, [seg(6000.0), seg(8300.0, flip)]),  # the step's mean (7000) is neither state
        step(3, 64, 9000.0),
    ]}}
    curves = tps_by_threads(session)
    assert curves == {"": [(4, 5000.0), (16, 6000.0)],
                      "flush_log_at_trx_commit=2": [(16, 8300.0), (64, 9000.0)]}
    assert all(tps != 7000.0 for pts in curves.values() for _t, tps in pts)
    best = best_to_best([session])
    assert best[0]["config"] == "flush_log_at_trx_commit=2" and best[0]["tps"] == 9000.0


def test_a_run_without_changes_is_one_curve():
    session = {"id": 1, "workload": "oltp", "summary": {"steps": [step(1, 4, 5000.0), step(2, 16, 7000.0)]}}
    assert tps_by_threads(session) == {"": [(4, 5000.0), (16, 7000.0)]}
