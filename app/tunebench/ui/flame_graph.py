"""The flame graph widget: paints the frames core/flame.py lays out (the root at the bottom), a frame's hover text
as a tooltip, click to zoom into a frame (its callers below it in italics: click one, Backspace or Esc to come
back), search matches in magenta. One step's profile in warm colours, or two steps' in red (more of the CPU in B)
and blue (less)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QHelpEvent, QKeyEvent, QMouseEvent, QPainter, QPaintEvent, QPalette, QResizeEvent
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from tunebench.core.flame import (
    FlameTree,
    Frame,
    Side,
    change,
    colour_scale,
    describe,
    diff_colour,
    focus_path,
    frame_at,
    layout,
    matches,
    warm_colour,
)

MATCH = QColor(230, 60, 230)
EDGE = QColor(0, 0, 0, 70)
MIN_PX = 0.5  # frames narrower than this are not drawn


class FlameGraph(QWidget):
    """Takes nothing; `set_tree` gives it a profile (one or two steps'), `set_side` the widths' side, `set_focus`
    the frame zoomed into, `set_search` the term to highlight."""

    focus_changed = Signal(object)  # the zoomed frame's path (tuple of names; () the root)
    hovered = Signal(str)  # the frame under the pointer, described ("" when none)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.tree: FlameTree | None = None
        self.side: Side = "b"
        self.focus: tuple[str, ...] = ()
        self.term = ""
        self.frames: list[Frame] = []
        self.scale = 0.0
        self.hover_text = ""
        self._laid_for = -1  # the width the frames were laid out for
        self._zoomed = False
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    # -- inputs --
    def set_tree(self, tree: FlameTree | None) -> None:
        self.tree = tree
        self.scale = colour_scale(tree) if tree is not None and tree.differential else 0.0
        self._relayout()

    def set_side(self, side: Side) -> None:
        self.side = side
        self._relayout()

    def set_focus(self, path: tuple[str, ...]) -> None:
        self.focus, self._zoomed = tuple(path), True  # (said even when it stays: a click on the zoomed frame)
        self._relayout()

    def set_search(self, term: str) -> None:
        self.term = term.strip()
        self.update()

    # -- geometry --
    def row_height(self) -> int:
        return self.fontMetrics().height() + 4

    def _relayout(self) -> None:
        before = self.focus
        if self.tree is None:
            self.frames = []
        else:
            self.focus = focus_path(self.tree, self.focus, self.side)
            self.frames = layout(self.tree, self.focus, self.side, MIN_PX / max(1, self.width()))
        self._laid_for = self.width()
        self.updateGeometry()
        self.setMinimumHeight(self.sizeHint().height())
        if self.focus != before or self._zoomed:
            self.focus_changed.emit(self.focus)
        self._zoomed = False
        self.update()

    def rows(self) -> int:
        return 1 + max((f.depth for f in self.frames), default=0)

    def sizeHint(self) -> QSize:
        return QSize(800, (self.rows() + 1) * self.row_height())

    def frame_rect(self, frame: Frame) -> QRectF:
        """Where `frame` is drawn, in widget coordinates (the root row at the bottom)."""
        row = self.row_height()
        y = self.height() - (frame.depth + 1) * row
        return QRectF(frame.x * self.width(), y, frame.w * self.width(), row - 1)

    def frame_at_point(self, pos: QPoint | QPointF) -> Frame | None:
        if self.width() <= 0:
            return None
        depth = int((self.height() - pos.y()) // self.row_height())
        return frame_at(self.frames, pos.x() / self.width(), depth) if depth >= 0 else None

    # -- Qt events --
    def resizeEvent(self, event: QResizeEvent) -> None:
        if event.size().width() != self._laid_for:
            self._relayout()
        super().resizeEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        background = self.palette().color(QPalette.ColorRole.Base)
        p.fillRect(self.rect(), background)
        if self.tree is None:
            return
        p.setPen(Qt.PenStyle.NoPen)
        metrics = self.fontMetrics()
        caller_font = self.font()
        caller_font.setItalic(True)
        for f in self.frames:
            rect = self.frame_rect(f)
            if not rect.intersects(QRectF(event.rect())):
                continue
            fill = self.frame_colour(f)  # callers of the zoomed frame too: faded, they would read as a smaller change
            p.fillRect(rect, fill)
            if rect.width() >= 3:  # an outline: white (unchanged) frames on a white background stay apart
                p.setPen(EDGE)
                p.drawRect(rect.adjusted(0, 0, -1, 0))
                p.setPen(Qt.PenStyle.NoPen)
            if rect.width() > 3 * metrics.averageCharWidth():
                text = metrics.elidedText(f.name, Qt.TextElideMode.ElideRight, int(rect.width()) - 4)
                p.setPen(QColor(20, 20, 20) if fill.lightnessF() > 0.45 else QColor(240, 240, 240))
                p.setFont(caller_font if f.above else self.font())  # the zoomed frame's callers in italics
                p.drawText(rect.adjusted(2, 0, -2, 0), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                           text)
                p.setPen(Qt.PenStyle.NoPen)
        p.end()

    def frame_colour(self, frame: Frame) -> QColor:
        """A frame's fill: search match, change in share (a differential graph), or the warm palette."""
        if self.term and matches(frame.name, self.term):
            return QColor(MATCH)
        tree = self.tree
        if tree is not None and tree.differential:
            return QColor(*diff_colour(change(tree, frame.a, frame.b), self.scale))
        return QColor(*warm_colour(frame.name))

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        frame = self.frame_at_point(event.position())
        text = describe(self.tree, frame, self.side) if frame is not None and self.tree is not None else ""
        if text != self.hover_text:
            self.hover_text = text
            self.hovered.emit(text)
            if not text:
                QToolTip.hideText()
        super().mouseMoveEvent(event)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            frame = self.frame_at_point(event.pos())
            if frame is not None and self.tree is not None:
                QToolTip.showText(event.globalPos(), describe(self.tree, frame, self.side), self)
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)

    def leaveEvent(self, event: object) -> None:
        if self.hover_text:
            self.hover_text = ""
            self.hovered.emit("")
        super().leaveEvent(event)  # type: ignore[arg-type]

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            frame = self.frame_at_point(event.position())
            if frame is not None:
                self.set_focus(frame.path)
        super().mouseReleaseEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape and self.focus:
            self.set_focus(())
        elif event.key() == Qt.Key.Key_Backspace and self.focus:
            self.set_focus(self.focus[:-1])
        else:
            super().keyPressEvent(event)
