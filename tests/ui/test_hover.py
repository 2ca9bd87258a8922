"""The hover readout: one line at the hovered second through every plot, each curve's value there equal to the
stored sample ("—" where a series has none), cheap (throttled, idle off the plots); in replay, stage, compare."""

import re

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF
from PySide6.QtGui import QEnterEvent
from PySide6.QtWidgets import QApplication

from tunebench.store.synthetic import record
from tunebench.ui.crosshair import NO_VALUE
from tunebench.ui.dashboard import Dashboard
from tunebench.ui.theme import THEMES
from tunebench.ui.timeline import Timeline


def _shown(value: str) -> tuple[float, int]:
    """'10,324 TPS' -> (10324.0, 0 decimals)."""
    number = re.match(r"[-+\d,.]+", value)
    assert number, value
    text = number.group(0).replace(",", "")
    return float(text), len(text.split(".")[1]) if "." in text else 0


def _hover(qtbot, dashboard, panel, x: float) -> None:
    """A real mouse move over `panel` at data x, then the readout's next tick."""
    scene_pos = panel.view.mapViewToScene(QPointF(x, 0))
    scene_pos.setY(panel.view.sceneBoundingRect().center().y())
    viewport = dashboard.graphics.viewport()
    pos = dashboard.graphics.mapFromScene(scene_pos)
    crosshair = dashboard.crosshair
    # Two moves, each waited for: Qt sends no move to where the mouse already is, and pyqtgraph's scene drops a
    # move closer than 10 ms to the one before (the readout's tick is 33 ms: the second always gets through).
    for dx in (5, 0):
        qtbot.mouseMove(viewport, QPoint(pos.x() + dx, pos.y()))
        want = x + dx * seconds_per_px(panel)
        qtbot.waitUntil(lambda want=want: crosshair.hovered_x is not None
                        and abs(crosshair.hovered_x - want) < 0.75 * seconds_per_px(panel), timeout=3000)


def seconds_per_px(panel) -> float:
    (x0, x1), _y = panel.view.viewRange()
    return (x1 - x0) / panel.view.width()


def _check_against_store(win, sid: int, at: float) -> None:
    """The line at the stored second nearest `at` on every plot; every value the stored sample there."""
    d = win.dashboard
    session = win.store.get_session(sid)
    t0 = float(session["started_at"])
    stored = win.store.series(sid)
    tps = stored["client.main.tps"]
    second = float(tps.t[np.argmin(np.abs(tps.t - t0 - at))] - t0)  # the stored second nearest the mouse
    assert d.crosshair.x == pytest.approx(second, abs=1e-9)
    shown = d._shown_panels()
    assert len(shown) >= 3
    checked = 0
    for p in shown:
        assert d.crosshair.line_x(p.view) == pytest.approx(second, abs=1e-6), p.title
        values = dict(d.crosshair.values[p.view])
        assert set(values) == {c.name() for c in p.curves.values()}, p.title
        for name, curve in p.curves.items():
            data = stored[name]
            j = int(np.argmin(np.abs(data.t - t0 - second)))
            assert abs(data.t[j] - t0 - second) < 0.5
            got, decimals = _shown(values[curve.name()])
            assert abs(got - data.v[j]) <= 0.5 * 10 ** -decimals + 1e-9, (p.title, name, values[curve.name()],
                                                                           data.v[j])
            checked += 1
    assert checked >= 10


def test_hover_shows_the_stored_sample_of_every_series_at_that_second(win, qtbot):
    sid = record(win.store, 120, 40, knob_at=60)
    win.open_replay(sid)
    d = win.dashboard
    d.redraw()
    qtbot.waitExposed(win)
    QApplication.processEvents()
    for panel, at in ((d.panels[0], 73.0), (d.panels[4], 31.2), (d.panels[5], 104.6)):
        _hover(qtbot, d, panel, at)
        _check_against_store(win, sid, d.crosshair.hovered_x)
    units = {p.title: d.crosshair.values[p.view][0][1].split(" ", 1)[1] for p in d._shown_panels()}
    assert units == {"TPS": "TPS", "QPS": "QPS", "latency ms": "ms", "threads": "threads", "waits ms/s": "ms/s",
                     "CPU %": "%", "data MB": "MB"}


def test_no_hover_on_stage_and_hover_at_a_plus_and_in_the_dark_theme(win, qtbot):
    """Issue 45: on stage a pointer resting on a plot brought hover boxes over the flip's label; none there now.
    Off stage the boxes follow the font scale (A+) and the theme."""
    from PySide6.QtCore import QPointF

    sid = record(win.store, 90, 40, knob_at=45)
    win.open_replay(sid)
    win.stage.set(True, full_screen=False)
    d = win.dashboard
    d.redraw()
    QApplication.processEvents()
    shown = d._shown_panels()
    assert [p.title for p in shown] != [p.title for p in d.panels]  # stage shows fewer plots
    d.graphics.scene().sigMouseMoved.emit(QPointF(shown[-1].view.sceneBoundingRect().center()))
    qtbot.wait(200)  # past the hover delay (HOVER_MS, 33 ms): nothing came
    assert d.crosshair.x is None and not any(box.isVisible() for _ln, box in d.crosshair._items.values())
    win.stage.set(False)
    for _ in range(3):  # 1.52x (each plot keeps 90 px times that: fewer of them in a 1600x1000 window)
        win.bigger_action.trigger()
    d.redraw()
    QApplication.processEvents()
    _hover(qtbot, d, d.panels[1], 50.0)
    _check_against_store(win, sid, d.crosshair.hovered_x)
    box = next(iter(d.crosshair._items.values()))[1]
    assert box.font.pointSizeF() == pytest.approx(9 * win.font_scale) and win.font_scale > 1.5
    win.set_theme("dark")
    d.redraw()
    QApplication.processEvents()
    _hover(qtbot, d, d.panels[1], 20.0)
    _check_against_store(win, sid, d.crosshair.hovered_x)
    assert box.fg.name() == THEMES["dark"].plot_foreground


def _fill(tl: Timeline, seconds: int, t0: float = 1000.0) -> None:
    for s in range(seconds):
        values = {"client.main.tps": 100.0 + s, "client.main.qps": 2000.0, "client.main.lat.p95": 1.5,
                  "client.main.threads": 8, "host.local.cpu.user": 40.0}
        if s != 10:  # p99 misses a second
            values["client.main.lat.p99"] = 2.5
        tl.add(t0 + s, values)


@pytest.fixture
def dashboard(qtbot):
    d = Dashboard(Timeline(), THEMES["light"])
    qtbot.addWidget(d)
    d.resize(1000, 800)
    d.show()
    qtbot.waitExposed(d)
    d.timer.stop()
    _fill(d.timeline, 30)
    d.redraw()
    QApplication.processEvents()
    return d


def test_a_series_without_a_sample_at_that_second_says_so(dashboard):
    latency = dashboard.panels[2]
    dashboard.crosshair.show_at(11.1)  # the timeline's x of second 10 is 11
    assert dashboard.crosshair.x == 11.0
    assert dict(dashboard.crosshair.values[latency.view]) == {"main p95": "1.50 ms", "main p99": NO_VALUE}
    assert dict(dashboard.crosshair.values[dashboard.panels[0].view]) == {"main": "110 TPS"}
    dashboard.crosshair.show_at(60.0)  # past the data: the line where the mouse is, no values
    assert dashboard.crosshair.x == 60.0
    assert dict(dashboard.crosshair.values[dashboard.panels[0].view]) == {"main": NO_VALUE}


def test_mouse_moves_are_throttled_and_nothing_runs_off_the_plots(dashboard, qtbot, monkeypatch):
    crosshair = dashboard.crosshair
    calls = []
    real = crosshair.show_at
    monkeypatch.setattr(crosshair, "show_at", lambda x: (calls.append(x), real(x)))
    view = dashboard.panels[0].view
    for x in np.linspace(5, 20, 50):  # a burst of moves within one tick
        pos = view.mapViewToScene(QPointF(float(x), 0))
        pos.setY(view.sceneBoundingRect().center().y())
        dashboard.graphics.scene().sigMouseMoved.emit(pos)
    qtbot.waitUntil(lambda: len(calls) == 1, timeout=1000)
    assert calls[0] == pytest.approx(20.0, abs=0.1)  # the latest position
    qtbot.wait(100)  # (no more ticks come: this waits for something that must not happen)
    assert len(calls) == 1
    # over an axis, not a plot: the line goes
    dashboard.graphics.scene().sigMouseMoved.emit(QPointF(2, 2))
    qtbot.waitUntil(lambda: crosshair.x is None, timeout=1000)
    assert not any(ln.isVisible() or box.isVisible() for ln, box in crosshair._items.values())
    # back over a plot, then out of the widget: the line goes, no timer left running
    dashboard.graphics.scene().sigMouseMoved.emit(pos)
    qtbot.waitUntil(lambda: crosshair.x is not None, timeout=1000)
    QApplication.sendEvent(dashboard.graphics.viewport(), QEvent(QEvent.Type.Leave))
    assert crosshair.x is None and not crosshair._timer.isActive()
    QApplication.sendEvent(dashboard.graphics.viewport(), QEnterEvent(QPointF(), QPointF(), QPointF()))


def test_compare_overlay_reads_each_session_at_the_aligned_second(win, qtbot):
    a = record(win.store, 80, 20, t0=1_790_000_000.0, seed=1)
    b = record(win.store, 80, 20, t0=1_790_050_000.0, tps=12_000.0, seed=2)
    win.store.update_session(b, name="the other one")
    win.compare_sessions([a, b])
    compare = win.compare
    qtbot.waitExposed(compare.overlay)
    QApplication.processEvents()
    crosshair = compare.crosshairs[0]
    view = compare.overlay.getPlotItem().getViewBox()
    crosshair.show_at(40.2)
    first = win.store.series(a, ["client.main.tps"])["client.main.tps"]
    t0 = float(win.store.get_session(a)["started_at"])
    second = float(first.t[np.argmin(np.abs(first.t - t0 - 40.2))] - t0)
    assert crosshair.x == pytest.approx(second) and crosshair.line_x(view) == pytest.approx(second, abs=1e-6)
    values = dict(crosshair.values[view])
    assert len(values) == 2
    for sid in (a, b):
        data = win.store.series(sid, ["client.main.tps"])["client.main.tps"]
        start = float(win.store.get_session(sid)["started_at"])
        j = int(np.argmin(np.abs(data.t - start - second)))
        got, decimals = _shown(values[compare._title(sid)])
        assert values[compare._title(sid)].endswith(" TPS")
        assert abs(got - data.v[j]) <= 0.5 * 10 ** -decimals + 1e-9
    # the legend beside the overlay, not over its curves
    legend = compare.overlay.getPlotItem().legend
    assert legend.items and not legend.sceneBoundingRect().intersects(view.sceneBoundingRect())
    # TPS vs threads: the value of every configuration at the hovered thread count
    compare.tabs.setCurrentIndex(1)
    curves = compare.crosshairs[1]
    curves.show_at(2.1)  # log2: 4 threads
    got = dict(curves.values[compare.curve_plot.getPlotItem().getViewBox()])
    assert curves.x == 2.0 and len(got) == 2
    assert all(v.endswith(" TPS") and v != NO_VALUE for v in got.values())


def test_every_box_stays_inside_its_plot(qtbot):
    d = Dashboard(Timeline(), THEMES["light"])
    qtbot.addWidget(d)
    d.resize(350, 800)  # a narrow dashboard: the boxes fit neither side of a line in the middle, some not at all
    d.show()
    qtbot.waitExposed(d)
    d.timer.stop()
    _fill(d.timeline, 30)
    d.redraw()
    QApplication.processEvents()
    for at in (3.0, 15.0, 29.0):
        d.crosshair.show_at(at)
        for p in d._shown_panels():
            ln, box = d.crosshair._items[p.view]
            assert ln.isVisible() and box.isVisible() == bool(p.curves), p.title  # (no waits in these data)
            rect = box.sceneBoundingRect()
            view = p.view.sceneBoundingRect()
            assert view.left() <= rect.left() and rect.right() <= view.right() + 0.5, (p.title, at)
            # names shortened to fit, values in full
            assert [v for _c, _n, v in box.rows] == [v for _n, v in d.crosshair.values[p.view]]
