"""The "Hot functions" dock (under the Events): the server's top functions by self time (the `profile` probe's
series) over the dashboard's visible range, as bars, live and in replay; a recorded step's flame graph in a window
of its own (against another step: a differential one), or saved as SVG."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.errors import TunebenchError
from tunebench.core.flamegraph import svg
from tunebench.store.repo import Store
from tunebench.ui.dashboard import Dashboard
from tunebench.ui.dialog_helpers import save_path
from tunebench.ui.flame_window import FlameWindow

TOP = 15
PREFIX = "profile."
EMPTY = ("No CPU profile on screen: tick Build > CPU profile before Run (perf samples the server), or replay a "
         "session recorded with it")


def visible_top(dashboard: Dashboard, n: int = TOP) -> list[tuple[str, float]]:
    """(function, mean % of samples) over the dashboard's visible x range, the largest first: the server's, then
    the load generator's ("[client] function")."""
    tl = dashboard.timeline
    lo, hi = dashboard.panels[0].view.viewRange()[0]
    out = []
    for name, buf in tl.series.items():
        if not name.startswith(PREFIX) or name.endswith(".other"):
            continue
        x, y = buf.view()
        keep = (x >= lo) & (x <= hi)
        if keep.any():
            _p, whose, function = name.split(".", 2)
            shown = function if whose == "mysqld" else f"[{whose}] {function}"  # the load generator's, when profiled
            out.append((shown, float(np.nanmean(y[keep]))))
    # the server's functions first, then the client's: each is a % of its own process's samples
    return sorted(out, key=lambda fv: (fv[0].startswith("["), -fv[1]))[:n]


class HotFunctions(QWidget):
    """Takes the dashboard (what is on screen) and the store and a way to name the session on screen."""

    def __init__(self, dashboard: Dashboard, store: Store, session_id: Callable[[], int | None],
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.dashboard, self.store, self.session_id = dashboard, store, session_id
        self.head = QLabel(EMPTY)
        self.head.setWordWrap(True)
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["function (self)", "% of samples"])
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(False)
        self.table.setColumnWidth(0, 260)
        self.steps = QComboBox()
        self.graph = QPushButton("Flame graph…")
        self.graph.setToolTip("The step's flame graph in a window: zoom, search, hover; pick a step A there for a "
                              "differential graph (what the knob changed in where the CPU goes)")
        self.graph.clicked.connect(self._on_graph)
        self.flame = QPushButton("SVG…")
        self.flame.setToolTip("Save the step's flame graph as SVG")
        self.flame.clicked.connect(self._on_flame)
        self.flame_window: FlameWindow | None = None
        row = QHBoxLayout()
        row.addWidget(self.steps, 1)
        row.addWidget(self.graph)
        row.addWidget(self.flame)
        layout = QVBoxLayout(self)
        layout.addWidget(self.head)
        layout.addWidget(self.table, 1)
        layout.addLayout(row)
        self.timer = QTimer(self)
        self.timer.setInterval(1000)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        self.refresh()

    def refresh(self, force: bool = False) -> None:
        if not (force or self.isVisible()):  # (a hidden dock costs nothing)
            return
        top = visible_top(self.dashboard)
        self.head.setText("Server CPU by function over the visible range (mean of the perf windows); [client] "
                          "rows: the load generator's processes" if top else EMPTY)
        self.table.setRowCount(len(top))
        for i, (name, pct) in enumerate(top):
            self.table.setItem(i, 0, QTableWidgetItem(name))
            bar = QTableWidgetItem(f"{pct:5.1f} %  " + "█" * max(1, round(pct / 2)))
            self.table.setItem(i, 1, bar)
        self.table.resizeColumnToContents(1)
        self._fill_steps()

    def _fill_steps(self) -> None:
        sid = self.session_id()
        if sid is None:
            self.steps.clear()
            return
        try:
            steps = [st for st in self.store.get_session(sid, events=False)["steps"]
                     if (st.get("summary") or {}).get("_profile")]
        except TunebenchError:
            return
        wanted = [f"session {sid} step {st['idx'] + 1}" for st in steps]
        if [self.steps.itemText(i) for i in range(self.steps.count())] != wanted:
            self.steps.clear()
            for text, st in zip(wanted, steps, strict=True):
                self.steps.addItem(text, (sid, st["idx"]))
        self.flame.setEnabled(bool(steps))
        self.graph.setEnabled(bool(steps))

    def _on_graph(self) -> None:
        data: Any = self.steps.currentData()
        if data is not None:
            self.open_graph(*data)

    def open_graph(self, sid: int, idx: int) -> FlameWindow:
        """The flame graph window on step `idx` of session `sid` as B, against the profiled step before it (the
        previous configuration or concurrency) as A when there is one."""
        keys = [self.steps.itemData(i) for i in range(self.steps.count())]
        here = keys.index((sid, idx)) if (sid, idx) in keys else -1
        a = keys[here - 1] if here > 0 else None
        if self.flame_window is None:
            self.flame_window = FlameWindow(self.store, self)
        self.flame_window.show_steps([sid], a, (sid, idx))
        if self.flame_window.isVisible():
            self.flame_window.raise_()  # open behind the main window: to the front
        self.flame_window.show()
        return self.flame_window

    def _on_flame(self) -> None:
        data: Any = self.steps.currentData()
        if data is None:
            return
        sid, idx = data
        path = save_path(self, "Flame graph", f"session-{sid}-step-{idx + 1}.svg", "SVG (*.svg)")
        if path:
            self.save_flame(sid, idx, path)

    def save_flame(self, sid: int, idx: int, path: str) -> None:
        session = self.store.get_session(sid, events=False)
        st = next(st for st in session["steps"] if st["idx"] == idx)
        title = f"session {sid} step {idx + 1}: {session['workload']}, server CPU"
        try:
            with open(path, "w") as f:
                f.write(svg(st["summary"]["_profile"], title))
        except OSError as exc:
            self.head.setText(f"cannot write {path}: {exc.strerror}")
            return
        self.head.setText(f"wrote {path}")
