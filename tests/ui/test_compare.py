"""Compare: "align at marker" finds the knob change (or a mark), never a sweep's configuration event that
merely names the knob; one colour per configuration on the TPS-vs-threads curves and the best-to-best bars."""

import numpy as np
import pyqtgraph as pg
import pytest
from pyqtgraph import BarGraphItem, PlotDataItem

from tunebench.core.sessions import align_offset
from tunebench.ui.compare import CompareView
from tunebench.ui.theme import THEMES


def sweep_session(sid, t0, configs):
    """A recorded sweep as the store returns it: config events before the knob changes they lead to."""
    events, cfgs, t = [], [], t0
    for i, (value, tps) in enumerate(configs):
        events.append({"t": t + 1, "kind": "config", "label": f"configuration {i + 1}: "
                       f"innodb_flush_log_at_trx_commit={value}, innodb_doublewrite=ON", "data": {}})
        events.append({"t": t + 3, "kind": "knob", "label": f"innodb_flush_log_at_trx_commit = {value}",
                       "data": {"name": "innodb_flush_log_at_trx_commit", "to": str(value)}})
        events.append({"t": t + 4, "kind": "restart", "label": "sandbox restarted: innodb_flush_log_at_trx_commit",
                       "data": {}})
        cfgs.append({"label": f"innodb_flush_log_at_trx_commit={value}",
                     "steps": [{"threads": n, "tps": tps * k} for k, n in ((1, 4), (2, 16), (3, 64))]})
        t += 100
    return {"id": sid, "name": f"sweep {sid}", "workload": "oltp_read_write", "started_at": t0, "events": events,
            "steps": [], "summary": {"configs": cfgs}}


def test_align_at_marker_is_the_knob_change_not_the_configuration_event():
    s = sweep_session(1, 1000.0, [(1, 100), (2, 300)])
    assert align_offset(s, "marker", "flush_log") == 1003.0  # the knob event, not "configuration 1: ..."
    assert align_offset(s, "marker", "knob") == 1003.0
    assert align_offset(s, "marker", "= 2") == 1103.0
    s["events"].append({"t": 1050.0, "kind": "mark", "label": "mark 1", "data": {}})
    assert align_offset(s, "marker", "mark") == 1050.0
    with pytest.raises(Exception, match="no marker"):
        align_offset(s, "marker", "configuration")  # config and restart events are not markers to align at
    with pytest.raises(Exception, match="no marker"):
        align_offset(s, "marker", "restarted")


class FakeStore:
    def __init__(self, sessions):
        self.sessions = {s["id"]: s for s in sessions}

    def get_session(self, sid):
        return self.sessions[sid]

    def series_names(self, _sid):
        return []


def test_bars_have_the_colour_of_their_configuration_curve(qtbot):
    # best-first order of the bars differs from the curves' order: 1 < 2 in a, 4 > 3 in b
    a = sweep_session(1, 1000.0, [(1, 100), (2, 300)])
    b = sweep_session(2, 5000.0, [(1, 400), (2, 200)])
    view = CompareView(FakeStore([a, b]), THEMES["light"])
    qtbot.addWidget(view)
    view.set_sessions([1, 2])
    curves = {item.name(): item.opts["pen"].color().name() for item in view.curve_plot.getPlotItem().items
              if isinstance(item, PlotDataItem)}
    assert len(curves) == 4 and len(set(curves.values())) == 4
    bars = next(i for i in view.bars.getPlotItem().items if isinstance(i, BarGraphItem))
    brushes = [pg.mkBrush(b).color().name() for b in bars.opts["brushes"]]
    # the table names a configuration "sweep 2 innodb_...=1", its curve's legend "#2 innodb_...=1"
    labels = [f"#{view.table.item(r, 1).text()} " + view.table.item(r, 0).text().split(". ", 1)[1].split(" ", 2)[2]
              for r in range(view.table.rowCount())]
    heights = list(bars.opts["height"])
    assert heights == sorted(heights, reverse=True)
    assert [curves[label] for label in labels] == brushes
    assert np.isclose(heights[0], 1200)  # b, flush=1, 64 threads


def test_the_why_tab_is_the_sessions_diff_of_two(qtbot, tmp_path):
    """Compare of two sessions: their best steps' waits and counters per transaction and efficiency, as
    `tunebench sessions diff A B` prints them, computed off the GUI thread."""
    from tunebench.core.diff import diff
    from tunebench.run.session import diff_side
    from tunebench.store.repo import Store
    from tunebench.store.synthetic import record

    store = Store(tmp_path / "s.sqlite")
    a, b = record(store, 60, n_series=40, seed=1), record(store, 60, n_series=40, seed=2, tps=15_000.0)
    view = CompareView(store, THEMES["light"])
    qtbot.addWidget(view)
    view.set_sessions([a, b])
    # 0.3 s here alone; a bound on the wait, not a speed: beside the suite's other workers 10 s passed once
    qtbot.waitUntil(lambda: view.why.table.rowCount() > 0, timeout=60000)
    want = diff(diff_side(store, a), diff_side(store, b))
    shown = [view.why.table.item(r, 0).text() for r in range(view.why.table.rowCount())]
    # first what else differed between the two servers (issue 44): the same settings here
    assert shown[0] == "server configuration (what else differed)"
    assert shown[1].startswith("(nothing in the servers' configurations") and shown[2] == "waits per transaction"
    assert [r.name for r in want["waits per transaction"]] == shown[3:3 + len(want["waits per transaction"])]
    assert view.why.head.text().startswith(f"A: session {a} step ")
    view.set_sessions([])
    assert view.why.table.rowCount() == 0
    store.close()


def test_the_why_tab_diffs_steps_at_the_same_threads_and_any_pair_picked(qtbot, tmp_path):
    """Issue 30 item 7: Why always showed each session's best step, 16 threads against 64, and the concurrency
    passed for the knob's effect; configurations of one sweep could not be diffed. Each side now picks session
    and step; it starts at the same threads."""
    from tunebench.store.repo import Store
    from tunebench.store.synthetic import record

    store = Store(tmp_path / "s.sqlite")
    a = record(store, 60, n_series=40, seed=1)  # 4 and 16 threads; its best: 16 (the flip at 45 s)
    b = record(store, 60, n_series=40, seed=2, steps=3)  # 4, 16, 64 threads; its best: 64
    view = CompareView(store, THEMES["light"])
    qtbot.addWidget(view)
    why = view.why
    view.set_sessions([a, b])
    qtbot.waitUntil(lambda: why.table.rowCount() > 0, timeout=10000)
    assert why._picked("A") == (a, 2) and why._picked("B") == (b, 2)
    assert "main=16" in why.head.text().splitlines()[0] and "main=16" in why.head.text().splitlines()[1]
    why.pick("B", b, 3)  # the user's pick: 64 threads
    qtbot.waitUntil(lambda: "main=64" in why.head.text(), timeout=10000)
    assert why.table.rowCount() > 0
    # one session: two of its steps, the best (64 threads) and another
    view.set_sessions([b])
    qtbot.waitUntil(lambda: why.table.rowCount() > 0, timeout=10000)
    assert why._picked("B") == (b, 3) and why._picked("A")[0] == b and why._picked("A")[1] != 3
    # the user moves side A to session... the same step as B: said, no diff of a step with itself
    why.pick("A", b, 3)
    assert why.table.rowCount() == 0 and "same step" in why.head.text()
    store.close()


def test_every_curve_says_what_differs(qtbot):
    """Issue 46 item 8: "TPS vs threads" named all four configurations of a sweep the same (the session's long
    name first, cut by the legend). Each entry leads with its configuration's values; one session: only them."""
    a = sweep_session(1, 1000.0, [(1, 100), (2, 300)])
    a["name"] = "trx_commit x sync_binlog, anna's 9.7 on the lab box, a long name"
    b = sweep_session(2, 5000.0, [(1, 400), (2, 200)])
    view = CompareView(FakeStore([a, b]), THEMES["light"])
    qtbot.addWidget(view)
    view.set_sessions([1, 2])
    names = sorted(item.name() for item in view.curve_plot.getPlotItem().items if isinstance(item, PlotDataItem))
    assert names == ["#1 innodb_flush_log_at_trx_commit=1", "#1 innodb_flush_log_at_trx_commit=2",
                     "#2 innodb_flush_log_at_trx_commit=1", "#2 innodb_flush_log_at_trx_commit=2"]
    view.set_sessions([1])
    names = sorted(item.name() for item in view.curve_plot.getPlotItem().items if isinstance(item, PlotDataItem))
    assert names == ["innodb_flush_log_at_trx_commit=1", "innodb_flush_log_at_trx_commit=2"]
