"""Exports of the session on screen: the whole session unless the visible range is asked for (and the file says
which), a title line on the picture, and a report whose every figure agrees with its step table."""

import csv
import re

import numpy as np
import pytest
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QApplication, QGraphicsItem

from tunebench.store.synthetic import record
from tunebench.ui import export


def _zoomed_mid_replay(win):
    """A 40 s session of two steps (4 then 16 threads), replayed, the head in the first step, zoomed on 2-8 s:
    the view as it is when the user pressed Play and exports a few seconds in."""
    sid = record(win.store, 40, 40, knob_at=30)
    win.open_replay(sid)
    win.replay_bar.seek(10)
    win.dashboard.follow_box.setChecked(False)
    win.dashboard.set_x_range(2, 8)
    win.dashboard.redraw()
    return sid


def _report_tables(text):
    """{section title: [row cells]} of the report's Markdown tables."""
    tables, title = {}, None
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("# ").strip()
        elif line.startswith("| ") and not line.startswith("|---") and title:
            tables.setdefault(title, []).append([c.strip() for c in line.strip("|").split("|")])
    return tables


def _num(text):
    return float(text.replace(",", ""))


def test_report_figures_agree_with_the_step_table(win, tmp_path):
    """The report of a replay paused early used to summarise only the seconds up to the play head ("threads max
    4") beside a step table at 16 threads: every figure now comes from the store over the stated range."""
    sid = _zoomed_mid_replay(win)
    session = win.store.get_session(sid)
    text = export.export("md", win.dashboard, tmp_path / "r.md", session, win.store).read_text()
    tables = _report_tables(text)
    steps = tables[next(t for t in tables if t.startswith("Session"))][1:]
    step_threads = [int(r[3]) for r in steps]  # step | ran with | group | threads | TPS
    step_tps = [_num(r[4]) for r in steps]
    assert step_threads == [4, 16]
    series_title = next(t for t in tables if t.startswith("Series plotted"))
    assert "whole session (0-40 s" in series_title
    rows = {r[0]: r for r in tables[series_title][1:]}
    # threads: the series' max is the step table's top concurrency, its min the first step's
    assert _num(rows["client.main.threads"][3]) == max(step_threads)
    assert _num(rows["client.main.threads"][1]) == min(step_threads)
    assert int(rows["client.main.tps"][4]) == 40  # every stored sample, not those up to the head
    # TPS: the whole-session mean is the step means weighted by their seconds (two equal steps here)
    tps = win.store.series(sid, ["client.main.tps"])["client.main.tps"].v
    assert _num(rows["client.main.tps"][2]) == pytest.approx(tps.mean(), abs=0.001)
    assert min(step_tps) <= _num(rows["client.main.tps"][2]) <= max(step_tps)
    assert _num(rows["client.main.tps"][3]) >= max(step_tps)
    assert "innodb_flush_log_at_trx_commit 1 → 2" in text  # the settings it changed
    # the view is as the user left it: head at 10 s, zoomed on 2-8 s
    assert win.replay_timeline.head == pytest.approx(10)
    lo, hi = win.dashboard.panels[0].view.viewRange()[0]
    assert (lo, hi) == (pytest.approx(2, abs=0.01), pytest.approx(8, abs=0.01))


def test_zoomed_csv_holds_the_whole_session_unless_asked(win, tmp_path):
    sid = _zoomed_mid_replay(win)
    session = win.store.get_session(sid)
    whole = export.export("csv", win.dashboard, tmp_path / "whole.csv", session)
    first, *rest = whole.read_text().splitlines()
    assert first.startswith(f"# Session {sid}") and "Range: whole session (0-40 s" in first
    rows = list(csv.reader(rest))
    assert len(rows) - 1 == 40
    visible = export.export("csv", win.dashboard, tmp_path / "visible.csv", session, visible=True)
    first, *rest = visible.read_text().splitlines()
    assert "Range: visible range only: 2-8 s" in first
    rows = list(csv.reader(rest))
    elapsed = [float(r[0]) for r in rows[1:]]
    assert elapsed and min(elapsed) >= 2 - 0.51 and max(elapsed) <= 8 + 0.51


def test_png_carries_its_title_line_and_the_whole_session(win, tmp_path):
    sid = _zoomed_mid_replay(win)
    session = win.store.get_session(sid)
    lines = export.heading(session, export.scope(win.dashboard))
    assert re.match(rf"Session {sid} \(synthetic 40 s x 40 series\) · \d{{4}}-\d\d-\d\d \d\d:\d\d · sandbox · "
                    r"mariadb 10\.11\.19 · oltp_point_select · knobs: innodb_flush_log_at_trx_commit 1 → 2$",
                    lines[0]), lines[0]
    seen = {}

    def grab_range():
        seen["x"] = win.dashboard.panels[0].view.viewRange()[0]
        seen["points"] = len(win.dashboard.panels[0].curves["client.main.tps"].xData)
        return original()

    original = win.dashboard.graphics.grab
    win.dashboard.graphics.grab = grab_range
    try:
        png = export.export("png", win.dashboard, tmp_path / "p.png", session)
    finally:
        del win.dashboard.graphics.grab
    assert seen["x"] == [pytest.approx(0, abs=0.01), pytest.approx(40, abs=0.01)] and seen["points"] == 40
    image = QImage(str(png))
    assert image.height() > win.dashboard.graphics.height() + 20  # the title lines on top
    assert win.replay_timeline.head == pytest.approx(10)
    svg = export.export("svg", win.dashboard, tmp_path / "p.svg", session).read_text()
    assert f"Session {sid}" in svg and "whole session" in svg


def test_the_window_shows_its_own_words_not_cli_flags(win):
    win.show_message("target t has no UNIX socket; use --transport tcp")
    assert win.statusBar().currentMessage() == "target t has no UNIX socket; choose the TCP transport"
    assert win.log.item(win.log.count() - 1).text() == win.statusBar().currentMessage()


def test_title_of_a_sweep_names_its_axes_not_its_own_knob_events():
    """A sweep applies each configuration with a knob event just before its "config" event: that is not a flip."""
    from tunebench.core.results import settings_changed, title_line

    t0 = 1_790_000_000.0
    session = {"id": 6, "name": "", "started_at": t0, "target": "sandbox", "flavor": "mariadb", "version": "10.11.19",
               "workload": "oltp_update_index",
               "summary": {"configs": [{"idx": 0, "knobs": {"innodb_flush_log_at_trx_commit": "1"}},
                                       {"idx": 1, "knobs": {"innodb_flush_log_at_trx_commit": "2"}}]},
               "events": [
                   {"t": t0, "kind": "config", "label": "configuration 1", "data": {
                       "config": 0, "knobs": {"innodb_flush_log_at_trx_commit": "1"}}},
                   {"t": t0 + 10, "kind": "knob", "label": "sync_binlog = 0", "data": {
                       "name": "sync_binlog", "from": "1", "to": "0"}},
                   {"t": t0 + 22.0, "kind": "knob", "label": "innodb_flush_log_at_trx_commit = 2", "data": {
                       "name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2"}},
                   {"t": t0 + 22.1, "kind": "config", "label": "configuration 2", "data": {
                       "config": 1, "knobs": {"innodb_flush_log_at_trx_commit": "2"}}}]}
    assert settings_changed(session) == ["configuration 1: innodb_flush_log_at_trx_commit=1",
                                         "configuration 2: innodb_flush_log_at_trx_commit=2", "sync_binlog 1 → 0"]
    assert title_line(session).endswith(" · oltp_update_index · knobs: sweep of innodb_flush_log_at_trx_commit over "
                                        "2 configurations; sync_binlog 1 → 0")


# -- SVG: the same picture as the PNG --------------------------------------------------------------------------

def _rgb(image):
    """An image's pixels as an (height, width, 3) array."""
    image = image.convertToFormat(QImage.Format.Format_RGB32)
    a = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)
    return a[:, :image.width(), 2::-1].astype(int)


def _svg_rendered(path, size):
    """The SVG drawn by QtSvg into an image of the PNG's size."""
    renderer = QSvgRenderer(str(path))
    assert renderer.isValid() and renderer.viewBox().size() == size  # the PNG's geometry, not a scaled one
    image = QImage(size, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    return _rgb(image)


def _near(pixels, color, tol=60):
    c = QColor(color)
    return np.abs(pixels - np.array([c.red(), c.green(), c.blue()])).sum(axis=2) < tol


def _grown(mask, px):
    """`mask` with every pixel widened by `px` in each direction."""
    out = mask.copy()
    for dy in range(-px, px + 1):
        for dx in range(-px, px + 1):
            out |= np.roll(np.roll(mask, dy, axis=0), dx, axis=1)
    return out


def _share_near(a, b, px=2):
    """The share of `a`'s pixels that have one of `b`'s within `px` pixels."""
    return (a & _grown(b, px)).sum() / max(1, a.sum())


def _ink(pixels):
    """The grey pixels of axes and text (antialiased lines included), not the coloured curves."""
    return (pixels.mean(axis=2) < 200) & (np.ptp(pixels, axis=2) < 30)


def _x_axis_extent(pixels):
    """First and last column of the bottom axis line: the lowest row that is mostly ink."""
    dark = _ink(pixels)
    rows = np.flatnonzero(dark.sum(axis=1) > pixels.shape[1] * 0.3)
    cols = np.flatnonzero(dark[rows[-1]])
    return rows[-1], cols[0], cols[-1]


def _left_axis(pixels):
    """The column of the left axes' line: the leftmost column that is mostly ink."""
    return np.flatnonzero(_ink(pixels).sum(axis=0) > pixels.shape[0] * 0.3)[0]


def _major_ticks(pixels, top, axis):
    """The rows (below `top`) of the left axes' major ticks: 6 px of ink right of the axis line (ticks point
    into the plot), none a little further (a step label's text)."""
    ink = _ink(pixels)[top:]
    return top + np.flatnonzero(ink[:, axis + 1:axis + 7].all(axis=1) & ~ink[:, axis + 9])


def _assert_same_rows(a, b, px=2):
    assert len(a) and len(b)
    assert all(np.abs(b - r).min() <= px for r in a) and all(np.abs(a - r).min() <= px for r in b)


def test_svg_draws_the_png_geometry(win, tmp_path):
    """The SVG used to hold its axes in 0.75-scaled groups (the x axis stopped two-thirds across, y ticks off
    their grid) beside full-size curves: drawn back by QtSvg it now matches the PNG to a pixel or two."""
    sid = record(win.store, 40, 40, knob_at=30)
    win.open_replay(sid)
    session = win.store.get_session(sid)
    png_image = QImage(str(export.export("png", win.dashboard, tmp_path / "p.png", session)))
    png = _rgb(png_image)
    svg = _svg_rendered(export.export("svg", win.dashboard, tmp_path / "p.svg", session), png_image.size())
    # the title lines and the plots (the key naming every curve under them is the same text in both)
    top = export._heading_height(win.dashboard, export.heading(session, export.scope(win.dashboard)),
                                 png_image.width())
    png, svg = png[:top + win.dashboard.graphics.height()], svg[:top + win.dashboard.graphics.height()]
    # the x axis: at the same height, from the same column to the same column
    row, lo, hi = _x_axis_extent(png)
    assert hi - lo > 300
    svg_row, svg_lo, svg_hi = _x_axis_extent(svg)
    assert abs(svg_row - row) <= 2 and abs(svg_lo - lo) <= 2 and abs(svg_hi - hi) <= 2
    # the y ticks: on the same axis line at the same rows (below the title lines)
    axis = _left_axis(png)
    assert abs(_left_axis(svg) - axis) <= 1
    ticks = _major_ticks(png, top, axis)
    assert len(ticks) > 15  # a few on each of the 7 plots
    _assert_same_rows(ticks, _major_ticks(svg, top, axis))
    # the curves (the first curve of each plot is blue) and the knob change's line: where the PNG has them
    blue_png, blue_svg = _near(png, "#1f77b4"), _near(svg, "#1f77b4")
    assert blue_png.sum() > 2000
    assert _share_near(blue_svg, blue_png) > 0.95 and _share_near(blue_png, blue_svg) > 0.95
    # and the ink (axes, ticks, labels, text) alike: e.g. no "No data yet" over the PNG of a replay just opened
    assert _share_near(_ink(png), _ink(svg)) > 0.9 and _share_near(_ink(svg), _ink(png)) > 0.9
    knob_png = np.flatnonzero(_near(png, "#d62728").sum(axis=0) > 300)
    knob_svg = np.flatnonzero(_near(svg, "#d62728").sum(axis=0) > 300)
    _assert_same_rows(knob_png, knob_svg)


def test_svg_of_a_zoom_keeps_curves_and_markers_inside_their_plots(win, tmp_path):
    """QtSvg ignores the SVG's clip paths: a curve zoomed past its plot's top crossed the title lines, and the
    knob change's line right of the visible range was drawn over the legends. Now each is cut to its plot, as
    in the PNG, and the dashboard is as it was afterwards."""
    sid = record(win.store, 40, 40, knob_at=30)
    win.open_replay(sid)
    dash = win.dashboard
    dash.follow_box.setChecked(False)
    dash.set_x_range(15, 25)
    tps = dash.panels[0]
    tps.view.setYRange(9900, 10100, padding=0)
    dash.redraw()
    y_range = tps.view.viewRange()[1]
    curve = tps.curves["client.main.tps"].curve
    shown = curve.xData.copy()
    session = win.store.get_session(sid)
    png_image = QImage(str(export.export("png", dash, tmp_path / "z.png", session, visible=True)))
    png = _rgb(png_image)
    svg = _svg_rendered(export.export("svg", dash, tmp_path / "z.svg", session, visible=True), png_image.size())
    title = export._heading_height(dash, export.heading(session, export.scope(dash, True)), png_image.width())
    png, svg = png[:title + dash.graphics.height()], svg[:title + dash.graphics.height()]  # (the key under them)
    for color in ("#1f77b4", "#ff7f0e", "#d62728"):  # the plots' first two curves, the knob line
        assert not _near(svg[:title], color).any(), color
    assert not (_near(svg, "#d62728").sum(axis=0) > 300).any()  # the knob at 30 s is out of this picture
    blue_png, blue_svg = _near(png, "#1f77b4"), _near(svg, "#1f77b4")
    assert _share_near(blue_svg, blue_png) > 0.95 and _share_near(blue_png, blue_svg) > 0.95
    # the dashboard as it was
    assert tps.view.viewRange()[1] == pytest.approx(y_range)
    assert np.array_equal(curve.xData, shown)
    assert curve.cacheMode() == QGraphicsItem.CacheMode.DeviceCoordinateCache
    assert all(m.isVisible() for m in tps.markers if hasattr(m, "isVisible"))


def test_clip_polyline_cuts_at_the_edges():
    from tunebench.ui.export_vectors import clip_polyline

    # a zigzag through a box it leaves at the top twice and at the right once: three pieces, NaN between
    x, y = clip_polyline(np.array([0.0, 2, 4, 6, 8]), np.array([0.0, 4, 0, 4, 0]), (1, 7, -1, 3))
    assert np.allclose(x, [1, 1.5, np.nan, 2.5, 4, 5.5, np.nan, 6.5, 7], equal_nan=True)
    assert np.allclose(y, [2, 3, np.nan, 3, 0, 3, np.nan, 3, 2], equal_nan=True)
    # a gap in the data stays a gap; a line wholly outside leaves nothing
    x, y = clip_polyline(np.array([2.0, 3, np.nan, 5, 6]), np.array([1.0, 1, np.nan, 1, 1]), (0, 10, 0, 10))
    assert np.allclose(x, [2, 3, np.nan, 5, 6], equal_nan=True)
    assert len(clip_polyline(np.array([0.0, 1]), np.array([5.0, 6]), (0, 1, 0, 1))[0]) == 0


def test_a_picture_names_every_curve_its_legends_could_not(win, tmp_path):
    """Issue 46 item 7: exported PNG and SVG kept "+5 more" legends -- curves no one could identify. Under the
    plots a key names every curve of a plot whose legend hid or cut a name, in its colour; none when every
    legend shows all its names whole."""
    sid = record(win.store, 40, 200)
    win.open_replay(sid)
    win.resize(1280, 720)  # short plots: their legends count what they cannot show
    win.dashboard.redraw()
    QApplication.processEvents()
    win.dashboard.redraw()
    cut = [p for p in win.dashboard.panels if p.legend.more.isVisible()]
    assert cut, "no legend had to hide a name at this size"
    key = dict(export.legend_key(win.dashboard))
    for panel in cut:
        names = [str(s.item.name()) for s, _label in panel.legend.items]
        assert [n for n, _c in key[panel.title]] == names  # every one, whole
    session = win.store.get_session(sid)
    plain = win.dashboard.graphics.height()
    png = QImage(str(export.export("png", win.dashboard, tmp_path / "k.png", session)))
    assert png.height() > plain + 40  # the title lines and the key
    svg = export.export("svg", win.dashboard, tmp_path / "k.svg", session).read_text()
    hidden = [n for panel in cut for (s, label) in panel.legend.items if not label.isVisible()
              for n in [str(s.item.name())]]
    assert hidden and all(n in svg for n in hidden[:5])
