"""The window on a small screen (issue 45 item 1): projectors are 1024x768, 1280x720 and 1280x800.

Side by side, the docks want ~850 px (the Build form 419, the Knobs panel 427): on a 1280-px screen the
dashboard kept ~390 px and its readouts shrank to ~8 px. Below COMPACT_BELOW of the screen's available width the
window goes compact: the five side docks share one tabbed column at the right (Knobs in front: what a speaker and
a tuner reach for during a run), at most SIDE_SHARE of the window's width, each panel scrolling inside it
when it is wider, so the dashboard keeps most of the width. The View menu's "Compact layout" switches by hand.

The choice is made at every start, from the screen's width or the window's if narrower (a size kept from a
projector): a layout saved compact on a projector is not restored as such (the default layout is), nor a wide
one on a projector. Stage mode saves and restores the dock state
as it finds it, compact or not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QFrame, QScrollArea, QWidget

if TYPE_CHECKING:
    from tunebench.ui.main_window import MainWindow

COMPACT_BELOW = 1500  # px of the screen's available width
SIDE_SHARE = 0.34  # of the window's width, the side column's at most (the Knobs panel whole at 1280 px)
SIDE_MIN = 240  # px: the side column's minimum (its panels scroll below their own)


class Roomy(QScrollArea):
    """A side panel inside the compact column: as narrow as the column, scrolling when the panel is wider."""

    def __init__(self, page: QWidget):
        super().__init__()
        self.setObjectName("compact-scroll")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setMinimumWidth(SIDE_MIN)
        self.setWidget(page)


class ResizeWatch(QObject):
    """Calls `on_resize` once the watched widget's resize is done (in a later turn: never inside its layout)."""

    def __init__(self, on_resize: Callable[[], None]):
        super().__init__()
        self.on_resize = on_resize

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self.on_resize)
        return False


class WindowRoom:
    """The window's side docks, side by side (as built) or compact: one tabbed column."""

    def __init__(self, window: MainWindow, side: list[tuple[QDockWidget, Qt.DockWidgetArea]]):
        self.w = window
        self.side = side  # every side dock with the area it was built in, in the order built
        self.compact = False
        self._watch = ResizeWatch(self._cap_column)  # a narrower window: the column stays within its share
        self._pages: dict[QDockWidget, QWidget] = {}  # a dock's own panel while a Roomy holds it
        window.installEventFilter(self._watch)

    @staticmethod
    def wants_compact(screen_width: int) -> bool:
        return screen_width < COMPACT_BELOW

    def fit(self, screen_width: int) -> None:
        """The layout for a screen `screen_width` px wide (available): compact below COMPACT_BELOW."""
        self.set_compact(self.wants_compact(screen_width))

    def set_compact(self, on: bool) -> None:
        if on == self.compact:
            self._size_column()
            return
        self.compact = on
        w = self.w
        if on:
            for dock, _area in self.side:
                page = dock.widget()
                self._pages[dock] = page
                dock.setWidget(Roomy(page))
                w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
            front = self._front()
            for dock, _area in self.side:
                if dock is not front:
                    w.tabifyDockWidget(front, dock)
            front.raise_()
            self._size_column()
        else:
            for dock, area in self.side:  # back where it was built, in the order built: stacked, not tabbed
                if dock in self._pages:
                    page = self._pages.pop(dock)
                    holder = dock.widget()
                    if isinstance(holder, QScrollArea):
                        holder.takeWidget()
                    dock.setWidget(page)
                    holder.deleteLater()
                w.addDockWidget(area, dock)
        action = getattr(w, "compact_action", None)
        if action is not None and action.isChecked() != on:
            action.setChecked(on)

    def _front(self) -> QDockWidget:
        return next((d for d, _a in self.side if d.objectName() == "dock-Knobs"), self.side[0][0])

    def _size_column(self) -> None:
        if self.compact:
            width = max(SIDE_MIN, int(SIDE_SHARE * self.w.width()))
            self.w.resizeDocks([self._front()], [width], Qt.Orientation.Horizontal)

    def _cap_column(self) -> None:
        if self.compact and self._front().width() > max(SIDE_MIN, int(SIDE_SHARE * self.w.width())) + 2:
            self._size_column()

    def page_of(self, dock: QDockWidget) -> QWidget:
        """The panel a dock shows, compact or not."""
        return self._pages.get(dock, dock.widget())
