"""Discoverability and housekeeping: the shortcuts dialog, File > Quit, empty states, Diff settings' words."""

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from tunebench.core.sessions import diff_settings
from tunebench.store.synthetic import record


def test_shortcuts_dialog_lists_every_action_with_its_key(win, qtbot):
    dialog = win.show_shortcuts()
    qtbot.addWidget(dialog)
    t = dialog.table
    rows = {(t.item(r, 0).text(), t.item(r, 1).text(), t.item(r, 2).text()) for r in range(t.rowCount())}
    want = {(a.shortcut().toString(QKeySequence.SequenceFormat.NativeText), a.text().rstrip("…"))
            for a in win.actions() if not a.shortcut().isEmpty()}
    assert {(k, a) for k, a, _where in rows} == want  # every action with a key, from the actions themselves
    assert ("F5", "Run", "window") in rows and ("Ctrl+Q", "Quit", "window") in rows
    assert ("Ctrl+/", "Keyboard shortcuts", "window") in rows
    assert ("F7", "mark", "stage mode") in rows and ("Esc", "leave stage mode", "stage mode") in rows
    dialog.close()


def test_file_quit_closes_the_window(win, qtbot):
    assert win.quit_action.shortcut().toString() == "Ctrl+Q"
    assert win.quit_action in win.menuBar().actions()[0].menu().actions()
    win.quit_action.trigger()
    qtbot.waitUntil(lambda: not win.isVisible(), timeout=5000)


def test_empty_dashboard_and_sessions_say_what_to_do(win, qtbot):
    dash, sessions = win.empty_states
    qtbot.waitUntil(dash.isVisible, timeout=2000)
    assert dash.text().startswith("No data yet — Run (F5)")
    win.central.setCurrentIndex(1)
    qtbot.waitUntil(sessions.isVisible, timeout=2000)
    assert "No sessions yet" in sessions.text() and "Import session file (Ctrl+I)" in sessions.text()
    sid = record(win.store, 20, 20)
    win.sessions.refresh()
    qtbot.waitUntil(lambda: not sessions.isVisible(), timeout=2000)
    win.sessions.filter.setText("no such session")
    qtbot.waitUntil(sessions.isVisible, timeout=2000)
    assert sessions.text() == "No session matches “no such session”"
    win.open_replay(sid)
    qtbot.waitUntil(lambda: not dash.isVisible(), timeout=2000)
    win.show_live()  # the live timeline is empty again
    qtbot.waitUntil(dash.isVisible, timeout=2000)


def test_diff_settings_hides_the_probes_variables_and_numbers_configurations_from_1():
    def session(sid, monitor, pool, knob):
        return {"id": sid, "target": "sandbox", "transport": "socket", "engine": "builtin", "flavor": "mariadb",
                "version": "10.11", "config": {}, "variables": {
                    "innodb_monitor_enable": monitor, "innodb_monitor_disable": monitor,
                    "performance_schema_consumer_events_waits_current": monitor, "innodb_buffer_pool_size": pool},
                "steps": [{"config": {"config": 0, "knobs": {"innodb_flush_log_at_trx_commit": knob}}}]}

    rows = diff_settings(session(1, "", "128M", "1"), session(2, "latch", "256M", "2"))
    assert rows == [("variables", "innodb_buffer_pool_size", "128M", "256M"),
                    ("knobs", "configuration 1: innodb_flush_log_at_trx_commit", "1", "2")]


def test_prepare_progress_bar_and_cancel_button(win, qtbot):
    """The window's prepare shows rows/s and time left on a bar by rows, and Cancel sets the task's cancel
    event (the load stops between two INSERTs: tests/integration/test_tasks.py)."""
    import threading

    from tunebench.load.prepare import RowsProgress

    panel = win.workload
    panel.set_busy("preparing 2 table(s) x 10,000 rows …", cancellable=True)
    assert panel.progress.isVisible() and panel.cancel_button.isVisible()
    assert not panel.prepare_button.isEnabled()
    panel.show_progress("Creating table 'sbtest1'...")
    assert panel.progress_label.text() == "Creating table 'sbtest1'..."
    panel.show_progress(RowsProgress(5000, 20000, 0.5))
    assert (panel.progress.maximum(), panel.progress.value()) == (1000, 250)
    assert panel.progress_label.text() == "5,000 of 20,000 rows (25 %), 10,000 rows/s, 0:02 left"
    win.controller.prepare_cancel = cancel = threading.Event()
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert cancel.is_set() and not panel.cancel_button.isEnabled()
    assert panel.progress_label.text().startswith("cancelling")
    panel.show_progress(RowsProgress(6000, 20000, 0.6))  # still arriving from before the cancel took effect
    assert panel.progress_label.text().startswith("cancelling")
    win._on_prepared("prepare cancelled after 0.6 s: 1 whole table(s) kept, 1 half-loaded dropped (sbtest2) in tb")
    assert not panel.progress.isVisible() and not panel.cancel_button.isVisible() and panel.prepare_button.isEnabled()
    panel.set_busy("cleaning up …")  # a cleanup: nothing to cancel
    assert not panel.cancel_button.isVisible()



def test_a_series_has_the_same_colour_live_and_in_replay(win):
    """Colours went to curves in the order they first appeared: live, group b reported first and took blue,
    while the replay (names sorted) gave blue to a. A series' colour now comes from its name."""
    import numpy as np

    from tunebench.ui.timeline import Timeline

    t0 = 1_790_000_000.0
    live = win.timeline
    live.add(t0 + 1, {"client.b.tps": 100.0, "client.b.threads": 4.0})
    win.dashboard.redraw()  # b drawn alone first, as when its first second arrived before a's
    live.add(t0 + 2, {"client.a.tps": 200.0, "client.a.threads": 8.0, "client.b.tps": 110.0,
                      "client.b.threads": 4.0})
    win.dashboard.redraw()

    def colours():
        return {n: c.opts["pen"].color().name() for p in win.dashboard.panels for n, c in p.curves.items()}

    seen_live = colours()
    replay = Timeline()
    arrays = {n: (buf.view()[0] + live.t0, buf.view()[1]) for n, buf in live.series.items()}
    replay.load(live.t0, {n: (np.asarray(t), np.asarray(v)) for n, (t, v) in arrays.items()}, [])
    win.view.show_replay(replay)
    assert colours() == seen_live and seen_live["client.a.tps"] != seen_live["client.b.tps"]
    win.set_theme("dark")  # a theme change recolours by name too, not by position
    assert colours() == seen_live


def test_bigger_fonts_never_grow_the_window_past_the_screen(win, qtbot):
    """Issue 30 item 13: A+ grew a 1900x1000 window to 1111 px on a 1080 screen, and A- did not shrink it back. The
    window keeps its size; a font scale whose contents would not fit the screen is not taken, and says so."""
    screen = win.screen().availableGeometry()
    size = win.size()
    for _ in range(6):
        before = win.font_scale
        win.bigger_action.trigger()
        assert win.size() == size, (win.size(), size)
        need = win.minimumSizeHint()
        if win.font_scale > before:  # taken: its contents fit the screen, or the window as it is
            assert need.height() <= max(screen.height(), size.height())
            assert need.width() <= max(screen.width(), size.width())
        else:
            assert "would not fit the window on this screen" in win.statusBar().currentMessage()
    for _ in range(8):
        win.smaller_action.trigger()
        assert win.size() == size
