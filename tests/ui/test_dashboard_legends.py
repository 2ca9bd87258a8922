"""Plot legends: beside their plot (never over a curve: the waits legend covered most of the waits plot), the
same room on every plot so the time axes line up, clear of the marker labels, and laid out after stage mode
exactly as before it."""

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QApplication

from tunebench.core.interval import Event
from tunebench.store.synthetic import WAITS, record
from tunebench.ui.dashboard import Dashboard
from tunebench.ui.theme import THEMES
from tunebench.ui.timeline import Timeline


def _fill(tl: Timeline, seconds: int = 25, t0: float = 1000.0) -> None:
    """A demo's data: a climbing TPS, noisy waits of eight instruments (the top six and 'other' shown), CPU."""
    rng = np.random.default_rng(1)
    for s in range(seconds):
        values = {"client.main.tps": 6000.0 + 50 * s, "client.main.qps": 6000.0, "client.main.lat.p95": 5 + s / 5,
                  "client.main.lat.p99": 9 + s / 4, "client.main.threads": 16, "server.questions": 6000.0,
                  "server.threads_running": 12, "host.local.cpu.user": 70.0, "host.local.cpu.system": 20.0,
                  "host.local.cpu.iowait": 1.0, "proc.local.server.cpu": 30.0, "proc.local.client.cpu": 20.0}
        values.update({f"waits.{w}.ms": 10.0 * (i + 1) * rng.uniform(0.7, 1.3) for i, w in enumerate(WAITS)})
        values["waits.other.ms"] = 5.0
        values["table.total.mb"] = 240.0 + 3 * s  # the tables probe: the data set grows
        tl.add(t0 + s, values)
    tl.add_event(Event(t0 + 3, "step_start", "step 1: main=4"))
    tl.add_event(Event(t0 + 19, "knob", "innodb_flush_log_at_trx_commit = 2"))


# a dashboard whose TPS plot keeps two rows of labels clear above its curves (an 860 px one keeps one row: the
# labels take at most MAX_SHARE of a plot's height, see test_layout_room)
TWO_ROWS = 1200


def _dashboard(qtbot, width: int, height: int = 860) -> Dashboard:
    d = Dashboard(Timeline(), THEMES["light"])
    qtbot.addWidget(d)
    d.resize(width, height)
    d.show()
    qtbot.waitExposed(d)
    d.timer.stop()
    _fill(d.timeline)
    d.redraw()
    QApplication.processEvents()  # the legends' and the plots' layout done
    return d


def _legend_rect(p) -> QRectF:
    return p.plot.legend.sceneBoundingRect()


def _drawn_points(p) -> list[pg.Point]:
    """Every point of the panel's curves inside its visible range, in scene coordinates."""
    (x0, x1), (y0, y1) = p.view.viewRange()
    out = []
    for curve in p.curves.values():
        x, y = curve.getData()
        keep = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
        out += [p.view.mapViewToScene(pg.Point(float(a), float(b))) for a, b in zip(x[keep], y[keep], strict=True)]
    return out


@pytest.mark.parametrize("width", [520, 640, 1000, 1600])
def test_no_legend_covers_a_curve(qtbot, width):
    d = _dashboard(qtbot, width)
    legends = [_legend_rect(p) for p in d.panels]
    assert all(p.plot.legend.items for p in d.panels)
    for p in d.panels:
        points = _drawn_points(p)
        assert len(points) > 20, p.title
        for rect in legends:
            covered = [pt for pt in points if rect.contains(pt)]
            assert not covered, (p.title, rect.getRect(), covered[:3])


@pytest.mark.parametrize("width", [520, 640, 1000])
def test_every_legend_is_beside_its_plot_and_the_time_axes_line_up(qtbot, width):
    d = _dashboard(qtbot, width)
    shown = QRectF(d.graphics.mapToScene(d.graphics.viewport().rect()).boundingRect())
    for p in d.panels:
        view = p.view.sceneBoundingRect()
        legend = _legend_rect(p)
        assert p.plot.legend.items, p.title
        assert legend.width() > 40 and legend.height() > 10, (p.title, legend.getRect())
        assert not view.intersects(legend), (p.title, view.getRect(), legend.getRect())
        assert legend.left() >= view.right() and shown.contains(legend), (p.title, legend.getRect())
        assert p.plot.sceneBoundingRect().contains(legend), p.title
    # one second is at one screen x on every plot: the hover line is straight
    assert len({(round(p.view.sceneBoundingRect().left(), 1), round(p.view.sceneBoundingRect().right(), 1))
                for p in d.panels}) == 1


def test_a_short_plot_lists_what_fits_and_counts_the_rest(qtbot):
    d = _dashboard(qtbot, 1000, height=560)
    waits = d.panels[4]
    legend = waits.plot.legend
    shown = [label for _s, label in legend.items if label.isVisible()]
    assert len(legend.items) == 7 and 1 <= len(shown) < 7
    assert legend.more.isVisible() and legend.more.text == f"+{7 - len(shown)} more"
    assert _legend_rect(waits).bottom() <= waits.view.sceneBoundingRect().bottom() + 1


@pytest.mark.parametrize("width", [640, 1000, 1400])
def test_no_legend_covers_a_marker_label(qtbot, width):
    d = _dashboard(qtbot, width, TWO_ROWS)
    labelled = 0
    for p in d.panels:
        for line in p.markers:
            label = getattr(line, "label", None)
            if label is None or not label.isVisible():
                continue
            labelled += 1
            rect = label.sceneBoundingRect()
            assert not rect.intersects(_legend_rect(p)), (p.title, label.toPlainText(), rect.getRect(),
                                                          _legend_rect(p).getRect())
            assert p.view.sceneBoundingRect().contains(rect.center()), (p.title, label.toPlainText())
    assert labelled == 3  # TPS: the step and the knob; latency: the knob


def _legend_layout(d: Dashboard) -> dict:
    out = {}
    for p in d.panels:
        legend = p.plot.legend
        out[p.title] = (round(legend.width(), 1), round(legend.height(), 1),
                        [(round(lab.pos().x(), 1), round(lab.pos().y(), 1)) for _s, lab in legend.items
                         if lab.isVisible()], legend.more.isVisible() and legend.more.text)
    return out


def test_legends_are_laid_out_as_before_after_stage(win, qtbot):
    sid = record(win.store, 60, 40, knob_at=30)
    win.open_replay(sid)
    win.dashboard.redraw()
    qtbot.waitExposed(win)
    QApplication.processEvents()
    before = _legend_layout(win.dashboard)
    win.stage.set(True, full_screen=False)
    win.dashboard.redraw()
    QApplication.processEvents()
    win.stage.set(False)
    QApplication.processEvents()
    after = _legend_layout(win.dashboard)
    assert after == before


@pytest.mark.parametrize(("theme", "scale", "width"),
                         [("light", 1.0, 1400), ("light", 1.0, 900), ("light", 1.0, 760), ("stage", 1.8, 1400)])
def test_no_curve_crosses_a_marker_label(qtbot, theme, scale, width):
    """Knob labels sat at a fixed 72 % of the plot's height and the TPS curve ran through them (the README's
    screenshot). Labels now share a row at the top and the curves keep below it (a label on a plot too short to
    keep clear is drawn over the curves in a filled box); a knob label that would be cut at the plot's left
    edge goes right of its line (the README's demo picture cut "flush_log_at_trx_commit = 2 · 1.28x ...").
    Since issue 30 (item 14) no label is drawn over a curve at any size: rows that do not fit hide."""
    d = _dashboard(qtbot, width, int(TWO_ROWS * scale))  # (stage's bigger labels: as much taller a plot)
    t0 = 1000.0
    # a verdict joins its change's label; one without a change on the plot gets a label of its own
    d.timeline.add_event(Event(t0 + 19, "verdict", "innodb_flush_log_at_trx_commit 1 → 2: 1.15x TPS (CI 1.05-1.25)",
                               {"verdict": None}))
    d.timeline.add_event(Event(t0 + 4, "knob", "innodb_io_capacity = 400"))
    d.timeline.add_event(Event(t0 + 12, "drift", "server variables changed outside Tunebench (during step 1): "
                               "sync_binlog 1 → 0", {"drift": [{"name": "sync_binlog", "from": "1", "to": "0"}]}))
    d.timeline.add_event(Event(t0 + 23, "verdict", "innodb_io_capacity 200 → 400: 1.01x TPS (CI 0.95-1.06)",
                               {"verdict": None}))
    d.set_appearance(THEMES[theme], scale)
    d.redraw()
    QApplication.processEvents()
    top_row = 0
    for p in d.panels:
        points = _drawn_points(p)
        for line in p.markers:
            label = getattr(line, "label", None)
            if label is None or not label.isVisible():
                continue
            rect = label.sceneBoundingRect()
            assert p.view.sceneBoundingRect().contains(rect), (p.title, label.toPlainText())
            assert all(line.zValue() > c.zValue() for c in p.curves.values())
            assert label.fill.color().alpha() >= 235  # where a short plot leaves no room: the curve only a shade
            assert not any(pt.y() <= rect.bottom() for pt in points if rect.left() <= pt.x() <= rect.right()), \
                (p.title, label.toPlainText())
            top_row += 1
    # TPS: the drift, the knobs (one with its verdict), the lone verdict, the step if two rows leave it room;
    # latency: the knobs
    assert top_row >= 5
    drift = next(line for line in d.panels[0].markers if getattr(line, "kind", "") == "drift")
    assert drift.label.isVisible() and drift.label.toPlainText() == "changed outside Tunebench: sync_binlog"
    knob = next(line for line in d.panels[0].markers if getattr(line, "kind", "") == "knob")
    assert knob.label.toPlainText() == "flush_log_at_trx_commit = 2 · no verdict"  # (the event carries none)


def test_where_a_step_began_measuring_is_on_the_plot(qtbot):
    """A step whose connections took seconds to open is measured from then on: that moment is a dotted line
    labelled on the TPS plot. The second in which a step's connections open is not worth a line."""
    from PySide6.QtCore import Qt

    d = _dashboard(qtbot, 1400, TWO_ROWS)
    t0 = 1000.0
    ramp = {"step": 1, "measure_from": t0 + 4, "open": 4, "asked": 4}
    assert d.timeline.add_event(Event(t0 + 4, "ramp", "step 1: 4 of 4 connections open after 1 s; measured from "
                                      "here", {**ramp, "seconds": 1})) is None
    m = d.timeline.add_event(Event(t0 + 9, "ramp", "step 1: 4 of 4 connections open after 6 s; measured from here",
                                   {**ramp, "seconds": 6}))
    assert m is not None and m.label == "measured: 4 open after 6 s"
    capped = d.timeline.add_event(Event(t0 + 15, "ramp", "step 2: 2 of 4 connections open after 5 s; the others "
                                        "did not open: measured with those from here", {**ramp, "open": 2,
                                                                                        "seconds": 5}))
    assert capped is not None and capped.label == "measured with 2 of 4 connections"
    d.redraw()
    QApplication.processEvents()
    lines = [line for line in d.panels[0].markers if getattr(line, "kind", "") == "ramp"]
    assert len(lines) == 2 and all(line.pen.style() == Qt.PenStyle.DotLine for line in lines)
    assert {line.label.toPlainText() for line in lines if line.label.isVisible()} >= {"measured: 4 open after 6 s"}
    # every plot has the lines, on the same x (one timeline)
    xs = [sorted(ln.value() for ln in p.markers if getattr(ln, "kind", "") == "ramp") for p in d.panels]
    assert all(x == xs[0] for x in xs) and xs[0][1] - xs[0][0] == 6.0, xs
