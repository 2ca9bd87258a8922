"""The "Statements" dock: the statements probe's digests (calls/s, mean latency, rows examined per call, share of
the statements' time) over the step at the play head or the plots' visible range - PMM's Query Analytics on the
run's own timeline. It reads the dashboard's timeline as the plots do: nothing after the head in a replay."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.diff import fmt
from tunebench.core.statements import BUCKETS, PREFIX, TOTAL, Statement, elide, statements
from tunebench.ui.dashboard import Dashboard
from tunebench.ui.replay import clock

TOP = 15
EMPTY = ("No statements on screen: tick Build > Statements before Run (the statements probe reads "
         "performance_schema's statement digests), or replay a session recorded with it")
SPANS = ("step at the head", "visible range")
COLUMNS = ("statement", "calls/s", "mean latency", "rows exam./call", "% of time")


def latency(us: float | None) -> str:
    if us is None:
        return "n/a"
    return f"{us / 1000:,.2f} ms" if us >= 1000 else f"{us:,.1f} µs"


class StatementsPanel(QWidget):
    """Takes the dashboard: its timeline (live or replay) and its visible range. `found` once a timeline on screen
    has statements (the window then shows the dock)."""

    found = Signal()

    def __init__(self, dashboard: Dashboard, parent: QWidget | None = None):
        super().__init__(parent)
        self.dashboard = dashboard
        self.head = QLabel(EMPTY)
        self.head.setWordWrap(True)
        self.span = QComboBox()
        self.span.addItems(SPANS)
        self.span.setToolTip("The statements of the step the play head is in (live: the step running), or of "
                             "the seconds the plots show")
        self.span.currentIndexChanged.connect(lambda _i: self.refresh(force=True))
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)  # one line a statement, its middle elided; the whole text on hover
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        top = QHBoxLayout()
        top.addWidget(self.head, 1)
        top.addWidget(self.span)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        self.rows: list[Statement] = []
        self._seen: tuple[int, int, str, tuple[float, float]] | None = None
        self._found_in: int | None = None  # id of the timeline `found` was said for
        # the plots repaint a panel every 160 ms: the table follows the head at about that pace, not a second late
        self.timer = QTimer(self)
        self.timer.setInterval(250)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()

    def _span(self) -> tuple[float, float, str]:
        """[lo, hi] in the timeline's seconds and how the header names it; hi is the head (replay) or the last
        second (live), as the plots end."""
        tl = self.dashboard.timeline
        hi = tl.head if tl.head is not None else tl.x_max
        if self.span.currentIndex() == 1:
            lo, right = self.dashboard.panels[0].view.viewRange()[0]
            hi = min(hi, right)
            return lo, hi, f"{clock(lo)}-{clock(hi)}"
        steps = [m.t for m in tl.markers if m.kind == "step" and m.t <= hi]
        lo = steps[-1] if steps else 0.0
        return lo, hi, (f"step {len(steps)}, " if steps else "") + f"{clock(lo)}-{clock(hi)}"

    def refresh(self, force: bool = False) -> None:
        tl = self.dashboard.timeline
        if self._found_in != id(tl) and any(n.startswith(PREFIX) for n in tl.series):
            self._found_in = id(tl)
            self.found.emit()
        if not (force or self.isVisible()):  # (a hidden dock costs nothing)
            return
        lo, hi, where = self._span()
        seen = (id(tl), tl.version, where, (lo, hi))
        if seen == self._seen and not force:
            return
        self._seen = seen
        series = {n: buf.view() for n, buf in tl.series.items() if n.startswith(PREFIX)}
        self.rows = statements(series, lo, hi, tl.statements, top=TOP) if series else []
        digests = [s for s in self.rows if s.digest not in BUCKETS]
        total = next((s for s in self.rows if s.digest == TOTAL), None)
        if not self.rows:
            self.head.setText(EMPTY if not series else f"No statements in {where}")
        else:
            self.head.setText(f"Statements of {where}, the most time first"
                              + (f": {fmt(total.calls)} calls/s in all, {latency(total.lat_us)} a call"
                                 if total else ""))
        shown = digests + [s for s in self.rows if s.digest in BUCKETS]
        self.table.setRowCount(len(shown))
        for i, s in enumerate(shown):
            pct = "" if s.time_pct is None else f"{s.time_pct:5.1f} %  " + "█" * max(0, round(s.time_pct / 10))
            cells = (elide(s.text, 160) if s.digest != TOTAL else "(all statements)", fmt(s.calls), latency(s.lat_us),
                     fmt(s.rows_examined), pct if s.digest != TOTAL else "")
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col == 0:
                    item.setToolTip(s.text if s.digest in BUCKETS else f"{s.text}\n\ndigest {s.digest}…, "
                                    f"{s.seconds} s recorded in this span")
                elif col < 4:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if s.digest in BUCKETS:
                    item.setForeground(self.palette().placeholderText())
                self.table.setItem(i, col, item)
