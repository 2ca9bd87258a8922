"""What an empty view says instead of blank axes or an empty table: one centred line of what to do next
(with the key of the action that does it, read from the action, so stage mode's Ctrl+F5 shows as such)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QWidget

if TYPE_CHECKING:
    from tunebench.ui.main_window import MainWindow


class EmptyState(QLabel):
    """A line over `host` while `empty()` is true, checked every `poll_ms` (a length test: nothing to redraw)."""

    def __init__(self, host: QWidget, empty: Callable[[], bool], text: Callable[[], str], poll_ms: int = 300):
        super().__init__(host)
        self.host, self.empty, self.text_of = host, empty, text
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setObjectName("empty-state")
        self.setStyleSheet("QLabel#empty-state { color: #888; font-size: 14pt; }")
        host.installEventFilter(self)
        self.timer = QTimer(self)
        self.timer.setInterval(poll_ms)
        self.timer.timeout.connect(self.update_state)
        self.timer.start()
        self.update_state()

    def update_state(self) -> None:
        empty = self.empty()
        if empty:
            text = self.text_of()
            if text != self.text():
                self.setText(text)
            self._place()
        if empty == self.isHidden():
            self.setVisible(empty)

    def _place(self) -> None:
        self.setGeometry(0, 0, self.host.width(), self.host.height())
        self.raise_()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.host and event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            self._place()
            QTimer.singleShot(0, self.update_state)
        return False


def key(action: QAction) -> str:
    return action.shortcut().toString()


def install_empty_states(w: MainWindow) -> tuple[EmptyState, EmptyState]:
    """The dashboard with no data, the sessions list with no session (or none the filter lets through)."""
    def dashboard_text() -> str:
        return (f"No data yet — Run ({key(w.run_action)}) starts the workload;\n"
                "double-click a session in Sessions to replay it")

    def sessions_text() -> str:
        if w.sessions.rows:
            return f"No session matches “{w.sessions.filter.text()}”"
        return (f"No sessions yet — Run ({key(w.run_action)}) records one;\n"
                f"File > Import session file ({key(w.import_action)}) brings one in")

    def no_session_shown() -> bool:
        t = w.sessions.table
        return not any(not t.isRowHidden(r) for r in range(t.rowCount()))

    return (EmptyState(w.dashboard.graphics, lambda: not w.dashboard.timeline.series, dashboard_text),
            EmptyState(w.sessions.table.viewport(), no_session_shown, sessions_text))
