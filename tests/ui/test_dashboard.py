"""The dashboard on its own: following, linking, budgeted redraws, readouts that never resize the window."""

import pyqtgraph as pg

from tunebench.core.interval import Event
from tunebench.ui.dashboard import FOLLOW_STEP, TOP_WAITS, Dashboard
from tunebench.ui.theme import THEMES
from tunebench.ui.timeline import Timeline


def _fill(tl: Timeline, seconds: int, t0: float = 1000.0, waits: int = 10) -> None:
    for s in range(seconds):
        values = {"client.main.tps": 100.0 + s, "client.main.qps": 2000.0 + s, "client.main.lat.p95": 1.5,
                  "client.main.lat.p99": 2.5, "client.main.threads": 8, "server.questions": 2000.0 + s,
                  "server.threads_running": 5, "host.local.cpu.user": 40.0, "host.local.cpu.system": 20.0,
                  "host.local.cpu.iowait": 1.0, "proc.local.server.cpu": 60.0, "proc.local.client.cpu": 30.0}
        values.update({f"waits.mutex/m{i}.ms": float(i + 1) for i in range(waits)})
        tl.add(t0 + s, values)


def _dashboard(qtbot) -> Dashboard:
    d = Dashboard(Timeline(), THEMES["light"])
    qtbot.addWidget(d)
    d.resize(1000, 800)
    d.show()
    d.timer.stop()  # the test drives the ticks
    return d


def test_ticks_draw_everything_one_panel_at_a_time_within_budget(qtbot):
    d = _dashboard(qtbot)
    tl = d.timeline
    _fill(tl, 30)
    tl.add_event(Event(1010.0, "knob", "innodb_spin_wait_delay 6 -> 24"))
    for _ in range(60):
        d._update_step()
    assert all(p.version == tl.version for p in d.panels)
    assert all(len(p.markers) == 1 for p in d.panels)
    waits = d.panels[4]
    assert len(waits.curves) == TOP_WAITS  # the six busiest of ten
    assert set(waits.curves) == {f"waits.mutex/m{i}.ms" for i in range(4, 10)}
    # while following, each panel scrolled itself to the same window
    ranges = {tuple(round(v, 6) for v in p.view.viewRange()[0]) for p in d.panels}
    assert len(ranges) == 1


def test_a_close_newcomer_does_not_displace_a_shown_wait(qtbot):
    d = _dashboard(qtbot)
    tl = d.timeline
    _fill(tl, 10, waits=6)
    d.redraw()
    tl.add(1010.0, {"waits.mutex/m9.ms": 7.0})  # busier than m0 (total 10) but not by 25 %: stays out
    d.redraw()
    assert "waits.mutex/m9.ms" not in d.panels[4].curves
    tl.add(1011.0, {"waits.mutex/m9.ms": 100.0})
    d.redraw()
    assert "waits.mutex/m9.ms" in d.panels[4].curves and "waits.mutex/m0.ms" not in d.panels[4].curves


def test_manual_zoom_stops_following_and_links_the_plots(qtbot):
    d = _dashboard(qtbot)
    _fill(d.timeline, 30)
    d.redraw()
    assert d.follow_box.isChecked()
    vb = d.panels[2].view
    vb.setXRange(5, 15, padding=0)
    vb.sigRangeChangedManually.emit([True, True])  # what a wheel or drag emits
    assert not d.follow_box.isChecked()
    for p in d.panels:
        lo, hi = p.view.viewRange()[0]
        assert abs(lo - 5) < 0.5 and abs(hi - 15) < 0.5
    d.panels[0].view.setXRange(20, 25, padding=0)  # linked again: the others follow the first
    lo, hi = d.panels[5].view.viewRange()[0]
    assert abs(lo - 20) < 0.5 and abs(hi - 25) < 0.5
    d.follow_box.setChecked(True)
    d.redraw()
    assert all(p.view.linksBlocked for p in d.panels)


def test_readouts_never_change_the_dashboard_size_hints(qtbot):
    d = _dashboard(qtbot)
    tl = d.timeline
    _fill(tl, 3)
    d.redraw()
    before = (d.minimumSizeHint(), d.sizeHint())
    tl.add(1003.0, {"client.main.tps": 1234567.0, "client.main.qps": 98765432.0, "client.main.lat.p95": 12345.67})
    d.redraw()
    assert d.tps_label.text() == "TPS 1,234,567"
    assert (d.minimumSizeHint(), d.sizeHint()) == before
    assert d.tps_label.minimumWidth() >= d.tps_label.sizeHint().width()  # the value fits its label


def test_the_x_links_are_pyqtgraph_links(qtbot):
    d = _dashboard(qtbot)
    first = d.panels[0].view
    assert all(p.view.linkedView(pg.ViewBox.XAxis) is first for p in d.panels[1:])


def _x_ranges(d: Dashboard) -> set[tuple[float, float]]:
    return {tuple(round(v, 9) for v in p.view.viewRange()[0]) for p in d.panels if p.plot.isVisible()}


def _marker_scene_x(d: Dashboard, index: int) -> set[float]:
    """Where a marker's line is drawn on each plot (scene pixels): one timeline, one x."""
    out = set()
    for p in d.panels:
        if p.plot.isVisible() and len(p.markers) > index:
            line = p.markers[index]
            out.add(round(p.view.mapViewToScene(pg.Point(line.value(), 0)).x(), 1))
    return out


def test_every_plot_shows_the_same_x_range_at_every_tick_while_following(qtbot):
    d = _dashboard(qtbot)
    tl = d.timeline
    _fill(tl, 20)
    tl.add_event(Event(1012.5, "knob", "innodb_spin_wait_delay 6 -> 24"))
    d.redraw()
    for s in range(20, 60):  # live: a second of data arrives between ticks, one panel redraws per tick
        tl.add(1000.0 + s, {"client.main.tps": 100.0, "client.main.lat.p95": 1.5, "waits.mutex/m1.ms": 2.0})
        for _ in range(3):
            d._update_step()
            assert len(_x_ranges(d)) == 1, _x_ranges(d)
    _lo, hi = next(iter(_x_ranges(d)))
    assert tl.x_max + 1 <= hi < tl.x_max + 1 + FOLLOW_STEP and hi % FOLLOW_STEP == 0  # pages ahead, all together
    assert len(_marker_scene_x(d, 0)) == 1, _marker_scene_x(d, 0)
    # stage: three plots, the same rule
    d.show_only(["TPS", "latency ms", "waits ms/s"], 2.0)
    tl.add(1060.0, {"client.main.tps": 100.0})
    d._update_step()
    assert len(_x_ranges(d)) == 1 and len(_marker_scene_x(d, 0)) == 1


def test_a_tpcc_group_is_one_line_and_one_readout_not_six(qtbot):
    """Per transaction type series (client.main.trx.new_order.tps, ...) end in .tps too: they were summed into
    the TPS readout and drawn as more groups in the TPS and latency plots."""
    from tunebench.core.interval import Interval

    d = _dashboard(qtbot)
    for s in range(3):
        d.timeline.add_interval(Interval(1000.0 + s, "main", 8, 100.0, 2500.0, 1200.0, 1100.0, 200.0,
                                         {"p95": 20.0, "p99": 30.0},
                                         trx={"new_order": {"tps": 45.0, "lat.p95": 40.0},
                                              "payment": {"tps": 55.0, "lat.p95": 9.0}}))
    d.redraw()
    assert d.tps_label.text() == "TPS 100" and d.p95_label.text() == "p95 20.00 ms"
    assert set(d.panels[0].curves) == {"client.main.tps"}
    assert set(d.panels[2].curves) == {"client.main.lat.p95", "client.main.lat.p99"}
    assert "client.main.trx.new_order.tps" in d.timeline.series  # kept: the store and exports have them


def test_client_errors_show_up_to_the_head_and_hide_when_there_are_none(qtbot):
    """Issue 30 item 5: a run's JSON had 1-5 errors per step; the window showed none."""
    import numpy as np

    d = _dashboard(qtbot)
    tl = d.timeline
    _fill(tl, 10)
    d.bar.update_from(tl)
    assert d.bar.errors_label.isHidden()
    tl.load(1000.0, {"client.main.tps": (np.arange(1000.0, 1010.0), np.full(10, 100.0)),
                     "client.main.errors": (np.arange(1000.0, 1010.0), np.array([0, 0, 0, 2, 0, 0, 3, 0, 0, 0.0])),
                     # by server error code (issue 44 item 4), summing to the errors
                     "client.main.errcode.1213": (np.arange(1000.0, 1010.0),
                                                  np.array([0, 0, 0, 2, 0, 0, 1, 0, 0, 0.0])),
                     "client.main.errcode.1205": (np.arange(1000.0, 1010.0),
                                                  np.array([0, 0, 0, 0, 0, 0, 2, 0, 0, 0.0]))},
            [])
    d.bar.update_from(tl)
    assert d.bar.errors_label.isVisible() and d.bar.errors_label.text() == "errors 5 in the session"
    assert d.bar.errors_label.toolTip().endswith("by server error code: 1213 deadlock: 3, 1205 lock wait timeout: 2")
    tl.seek(4.5)  # a replay's head before the second burst: only what it has passed
    d.bar.update_from(tl)
    assert d.bar.errors_label.text() == "errors 2 in the session"
    assert d.bar.errors_label.toolTip().endswith("by server error code: 1213 deadlock: 2")
    tl.seek(2.0)
    d.bar.update_from(tl)
    assert d.bar.errors_label.isHidden()
