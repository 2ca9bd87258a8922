"""Plot legends: inside their plot in a narrow dashboard, clear of the marker labels, and laid out after stage
mode exactly as before it (three defects seen at 1920x1080)."""

import pytest
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QApplication

from tunebench.core.interval import Event
from tunebench.store.synthetic import WAITS, record
from tunebench.ui.dashboard import Dashboard
from tunebench.ui.theme import THEMES
from tunebench.ui.timeline import Timeline


def _fill(tl: Timeline, seconds: int = 25, t0: float = 1000.0) -> None:
    for s in range(seconds):
        values = {"client.main.tps": 6000.0 + 50 * s, "client.main.qps": 6000.0, "client.main.lat.p95": 5 + s / 5,
                  "client.main.lat.p99": 9 + s / 4, "client.main.threads": 16, "server.questions": 6000.0,
                  "server.threads_running": 12, "host.local.cpu.user": 70.0, "host.local.cpu.system": 20.0,
                  "host.local.cpu.iowait": 1.0, "proc.local.server.cpu": 30.0, "proc.local.client.cpu": 20.0}
        values.update({f"waits.{w}.ms": 10.0 * (i + 1) for i, w in enumerate(WAITS)})
        values["waits.other.ms"] = 5.0
        tl.add(t0 + s, values)
    tl.add_event(Event(t0 + 3, "step_start", "step 1: main=4"))
    tl.add_event(Event(t0 + 19, "knob", "innodb_flush_log_at_trx_commit = 2"))


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


@pytest.mark.parametrize("width", [520, 640, 1000])
def test_every_legend_is_inside_its_plot(qtbot, width):
    d = _dashboard(qtbot, width)
    for p in d.panels:
        view = p.view.sceneBoundingRect()
        legend = _legend_rect(p)
        assert p.plot.legend.items, p.title
        assert view.contains(legend), (p.title, view.getRect(), legend.getRect())


@pytest.mark.parametrize("width", [640, 1000, 1400])
def test_no_legend_covers_a_marker_label(qtbot, width):
    d = _dashboard(qtbot, width)
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
                        [(round(lab.pos().x(), 1), round(lab.pos().y(), 1)) for _s, lab in legend.items])
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
