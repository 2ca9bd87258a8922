"""Compare's "Why" tab: the first two sessions' best steps side by side, the `sessions diff` table (waits and
counters per transaction, profile functions, efficiency, statements), computed off the GUI thread."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from tunebench.core.diff import Row, diff, fmt, ratio
from tunebench.run.session import diff_side
from tunebench.store.repo import Store
from tunebench.ui.tasks import TaskRunner


class DiffView(QWidget):
    """Takes the store; `show_pair(a, b)` computes the diff of their best steps in the background."""

    def __init__(self, store: Store, parent: QWidget | None = None):
        super().__init__(parent)
        self.store = store
        self.tasks = TaskRunner(self)
        self.head = QLabel("Compare two sessions: why the second differs, per transaction")
        self.head.setWordWrap(True)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["", "A", "B", "change"])
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        layout = QVBoxLayout(self)
        layout.addWidget(self.head)
        layout.addWidget(self.table, 1)
        self.sections: dict[str, list[Row]] = {}

    def show_pair(self, ids: list[int]) -> None:
        if len(ids) < 2:
            self.table.setRowCount(0)
            self.head.setText("Compare two sessions: why the second differs, per transaction")
            return
        a, b = ids[0], ids[1]
        self.head.setText(f"sessions {a} and {b}: reading their best steps …")

        def work() -> tuple[Any, Any, dict[str, list[Row]]]:
            sa, sb = diff_side(self.store, a), diff_side(self.store, b)
            return sa, sb, diff(sa, sb)

        self.tasks.submit("diff", work, self._on_done, self._on_failed)

    def _on_failed(self, message: str) -> None:
        self.table.setRowCount(0)
        self.head.setText(message)

    def _on_done(self, result: tuple[Any, Any, dict[str, list[Row]]]) -> None:
        sa, sb, self.sections = result
        self.head.setText(f"A: {sa.label}\nB: {sb.label}")
        rows: list[tuple[str, Row | None]] = []
        for title, section in self.sections.items():
            rows.append((title, None))
            rows += [("", r) for r in section] or [("(none recorded)", None)]
        self.table.setRowCount(len(rows))
        for i, (title, r) in enumerate(rows):
            if r is None:
                item = QTableWidgetItem(title)
                font = item.font()
                font.setBold(not title.startswith("("))
                item.setFont(font)
                self.table.setItem(i, 0, item)
                for col in (1, 2, 3):
                    self.table.setItem(i, col, QTableWidgetItem(""))
                continue
            for col, text in enumerate((r.name, fmt(r.a), fmt(r.b), ratio(r))):
                item = QTableWidgetItem(text)
                if r.detail:  # a statement's whole text, on hover
                    item.setToolTip(r.detail)
                if col:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(i, col, item)
