"""The sweep results view (ui/sweep_results.py): live tables from the run's records, the same as the Markdown
report of the session (`sessions export --format md`), the time left, the noise marks, the step configurations."""

import json
import re
from typing import Any

import pytest
from tests.conftest import ROOT, run_cli

from tunebench.core.interval import Event
from tunebench.core.knobs import KnobInfo
from tunebench.core.results import markdown, sweep_tables
from tunebench.core.stats import StepSummary
from tunebench.core.sweep import make_plan, parse_spec
from tunebench.run.records import RunOutcome, StepResult
from tunebench.run.session import steps_json
from tunebench.ui.sweep_results import NOISE_MARK

KNOBS = {"innodb_flush_log_at_trx_commit": KnobInfo("innodb_flush_log_at_trx_commit", "int", True, 0, 3, current="1")}
TINY = """name = "tiny"
workload = "oltp_point_select"
threads = [2, 4]
step_seconds = 3
warmup_seconds = 0
baseline = { innodb_flush_log_at_trx_commit = 1 }

[options]
tables = 1
table_size = 2000

[axes]
innodb_flush_log_at_trx_commit = [1, 2]
"""


def md_tables(text: str) -> dict[str, list[list[str]]]:
    """The Markdown report's tables by heading, rows of cells (header and rule left out)."""
    out: dict[str, list[list[str]]] = {}
    heading = ""
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:]
            out[heading] = []
        elif line.startswith("|") and heading:
            out[heading].append([c.strip() for c in line.strip("|").split("|")])
    return {h: rows[2:] for h, rows in out.items()}


def shown(table, strip=True, label=0) -> list[list[str]]:
    """A view table's cells as text; with `strip`, as Markdown prints them: the configuration (column `label`,
    one knob a line) on one line without its baseline tag, the TPS line of a grid cell without its best mark,
    a ratio without its noise mark."""
    rows = []
    for r in range(table.rowCount()):
        cells = [table.item(r, c).text() if table.item(r, c) else "" for c in range(table.columnCount())]
        if strip:
            cells = [re.sub(r"  \(baseline\)$", "", c).replace("\n", ", ") if i == label else
                     re.sub(rf"^★ | {NOISE_MARK}$", "", c.split("\n")[0]) or "-" for i, c in enumerate(cells)]
        rows.append(cells)
    return rows


def assert_view_is_the_report(view, report: str) -> None:
    md = md_tables(report)
    assert shown(view.grid) == md["TPS by configuration and concurrency"]
    assert shown(view.best, label=1) == md["Best-to-best"]
    ratio = next(h for h in md if h.startswith("Ratio to baseline"))
    assert shown(view.ratios) == md[ratio]


def summary(threads: int, tps: float, cv: float) -> StepSummary:
    return StepSummary("main", threads, 10, tps, tps * 9, tps, cv, 1.0, 1e5 / tps, 2e5 / tps, 5.0, 0, 0, tps * 10)


@pytest.fixture
def plan():
    text = TINY.replace("step_seconds = 3", "step_seconds = 10").replace("warmup_seconds = 0", "warmup_seconds = 2")
    return make_plan(parse_spec(text), KNOBS, {"innodb_flush_log_at_trx_commit": "1"})


def test_steps_fill_the_tables_in_as_they_end(win, qtbot, plan):
    c = win.controller
    view = win.sweep_results
    win.sweep_dock.hide()
    c.sweep_planned.emit(plan)
    assert win.sweep_dock.isVisible() and win.view.isVisible()  # the dashboard stays in sight
    assert view.bar.format() == "0/4 steps" and view.eta.text() == "starting: about 0 min 48 s left (plan)"
    assert shown(view.grid) == [["innodb_flush_log_at_trx_commit=1", "-", "-", "-"],
                                ["innodb_flush_log_at_trx_commit=2", "-", "-", "-"]]
    results = [StepResult(0, (summary(2, 1000.0, 0.04),), 0), StepResult(1, (summary(4, 1900.0, 0.01),), 0),
               StepResult(2, (summary(2, 1020.0, 0.01),), 1), StepResult(3, (summary(4, 2500.0, 0.01),), 1)]
    t = 1_790_000_000.0
    c.timeline_event.emit(Event(t, "config", "configuration 1: innodb_flush_log_at_trx_commit=1",
                       {"config": 0, "knobs": {"innodb_flush_log_at_trx_commit": "1"}}))
    c.timeline_event.emit(Event(t, "step_start", "step 1: main=2", {"config": 0, "threads": {"main": 2}}))
    assert shown(view.grid, strip=False)[0][1] == "measuring…"
    c.step.emit(results[0])
    c.timeline_event.emit(Event(t + 12, "step_end", "step 1 done"))
    assert view.bar.value() == 1 and view.bar.format() == "1/4 steps"
    assert shown(view.grid)[0] == ["innodb_flush_log_at_trx_commit=1", "1,000.0", "-", "1,000.0 @2"]
    for r in results[1:]:
        c.step.emit(r)
    tables = sweep_tables(plan, steps_json(results), {0: {"innodb_flush_log_at_trx_commit": "1"}})
    report = markdown({"id": 1, "workload": "w", "target": "t", "engine": "builtin", "transport": "socket",
                       "status": "completed", "summary": {"steps": steps_json(results), **tables}})
    assert_view_is_the_report(view, report)
    grid = shown(view.grid, strip=False)
    assert grid[0][2].startswith("★ 1,900.0") and grid[1][2].startswith("★ 2,500.0")  # the best points
    assert grid[0][2].endswith(f"{1e5 / 1900:,.3f} ms") and grid[0][0].endswith("(baseline)")  # p95 below TPS
    # 1020 vs 1000 at 2 threads: +2 %, the baseline's CV there is 4 %: within noise; 2500 vs 1900 is not
    ratios = shown(view.ratios, strip=False)
    assert ratios[1][2] == f"1.020 {NOISE_MARK}" and ratios[1][4] == "1.316"
    best = shown(view.best, strip=False)
    assert best[0][1] == "innodb_flush_log_at_trx_commit=2" and best[0][6] == "1.316"
    assert best[1][6] == "1.000"  # the baseline against itself: no noise mark
    assert view.leader.text() == ("best: <b>innodb_flush_log_at_trx_commit=2</b>, 2,500.0 TPS at 4 threads, "
                                  "1.316x the baseline's best")
    c.run_finished.emit(RunOutcome("completed", 1))
    assert view.bar.format() == "4/4 steps" and view.eta.text().endswith("done")
    assert not view.clock.isActive()


def test_each_steps_efficiency_side_by_side(win, qtbot, plan):
    """The Efficiency tab: per step, what a transaction cost; fsyncs per commit fall with trx_commit=2."""
    c, view = win.controller, win.sweep_results
    c.sweep_planned.emit(plan)
    costs = {"cpu_us_per_trx": 41.5, "cpu_us_per_query": 4.6, "cs_per_trx": 3.2, "kb_read_per_trx": 0.0,
             "kb_written_per_trx": 2.5, "rows_read_per_query": 1.0, "fsyncs_per_commit": 1.02,
             "redo_bytes_per_commit": 610.0, "cpu_us_per_insert": None, "kb_written_per_insert": None,
             "kb_read_per_query": 0.0}
    c.step.emit(StepResult(0, (summary(2, 1000.0, 0.04),), 0, efficiency={"main": costs}))
    c.step.emit(StepResult(1, (summary(4, 1900.0, 0.01),), 0))  # a step without the probes it needs: no row
    c.step.emit(StepResult(2, (summary(2, 2100.0, 0.01),), 1,
                           efficiency={"main": {**costs, "fsyncs_per_commit": 0.004}}))
    heads = [view.costs.horizontalHeaderItem(j).text() for j in range(view.costs.columnCount())]
    assert heads[:3] == ["configuration", "threads", "TPS"] and "InnoDB fsync/commit" in heads
    assert "CPU µs/insert" not in heads and "KB rd/q" in heads  # an optional column only with a value
    rows = shown(view.costs, strip=False)
    fsync = heads.index("InnoDB fsync/commit")
    assert [(r[0], r[1], r[fsync]) for r in rows] == [("innodb_flush_log_at_trx_commit=1", "2", "1.02"),
                                                      ("innodb_flush_log_at_trx_commit=2", "2", "0.00")]


def test_a_plain_run_clears_the_view(win, qtbot, plan):
    win.controller.sweep_planned.emit(plan)
    assert win.sweep_results.grid.rowCount() == 2
    win.controller.run_started.emit(None)
    assert win.sweep_results.grid.rowCount() == 0 and "No sweep yet" in win.sweep_results.title.text()


def record_sweep(store, plan, results, late_end: float = 0.0) -> int:
    """A finished sweep session as the run writes one (steps with their configuration, the summary's tables)."""
    from tunebench.run.session import session_config
    from tunebench.run.spec import sweep_run_spec

    w = store.new_session(target="sandbox", transport="socket", engine="builtin", workload="oltp_point_select",
                          config=session_config(sweep_run_spec(plan.spec), plan), flavor="mariadb", version="10.11",
                          started_at=1_790_000_000.0)
    t = 1_790_000_000.0
    for r in results:
        cfg = plan.configs[r.config]
        sid = w.start_step(r.idx, t, t, {"threads": {"main": r.summaries[0].threads}, "config": cfg.idx,
                                         "step": r.idx % plan.spec.steps, "knobs": dict(cfg.knobs)})
        w.add_event(Event(t, "step_start", f"step {r.idx + 1}",
                          {"config": cfg.idx, "threads": {"main": r.summaries[0].threads}}))
        w.add_samples(t + 1, {"client.main.tps": r.summaries[0].tps})  # the replay's timeline reaches the end
        t += 12
        # `late_end`: the last step ends that long after its last second (a profile window cut, a verdict)
        w.add_samples(t - (late_end if r is results[-1] else 0.0), {"client.main.tps": r.summaries[0].tps})
        w.end_step(sid, t, {s.group: s.to_dict() for s in r.summaries})
        w.add_event(Event(t, "step_end", f"step {r.idx + 1} done"))
    w.finish("completed", {"steps": steps_json(results), **sweep_tables(plan, steps_json(results), {})}, ended_at=t)
    return w.id


def test_the_replays_end_shows_every_step(win, qtbot, plan):
    """The play head at the replay's end shows the whole sweep, also when the last step ended a moment after the
    timeline's last second (it showed 3/4 steps and "best so far")."""
    results = [StepResult(i, (summary(2 if i % 2 == 0 else 4, 1000.0 + 100 * i, 0.02),), i // 2) for i in range(4)]
    sid = record_sweep(win.store, plan, results, late_end=2.0)
    win.open_replay(sid)
    win.replay_bar.seek(win.replay_timeline.end)
    view = win.sweep_results
    assert view.bar.format() == "4/4 steps" and view.leader.text().startswith("best: ")


def test_a_replayed_sweep_shows_its_tables_and_its_step_configurations(win, qtbot, plan):
    results = [StepResult(i, (summary(2 if i % 2 == 0 else 4, 1000.0 + 100 * i, 0.02),), i // 2) for i in range(4)]
    sid = record_sweep(win.store, plan, results)
    win.open_replay(sid)
    view = win.sweep_results
    assert "sweep tiny" in view.title.text() and "(recorded)" in view.title.text()
    assert view.bar.format() == "4/4 steps" and view.eta.text() == "0 min 48 s elapsed, done"
    assert_view_is_the_report(view, markdown(win.store.get_session(sid)))
    assert view.leader.text().startswith("best: <b>innodb_flush_log_at_trx_commit=2</b>, 1,300.0 TPS at 4")
    win.replay_bar.seek(20.0)  # the head in step 2: the baseline leads, alone
    assert view.leader.text().endswith("1,000.0 TPS at 2 threads (the baseline)")
    win.replay_bar.seek(30.0)  # the head in step 3: the tables as they were then
    assert view.bar.format() == "2/4 steps" and view.eta.text() == "0 min 30 s elapsed, about 0 min 18 s left (plan)"
    assert shown(view.grid, strip=False)[1][1] == "measuring…" and shown(view.grid)[1][2] == "-"
    win.replay_bar.seek(1e9)
    assert_view_is_the_report(view, markdown(win.store.get_session(sid)))
    win.show_live()
    assert "No sweep yet" in view.title.text()
    win.sessions.refresh()
    win.sessions.select([sid])
    html = win.sessions.details.toPlainText()
    assert "ran with" in html
    for i, knob in enumerate(("innodb_flush_log_at_trx_commit=1", "innodb_flush_log_at_trx_commit=2")):
        assert f"{i + 1}: {knob}" in html


@pytest.mark.integration
def test_a_live_sweep_in_the_window_is_what_the_cli_reports(window, qtbot):
    """A tiny sweep run from the window on the real sandbox: the view's tables, filled in live from the run's
    StepResults, are the tables `tunebench sessions export ID --format md` prints for the session it recorded."""
    # 5-second steps: enough settled seconds for the configuration pairs' verdicts; busy seconds judged too
    # (beside the suite's other workers every second is busy, and the verdicts leave busy seconds out: none was
    # left, and no CI came before the run ended)
    window.sweep.load_toml(TINY.replace("step_seconds = 3", "step_seconds = 5\nbusy_threshold = \"off\""),
                           "tiny.toml")
    view = window.sweep_results
    steps_seen = []
    # the grid fills in as each step ends (the view's slot runs before this one: connected first)
    live_tables = []
    window.controller.step.connect(lambda _r: (steps_seen.append(
        sum(cell != "-" for row in shown(view.grid) for cell in row[1:-1])), live_tables.append(view.model.tables())))
    with qtbot.waitSignal(window.run_finished, timeout=180000) as finished:
        window.run_sweep()
        qtbot.waitUntil(lambda: view.model.plan is not None, timeout=60000)
        assert view.bar.format() == "0/4 steps" and "left (plan)" in view.eta.text()
    outcome = finished.args[0]
    assert outcome.status == "completed", outcome.error
    assert steps_seen == [1, 2, 3, 4] and view.bar.format() == "4/4 steps"
    out = run_cli("sessions", "export", str(outcome.session_id), "--format", "md")
    assert out.returncode == 0, out.stderr[-2000:]
    assert_view_is_the_report(view, out.stdout)
    # the tables computed live after the last step are the session summary's, the configuration pairs' A/B
    # verdicts included: live from the run's seconds, in the summary from the stored per-second TPS
    summary = json.loads(run_cli("sessions", "show", str(outcome.session_id), "--json").stdout)["summary"]
    live = live_tables[-1]
    assert live["best_to_best"] == summary["best_to_best"]
    assert [{k: v for k, v in c.items() if k != "applied"} for c in live["configs"]] == \
        [{k: v for k, v in c.items() if k != "applied"} for c in summary["configs"]]
    assert [[(st["threads"], st["tps"], st["ratio"]) for st in r["steps"]] for r in live["ratios"]] == \
        [[(st["threads"], st["tps"], st["ratio"]) for st in r["steps"]] for r in summary["ratios"]]
    verdicts = json.loads(json.dumps([[st.get("verdict") for st in r["steps"]] for r in live["ratios"]]))
    assert any(v for row in verdicts for v in row)  # a CI before the run ended
    assert verdicts == [[st.get("verdict") for st in r["steps"]] for r in summary["ratios"]]
    # the Efficiency tab, live, is the report's per-operation efficiency, step for step
    efficiency = md_tables(out.stdout)["Per-operation efficiency"]
    assert len(efficiency) == 4
    assert [r[3:] for r in shown(view.costs, strip=False)] == [r[3:] for r in efficiency]


def test_details_of_a_step_without_latency_show_a_dash(win, qtbot):
    """A step that measured no latency (lost server, stopped at once) has p95/p99 None: the details showed
    nothing at all (a TypeError formatting None), now a dash, and its configuration."""
    w = win.store.new_session(target="sandbox", transport="socket", engine="builtin", workload="oltp_point_select",
                              config={"groups": []}, flavor="mariadb", version="10.11")
    sid = w.start_step(0, 1.0, 1.0, {"threads": {"main": 4}, "config": 0, "step": 0, "knobs": {}})
    w.end_step(sid, 2.0, {})
    w.finish("incomplete", {"steps": [{"step": 1, "config": 0, "group": "main", "threads": 4, "tps": 0.0, "qps": 0.0,
                                       "lat_p95_ms": None, "lat_p99_ms": None, "cv": None}]}, ended_at=2.0)
    win.sessions.refresh()
    win.sessions.select([w.id])
    text = win.sessions.details.toPlainText()
    assert "as configured" in text and "0.0\t0.0\t-\t-" in text.replace("\n", "\t")


def test_the_results_dock_stays_out_of_the_way_of_a_plain_run(win, qtbot, plan):
    """Seen under Xvfb: a fresh window's demo run gave a quarter of the dashboard to "No sweep yet"."""
    assert not win.sweep_dock.isVisible()
    win.controller.sweep_planned.emit(plan)
    assert win.sweep_dock.isVisible()
    win.controller.run_started.emit(None)  # the next run, a plain one: no plan follows
    assert not win.sweep_dock.isVisible()


def test_a_cell_says_a_knob_flipped_live_and_the_seconds_left_out(win, plan):
    """Issue 30 item 2: a step whose knob was flipped live mid-step, or whose ramp-up seconds were left out, or
    that had errors, read like any other cell; each is flagged, and its tooltip says what the figures are over."""
    from dataclasses import replace

    c = win.controller
    view = win.sweep_results
    c.sweep_planned.emit(plan)
    segments = ({"from": None, "to": 1.0, "after": None, "groups": {}},
                {"from": 1.0, "to": None, "after": {"name": "innodb_spin_wait_delay"}, "groups": {}})
    flipped = StepResult(0, (replace(summary(2, 1000.0, 0.04), steady_skipped=3, seconds=7, errors=4.0),), 0,
                         segments=segments)
    c.step.emit(flipped)
    cell = view.grid.item(0, 1)
    assert cell.text().splitlines()[0].endswith("1,000.0 ⚑ ⋯ !")
    tip = cell.toolTip()
    assert "over 7 s (3 s ramp-up below the steady level left out)" in tip
    assert "changed live 1 time(s)" in tip and "4 errors" in tip
    c.step.emit(StepResult(1, (summary(4, 1900.0, 0.01),), 0))
    assert view.grid.item(0, 2).text().splitlines()[0] == "★ 1,900.0"  # the best point, nothing to flag


def test_a_sweep_over_rates_shows_p99_against_rate_with_each_knee(win, qtbot):
    """Issue 31: a rate sweep's knee: each configuration's p99 (from the intended start) against the rate it
    achieved, the SLO line and a star at the knee; the tab is there only for a sweep over rates."""
    from dataclasses import replace

    spec = parse_spec(TINY.replace("threads = [2, 4]", "threads = [8]\nrates = [500, 2000]\nslo_p99_ms = 5"))
    rate_plan = make_plan(spec, KNOBS, {"innodb_flush_log_at_trx_commit": "1"})
    p99 = {(0, 0): 2.0, (0, 1): 40.0, (1, 0): 1.5, (1, 1): 3.0}
    results = [StepResult(i, (replace(summary(8, (500.0, 2000.0)[i % 2], 0.02), rate=(500.0, 2000.0)[i % 2],
                                      lat_p99_ms=p99[(i // 2, i % 2)]),), i // 2) for i in range(4)]
    view = win.sweep_results
    assert not view.tables.isTabVisible(view.knee_tab)
    sid = record_sweep(win.store, rate_plan, results)
    win.open_replay(sid)
    win.replay_bar.seek(win.replay_timeline.end)
    assert view.tables.isTabVisible(view.knee_tab)
    names = [item.name() for item in view.knee.getPlotItem().listDataItems() if item.name()]
    assert names == ["innodb_flush_log_at_trx_commit=1 · knee 500/s", "innodb_flush_log_at_trx_commit=2 · knee 2,000/s"]
    stars = [item for item in view.knee.getPlotItem().listDataItems() if item.opts.get("symbol") == "star"]
    assert len(stars) == 2
    # the grid's columns are the rates, its last one each configuration's knee (not the highest rate's TPS)
    heads = [view.grid.horizontalHeaderItem(c).text() for c in range(view.grid.columnCount())]
    assert heads == ["configuration", "500/s\nTPS · p95 ms", "2,000/s\nTPS · p95 ms", "knee"]
    assert [view.grid.item(r, 3).text() for r in range(2)] == ["500/s", "2,000/s"]
    assert view.leader.text() == ("knee (p99 &lt;= 5 ms): <b>innodb_flush_log_at_trx_commit=1</b> 500/s; "
                                  "<b>innodb_flush_log_at_trx_commit=2</b> 2,000/s")
    md = markdown(win.store.get_session(sid))
    assert "## Latency against rate" in md and "| 500/s |" in md
    assert "## Best-to-best" not in md  # the most TPS of a rate sweep is its highest rate: no result


def record_phases(store) -> tuple[int, Any]:
    """A finished iiBench phase plan (workloads/recipes/iibench-phases.toml) as the run writes one: each phase a
    step with its groups' summaries, the index build an action step with how long it took."""
    from dataclasses import replace

    from tunebench.run.session import phases_json, session_config
    from tunebench.run.spec import sweep_run_spec

    spec = parse_spec((ROOT / "workloads/recipes/iibench-phases.toml").read_text())
    plan = make_plan(spec, {}, {})

    def s(group: str, threads: int, tps: float, rows: bool) -> StepSummary:
        base = summary(threads, tps, 0.02)
        return replace(base, group=group, headline=tps * 1000 if rows else None,
                       headline_label="rows/s" if rows else "")

    build = {"phase": "l.x", "action": "create_indexes", "group": "load", "seconds": 4.5, "done": True,
             "what": "3 secondary index(es) on 1 table(s) in 4.5 s"}
    results = [StepResult(0, (s("load", 1, 300.0, True),), 0, phase="l.i0"),
               StepResult(1, (), 0, phase="l.x", action=build),
               StepResult(2, (s("ins", 1, 20.0, True),), 0, phase="l.i1"),
               StepResult(3, (s("bg", 1, 10.0, True), s("qr", 1, 20000.0, False)), 0, phase="qr100"),
               StepResult(4, (s("bg", 1, 10.0, True), s("qp", 1, 18000.0, False)), 0, phase="qp100")]
    w = store.new_session(target="sandbox", transport="socket", engine="builtin", workload="iibench",
                          config=session_config(sweep_run_spec(spec), plan), flavor="mariadb", version="10.11",
                          started_at=1_790_000_000.0)
    t = 1_790_000_000.0
    for r in results:
        threads = {g.name: g.threads[r.idx] for g in spec.groups}
        sid = w.start_step(r.idx, t, t, {"threads": threads, "config": 0, "step": r.idx, "knobs": {},
                                         "phase": r.phase})
        w.add_event(Event(t, "step_start", f"step {r.idx + 1}: {r.phase}",
                          {"config": 0, "threads": threads, "step": r.idx + 1, "phase": r.phase}))
        w.add_samples(t + 1, {"client.qr.tps": 1.0})
        t += 12
        w.add_samples(t, {"client.qr.tps": 1.0})
        body = {x.group: x.to_dict() for x in r.summaries}
        w.end_step(sid, t, {**body, "_phase": r.phase, **({"_action": r.action} if r.action else {})})
        w.add_event(Event(t, "step_end", f"step {r.idx + 1} done"))
    w.finish("completed", {"steps": steps_json(results), "phases": phases_json(results)}, ended_at=t)
    return w.id, plan


def test_a_replayed_phase_plan_shows_its_phases_as_the_report_does(win, qtbot):
    """A phase plan (the insert benchmark's l.i0, l.x, l.i1, qr100, qp100) replayed: the results dock shows the
    per-phase table the Markdown report prints, as far as the play head (the configuration x threads tables say
    nothing of it). A phase session was not shown at all: the view took only sessions with configuration tables."""
    sid, _plan = record_phases(win.store)
    win.open_replay(sid)
    view = win.sweep_results
    assert view.model.phased and view.tables.isTabVisible(view.phase_tab)
    assert not any(view.tables.isTabVisible(view.tables.indexOf(t)) for t in (view.grid, view.best, view.ratios))
    assert view.phase_tab == 0  # first
    assert view.tables.currentIndex() == view.phase_tab
    assert view.bar.format() == "5/5 steps"
    md = md_tables(markdown(win.store.get_session(sid)))["Phases"]
    assert shown(view.phase_table, strip=False) == md
    assert md[1][:2] == ["l.x", "create_indexes"] and md[1][-1].startswith("4.5 s: 3 secondary")
    assert [r[1] for r in md] == ["load", "create_indexes", "ins", "bg", "qr", "bg", "qp"]
    win.replay_bar.seek(30.0)  # the head in step 3 (l.i1): two phases ended, l.i1 measuring, the rest planned
    rows = shown(view.phase_table, strip=False)
    assert rows[:2] == md[:2]
    assert [r[0] for r in rows[2:]] == ["l.i1", "qr100", "qp100"]
    assert rows[2][-1] == "measuring…" and rows[3][1:] == [""] * 6
    assert view.bar.format() == "2/5 steps"
    win.replay_bar.seek(1e9)
    assert shown(view.phase_table, strip=False) == md


def test_a_server_axis_says_what_else_differed_live_and_in_a_replay(win, qtbot, plan):
    """Issue 44 item 1: each server's `server` event carries its variables; the view says the unfair difference
    (MySQL's binary log against MariaDB without one) as the second server starts, not before."""
    from tests.unit.test_confdiff import MARIADB, MYSQL

    c = win.controller
    view = win.sweep_results
    c.sweep_planned.emit(plan)
    t = 1_790_000_000.0
    c.timeline_event.emit(Event(t, "server", "server mysql 9.7.0",
                                {"flavor": "mysql", "version": "9.7.0", "index": 0, "variables": MYSQL}))
    assert view.differed.isHidden()  # one server: nothing to compare yet
    c.timeline_event.emit(Event(t + 30, "server", "server mariadb 10.11.14",
                                {"flavor": "mariadb", "version": "10.11.14", "index": 1, "variables": MARIADB}))
    assert not view.differed.isHidden()
    text = view.differed.text()
    assert text.startswith("⚠ unfair: binary log, performance_schema") and "\n" not in text, text  # one line
    tip = view.differed.toolTip()
    assert "unfair: binary log: log_bin=ON, sync_binlog=1, binlog_format=ROW on mysql 9.7.0; log_bin=OFF on " \
           "mariadb 10.11.14" in tip and "log_bin: ON | OFF" in tip


def test_the_sweep_dock_goes_with_the_sweep_replay(win):
    """Issue 46 item 10: after a sweep's replay an empty "Sweep results" dock stayed and squeezed the Statements
    dock. Replaying a session that is no sweep, or going back to live with no sweep running, hides it."""
    from tunebench.store.synthetic import record

    win.sweep_results.reveal()  # as a sweep's replay leaves it
    assert win.sweep_dock.isVisible()
    win.open_replay(record(win.store, 20, 20))
    assert not win.sweep_dock.isVisible()
    win.sweep_results.reveal()
    win.show_live()
    assert not win.sweep_dock.isVisible()
