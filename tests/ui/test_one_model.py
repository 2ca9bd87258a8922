"""The window on one model (issue 14): one time axis for every plot, live and in replay; stage mode entered
and left without residue; theme and font scale as two inputs of one appearance; readouts that never overlap.

Sessions are written with the store's own writer (tunebench.store.synthetic); no server is needed.
"""

import itertools
import re

import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QDockWidget, QWidget

from tunebench.store.synthetic import record
from tunebench.ui.dashboard import FOLLOW_STEP


def x_ranges(win) -> set[tuple[float, float]]:
    return {tuple(round(v, 9) for v in p.view.viewRange()[0]) for p in win.dashboard.panels if p.plot.isVisible()}


def marker_scene_x(win, index: int) -> set[float]:
    out = set()
    for p in win.dashboard.panels:
        if p.plot.isVisible() and len(p.markers) > index:
            out.add(round(p.view.mapViewToScene(pg.Point(p.markers[index].value(), 0)).x(), 1))
    return out


@pytest.mark.parametrize("stage", [False, True])
def test_a_60x_replay_keeps_one_x_range_on_every_plot(win, qtbot, stage):
    sid = record(win.store, 90, 40, knob_at=60)
    win.open_replay(sid)
    if stage:
        win.stage.set(True, full_screen=False)
    bar = win.replay_bar
    bar.speed.setCurrentText("60x")
    seen: list[set] = []
    win.dashboard.timer.timeout.connect(lambda: seen.append(x_ranges(win)))  # after every redraw tick
    bar.seek(0)
    bar.play()
    qtbot.waitUntil(lambda: not bar.play_button.isChecked(), timeout=15000)
    qtbot.waitUntil(lambda: all(len(p.markers) == 3 for p in win.dashboard.panels if p.plot.isVisible()),
                    timeout=5000)
    assert seen and all(len(r) == 1 for r in seen), [r for r in seen if len(r) != 1][:3]
    assert len(x_ranges(win)) == 1
    _lo, hi = next(iter(x_ranges(win)))
    end = win.replay_timeline.end + 1
    assert end <= hi < end + FOLLOW_STEP  # the followed window pages ahead, on every plot at once
    assert len(marker_scene_x(win, 2)) == 1, marker_scene_x(win, 2)  # the knob line


def test_back_to_live_from_a_replay_shows_no_scale_of_the_replay(win, qtbot):
    """Seen under Xvfb: after a replay, the empty live plots kept the replay's y axes (TPS to 10,000)."""
    sid = record(win.store, 30, 10)
    win.open_replay(sid)
    assert max(p.view.viewRange()[1][1] for p in win.dashboard.panels) > 100
    win.show_live()
    win.dashboard.redraw()
    assert all(p.view.viewRange()[1] == [0.0, 1.0] for p in win.dashboard.panels)


# -- appearance: theme and font scale, two inputs of one function --

def luminance(c: QColor) -> float:
    def lin(v: float) -> float:
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF())


def contrast(a: QColor, b: QColor) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def over(fill: QColor, background: QColor) -> QColor:
    """`fill` (with its alpha) painted over an opaque background."""
    a = fill.alphaF()
    return QColor.fromRgbF(*(a * f + (1 - a) * b for f, b in ((fill.redF(), background.redF()),
                                                              (fill.greenF(), background.greenF()),
                                                              (fill.blueF(), background.blueF()))))


def drawn_color(html: str) -> QColor:
    """The colour a pyqtgraph label really draws with: the one in its rendered HTML."""
    found = re.findall(r"color:\s*(#[0-9a-fA-F]{6,8})", html)
    assert found, html
    return QColor(found[-1])


def marker_label(m) -> tuple | None:
    label = getattr(m, "label", None)
    if label is None:
        return None
    return label.fill.color().name(QColor.NameFormat.HexArgb), label.color.name(), label.textItem.font().pointSizeF()


ROLES = (QPalette.ColorRole.Window, QPalette.ColorRole.WindowText, QPalette.ColorRole.Base, QPalette.ColorRole.Text,
         QPalette.ColorRole.Button, QPalette.ColorRole.ButtonText, QPalette.ColorRole.PlaceholderText)


def appearance(win) -> dict:
    """Everything theme and font scale decide, as plain values."""
    app = QApplication.instance()
    pal = app.palette()
    d = win.dashboard
    out: dict = {"font": app.font().pointSizeF(),
                 "palette": {r.name: pal.color(r).name() for r in ROLES},
                 "background": d.graphics.backgroundBrush().color().name(),
                 "readouts": [lab.font().pointSizeF() for lab in (d.tps_label, d.qps_label, d.p95_label, d.badge)],
                 # a multiset, not keyed by child index: raising an overlay reorders the window's children
                 "sheets": sorted((type(w).__name__, w.objectName(), w.styleSheet())
                                  for w in win.findChildren(QWidget))}
    for p in d.panels:
        axis = p.plot.getAxis("left")
        legend = p.plot.legend
        out[p.title] = {
            "axis": (axis.pen().color().name(), axis.textPen().color().name(), axis.style["tickFont"].pointSizeF()
                     if axis.style.get("tickFont") else None, axis.fixedWidth),
            "legend": (legend.opts["brush"].color().name(QColor.NameFormat.HexArgb),
                       [(drawn_color(lab.item.toHtml()).name(), lab.item.font().pointSizeF(), lab.opts.get("size"))
                        for _s, lab in legend.items]),
            "curves": [(c.opts["pen"].color().name(), c.opts["pen"].widthF()) for c in p.curves.values()],
            "markers": [(m.pen.color().name(), m.pen.widthF(), marker_label(m)) for m in p.markers]}
    return out


OPS = {"dark": lambda w: w.set_theme("dark"), "light": lambda w: w.set_theme("light"),
       "A+": lambda w: w.bigger_action.trigger(), "A-": lambda w: w.smaller_action.trigger()}


def test_theme_and_font_scale_in_any_order_end_as_applied_directly(win, qtbot):
    sid = record(win.store, 60, 40, knob_at=30)
    win.open_replay(sid)
    from tunebench.ui.theme import THEMES

    # room for A+'s contents (1,036 px at 1.15x): A+ is refused where the window would have to grow past the screen
    win.resize(1600, 1150)
    results = {}
    for order in itertools.permutations(OPS):
        win.set_appearance(THEMES["light"], 1.0)
        for op in order:
            OPS[op](win)
        final = "dark" if order.index("dark") > order.index("light") else "light"
        assert (win.theme.name, win.font_scale) == (final, pytest.approx(1.0))
        results[order] = appearance(win)
    for final in ("dark", "light"):
        win.set_appearance(THEMES[final], 1.0)
        direct = appearance(win)
        for order, got in results.items():
            if ("dark" if order.index("dark") > order.index("light") else "light") == final:
                assert got == direct, order
    # readable: legend text on its fill over the plot, placeholder text on a dark line edit
    for name in ("dark", "light"):
        win.set_theme(name)
        bg = QColor(win.theme.plot_background)
        for p in win.dashboard.panels:
            legend = p.plot.legend
            fill = over(legend.opts["brush"].color(), bg)
            for _s, lab in legend.items:
                assert contrast(drawn_color(lab.item.toHtml()), fill) >= 4.5, (name, p.title, lab.text)
        edit = win.workload.lua  # has a placeholder
        qtbot.waitUntil(lambda e=edit: e.palette().color(QPalette.ColorRole.Base)
                        == QApplication.palette().color(QPalette.ColorRole.Base), timeout=2000)
        pal = edit.palette()
        assert contrast(pal.color(QPalette.ColorRole.PlaceholderText), pal.color(QPalette.ColorRole.Base)) >= 3.0, name


# -- readouts --

def readouts_overlap(win) -> list[str]:
    d = win.dashboard
    shown = [w for w in (d.tps_label, d.qps_label, d.p95_label, d.badge, d.state_label, d.follow_box) if w.isVisible()]
    bad = []
    for i, a in enumerate(shown):
        for b in shown[i + 1:]:
            if a.geometry().intersects(b.geometry()):
                bad.append(f"{a.text()!r} {a.geometry().getRect()} overlaps {b.text()!r} {b.geometry().getRect()}")
    for lab in (d.tps_label, d.qps_label, d.p95_label, d.badge, d.state_label):
        need = lab.fontMetrics().horizontalAdvance(lab.text())
        if lab.isVisible() and need > lab.width():
            bad.append(f"{lab.text()!r} needs {need} px, has {lab.width()}")
    return bad


def test_readouts_never_overlap_after_a_plus_and_in_replay(win, qtbot):
    sid = record(win.store, 60, 40, knob_at=30, tps=1_234_567)
    win.open_replay(sid)
    win.dashboard.redraw()
    for _ in range(3):
        win.bigger_action.trigger()
    assert win.dashboard.badge.isVisible()
    qtbot.waitUntil(lambda: not readouts_overlap(win), timeout=2000)
    assert win.dashboard.tps_label.text().count(",") == 2  # a seven-digit TPS
    win.dashboard.state_label.setText("running")
    qtbot.waitUntil(lambda: not readouts_overlap(win), timeout=2000)
    win.resize(1100, 800)  # a narrower window: they still fit
    qtbot.waitUntil(lambda: not readouts_overlap(win), timeout=2000)


# -- stage: a view state, entered and left without residue --

def docks(win) -> list:
    return [(dk.objectName(), dk.isVisible(), dk.geometry().getRect()) for dk in win.findChildren(QDockWidget)]


def saved_settings(win) -> dict:
    win.save_settings()
    win.settings.sync()
    return {k: win.settings.value(k) for k in ("geometry", "state", "theme", "font_scale")}


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_leaving_stage_leaves_nothing_behind(win, qtbot, theme):
    from tunebench.ui.theme import THEMES

    sid = record(win.store, 60, 40, knob_at=30)
    win.open_replay(sid)
    win.replay_bar.seek(20.0)  # the first step's marker only: the others are drawn on stage
    win.set_appearance(THEMES[theme], 1.15)
    win.dashboard.redraw()
    qtbot.waitExposed(win)
    QApplication.processEvents()  # the layout of the new font size done
    before = {"appearance": appearance(win), "geometry": win.geometry().getRect(),
              "docks": docks(win),
              "state": bytes(win.saveState()), "plots": [p.plot.isVisible() for p in win.dashboard.panels]}
    settings = saved_settings(win)
    win.stage.set(True)  # full screen, as F12 does
    assert win.theme.name == "stage"
    win.replay_bar.seek(60.0)  # the second step and the knob change are drawn on stage
    win.dashboard.redraw()
    qtbot.keyClick(win, Qt.Key.Key_Escape)
    assert not win.stage.on
    qtbot.waitUntil(lambda: win.geometry().getRect() == before["geometry"], timeout=3000)
    QApplication.processEvents()
    after = appearance(win)
    label_look = before["appearance"]["TPS"]["markers"][0][2]  # (fill, colour, font size)
    for p in win.dashboard.panels:
        drawn_on_stage = after[p.title]["markers"][1:]
        after[p.title]["markers"] = after[p.title]["markers"][:1]
        assert len(drawn_on_stage) == 2
        for _colour, width, label in drawn_on_stage:
            assert width == 2
            assert label is None or (label[0], label[2]) == (label_look[0], label_look[2]), (p.title, label)
    assert after == before["appearance"]
    assert docks(win) == before["docks"]
    assert bytes(win.saveState()) == before["state"]
    assert [p.plot.isVisible() for p in win.dashboard.panels] == before["plots"]
    assert saved_settings(win) == settings


def test_a_stage_replay_shows_a_verdict_when_the_head_reaches_it(win, qtbot):
    """Issue 45 item 3: a replay on stage showed the verdict card as the head passed the change, before the step
    ended -- before the verdict was known and before its marker appears. It shows when the head reaches the
    verdict (the step's end)."""
    sid = record(win.store, 60, 40, knob_at=20, verdict=True)  # the flip at 20 s, its step ends at 30 s
    win.open_replay(sid)
    win.replay_bar.seek(10.0)
    win.stage.set(True, full_screen=False)
    shown = []
    win.stage.help.show_verdict = lambda data, ms=None: shown.append(data)
    for x in (15.0, 22.0, 28.0):
        win.replay_bar.seek(x)
    assert shown == []  # the change passed, the verdict not known yet
    win.replay_bar.seek(31.0)
    assert len(shown) == 1 and shown[0]["name"] == "innodb_flush_log_at_trx_commit"
    win.stage.set(False)
