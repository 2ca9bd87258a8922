"""The History tab (ui/history_view.py): a series' headline over time with its change point, busy sessions
hollow and left out, read off the GUI thread; a click replays a session, Ctrl+click two compares them; Ctrl+H
brings it, on stage too."""

from __future__ import annotations

from PySide6.QtGui import QKeySequence
from tests.unit.test_history import twelve_sessions as twelve


def test_the_history_tab_shows_the_series_and_its_change_point(win, qtbot):
    ids = twelve(win.store)
    view = win.history
    # Ctrl+H: an action of the window itself (the menus are hidden on stage)
    next(a for a in win.actions() if a.shortcut() == QKeySequence("Ctrl+H")).trigger()
    assert win.central.currentWidget() is view
    qtbot.waitUntil(lambda: not view.loading and view.current is not None, timeout=20000)
    assert view.pick.count() == 1 and "12 session(s), 1 change(s)" in view.pick.itemText(0)
    assert view.load_pick.currentText() == "4 thr"
    assert f"improvement between sessions {ids[5]} and {ids[6]}" in view.changes.text()
    assert "innodb_flush_log_at_trx_commit: 1 | 2" in view.changes.text()
    # the drawn points: every session, the busy one too (hollow), and one change-point line
    assert sorted(p[2] for p in view._points) == sorted(ids)
    items = view.plot.getPlotItem().items
    assert sum(type(i).__name__ == "InfiniteLine" for i in items) == 1
    hollow = [i for i in items if type(i).__name__ == "PlotDataItem" and i.opts.get("symbolBrush") is None]
    assert len(hollow) == 1 and list(hollow[0].yData) == [p[1] for p in view._points if p[2] == ids[3]]
    # a filter that matches nothing, then one that does
    view.filter.setText("tpcc")
    assert view.pick.count() == 0 and view.title.text() == "no series matches the filter"
    view.filter.setText("update_index 4 thr")
    assert view.pick.count() == 1 and view.current is not None
    # clicks: replay one; Ctrl picks one, then compares two
    with qtbot.waitSignal(view.open_session, timeout=2000) as opened:
        view.pick_session(ids[0], False)
    assert opened.args == [ids[0]]
    with qtbot.waitSignal(view.compare_requested, timeout=2000) as compared:
        view.pick_session(ids[5], True)
        view.pick_session(ids[6], True)
    assert compared.args == [[ids[5], ids[6]]]


def test_history_on_stage_and_dark_theme(win, qtbot):
    twelve(win.store)
    win.stage.set(True)
    try:
        win.show_history()
        qtbot.waitUntil(lambda: not win.history.loading and win.history.current is not None, timeout=20000)
        assert win.history.isVisible() and not win.stage.help.isVisible()  # the keys card put away
        win.show_history()  # the same key: back to the dashboard (no tab bar on stage)
        assert win.central.currentIndex() == 0
    finally:
        win.stage.set(False)
    win.set_theme("dark")
    assert win.history.plot.backgroundBrush().color().name() == "#15181c"
    win.set_theme("light")
    assert win.history.plot.backgroundBrush().color().name() == "#ffffff"


def test_an_empty_store_says_what_history_needs(win, qtbot):
    win.show_history()
    qtbot.waitUntil(lambda: not win.history.loading, timeout=20000)
    assert win.history.title.text().startswith("no series yet") and not win.history._points
