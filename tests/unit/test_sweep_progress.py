"""The live sweep results model (run/sweep_progress.py): tables from the steps so far, grid, time left, noise."""

import pytest

from tunebench.core.interval import Event, Interval
from tunebench.core.knobs import KnobInfo
from tunebench.core.results import sweep_tables
from tunebench.core.stats import StepSummary
from tunebench.core.sweep import RESTART_SECONDS, make_plan, parse_spec
from tunebench.run.records import StepResult
from tunebench.run.session import steps_json
from tunebench.run.sweep_progress import SweepProgress

KNOBS = {"innodb_flush_log_at_trx_commit": KnobInfo("innodb_flush_log_at_trx_commit", "int", True, 0, 3, current="1"),
         "innodb_doublewrite": KnobInfo("innodb_doublewrite", "bool", False, current="ON")}


def plan_of(axes: str, extra: str = ""):
    text = (f'name = "t"\nworkload = "oltp_point_select"\nthreads = [4, 8]\nstep_seconds = 10\nwarmup_seconds = 2\n'
            f'{extra}\n[axes]\n{axes}\n')
    return make_plan(parse_spec(text), KNOBS, {k: v.current for k, v in KNOBS.items()})


def result(plan, config: int, step: int, tps: float, cv: float | None = 0.02, p95: float = 3.0) -> StepResult:
    threads = plan.spec.groups[0].threads[step]
    s = StepSummary("main", threads, 10, tps, tps * 10, tps, cv, 1.0, p95, p95 * 1.5, p95 * 3, 0, 0, tps * 10)
    return StepResult(config * plan.spec.steps + step, (s,), config)


def test_the_tables_are_sweep_tables_of_the_steps_so_far():
    plan = plan_of("innodb_flush_log_at_trx_commit = [1, 2]")
    m = SweepProgress()
    m.start(plan)
    steps = [result(plan, 0, 0, 1000.0), result(plan, 0, 1, 1500.0), result(plan, 1, 0, 1800.0)]
    for r in steps:
        m.add_step(r)
    m.add_event(Event(1.0, "config", "configuration 2",
                      {"config": 1, "knobs": {"innodb_flush_log_at_trx_commit": "2"}}))
    assert m.tables() == sweep_tables(plan, steps_json(steps), {1: {"innodb_flush_log_at_trx_commit": "2"}})
    rows = m.rows()
    assert [r.label for r in rows] == [c.label() for c in plan.configs]
    assert rows[0].baseline and not rows[1].baseline
    assert {t: c.tps for t, c in rows[0].cells.items()} == {4: 1000.0, 8: 1500.0}
    assert [t for t, c in rows[0].cells.items() if c.best] == [8]
    assert set(rows[1].cells) == {4}  # 8 threads not measured yet: an empty cell
    assert m.threads() == [4, 8]


def test_time_left_follows_the_plan():
    plan = plan_of("innodb_flush_log_at_trx_commit = [1, 2]", "cooldown_seconds = 5")
    m = SweepProgress()
    m.start(plan)
    per_step = 12
    p = m.progress(100.0)
    assert (p.done, p.total) == (0, 4)
    assert p.remaining == pytest.approx(plan.seconds)  # nothing run: the plan's whole estimate
    m.add_event(Event(100.0, "step_start", "step 1", {"config": 0, "threads": {"main": 4}}))
    assert [r.measuring for r in m.rows()] == [4, None]
    p = m.progress(104.0)
    assert p.elapsed == 4.0 and p.remaining == pytest.approx(plan.seconds - 4)
    m.add_step(result(plan, 0, 0, 1000.0))
    m.add_event(Event(112.0, "step_end", "step 1 done"))
    m.add_step(result(plan, 0, 1, 1000.0))
    m.add_event(Event(124.0, "step_end", "step 2 done"))
    assert [r.measuring for r in m.rows()] == [None, None]
    p = m.progress(126.0)  # config 1 done, cool-down under way
    assert p.done == 2 and p.remaining == pytest.approx(2 * per_step + 5)
    for i in (0, 1):
        m.add_step(result(plan, 1, i, 1000.0))
    p = m.progress(200.0)
    assert p.remaining is None and p.done == p.total == 4


def test_restarts_ahead_count_in_the_time_left():
    plan = plan_of('innodb_doublewrite = ["ON", "OFF"]')
    assert plan.restarts == 2  # to OFF, and back at the end
    m = SweepProgress()
    m.start(plan)
    for i in (0, 1):
        m.add_step(result(plan, 0, i, 1000.0))
    assert m.progress(0.0).remaining == pytest.approx(2 * 12 + 2 * RESTART_SECONDS)


def test_a_ratio_within_the_steps_spread_is_noise():
    plan = plan_of("innodb_flush_log_at_trx_commit = [1, 2]")
    m = SweepProgress()
    m.start(plan)
    m.add_step(result(plan, 0, 0, 1000.0, cv=0.05))
    m.add_step(result(plan, 1, 0, 1030.0, cv=0.01))  # +3 %, the baseline's own CV is 5 %
    m.add_step(result(plan, 0, 1, 1000.0, cv=0.01))
    m.add_step(result(plan, 1, 1, 1300.0, cv=0.01))  # +30 %
    ratios = {(r["config"], st["threads"]): st["ratio"] for r in m.tables()["ratios"] for st in r["steps"]}
    assert m.within_noise(ratios[1, 4], (1, 4), (0, 4))
    assert not m.within_noise(ratios[1, 8], (1, 8), (0, 8))
    assert m.spread(0, 4) == 0.05


def test_with_repeats_the_spread_between_repeats_counts():
    plan = plan_of("innodb_flush_log_at_trx_commit = [1, 2]", "repeats = 2")
    assert [c.repeat for c in plan.configs] == [0, 0, 1, 1]
    # the second repeat the other way round (ABBA: a drift cancels over two repeats)
    assert [c.knobs["innodb_flush_log_at_trx_commit"] for c in plan.configs] == [1, 2, 2, 1]
    m = SweepProgress()
    m.start(plan)
    for config, tps in ((0, 1000.0), (1, 1080.0), (2, 1070.0), (3, 1100.0)):
        m.add_step(result(plan, config, 0, tps, cv=0.01))
    # the baseline's two repeats differ by 100 / 1050 = 9.5 %: config 1's +8 % is within that
    assert m.spread(0, 4) == pytest.approx(100 / 1050)
    ratio = next(st["ratio"] for r in m.tables()["ratios"] if r["config"] == 1 for st in r["steps"])
    assert m.within_noise(ratio, (1, 4), (0, 4))


def recorded(plan, steps):
    """A finished sweep session as the store gives it back: steps 12 s apart from t0 = 1000."""
    session = {"started_at": 1000.0, "config": {"sweep": {**plan.spec.to_dict(), "estimated_seconds": 48}},
               "summary": {"steps": steps_json(steps), **sweep_tables(plan, steps_json(steps), {})},
               "steps": [], "events": []}
    for r in steps:
        t = 1000.0 + 12 * r.idx
        session["steps"].append({"idx": r.idx, "started_at": t, "ended_at": t + 12, "config": {"config": r.config},
                                 "summary": {s.group: s.to_dict() for s in r.summaries}})
        session["events"] += [{"t": t, "kind": "step_start", "label": "", "data": {"config": r.config,
                                                                                   "threads": {"main": 4}}},
                              {"t": t + 12, "kind": "step_end", "label": "", "data": {}}]
    return session


def test_a_recorded_session_replays_its_tables():
    plan = plan_of("innodb_flush_log_at_trx_commit = [1, 2]")
    steps = [result(plan, c, i, 1000.0 + 100 * c + 10 * i) for c in (0, 1) for i in (0, 1)]
    m = SweepProgress()
    assert m.show_session(recorded(plan, steps))
    assert m.tables() == sweep_tables(plan, steps_json(steps), {})  # whole: the summary's tables
    assert [r.best["tps"] for r in m.rows()] == [1010.0, 1110.0]
    p = m.progress(m.now())
    assert (p.done, p.total, p.elapsed, p.remaining) == (4, 4, 48.0, None)
    m.seek(30.0)  # the replay's head in step 3: two steps ended
    assert m.tables() == sweep_tables(plan, steps_json(steps[:2]), {})
    assert [r.measuring for r in m.rows()] == [None, 4]
    p = m.progress(m.now())
    assert (p.done, p.elapsed) == (2, 30.0) and p.remaining == pytest.approx(2 * 12 - 6)
    m.seek(1e9)
    assert m.progress(m.now()).done == 4
    assert not SweepProgress().show_session({"config": {}, "summary": {"steps": []}, "steps": []})


def test_once_the_run_has_ended_its_own_tables_are_shown():
    plan = plan_of("innodb_flush_log_at_trx_commit = [1, 2]")
    m = SweepProgress()
    m.start(plan)
    m.add_step(result(plan, 0, 0, 1000.0))
    m.finish({})  # a run that failed before its tables: the live ones stay
    assert m.tables()["configs"][0]["steps"][0]["tps"] == 1000.0
    final = {"configs": [{"idx": 0}], "baseline": 0, "best_to_best": [], "ratios": [{"verdict": {}}],
             "restarts_planned": 0}
    m.finish({**final, "steps": [], "status": "completed"})
    assert m.tables() == final


def test_a_configuration_pair_has_its_verdict_as_soon_as_both_steps_ended():
    """The ratio-to-baseline CI used to appear only when the whole sweep had ended."""
    import numpy as np

    from tunebench.core.verdict import pair_verdict

    plan = plan_of("innodb_flush_log_at_trx_commit = [1, 2]")
    m = SweepProgress()
    m.start(plan)
    rng = np.random.default_rng(3)
    seconds = {}
    t = 100.0
    for config, step, level in ((0, 0, 1000.0), (1, 0, 1300.0)):
        idx = config * plan.spec.steps + step
        m.add_event(Event(t, "step_start", f"step {idx + 1}: main=4", {"threads": {"main": 4}, "config": config,
                                                                       "step": idx + 1}))
        values = list(level + rng.normal(0, 10, 12))
        for k, v in enumerate(values):
            m.add_interval(Interval(t + k + 1, "main", 4, v, v * 10, v * 10, 0.0, 0.0))
        m.add_event(Event(t + 12, "step_end", "done", {}))
        seconds[config] = values[plan.spec.warmup_seconds:]  # the measured seconds, after the warm-up
        m.add_step(result(plan, config, step, float(np.mean(seconds[config]))))
        t += 20
    cell = next(r for r in m.tables()["ratios"] if r["config"] == 1)["steps"][0]
    assert cell["verdict"] == pair_verdict(seconds[0], seconds[1]).to_dict()
    assert cell["verdict"]["ci_low"] > 1.2


def test_a_steps_live_seconds_start_after_its_connections_opened():
    """The live A/B verdicts take a step's measured seconds: those while its connections opened (a `ramp`
    event ends them) are not among them, as they are not in the step's summary."""
    plan = plan_of("innodb_flush_log_at_trx_commit = [1, 2]")
    m = SweepProgress()
    m.start(plan)
    m.add_event(Event(100.0, "step_start", "step 1", {"config": 0, "threads": {"main": 4}, "step": 1}))
    for t in (101, 102, 103):  # connections opening
        m.add_interval(Interval(float(t), "main", 2, 10.0, 100.0, 100.0, 0.0, 0.0))
    m.add_event(Event(103.0, "ramp", "step 1: 4 of 4 connections open after 3 s; measured from here",
                      {"step": 1, "seconds": 3, "measure_from": 105.0}))  # plus the 2 s of warm-up
    for t in (104, 105):
        m.add_interval(Interval(float(t), "main", 4, 500.0, 5000.0, 5000.0, 0.0, 0.0))
    for t in range(106, 111):
        m.add_interval(Interval(float(t), "main", 4, 1000.0, 10000.0, 10000.0, 0.0, 0.0))
    m.add_event(Event(110.0, "step_end", "step 1 done"))
    assert m.per_second[1] == [1000.0] * 5


def test_the_repeats_verdict_is_over_quiet_seconds_and_leaves_out_a_step_too_busy_to_measure():
    """Issue 42: busy seconds are left out of a sweep's verdicts. Each repeat's TPS is its step's mean over its quiet
    seconds (per_second holds them, as run/session.steps_per_second gives them), and a step left with fewer than
    MIN_QUIET_SECONDS measures nothing: its repeat is left out of the verdict."""
    from tunebench.core.verdict import MIN_QUIET_SECONDS

    plan = plan_of("innodb_flush_log_at_trx_commit = [1, 2]", "repeats = 4")
    steps, per_second = [], {}
    for c in plan.configs:
        base = c.knobs["innodb_flush_log_at_trx_commit"] == 1
        for i in range(plan.spec.steps):
            r = result(plan, c.idx, i, 500.0)  # the steps' own means: busy seconds included, no difference
            steps.append(r)
            quiet = 1000.0 if base else 1200.0  # their quiet seconds: 1.2x
            per_second[r.idx + 1] = [quiet * (1 + 0.01 * k) for k in range(10)]
    tables = sweep_tables(plan, steps_json(steps), {}, per_second)
    cell = next(st for r in tables["ratios"] if r["config"] == 1 for st in r["steps"] if st["threads"] == 4)
    assert cell["verdict"]["repeats"] == 4 and cell["verdict"]["ratio"] == pytest.approx(1.2)
    # the second repeat's configuration step kept too few quiet seconds: three pairs are left
    second = next(c.idx for c in plan.configs if c.repeat == 1 and c.idx != plan.baseline
                  and c.knobs["innodb_flush_log_at_trx_commit"] == 2)
    per_second[second * plan.spec.steps + 1] = [1200.0] * (MIN_QUIET_SECONDS - 1)
    tables = sweep_tables(plan, steps_json(steps), {}, per_second)
    cell = next(st for r in tables["ratios"] if r["config"] == 1 for st in r["steps"] if st["threads"] == 4)
    assert cell["verdict"]["repeats"] == 3


def test_a_single_run_ratio_inside_the_calibrated_floor_says_so():
    """Issue 42 item 2: without repeats, a ratio is a clear difference only beyond this machine's noise floor
    (`tunebench calibrate`): a tight 1.03x single-run interval with a ±10 % floor reads as the machine's noise."""
    from tunebench.core.results import _ci

    plan = plan_of("innodb_flush_log_at_trx_commit = [1, 2]")
    steps, per_second = [], {}
    for c in plan.configs:
        for i in range(plan.spec.steps):
            r = result(plan, c.idx, i, 1000.0)
            steps.append(r)
            level = 1030.0 if c.knobs["innodb_flush_log_at_trx_commit"] == 2 else 1000.0
            per_second[r.idx + 1] = [level + (k % 2) for k in range(20)]
    cells = {f: next(st for r in sweep_tables(plan, steps_json(steps), {}, per_second, f)["ratios"]
                     if r["config"] == 1 for st in r["steps"] if st["threads"] == 4)
             for f in (None, lambda _threads: 10.0)}
    plain, floored = (cells[f]["verdict"] for f in cells)
    assert _ci(plain).endswith(", single run)") and "noise" not in _ci(plain)
    assert _ci(floored).endswith(", single run, within this machine's noise (±10 %))"), _ci(floored)
