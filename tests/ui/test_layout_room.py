"""Issue 30 item 14: the window's room as a sweep runs. Starting a sweep never resizes the window; the band,
step and knob labels on the TPS plot stay clear of its curves and of each other; a long A/B verdict wraps in the
Knobs dock without widening it; the REPLAY badge never covers p95; the axis-name completion tells variables
with a common prefix apart."""

import pytest
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QApplication

from tunebench.core.interval import Event
from tunebench.core.knobs import KnobInfo
from tunebench.core.stats import StepSummary
from tunebench.core.sweep import make_plan, parse_spec
from tunebench.run.records import StepResult
from tunebench.ui.dashboard import Dashboard
from tunebench.ui.theme import THEMES
from tunebench.ui.timeline import Timeline

KNOBS3 = ("innodb_flush_log_at_trx_commit", "innodb_io_capacity_max", "innodb_spin_wait_delay")
SPEC3 = """name = "look"
workload = "oltp_update_index"
threads = [4, 16]
step_seconds = 8
warmup_seconds = 0
baseline = { innodb_flush_log_at_trx_commit = 1 }
[options]
tables = 1
table_size = 10000
[axes]
innodb_flush_log_at_trx_commit = [1, 2, 0]
innodb_io_capacity_max = [2000, 4000]
innodb_spin_wait_delay = [4, 60]
"""


def settle(widget=None) -> None:
    """Let the layouts apply what they were asked (a dock's new minimum reaches the window this way); with
    `widget`, until its window's and its own geometry stop changing."""
    def geometry():
        return None if widget is None else (widget.window().size(), widget.size())
    for _ in range(20):
        before = geometry()
        for _ in range(3):
            QApplication.sendPostedEvents()
            QApplication.processEvents()
        if widget is None or geometry() == before:
            return


def summary(threads: int, tps: float) -> StepSummary:
    return StepSummary("main", threads, 10, tps, tps * 9, tps, 0.02, 1.0, 1e5 / tps, 2e5 / tps, 5.0, 0, 0, tps * 10)


def three_knob_plan():
    knobs = {"innodb_flush_log_at_trx_commit": KnobInfo("innodb_flush_log_at_trx_commit", "int", True, 0, 3,
                                                        current="1"),
             "innodb_io_capacity_max": KnobInfo("innodb_io_capacity_max", "int", True, 100, 10 ** 9, current="2000"),
             "innodb_spin_wait_delay": KnobInfo("innodb_spin_wait_delay", "int", True, 0, 6000, current="4")}
    return make_plan(parse_spec(SPEC3), knobs, dict.fromkeys(KNOBS3, "1"))


def test_starting_a_sweep_never_resizes_the_window(win, qtbot):
    """Seen under Xvfb: the Sweep results dock's one-line legend and leader (1,150 px of text) widened the
    window from 1,600 to 1,915 px as the sweep started."""
    win.resize(1600, 1000)
    settle()
    before = win.size()
    plan = three_knob_plan()
    c = win.controller
    c.sweep_planned.emit(plan)
    t = 1_790_000_000.0
    for i, config in enumerate(plan.configs[:3]):
        knobs = ", ".join(f"{k}={v}" for k, v in config.knobs.items())
        label = f"configuration {i + 1}: {knobs}"
        c.timeline_event.emit(Event(t + 20 * i, "config", label, {"config": i, "knobs": dict(config.knobs)}))
        c.step.emit(StepResult(2 * i, (summary(4, 10000.0 + i),), i))
        c.step.emit(StepResult(2 * i + 1, (summary(16, 20000.0 + 50 * i),), i))
    assert win.sweep_dock.isVisible()
    settle()
    assert win.sweep_results.leader.text() and win.sweep_results.legend.isVisible()
    assert win.size() == before
    assert win.minimumSizeHint().width() <= before.width()
    for tab in range(win.sweep_results.tables.count()):  # every table the user may pick
        win.sweep_results.tables.setCurrentIndex(tab)
        settle()
        assert win.size() == before, win.sweep_results.tables.tabText(tab)
    win.sweep_dock.hide()
    settle()
    win.sweep_results.reveal()  # shown again (a replay of a sweep): the same
    settle()
    assert win.size() == before


def _sweep_timeline(tl: Timeline, configs: int = 12, t0: float = 1000.0) -> None:
    """A sweep as recorded: configurations of two 8 s steps with long knob lists, the knob changes each brings,
    and a flip by hand in the middle of one step; TPS 10,000-20,000."""
    spin = "4"
    for s in range(16 * configs):
        c, within = divmod(s, 16)
        if within == 0:
            flush, cap, spin_now = ("1", "2", "0")[c // 4 % 3], ("2000", "4000")[c // 2 % 2], ("4", "60")[c % 2]
            tl.add_event(Event(t0 + s, "config", f"configuration {c + 1}: innodb_flush_log_at_trx_commit={flush}, "
                                                 f"innodb_io_capacity_max={cap}, innodb_spin_wait_delay={spin_now}"))
            if spin_now != spin:
                tl.add_event(Event(t0 + s + 0.1, "knob", f"innodb_spin_wait_delay = {spin_now}"))
                spin = spin_now
        if within in (0, 8):
            tl.add_event(Event(t0 + s + 0.2, "step_start", f"step {2 * c + (within == 8) + 1}: main="
                                                           f"{4 if within == 0 else 16}"))
        if c == 1 and within == 5:
            tl.add_event(Event(t0 + s, "knob", "innodb_flush_log_at_trx_commit = 2"))
        tps = (10000.0 if within < 8 else 20000.0) + 300.0 * (s % 3)
        tl.add(t0 + s, {"client.main.tps": tps, "client.main.qps": tps, "client.main.lat.p95": 2.0,
                        "client.main.lat.p99": 3.0, "client.main.threads": 4.0})


def _visible_labels(panel) -> list[tuple[str, QRectF]]:
    """The labels drawn: shown, and in the plot's visible part (a marker scrolled out of view is clipped)."""
    out = [(b.label.text, b.label.sceneBoundingRect()) for b in panel.bands
           if b.label is not None and b.label.isVisible()]
    out += [(line.label.format, line.label.sceneBoundingRect()) for line, _k in panel.labelled
            if line.label.isVisible()]
    view = panel.view.sceneBoundingRect()  # (the view box clips its children: what is drawn is inside it)
    return [(text, rect.intersected(view)) for text, rect in out if rect.intersects(view)]


def _curve_top(panel) -> float:
    """The highest scene y any curve reaches within the plot's visible x range (smaller y: higher up)."""
    (x0, x1), _ = panel.view.viewRange()
    top = float("inf")
    for curve in panel.curves.values():
        xs, ys = curve.getData()
        for x, y in zip(xs, ys, strict=True):
            if x0 <= x <= x1:
                top = min(top, panel.view.mapViewToScene(QPointF(float(x), float(y))).y())
    return top


@pytest.mark.parametrize("height", [560, 700, 1000])
def test_labels_on_the_plots_never_cover_the_curves_nor_each_other(qtbot, height):
    """Seen under Xvfb: on the TPS plot a sweep's band names, step and knob labels took three rows, more than
    the room kept for them above the curves (at most 45 % of the plot), and covered the TPS curve. Whatever the
    plot's height, the labels shown are apart and above every curve; the band names stay."""
    d = Dashboard(Timeline(), THEMES["light"])
    qtbot.addWidget(d)
    d.resize(1100, height)
    d.show()
    qtbot.waitExposed(d)
    d.timer.stop()
    _sweep_timeline(d.timeline)
    for _ in range(5):
        d.redraw()
        settle()
    for panel in d.panels:
        if not panel.labels:
            continue
        labels = _visible_labels(panel)
        top = _curve_top(panel)
        assert top < float("inf"), panel.title
        for i, (text, rect) in enumerate(labels):
            assert rect.bottom() <= top, (panel.title, text, rect.bottom(), top)  # above every curve
            for other, rect2 in labels[:i]:
                assert not rect.intersects(rect2), (panel.title, text, other)
        if panel is d.panels[0]:
            assert sum(b.label.isVisible() for b in panel.bands) >= 3  # the configurations keep their names
    # the knob changes keep their names: on the TPS plot where it has room for a row below the band names (a
    # short one has not: there, on the latency plot)
    knob_named = [p.title for p in d.panels if any(k == "knob" and line.label.isVisible() for line, k in p.labelled)]
    assert knob_named == (["TPS", "latency ms"] if height >= 1000 else ["latency ms"])


def _dock_of(win, widget):
    from PySide6.QtWidgets import QDockWidget

    w = widget
    while w is not None and not isinstance(w, QDockWidget):
        w = w.parentWidget()
    return w


@pytest.mark.parametrize("width", [1024, 1600, 1920])
def test_a_long_verdict_wraps_in_the_knobs_dock_and_shows_whole(win, qtbot, width):
    """Seen under Xvfb: the verdict's lines widened the Knobs dock and were cut at its edge ("…difference (C").
    The dock keeps its width; the text wraps in it, every line of it in sight."""
    from tunebench.core.verdict import Verdict, WaitShift

    win.resize(width, 1000)
    settle()
    knobs = win.knobs
    dock = _dock_of(win, knobs)
    before = (win.size(), dock.width())
    v = Verdict(8000.0, 8080.0, 1.01, 0.95, 1.06, 30, 30, 3, 1.91, 1.88, 3.12, 3.05,
                waits=(WaitShift("wait/synch/rwlock/innodb/fil_space_latch", 120.5, 118.25),
                       WaitShift("wait/synch/mutex/innodb/buf_pool_mutex", 80.0, 95.5),
                       WaitShift("wait/synch/rwlock/innodb/trx_purge_latch", 12.0, 30.75)))
    data = {"name": "innodb_adaptive_hash_index_parts", "from": "8", "to": "64", "group": "oltp_update_index",
            "verdict": v.to_dict(), "new_sessions_only": True}
    knobs.show_verdict(data)
    settle()
    assert (win.size(), dock.width()) == before
    label = knobs.result
    assert "no clear difference in TPS (1.01x, 95 % CI 0.95-1.06)" in label.text().replace("\n", " ")
    # the whole text in sight: inside the dock's visible width, as tall as its wrapped lines need
    visible = dock.widget().rect()
    shown = label.geometry().translated(label.parentWidget().mapTo(dock.widget(), label.pos()) - label.pos())
    assert visible.contains(shown), (shown, visible)
    assert label.heightForWidth(label.width()) <= label.height()
    fm = label.fontMetrics()
    assert all(fm.horizontalAdvance(word) <= label.width() for word in label.text().split())


def _assert_readouts_apart(bar) -> None:
    """Each readout, the badge, the state and follow inside the bar, none over another, each text whole."""
    widgets = [bar.tps_label, bar.qps_label, bar.p95_label, bar.badge, bar.state_label, bar.follow_box]
    rects = [w.geometry() for w in widgets]
    for i, (w, r) in enumerate(zip(widgets, rects, strict=True)):
        assert bar.rect().contains(r), (w.text(), r, bar.rect())
        for w2, r2 in zip(widgets[:i], rects[:i], strict=True):
            assert not r.intersects(r2), (w.text(), w2.text(), r, r2)
    for lab in (bar.tps_label, bar.qps_label, bar.p95_label, bar.badge):
        assert lab.fontMetrics().horizontalAdvance(lab.text()) <= lab.width(), (lab.text(), lab.width())


@pytest.mark.parametrize("width", [1024, 1280, 1600, 1920])
def test_the_replay_badge_never_covers_p95(win, qtbot, width):
    """Seen under Xvfb: in a replay the REPLAY badge sat over "p95 … ms". A replay opened from the Sessions tab
    fitted the readouts while the dashboard was hidden (as if the bar had all the room: full-size fonts), and
    nothing fitted them again once it showed. Beside each other at every window width, each text whole."""
    from tunebench.store.synthetic import record

    bar = win.dashboard.bar
    win.resize(width, 1000)
    settle(bar)
    sid = record(win.store, 60, 40, knob_at=30)
    win.central.setCurrentIndex(1)  # from the Sessions tab, as a double-click there opens it: the bar is hidden
    settle(bar)
    win.open_replay(sid)
    settle(bar)
    assert win.central.currentIndex() == 0 and win.dashboard.badge.isVisible()
    assert bar.p95_label.text().startswith("p95 ") and bar.p95_label.text() != "p95 — ms"
    _assert_readouts_apart(bar)
    tl = Timeline()  # a value wider than any before
    tl.add(1000.0, {"client.main.tps": 143670.8, "client.main.qps": 2873416.0, "client.main.lat.p95": 1234.56})
    bar.update_from(tl)
    settle()
    assert bar.p95_label.text() == "p95 1234.56 ms"
    _assert_readouts_apart(bar)


# the offscreen platform's own limits when a popup shows (it has no window manager to raise it or give it the keys)
@pytest.mark.qt_log_ignore("^This plugin does not support (raise|grabbing the keyboard)", extend=True)
def test_the_axis_name_completion_tells_long_names_apart(qtbot):
    """Seen under Xvfb: the completion list, as narrow as the axis-name field, cut two variables to the same
    "innodb_buffer_pool_…". Each entry shows as a text of its own: the list as wide as the longest name (within
    the screen), anything longer elided in the middle."""
    from PySide6.QtCore import Qt

    from tunebench.ui.sweep_panel import SweepPanel

    panel = SweepPanel()
    qtbot.addWidget(panel)
    panel.resize(390, 700)
    panel.show()
    qtbot.waitExposed(panel)
    names = ["innodb_buffer_pool_dump_at_shutdown", "innodb_buffer_pool_dump_now", "innodb_buffer_pool_dump_pct",
             "innodb_buffer_pool_load_at_startup", "performance_schema_events_statements_history_long_size",
             "performance_schema_events_statements_history_size", "sync_binlog"]
    panel.set_server(dict.fromkeys(names, "1"), {})
    assert panel.axis_name.width() < 200  # the field beside the values and the buttons: narrow
    for prefix, expected in (("innodb_buffer_pool_", 4), ("performance_schema_events_statements_h", 2)):
        panel.axis_name.setFocus()
        panel.axis_name.clear()
        qtbot.keyClicks(panel.axis_name, prefix)
        popup = panel.completer.popup()
        qtbot.waitUntil(popup.isVisible, timeout=5000)
        settle(popup)
        model = popup.model()
        fm = popup.fontMetrics()
        margin = 2 * popup.style().pixelMetric(popup.style().PixelMetric.PM_FocusFrameHMargin, None, popup) + 2
        shown = []
        for row in range(model.rowCount()):
            index = model.index(row, 0)
            text = model.data(index, Qt.ItemDataRole.DisplayRole)
            item = popup.visualRect(index)
            drawn = fm.elidedText(text, popup.textElideMode(), item.width() - margin)  # in the item's box
            visible = min(item.right(), popup.viewport().width()) - item.left() - margin  # the viewport clips it
            while drawn and fm.horizontalAdvance(drawn) > visible:
                drawn = drawn[:-1]
            shown.append(drawn)
        assert len(shown) == expected, shown
        assert len(set(shown)) == len(shown), shown  # distinct variables, distinct texts
        assert shown == [n for n in names if n.startswith(prefix)]  # here whole: the list fits the longest
        assert popup.geometry().right() <= popup.screen().availableGeometry().right()
        popup.hide()


def test_the_build_form_scrolls_instead_of_growing_the_window(win):
    """A 1600x1000 window grew to 1019 px once the Build form had one row more (the Rate field): the form now
    scrolls within its dock and sets no minimum height on the window."""
    win.resize(1600, 1000)
    assert win.minimumSizeHint().height() < 800
    assert win.size().height() == 1000


@pytest.mark.parametrize("bigger", [0, 2])
def test_the_plots_axis_titles_fit_along_their_axes(win, qtbot, bigger):
    """Seen under Xvfb with A+ twice: the left axes' titles ("latency ms", "waits ms/s", "threads") were longer than
    their plots were tall and ran into each other. Each title now fits along its axis (smaller, or elided, when
    the plot is short), and is whole again when there is room."""
    from PySide6.QtGui import QFontMetricsF

    from tunebench.store.synthetic import record

    win.resize(1600, 900)
    for _ in range(bigger):
        win.bigger_action.trigger()
    try:
        sid = record(win.store, 60, 40, knob_at=30)
        win.open_replay(sid)
        win.sweep_dock.show()  # as while a sweep runs: the plots share the height with its results
        settle(win.dashboard)
        shortened = []
        for p in win.dashboard.panels:
            ax = p.plot.getAxis("left")
            if not ax.isVisible():
                continue
            width = QFontMetricsF(ax.label.font()).horizontalAdvance(ax.labelText)
            assert width <= ax.geometry().height(), (p.title, width, ax.geometry().height())
            shortened += [p.title] if ax.labelText != p.title else []
        assert len(shortened) < len(win.dashboard.panels)  # TPS, QPS: whole at every size
    finally:
        for _ in range(bigger):
            win.smaller_action.trigger()
