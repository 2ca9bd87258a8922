"""History: a series' headline over time (run/history.py), one point per session with its interval, the change
points marked, busy sessions hollow. Clicking a point opens the session's replay; clicking a second one (Ctrl)
opens Compare with the two. The series are read off the GUI thread: a store of many sessions takes seconds."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.errors import TunebenchError
from tunebench.core.history import number
from tunebench.run.history import Series, collect
from tunebench.store.repo import Store
from tunebench.ui.theme import Theme


class _Loaded(QObject):
    done = Signal(object, str)  # the series (or None), an error's text


class HistoryView(QWidget):
    """`refresh()` reads the store's series in a thread; `show_series(key)` draws one."""

    open_session = Signal(int)
    compare_requested = Signal(list)

    def __init__(self, store: Store, theme: Theme):
        super().__init__()
        self.store, self.theme = store, theme
        self.series: list[Series] = []
        self.current: Series | None = None
        self.loading = False
        self._loaded = _Loaded()
        self._loaded.done.connect(self._on_loaded)
        self._first: int | None = None  # the first of two clicked sessions (Ctrl+click: compare)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("filter: workload, server, machine …")
        self.filter.textChanged.connect(self._fill_series)
        self.pick = QComboBox()
        self.pick.setMinimumContentsLength(30)
        self.pick.currentIndexChanged.connect(self._picked)
        self.load_pick = QComboBox()
        self.load_pick.currentIndexChanged.connect(lambda _i: self._draw())
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Series"))
        bar.addWidget(self.pick, 3)
        bar.addWidget(QLabel("Step"))
        bar.addWidget(self.load_pick, 1)
        bar.addWidget(self.filter, 2)
        bar.addWidget(self.refresh_button)
        self.title = QLabel("")
        self.title.setWordWrap(True)
        self.pick.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.plot = pg.PlotWidget(axisItems={"bottom": pg.DateAxisItem()})
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setMinimumHeight(120)  # a short window (a projector's) keeps the lines under the plot in view
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.changes = QLabel("")
        self.changes.setWordWrap(True)
        self.changes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hint = QLabel("Click a session to replay it; Ctrl+click two to compare them.")
        lay = QVBoxLayout(self)
        lay.addLayout(bar)
        lay.addWidget(self.title)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.changes)
        lay.addWidget(self.hint)
        self._points: list[tuple[float, float, int]] = []  # (x, y, session) of the drawn points
        self.apply_theme(theme)

    # -- data --
    def refresh(self) -> None:
        """Read the series again, in a thread (the view says so meanwhile)."""
        if self.loading:
            return
        self.loading = True
        self.title.setText("reading the sessions …")

        def work() -> None:
            try:
                found: Any = collect(self.store)
                self._loaded.done.emit(found, "")
            except TunebenchError as exc:
                self._loaded.done.emit(None, str(exc))

        threading.Thread(target=work, name="history-read", daemon=True).start()

    def _on_loaded(self, found: list[Series] | None, error: str) -> None:
        self.loading = False
        if found is None:
            self.title.setText(f"history not read: {error}")
            return
        keep = self.current.key if self.current is not None else None
        self.series = found
        self._fill_series()
        if keep is not None:
            self.show_series(keep)

    def _fill_series(self) -> None:
        words = self.filter.text().lower().split()
        shown = [s for s in self.series if all(w in (s.describe() + " " + (s.name or "")).lower() for w in words)]
        self.pick.blockSignals(True)
        self.pick.clear()
        for s in shown:
            self.pick.addItem(f"{s.label} -- {len(s.sessions)} session(s), {len(s.changes)} change(s): "
                              f"{s.describe()}", s.key)
        self.pick.blockSignals(False)
        if not shown:
            self.current = None
            self.title.setText("no series yet: every run adds its session to the series of its experiment"
                               if not self.series else "no series matches the filter")
            self._draw()
            return
        self._picked(0)

    def show_series(self, key: str) -> bool:
        i = self.pick.findData(key)
        if i < 0:
            return False
        self.pick.setCurrentIndex(i)
        self._picked(i)
        return True

    def _picked(self, i: int) -> None:
        key = self.pick.itemData(i)
        self.current = next((s for s in self.series if s.key == key), None)
        self.load_pick.blockSignals(True)
        self.load_pick.clear()
        if self.current is not None:
            for load in dict.fromkeys(p.load for p in self.current.points):
                self.load_pick.addItem(load)
        self.load_pick.blockSignals(False)
        self._draw()

    # -- drawing --
    def apply_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.plot.setBackground(theme.plot_background)
        for axis in ("left", "bottom"):
            self.plot.getPlotItem().getAxis(axis).setTextPen(pg.mkPen(theme.plot_foreground))
        self._draw()

    def _draw(self) -> None:
        self.plot.clear()
        self._points = []
        s, load = self.current, self.load_pick.currentText()
        if s is None or not load:
            self.changes.setText("")
            return
        pts = [p for p in s.points if p.load == load]
        self.title.setText(f"{s.label}: {s.describe()} -- {load}, {pts[0].metric if pts else ''}")
        self.plot.setLabel("left", pts[0].metric if pts else "", color=self.theme.plot_foreground,
                           **{"font-size": f"{self.font().pointSizeF():g}pt"})
        fg = self.theme.plot_foreground
        color = (self.theme.palette or ("#1f77b4",))[0]
        x = np.array([p.started_at for p in pts])
        y = np.array([p.value for p in pts])
        lows = np.array([p.value - p.low if p.low is not None else 0.0 for p in pts])
        highs = np.array([p.high - p.value if p.high is not None else 0.0 for p in pts])
        self.plot.addItem(pg.ErrorBarItem(x=x, y=y, top=highs, bottom=lows, beam=0, pen=pg.mkPen(fg, width=1)))
        quiet = np.array([not p.busy for p in pts], dtype=bool)
        self.plot.plot(x[quiet], y[quiet], pen=pg.mkPen(color, width=1.5), symbol="o", symbolSize=9,
                       symbolBrush=color, symbolPen=color, name="sessions")
        if (~quiet).any():
            self.plot.plot(x[~quiet], y[~quiet], pen=None, symbol="o", symbolSize=9, symbolBrush=None,
                           symbolPen=pg.mkPen(fg), name="busy machine (not used)")
        lines = []
        for cp in (c for c in s.changes if c.load == load):
            at = next((p.started_at for p in pts if p.session_id == cp.after), None)
            before = next((p.started_at for p in pts if p.session_id == cp.before), None)
            if at is None or before is None:
                continue
            mark = pg.InfiniteLine(pos=(at + before) / 2, angle=90, pen=pg.mkPen("#d62728", width=2,
                                                                                 style=Qt.PenStyle.DashLine),
                                   label=f"{cp.ratio:.2f}x", labelOpts={"position": 0.92, "color": fg})
            self.plot.addItem(mark)
            lines.append(cp.text() + "".join(f"\n    {d}" for d in cp.differed[:4]))
        self._points = [(p.started_at, p.value, p.session_id) for p in pts]
        self.changes.setText("\n".join(lines) if lines else
                             f"no change point: no shift beyond this series' own noise ({len(pts)} sessions, "
                             f"{number(float(np.median(y))) if len(y) else '-'} median)")

    def _clicked(self, ev: Any) -> None:
        if not self._points or ev.button() != Qt.MouseButton.LeftButton:
            return
        vb = self.plot.getPlotItem().getViewBox()
        pos = vb.mapSceneToView(ev.scenePos())
        sx, sy = vb.viewPixelSize()
        near = min(self._points, key=lambda p: ((p[0] - pos.x()) / sx) ** 2 + ((p[1] - pos.y()) / sy) ** 2)
        if ((near[0] - pos.x()) / sx) ** 2 + ((near[1] - pos.y()) / sy) ** 2 > 12 ** 2:
            return
        self.pick_session(near[2], bool(ev.modifiers() & Qt.KeyboardModifier.ControlModifier))

    def pick_session(self, sid: int, second: bool) -> None:
        """A point clicked: replay it, or with a first one already picked (Ctrl), compare the two."""
        if second and self._first is not None and self._first != sid:
            first, self._first = self._first, None
            self.compare_requested.emit([first, sid])
            return
        if second:
            self._first = sid
            self.hint.setText(f"session {sid} picked: Ctrl+click another to compare them")
            return
        self._first = None
        self.open_session.emit(sid)
