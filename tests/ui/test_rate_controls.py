"""Issue 31 in the window: the rate field beside threads builds an open-loop run; the stage's PgUp/PgDown step
the running open-loop group's rate live (x2, /2), and say so when the run is not open loop."""

from PySide6.QtCore import Qt

from tunebench.core.interval import Interval


def test_the_rate_field_builds_an_open_loop_run(win):
    form = win.workload
    form.workload.setCurrentText("oltp_point_select")
    form.threads.setText("8")
    form.rate.setText("1000, 2000")
    spec = form.run_spec()
    assert spec.groups[0].rates == (1000.0, 2000.0) and spec.steps == 2
    form.rate.setText("")
    assert form.run_spec().groups[0].rates == ()


def test_stage_keys_step_the_rate_of_an_open_loop_run(win, qtbot, monkeypatch):
    asked = []
    monkeypatch.setattr(win.controller, "change_rate",
                        lambda group, rate, done, failed: (asked.append((group, rate)),
                                                           done({"group": group, "from": 1000.0, "to": rate})))
    win.stage.set(True, full_screen=False)
    try:
        qtbot.keyClick(win, Qt.Key.Key_PageUp)  # no open-loop run: said, nothing asked
        assert asked == [] and "open-loop run" in win.stage.help.text()
        win.controller.timeline.add_interval(Interval(1000.0, "main", 8, 990.0, 990.0, 990.0, 0.0, 0.0,
                                                      rate=1000.0))
        qtbot.keyClick(win, Qt.Key.Key_PageUp)
        qtbot.keyClick(win, Qt.Key.Key_PageDown)
        assert asked == [("main", 2000.0), ("main", 500.0)]
        assert "rate main 1,000 → 500/s" in win.stage.help.text()
    finally:
        win.stage.set(False)


def test_stage_k_shows_a_rate_sweeps_knees_over_the_plots_and_leaves_none(win, qtbot):
    """Issue 31 on stage: K puts the sweep's p99-against-rate plot over the plots (the results dock is hidden on
    stage); again K, or leaving stage, takes it away; without a rate sweep it says so."""
    from dataclasses import replace

    from tests.ui.test_sweep_results import KNOBS, TINY, record_sweep, summary

    from tunebench.core.sweep import make_plan, parse_spec
    from tunebench.run.records import StepResult

    win.stage.set(True, full_screen=False)
    try:
        qtbot.keyClick(win, Qt.Key.Key_K)
        assert not win.stage.knee.isVisible() and "sweep over rates" in win.stage.help.text()
    finally:
        win.stage.set(False)
    spec = parse_spec(TINY.replace("threads = [2, 4]", "threads = [8]\nrates = [500, 2000]\nslo_p99_ms = 5"))
    plan = make_plan(spec, KNOBS, {"innodb_flush_log_at_trx_commit": "1"})
    results = [StepResult(i, (replace(summary(8, (500.0, 2000.0)[i % 2], 0.02), rate=(500.0, 2000.0)[i % 2],
                                      lat_p99_ms=(2.0, 9.0)[i % 2]),), i // 2) for i in range(4)]
    win.open_replay(record_sweep(win.store, plan, results))
    win.replay_bar.seek(win.replay_timeline.end)
    win.stage.set(True, full_screen=False)
    qtbot.keyClick(win, Qt.Key.Key_K)
    knee = win.stage.knee
    assert knee.isVisible() and knee.geometry() == win.central.rect() and len(knee.curves) == 2
    qtbot.keyClick(win, Qt.Key.Key_K)
    assert not knee.isVisible()
    qtbot.keyClick(win, Qt.Key.Key_K)
    win.stage.set(False)
    assert not knee.isVisible()  # stage left without residue
