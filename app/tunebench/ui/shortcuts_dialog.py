"""Help > Keyboard shortcuts: every action of the window with its key, read from the actions themselves (so the
list is right whatever the toolbar, the menus or stage mode change)."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


def shortcut_rows(window: QWidget, stage_actions: list[QAction]) -> list[tuple[str, str, str]]:
    """(key, action, where) of every action of `window` that has a key; stage mode's own keys marked so."""
    stage = {id(a) for a in stage_actions}
    rows: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for a in window.actions():
        key = a.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
        text = a.text().replace("&", "").rstrip("…")
        if not key or (key, text) in seen:
            continue
        seen.add((key, text))
        rows.append((key, text, "stage mode" if id(a) in stage else "window"))
    return sorted(rows, key=lambda r: (r[2] != "window", r[1].lower()))


class ShortcutsDialog(QDialog):
    def __init__(self, rows: list[tuple[str, str, str]], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.table = QTableWidget(len(rows), 3)
        self.table.setHorizontalHeaderLabels(["key", "action", "where"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(520, min(900, 80 + 30 * len(rows)))
