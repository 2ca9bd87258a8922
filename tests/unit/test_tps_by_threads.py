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


def test_a_segment_too_short_for_a_verdict_is_too_short_for_a_best():
    """Issue 30 item 4: a ~2-second segment before a live flip ranked first (17,243.5 TPS) with no flag, while the
    A/B verdict refused to judge the same change ("too few settled seconds")."""
    flip = {"name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2"}

    def part(tps, seconds, after=None):
        return {"from": None, "to": None, "after": after, "groups": {"main": {"tps": tps, "seconds": seconds}}}

    session = {"id": 1, "workload": "oltp", "summary": {"steps": [
        step(1, 16, 16000.0, [part(17243.5, 2), part(15800.0, 28, flip)]),
        step(2, 32, 15000.0),
    ]}}
    best = best_to_best([session])
    assert [(r["config"], r["tps"], r["short"]) for r in best] == [
        ("flush_log_at_trx_commit=2", 15800.0, False), ("", 17243.5, True)]
    assert best[1]["ratio"] is None and best[1]["settled"] == 2
    # after a change the settle time does not count: 5 seconds after a flip are 2 settled ones
    short_after = {"id": 2, "workload": "oltp", "summary": {"steps": [
        step(1, 16, 9000.0, [part(9000.0, 25), part(30000.0, 5, flip)])]}}
    rows = best_to_best([short_after])
    assert rows[0]["config"] == "" and rows[1]["short"] and rows[1]["settled"] == 2
