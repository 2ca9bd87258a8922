"""Issue 45 item 1 and 3: the window on a projector (1024x768, 1280x720, 1280x800) and stage there.

- Compact layout: the five side docks in one tabbed column, the dashboard keeping most of the width (it kept
  ~390 of 1,280 px, its readouts ~8 px); the window's minimum fits the screen; a layout saved compact is not
  restored as such on a wide screen.
- Plots keep PLOT_MIN_HEIGHT each: fewer plots rather than all squeezed, the left-out ones named; the user
  chooses which (View > Plots, kept).
- Stage: every text in sight at least 1/TEXT_SHARE of the screen's height; the cards sit in the strip under
  the plots, never over a plot's data; no hover boxes; leaving puts the window back exactly.
- A flip's label stays on the TPS plot when rate changes are marked beside it.
"""

import re

import pytest
from PySide6.QtCore import QPointF, QRect, QSettings
from PySide6.QtGui import QFont, QFontInfo
from PySide6.QtWidgets import QCheckBox, QDockWidget, QLabel

from tunebench.core.interval import Event
from tunebench.store.synthetic import record
from tunebench.ui.dashboard import PLOT_MIN_HEIGHT
from tunebench.ui.legend import entry_font
from tunebench.ui.stage import TEXT_SHARE
from tunebench.ui.timeline import marker_of
from tunebench.ui.window_room import COMPACT_BELOW, SIDE_SHARE

from .test_layout_room import _assert_readouts_apart, settle

PROJECTORS = [(1024, 768), (1280, 720), (1280, 800)]
SIDE = ("dock-Targets", "dock-Build", "dock-Knobs", "dock-Events", "dock-Hot functions")


def docks(win) -> dict[str, QDockWidget]:
    return {d.objectName(): d for d in win.findChildren(QDockWidget)}


def on_a_screen(win, width: int, height: int) -> None:
    """The window as `tunebench gui` opens it on a screen of that size (its title bar and panel: 40 px): the
    layout for the screen's width first, then the size (ui/app.py)."""
    win.room.fit(width)
    win.resize(width, height - 40)
    settle(win.dashboard)


@pytest.mark.parametrize(("width", "height"), PROJECTORS)
def test_on_a_projector_the_dashboard_keeps_most_of_the_width(win, qtbot, width, height):
    sid = record(win.store, 120, 60, knob_at=90, verdict=True)
    win.open_replay(sid)
    on_a_screen(win, width, height)
    win.dashboard.redraw()
    settle(win.dashboard)
    assert win.room.compact
    minimum = win.minimumSizeHint()
    assert minimum.width() <= width and minimum.height() <= height - 40, minimum
    assert win.size().width() == width  # nothing pushed it wider than the screen
    dash = win.dashboard
    assert dash.width() >= (1 - SIDE_SHARE - 0.05) * width, (dash.width(), width)
    # the side panels are one column of tabs, Knobs in front, each one click away
    d = docks(win)
    knobs = d["dock-Knobs"]
    assert {t.objectName() for t in win.tabifiedDockWidgets(knobs)} == set(SIDE) - {"dock-Knobs"}
    assert not knobs.visibleRegion().isEmpty()
    # readouts side by side, each whole, at a size a room reads
    bar = dash.bar
    _assert_readouts_apart(bar)
    assert min(lab.font().pointSizeF() for lab in (bar.tps_label, bar.qps_label, bar.p95_label)) >= 12
    # every plot shown keeps its minimum height; those with no room are named
    shown = dash._shown_panels()
    assert shown and all(p.plot.geometry().height() >= PLOT_MIN_HEIGHT - 20 for p in shown), \
        [(p.title, p.plot.geometry().height()) for p in shown]
    hidden = [p.title for p in dash.panels if p not in shown]
    assert len(shown) + len(hidden) == len(dash.panels)
    if hidden:
        assert dash.room_note.isVisible() and all(t in dash.room_note.text() for t in hidden)
    else:
        assert not dash.room_note.isVisible()


def test_compact_is_the_screens_choice_and_the_view_menu_switches_it(win, qtbot, tmp_path):
    on_a_screen(win, 1920, 1080)
    assert not win.room.compact and COMPACT_BELOW <= 1920
    assert win.dashboard.width() < 0.6 * 1920  # side by side: the docks take their room
    win.compact_action.trigger()
    settle(win.dashboard)
    assert win.room.compact and win.dashboard.width() >= 0.65 * 1920
    win.compact_action.trigger()
    settle(win.dashboard)
    assert not win.room.compact
    d = docks(win)
    assert all(not win.tabifiedDockWidgets(d[name]) for name in SIDE)  # stacked as built, not tabbed
    assert win.dockWidgetArea(d["dock-Build"]).name == "LeftDockWidgetArea"
    assert win.dockWidgetArea(d["dock-Knobs"]).name == "RightDockWidgetArea"
    # a layout saved compact (on a projector) is not restored as such on the next start, wherever it is
    on_a_screen(win, 1280, 720)
    win.save_settings()
    from tunebench.ui.main_window import MainWindow

    again = MainWindow(win.store, settings=win.settings)
    qtbot.addWidget(again)
    again.show()
    settle(again.dashboard)
    assert not win.tabifiedDockWidgets(docks(again)["dock-Targets"]) or not again.room.compact
    again.room.fit(1920)
    settle(again.dashboard)
    assert not again.room.compact and all(not again.tabifiedDockWidgets(docks(again)[n]) for n in SIDE)


def test_the_user_chooses_the_plots_and_the_choice_is_kept(win, qtbot):
    win.resize(1600, 1000)
    settle(win.dashboard)
    by_title = {a.text(): a for a in win.plot_actions}
    by_title["data MB"].setChecked(False)
    by_title["QPS"].setChecked(False)
    settle(win.dashboard)
    assert [p.title for p in win.dashboard._shown_panels()] == ["TPS", "latency ms", "threads", "waits ms/s",
                                                               "CPU %"]
    assert win.settings.value("plots") == ["TPS", "latency ms", "threads", "waits ms/s", "CPU %"]
    for a in win.plot_actions:  # never none: the last one unticked stays
        a.setChecked(False)
    assert [a.text() for a in win.plot_actions if a.isChecked()] == ["TPS"]
    by_title["latency ms"].setChecked(True)
    from tunebench.ui.main_window import MainWindow

    again = MainWindow(win.store, settings=QSettings(win.settings.fileName(), QSettings.Format.IniFormat))
    qtbot.addWidget(again)
    again.resize(1600, 1000)
    again.show()
    settle(again.dashboard)
    assert [p.title for p in again.dashboard._shown_panels()] == ["TPS", "latency ms"]
    # stage shows its own plots, and leaving it the user's again
    again.stage.set(True, full_screen=False)
    assert [p.title for p in again.dashboard._shown_panels()] == ["TPS", "latency ms", "waits ms/s"]
    again.stage.set(False)
    settle(again.dashboard)
    assert [p.title for p in again.dashboard._shown_panels()] == ["TPS", "latency ms"]
    again.stage.set(False)


def _px(f: QFont) -> int:
    return QFontInfo(f).pixelSize()


def stage_texts(win) -> list[tuple[str, int]]:
    """(what, its em in pixels) of every text in sight."""
    out: list[tuple[str, int]] = []
    for w in [*win.findChildren(QLabel), *win.findChildren(QCheckBox)]:
        if w.isVisible() and w.text().strip():
            name = w.objectName() or w.text()[:30]
            out.append((name, _px(w.font())))
            out += [(f"{name} (css)", int(px)) for px in re.findall(r"font-size:\s*(\d+)px", w.text())]
    for p in win.dashboard._shown_panels():
        for axis in ("left", "bottom"):
            ax = p.plot.getAxis(axis)
            if ax.isVisible():
                out.append((f"{p.title} {axis} ticks", _px(ax.style["tickFont"])))
                if ax.labelText:
                    out.append((f"{p.title} {axis} title", _px(ax.label.font())))
        if p.legend.items:
            out.append((f"{p.title} legend", _px(entry_font(p.legend.points))))
        for line, _kind in p.labelled:
            if line.label.isVisible():
                out.append((f"{p.title} label {line.label.toPlainText()[:20]}", _px(line.label.textItem.font())))
    knee = win.stage.knee
    if knee.isVisible():
        item = knee.getPlotItem()
        out.append(("knee ticks", _px(item.getAxis("left").style["tickFont"])))
        out.append(("knee legend", _px(entry_font(item.legend.points))))
    return out


def plot_rects(win) -> list[tuple[str, QRect]]:
    """Each shown plot's data area (its view box) in the window's coordinates."""
    g = win.dashboard.graphics
    out = []
    for p in win.dashboard._shown_panels():
        r = g.mapFromScene(p.view.sceneBoundingRect()).boundingRect()
        out.append((p.title, QRect(g.mapTo(win, r.topLeft()), r.size())))
    return out


def window_look(win) -> list:
    """What leaving stage must put back: the window's and every bar's and dock's geometry and visibility, the
    layout, the plots shown, fonts and theme."""
    parts = [win.menuBar(), win.toolbar, win.statusBar(), win.central, *win.findChildren(QDockWidget)]
    return [win.geometry().getRect(), win.room.compact, [p.title for p in win.dashboard._shown_panels()],
            win.font_scale, win.theme.name, win.dashboard.bar.tps_label.font().pointSizeF(),
            *((w.objectName(), w.geometry().getRect(), w.isVisible()) for w in parts)]


@pytest.mark.parametrize(("width", "height"), [*PROJECTORS, (1920, 1080)])
def test_stage_on_any_screen_reads_from_the_back_and_no_card_covers_the_data(win, qtbot, width, height):
    sid = record(win.store, 120, 60, knob_at=90, verdict=True)
    win.open_replay(sid)
    on_a_screen(win, width, height)
    before = window_look(win)
    win.stage.set(True, full_screen=False)
    win.resize(width, height)  # (full screen: the screen's size; offscreen it is the window's)
    win.stage._apply_floor(height)  # what full screen does once the window system made it so
    win.replay_bar.seek(win.replay_timeline.end)  # past the step's end: the verdict is known
    win.dashboard.redraw()
    ev = next(e for e in win.store.get_session(sid)["events"] if e["kind"] == "verdict")
    win.controller.timeline_event.emit(Event(ev["t"], ev["kind"], ev["label"], ev["data"]))
    card = win.stage.help
    settle(win.dashboard)
    assert card.isVisible()
    floor = height / TEXT_SHARE
    small = [(what, px) for what, px in stage_texts(win) if px < floor - 0.5]
    assert not small, (floor, small)
    for title, rect in plot_rects(win):
        assert not rect.intersects(card.geometry()), (title, rect, card.geometry())
    # the flip's label with its verdict, longer than the plot is wide here, wraps inside it (it ran into the legend),
    # or where a wrapped one has no room above the curves, says the verdict without its interval
    tps = win.dashboard.panels[0]
    flips = [ln for ln, kind in tps.labelled if kind == "knob" and ln.label.isVisible()]
    assert flips and "x TPS" in flips[0].label.toPlainText(), [ln.label.toPlainText() for ln in flips]
    for ln in flips:
        assert tps.view.sceneBoundingRect().contains(ln.label.sceneBoundingRect()), ln.label.toPlainText()
    # the keys card (H) too, taller at this size: the strip makes room, the plots give it up
    card.show_keys()
    settle(win.dashboard)
    assert card.isVisible() and "F7" in card.text()
    for title, rect in plot_rects(win):
        assert not rect.intersects(card.geometry()), (title, rect, card.geometry())
    # a pointer resting on a plot brings no hover box on stage
    crosshair = win.dashboard.crosshair
    centre = win.dashboard.panels[0].view.sceneBoundingRect().center()
    win.dashboard.graphics.scene().sigMouseMoved.emit(QPointF(centre))
    assert not crosshair._timer.isActive() and crosshair.x is None
    # the knee overlay's text at the same floor
    win.sweep_results.model.tables = lambda: {"knee": {"slo_p99_ms": 5.0, "configs": [
        {"label": "trx_commit=1", "knee": 2000.0, "points": [
            {"rate": r, "tps": r * 0.99, "lat_p99_ms": 1.0 + r / 1000, "served": True}
            for r in (500.0, 1000.0, 2000.0)]}]}}
    win.stage.toggle_knee()
    assert win.stage.knee.isVisible()
    small = [(what, px) for what, px in stage_texts(win) if px < floor - 0.5]
    assert not small, (floor, small)
    win.stage.toggle_knee()
    # leaving stage puts the window back as it was, at this size too
    win.stage.set(False)
    settle(win.dashboard)
    assert window_look(win) == before
    assert not win.dashboard.card_strip.isVisible() and crosshair.enabled
    win.dashboard.graphics.scene().sigMouseMoved.emit(QPointF(centre))
    assert crosshair._timer.isActive()  # hovering works again


def test_a_flips_label_stays_when_rate_changes_are_marked_beside_it(win, qtbot):
    """Seen on stage at 1280x720: the flip's label (with its verdict) vanished once PgUp marked rate changes
    next to it -- the rate markers were knob changes, newest first, and took the label rows."""
    sid = record(win.store, 120, 60, knob_at=90, verdict=True)
    win.open_replay(sid)
    tl = win.replay_timeline
    rates = [Event(tl.t0 + t, "rate", f"rate main {500 * 2 ** k:,} → {1000 * 2 ** k:,}/s",
                   {"group": "main", "from": 500 * 2 ** k, "to": 1000 * 2 ** k})
             for k, t in enumerate((95.0, 100.0, 104.0))]
    tl.all_markers = sorted([*tl.all_markers, *(marker_of(e, tl.t0) for e in rates)], key=lambda m: (m.shown_at, m.t))
    win.room.fit(1280)
    win.resize(1280, 680)
    win.stage.set(True, full_screen=False)
    win.resize(1280, 720)
    win.stage._apply_floor(720)
    win.replay_bar.seek(119.0)
    win.dashboard.redraw()
    settle(win.dashboard)
    tps = win.dashboard.panels[0]
    labels = {ln.label.toPlainText(): ln.label.isVisible() for ln, _k in tps.labelled}
    flip = [text for text in labels if text.startswith("flush_log_at_trx_commit")]
    assert flip and labels[flip[0]], labels
    assert any(text.startswith("rate main") for text in labels), labels
    win.stage.set(False)
