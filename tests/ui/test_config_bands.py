"""Sweep configurations as shaded bands with one readable label each, on the top plot only, clear of the step
labels; the step labels in the plot's foreground and the stage font."""

import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QApplication

from tunebench.core.interval import Event
from tunebench.ui.bands import band_names
from tunebench.ui.dashboard import Dashboard
from tunebench.ui.theme import THEMES
from tunebench.ui.timeline import Timeline

CONFIGS = ["innodb_flush_log_at_trx_commit=1, sync_binlog=1", "innodb_flush_log_at_trx_commit=2, sync_binlog=0",
           "innodb_flush_log_at_trx_commit=0, sync_binlog=0"]


def _sweep(tl: Timeline, t0: float = 1000.0) -> None:
    """Three configurations of 40 s, each with steps of 4 and 16 threads."""
    for s in range(120):
        c, within = divmod(s, 40)
        if within == 0:
            tl.add_event(Event(t0 + s, "config", f"configuration {c + 1}: {CONFIGS[c]}"))
        if within in (0, 20):
            n = 4 if within == 0 else 16
            tl.add_event(Event(t0 + s + 0.2, "step_start", f"step {2 * c + (within == 20) + 1}: main={n}"))
        tl.add(t0 + s, {"client.main.tps": 1000.0 * (c + 1), "client.main.lat.p95": 2.0,
                        "client.main.threads": 4.0})


@pytest.fixture
def dashboard(qtbot):
    d = Dashboard(Timeline(), THEMES["light"])
    qtbot.addWidget(d)
    d.resize(1600, 1100)  # a TPS plot with room for the band names and a row of step labels above its curves
    d.show()
    qtbot.waitExposed(d)
    d.timer.stop()
    _sweep(d.timeline)
    d.redraw()
    QApplication.processEvents()
    return d


def test_each_configuration_is_one_band_with_one_label_on_the_top_plot(dashboard):
    top = dashboard.panels[0]
    for p in dashboard.panels:
        assert [(b.start, b.end) for b in p.bands] == [(1.0, 41.0), (41.0, 81.0), (81.0, 120.0)], p.title
        assert len(p.markers) == len(dashboard.timeline.markers)
        if p is not top:
            assert all(b.label is None for b in p.bands), p.title
    labels = [b.label for b in top.bands]
    assert all(lab is not None and lab.isVisible() for lab in labels)
    texts = [lab.text for lab in labels]
    # the knobs, readable (innodb_ dropped, as on knob labels), with the full name on the label's tooltip
    for k, (text, value) in enumerate(zip(texts, "120", strict=True)):
        knobs = f"flush_log_at_trx_commit={value}"
        assert text.startswith((f"configuration {k + 1}: {knobs}", f"{k + 1}: {knobs}")), texts
    assert labels[1].toolTip() == "configuration 2: innodb_flush_log_at_trx_commit=2, sync_binlog=0"
    rects = [lab.sceneBoundingRect() for lab in labels]
    view = top.view.sceneBoundingRect()
    for k, rect in enumerate(rects):
        assert view.contains(rect)
        band = top.bands[k]
        assert top.view.mapViewToScene(pg.Point(band.start, 0)).x() <= rect.left()
        assert rect.right() <= top.view.mapViewToScene(pg.Point(band.end, 0)).x()
        if k:
            assert rects[k - 1].right() <= rect.left()  # side by side, never stacked over each other
    # the step labels sit below the band names, not on them
    steps = [line.label.sceneBoundingRect() for line, kind in top.labelled if kind == "step" and line.label.isVisible()]
    assert len(steps) == 6
    for s in steps:
        assert not any(s.intersects(r) for r in rects)


def test_bands_follow_a_replay_seeking_back(dashboard):
    tl = dashboard.timeline
    tl.all_markers = list(tl.markers)
    tl.seek(60.0)
    dashboard.redraw()
    assert [(b.start, b.end) for b in dashboard.panels[0].bands] == [(1.0, 41.0), (41.0, 60.0)]


def test_step_labels_are_readable_on_stage(dashboard):
    dashboard.set_appearance(THEMES["stage"], 1.8)
    QApplication.processEvents()
    top = dashboard.panels[0]
    for line, kind in top.labelled:
        assert line.label.textItem.font().pointSizeF() == pytest.approx(9 * 1.8)
        if kind == "step":
            assert line.label.color.name() == THEMES["stage"].plot_foreground
    for band in top.bands:
        assert band.label.font.pointSizeF() == pytest.approx(9 * 1.8)
        assert band.label.fg.name() == THEMES["stage"].plot_foreground


def test_band_names_leave_out_what_every_configuration_shares():
    labels = [f"configuration {k + 1}: log_bin=ON, sync_binlog={v}" for k, v in enumerate((0, 1, 100))]
    assert band_names(labels) == [("configuration 1: sync_binlog=0", "1: sync_binlog=0"),
                                  ("configuration 2: sync_binlog=1", "2: sync_binlog=1"),
                                  ("configuration 3: sync_binlog=100", "3: sync_binlog=100")]
    assert band_names(labels[:1]) == [("configuration 1: log_bin=ON, sync_binlog=0", "1: log_bin=ON, sync_binlog=0")]
    assert band_names(["configuration 1: as configured", "configuration 2: as configured"]) == [
        ("configuration 1: as configured", "1: as configured"), ("configuration 2: as configured", "2: as configured")]


def test_overlapping_step_labels_show_one(qtbot):
    """Steps a second apart on a wide range: their labels would be drawn over each other; one of them shows."""
    d = Dashboard(Timeline(), THEMES["light"])
    qtbot.addWidget(d)
    d.resize(800, 1300)  # room for two rows of labels above the curves (on a short plot, one: test_layout_room)
    d.show()
    d.timer.stop()
    for s in range(300):
        d.timeline.add(1000.0 + s, {"client.main.tps": 100.0})
    d.timeline.add_event(Event(1100.0, "step_start", "step 1: main=4"))
    d.timeline.add_event(Event(1101.0, "restart", "sandbox restarted: innodb_log_file_size (7 s)"))
    d.timeline.add_event(Event(1200.0, "step_start", "step 2: main=16"))
    d.redraw()
    QApplication.processEvents()
    d.timeline.add_event(Event(1101.5, "mark", "checkpoint"))
    d.redraw()
    QApplication.processEvents()
    visible = [line.label for line, _k in d.panels[0].labelled if line.label.isVisible()]
    shown = [label.toPlainText() for label in visible]
    # the step labels stay in the first row, the mark's goes to the second, the restart's has no room left
    assert shown == ["main=4", "main=16", "checkpoint"]
    rects = [label.sceneBoundingRect() for label in visible]
    assert not any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:])
    d.set_x_range(100.0, 104.0)  # zoomed in: room for both
    QApplication.processEvents()
    shown = [line.label.toPlainText() for line, _k in d.panels[0].labelled if line.label.isVisible()]
    assert "main=4" in shown and any(t.startswith("sandbox restarted") for t in shown) and "checkpoint" in shown


def test_the_hover_title_names_the_configuration(dashboard):
    dashboard.crosshair.show_at(50.0)
    box = dashboard.crosshair._items[dashboard.panels[0].view][1]
    assert box.header == "50 s · 2: flush_log_at_trx_commit=2, sync_binlog=0"


def test_a_replayed_sweep_draws_its_last_band_to_the_end(qtbot):
    """Issue 46 item 9: replaying a whole sweep dropped the last configuration's band and label. A replay's
    markers come at once: past a frame's marker budget the rest are added by a later `update`, after the frame
    that set the data (and the last band's end) for this version -- the last band stayed zero wide."""
    import numpy as np

    d = Dashboard(Timeline(), THEMES["light"])
    qtbot.addWidget(d)
    d.resize(1600, 1100)
    d.show()
    qtbot.waitExposed(d)
    d.timer.stop()
    t0 = 1000.0
    events = [Event(t0 + 1, "config", f"configuration 1: {CONFIGS[0]}")]
    events += [Event(t0 + 2 + k, "knob", f"innodb_io_capacity = {200 + k}", {"name": "innodb_io_capacity"})
               for k in range(12)]  # more than a frame's budget of markers before the second configuration
    events.append(Event(t0 + 41, "config", f"configuration 2: {CONFIGS[1]}"))
    t = np.arange(t0, t0 + 80.0)
    d.timeline.load(t0, {"client.main.tps": (t, np.full(80, 1000.0))}, events)
    for _ in range(500):  # the window's frames: the data first, then what is left of the markers, panel by panel
        d._update_step()
        if all(p.version == d.timeline.version for p in d.panels):
            break
    for p in d.panels:
        assert [(b.start, b.end) for b in p.bands] == [(1.0, 41.0), (41.0, 79.0)], p.title
    assert d.panels[0].bands[1].label is not None and d.panels[0].bands[1].label.isVisible()
