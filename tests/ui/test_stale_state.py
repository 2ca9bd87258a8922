"""State that outlived what it was about (issue 30, item 15): the Knobs panel's last flip through later sessions
and replays, its value box behind the server's value, Mark drawing marks nobody recorded, jump-to landing before
its marker, F12 logging the same line every time, and the workload form forgotten between launches.

No server: the run's events are what the controller emits, sessions are written with the store's own writer.
"""

from types import SimpleNamespace

import pytest
from PySide6.QtCore import QSettings

from tunebench.core.interval import Event
from tunebench.store.synthetic import record

KNOB = "innodb_flush_log_at_trx_commit"
FLIP = {"name": KNOB, "from": "1", "to": "2"}


def flip_event(t: float = 1_790_000_010.0) -> Event:
    return Event(t, "knob", f"{KNOB} = 2", dict(FLIP))


def server_facts(win, value: str = "1") -> None:
    """The current target's facts as the controller hands them over (what the panels read of them)."""
    variables = {KNOB: value, "version": "10.11.19-MariaDB"}
    facts = SimpleNamespace(label="sandbox: 10.11.19-MariaDB", variables=variables, knobs={},
                            values=lambda names: {n: variables[n] for n in names if n in variables})
    win.controller.facts.emit(win.targets.current_name(), facts)


def test_a_new_run_and_a_replay_start_without_the_last_flip(win):
    knobs = win.knobs
    server_facts(win)
    assert knobs.result.text() == "sandbox: 10.11.19-MariaDB"
    knobs.show_change(dict(FLIP))  # the flip's reply (the knob event itself only moves the value box)
    assert "The A/B verdict comes at the end of the step" in knobs.result.text()
    win.controller.run_started.emit(None)  # the next run
    assert knobs.result.text() == "sandbox: 10.11.19-MariaDB"
    win.controller.timeline_event.emit(flip_event())
    win.controller.timeline_event.emit(Event(1_790_000_030.0, "verdict", "verdict", {**FLIP, "at": 1_790_000_010.0}))
    assert "1 → 2" in knobs.result.text()
    win.open_replay(record(win.store, 20, 10))  # a replay: nothing of the live run's flip
    assert knobs.result.text() == "sandbox: 10.11.19-MariaDB"


def test_the_value_box_follows_the_servers_value(win):
    knobs = win.knobs
    server_facts(win, "1")
    assert knobs.editors[KNOB].currentText() == "1"
    win.controller.timeline_event.emit(flip_event())  # flipped (F6, a stage preset, another Set)
    assert knobs.current[KNOB].text() == "2" and knobs.editors[KNOB].currentText() == "2"
    # the run put it back at its end
    win.controller.timeline_event.emit(Event(1_790_000_040.0, "restore", "restored",
                                             {"name": KNOB, "state": "restored", "original": "1", "now": "1"}))
    assert knobs.current[KNOB].text() == "1" and knobs.editors[KNOB].currentText() == "1"
    knobs.show_change({"name": KNOB, "from": "1", "to": "0"})  # a value not among the presets yet
    assert knobs.editors[KNOB].currentText() == "0"


def test_mark_is_refused_while_idle_and_while_replaying(win):
    assert not win.mark_action.isEnabled()
    win.mark()  # the key or F7 on stage: refused with a line, nothing drawn
    assert win.timeline.markers == []
    assert "Mark" in win.statusBar().currentMessage() and "run" in win.statusBar().currentMessage()
    win.open_replay(record(win.store, 20, 10))
    shown = list(win.replay_timeline.markers)
    win.mark()
    assert win.replay_timeline.markers == shown and win.timeline.markers == []
    assert not win.mark_action.isEnabled()


def test_mark_is_on_during_a_run_shown_live(win):
    win.controller.running_changed.emit(True)
    assert win.mark_action.isEnabled()
    win.open_replay(record(win.store, 20, 10))  # the run goes on; the plots show a recorded session
    assert not win.mark_action.isEnabled()
    win.show_live()
    assert win.mark_action.isEnabled()
    win.controller.running_changed.emit(False)
    assert not win.mark_action.isEnabled()


@pytest.mark.parametrize("zoomed", [False, True])
def test_jump_to_a_marker_lands_where_the_marker_is_drawn(win, qtbot, zoomed):
    sid = record(win.store, 90, 20, knob_at=46.4, steps=2)
    win.open_replay(sid)
    bar, tl, d = win.replay_bar, win.replay_timeline, win.dashboard
    bar.seek(10.0)
    if zoomed:  # the user looks at the first seconds, closely
        d.panels[0].view.setXRange(2, 12, padding=0)
        d.panels[0].view.sigRangeChangedManually.emit([True, True])
    idx = next(i for i in range(bar.jump.count()) if KNOB in bar.jump.itemText(i))
    assert bar.jump.itemText(idx).startswith("00:46")
    bar.jump.activated.emit(idx)
    knob_t = next(m.t for m in tl.all_markers if m.kind == "knob")
    assert tl.head >= knob_t and any(m.kind == "knob" for m in tl.markers)
    for p in d.panels:
        qtbot.waitUntil(lambda p=p: any(getattr(m, "kind", "") == "knob" for m in p.markers), timeout=5000)
        lo, hi = p.view.viewRange()[0]
        assert lo <= knob_t <= hi, (p.title, lo, hi, knob_t)


def test_f12_does_not_log_the_same_line_every_time(win):
    before = win.log.count()
    for _ in range(4):  # in, out, in, out
        win.stage_action.trigger()
    lines = [win.log.item(i).text() for i in range(before, win.log.count())]
    assert len(lines) == len(set(lines)) and len(lines) <= 1, lines


def test_the_workload_form_is_kept_between_launches(win, tmp_path):
    from tunebench.ui.main_window import MainWindow

    w = win.workload
    w.step_seconds.setValue(45)
    w.warmup_seconds.setValue(5)
    w.profile.setChecked(True)
    w.second.setChecked(True)
    w.second_workload.setCurrentText("oltp_read_only")
    w.second_threads.setText("8,32")
    win.save_settings()
    again = MainWindow(win.store, settings=QSettings(str(tmp_path / "gui.ini"), QSettings.Format.IniFormat))
    try:
        w2 = again.workload
        assert (w2.step_seconds.value(), w2.warmup_seconds.value(), w2.profile.isChecked()) == (45, 5, True)
        assert (w2.second.isChecked(), w2.second_workload.currentText(), w2.second_threads.text()) == (
            True, "oltp_read_only", "8,32")
    finally:
        again.close()
        again.deleteLater()
