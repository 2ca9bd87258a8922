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


def settle() -> None:
    """Let the layouts apply what they were asked (a dock's new minimum reaches the window this way)."""
    for _ in range(3):
        QApplication.sendPostedEvents()
        QApplication.processEvents()


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
