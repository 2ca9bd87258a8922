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
