"""The window on one model (issue 14): one time axis for every plot, live and in replay; stage mode entered
and left without residue; theme and font scale as two inputs of one appearance; readouts that never overlap.

Sessions are written with the store's own writer (tunebench.store.synthetic); no server is needed.
"""

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QSettings

from tunebench.store.repo import Store
from tunebench.store.synthetic import record


@pytest.fixture
def win(qtbot, tmp_path):
    from tunebench.ui.main_window import MainWindow

    store = Store(tmp_path / "sessions.sqlite")
    w = MainWindow(store, settings=QSettings(str(tmp_path / "gui.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    w.show()
    yield w
    w.stage.set(False)
    store.close()


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
    lo, hi = next(iter(x_ranges(win)))
    assert hi == pytest.approx(win.replay_timeline.end + 1)
    assert len(marker_scene_x(win, 2)) == 1, marker_scene_x(win, 2)  # the knob line
