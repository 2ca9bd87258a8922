"""The flame graph in the window (issue 30 item 18): hover text at a frame's place, click to zoom (the frame then
spans the width) and back, search highlights and says its share, red/blue by the change in share in a differential
graph; opened from the Hot functions dock on a replayed session (both themes) and from Compare for two sessions."""

import gzip
import json
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor

from tunebench.core.flame import build, describe, layout
from tunebench.ui.flame_graph import MATCH, FlameGraph

A = {"main;work;compute": 60, "main;work;fsync": 30, "main;idle": 10}
B = {"main;work;compute": 150, "main;idle": 40, "main;net": 10}
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "trx_commit_1_vs_2.json.gz"


@pytest.fixture
def graph(qtbot):
    g = FlameGraph()
    qtbot.addWidget(g)
    g.resize(1000, 300)
    g.set_tree(build(B, A))
    g.show()
    qtbot.waitExposed(g)
    return g


def frame(g, path):
    return next(f for f in g.frames if f.path == path)


def centre(g, path) -> QPoint:
    return g.frame_rect(frame(g, path)).center().toPoint()


def pixel(g, path) -> QColor:
    """The fill at the middle of a frame's top part (left of it the name, at its edge the outline)."""
    rect = g.frame_rect(frame(g, path))
    return g.grab().toImage().pixelColor(int(rect.center().x()), int(rect.top() + 2))


def test_hover_says_the_frame_under_the_pointer(graph, qtbot):
    with qtbot.waitSignal(graph.hovered) as hovered:
        qtbot.mouseMove(graph, centre(graph, ("main", "work", "compute")))
    assert hovered.args == ["compute\nA 60.0 % → B 75.0 % of all samples (+15.0 points)\n"
                            "samples: A 60 of 100, B 150 of 200\nof its caller's: A 66.7 %, B 100.0 %"]
    qtbot.mouseMove(graph, centre(graph, ("main", "idle")))
    qtbot.waitUntil(lambda: graph.hover_text.startswith("idle\nA 10.0 % → B 20.0 %"))
    qtbot.mouseMove(graph, QPoint(900, 20))  # above `work`'s callees: nothing
    qtbot.waitUntil(lambda: graph.hover_text == "")


def test_one_steps_hover_has_samples_and_shares(qtbot):
    g = FlameGraph()
    qtbot.addWidget(g)
    g.resize(800, 200)
    g.set_tree(build(B))
    g.show()
    qtbot.mouseMove(g, centre(g, ("main", "net")))
    qtbot.waitUntil(lambda: g.hover_text == "net\n10 samples, 5.0 % of all, 5.0 % of its caller's")


def test_click_zooms_into_the_frame_and_back(graph, qtbot):
    assert frame(graph, ("main", "idle")).w == pytest.approx(0.2)
    qtbot.mouseClick(graph, Qt.MouseButton.LeftButton, pos=centre(graph, ("main", "idle")))
    assert graph.focus == ("main", "idle")
    assert graph.frame_rect(frame(graph, ("main", "idle"))).width() == graph.width()
    assert ("main", "work") not in {f.path for f in graph.frames}  # its siblings are out of the zoom
    # a caller below it (drawn full width, faded) zooms back out to itself; Esc to the root
    qtbot.mouseClick(graph, Qt.MouseButton.LeftButton, pos=centre(graph, ("main",)))
    assert graph.focus == ("main",)
    qtbot.mouseClick(graph, Qt.MouseButton.LeftButton, pos=centre(graph, ("main", "work")))
    assert graph.focus == ("main", "work")
    assert graph.frame_rect(frame(graph, ("main", "work", "compute"))).width() == graph.width()  # all B's
    qtbot.keyClick(graph, Qt.Key.Key_Escape)
    assert graph.focus == ()
    assert frame(graph, ("main", "work")).w == pytest.approx(0.75)


def test_differential_colour_red_for_more_blue_for_less(graph, qtbot):
    more = pixel(graph, ("main", "work", "compute"))  # 60 % -> 75 % of the CPU
    assert more.red() == 255 and more.blue() < 200, more.name()
    graph.set_side("a")
    less = pixel(graph, ("main", "work", "fsync"))  # 30 % -> gone: drawn from A's widths, full blue
    assert (less.red(), less.green(), less.blue()) == (95, 155, 255)
    graph.set_side("b")
    root = pixel(graph, ())
    assert (root.red(), root.green(), root.blue()) == (255, 255, 255)


def test_search_highlights_matches(graph, qtbot):
    graph.set_search("COMP")
    assert pixel(graph, ("main", "work", "compute")) == MATCH
    assert pixel(graph, ("main", "idle")) != MATCH


def record_profiled(store, profiles, t0=1_790_000_000.0, threads=8, per_step=None, tps=None):
    """A session of len(profiles) 20 s steps, each with its CPU profile and the knob it ran with (`per_step`: each
    step's threads instead; `tps`: each step's TPS)."""
    from tunebench.core.interval import Event

    w = store.new_session(target="sandbox", transport="socket", engine="builtin", workload="oltp_write_only",
                          config={"groups": [{"name": "main", "workload": "oltp_write_only", "options": {},
                                              "schedule": [threads]}]},
                          flavor="mariadb", version="10.11.19", started_at=t0)
    for k, (knobs, folded) in enumerate(profiles):
        start = t0 + 20 * k
        n = per_step[k] if per_step else threads
        rate = tps[k] if tps else 7000.0
        step = w.start_step(k, start, start, {"threads": {"main": n}, "config": k, "step": 0, "knobs": knobs})
        w.add_event(Event(start, "step_start", f"step {k + 1}: main={n}"))
        for s in range(20):
            w.add_samples(start + s + 1, {"client.main.tps": rate, "client.main.threads": float(n)})
        w.end_step(step, start + 20, {"main": {"threads": n, "tps": rate}, "_profile": folded})
    w.flush()
    w.finish("completed", {"steps": []}, ended_at=t0 + 20 * len(profiles))
    return w.id


def real_steps():
    steps = json.loads(gzip.decompress(FIXTURE.read_bytes()))["steps"]
    return [(s["knobs"], s["_profile"]) for s in steps]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_replayed_sessions_steps_as_a_differential_graph(win, qtbot, theme):
    """Hot functions on a replayed session: step 2 against step 1 (innodb_flush_log_at_trx_commit 1 -> 2, a real
    perf profile); readable in both themes: dark text on light frames, the graph's ground the theme's."""
    sid = record_profiled(win.store, real_steps())
    win.set_theme(theme)
    win.open_replay(sid)
    win.hot.refresh(force=True)
    assert win.hot.steps.count() == 2 and win.hot.graph.isEnabled()
    win.hot.steps.setCurrentIndex(1)
    win.hot.graph.click()
    fw = win.hot.flame_window
    qtbot.waitUntil(lambda: fw.tree is not None and fw.tree.differential, timeout=10000)
    assert fw.isVisible()
    assert fw.a_box.currentText() == "step 1: main=8; innodb_flush_log_at_trx_commit=1"
    assert fw.b_box.currentText() == "step 2: main=8; innodb_flush_log_at_trx_commit=2"
    assert (fw.tree.total_a, fw.tree.total_b) == (2001, 1964)
    fw.search.setText("fdatasync")
    assert fw.found.text() == "'fdatasync': A 8.0 % → B 0.0 % of the samples (-8.0 points)"
    assert "frame(s) only in A" in fw.head.text()
    fw.side.setCurrentIndex(fw.side.findData("a"))
    g = fw.graph
    shown = [f for f in g.frames if f.name == "fdatasync"]
    assert shown and all(f.b == 0 for f in shown)  # gone in B, drawn from A's widths
    assert g.frame_colour(shown[0]) == MATCH
    fw.search.clear()
    trans = max((f for f in g.frames if f.name == "trans_commit"), key=lambda f: f.a)
    assert g.frame_colour(trans).blue() == 255 and g.frame_colour(trans).red() < 255  # less of B's CPU
    assert describe(fw.tree, trans, "a").splitlines()[1:] == [
        "A 16.8 % → B 11.0 % of all samples (-5.8 points)", "samples: A 336 of 2,001, B 216 of 1,964",
        "of its caller's: A 44.3 %, B 31.3 %"]
    ground = g.grab().toImage().pixelColor(g.width() - 2, 2)
    assert (ground.lightness() < 80) == (theme == "dark"), ground.name()
    fw.close()


def test_the_first_profiled_step_opens_alone_and_a_is_picked_there(win, qtbot):
    sid = record_profiled(win.store, [({}, B), ({}, A)])
    win.open_replay(sid)
    win.hot.refresh(force=True)
    fw = win.hot.open_graph(sid, 0)
    qtbot.waitUntil(lambda: fw.tree is not None, timeout=10000)
    assert not fw.tree.differential and not fw.side.isEnabled()
    assert fw.head.text().startswith("server CPU, 200 samples")
    fw.a_box.setCurrentIndex(2)  # (none), step 1, step 2
    assert fw.tree.differential and (fw.tree.total_a, fw.tree.total_b) == (100, 200)
    assert fw.side.isEnabled()
    fw.graph.set_focus(("main", "work"))
    assert "work" in fw.crumbs.text()
    fw.crumbs.linkActivated.emit("0")
    assert fw.graph.focus == ()
    fw.close()


def test_compare_opens_a_vs_b_of_two_sessions_at_the_same_threads(win, qtbot):
    a = record_profiled(win.store, [({}, A)], threads=8)
    b = record_profiled(win.store, [({}, {"x;y": 1}), ({}, B)], t0=1_790_100_000.0)
    # the second session's steps: 8 threads both; give its first another concurrency
    b2 = record_profiled(win.store, [({}, {"x;y": 1})], t0=1_790_200_000.0, threads=16)
    win.compare_sessions([a, b2, b])
    fw = win.compare.open_flame()
    qtbot.waitUntil(lambda: fw.tree is not None, timeout=10000)
    assert fw.a_box.currentText() == f"session {a} step 1: main=8"
    assert fw.b_box.currentText() == f"session {b} step 1: main=8"
    assert fw.b_box.count() == 4  # every profiled step of the three sessions
    fw.b_box.setCurrentIndex(fw.b_box.findText(f"session {b} step 2: main=8"))
    assert fw.tree.differential and (fw.tree.total_a, fw.tree.total_b) == (100, 200)
    assert [f.path for f in layout(fw.tree, side="b")] == [f.path for f in fw.graph.frames]
    fw.close()


def test_the_graph_opens_on_its_root_row_and_stays_where_the_user_scrolled(win, qtbot):
    """The root is at the bottom of a graph taller than the window: it opens scrolled down there (it first opened
    part-way, the root row out of sight); once the user scrolls, a resize leaves the view where it is."""
    from PySide6.QtWidgets import QAbstractSlider

    sid = record_profiled(win.store, real_steps())
    win.open_replay(sid)
    win.hot.refresh(force=True)
    fw = win.hot.open_graph(sid, 1)
    fw.resize(1200, 500)
    qtbot.waitUntil(lambda: fw.tree is not None, timeout=10000)
    bar = fw.scroller.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum())
    assert fw.crumbs.text().count("<a ") == 1 and ">all</a>" in fw.crumbs.text()
    bar.triggerAction(QAbstractSlider.SliderAction.SliderToMinimum)
    assert bar.value() == 0
    fw.resize(1100, 480)
    qtbot.waitUntil(lambda: fw.graph.width() < 1100)
    assert bar.value() == 0
    fw.close()


def test_a_sweeps_flame_graph_opens_on_the_why_tabs_pair_at_one_concurrency(win, qtbot):
    """Issue 46 item 3: a sweep's flame graph opened on step 1 at 4 users against step 2 at 16 (the concurrency
    passed for the knob's effect). It opens on the pair the Why tab shows: the best step and another at its
    threads, each named by its threads and configuration."""
    sid = record_profiled(win.store, [({"k": "1"}, A), ({"k": "1"}, B), ({"k": "2"}, A), ({"k": "2"}, B)],
                          per_step=[4, 16, 4, 16], tps=[5000.0, 9000.0, 5500.0, 9900.0])
    win.compare_sessions([sid])
    fw = win.compare.open_flame()
    qtbot.waitUntil(lambda: fw.tree is not None, timeout=10000)
    assert fw.a_box.currentText() == "step 2: main=16; k=1" and fw.b_box.currentText() == "step 4: main=16; k=2"
    fw.close()
