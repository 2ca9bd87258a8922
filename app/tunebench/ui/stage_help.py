"""The stage hotkey card: a large overlay over the window, shown for a while on entering stage mode and on H,
so the speaker sees F1-F8 where the audience's window is (the Events dock is hidden on stage). It also
flashes what a preset key did, and why it failed, and a flip's A/B verdict when it arrives."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QLabel, QWidget

from tunebench.core.verdict import event_verdict, order_text, short_wait

SHOW_MS = 8000  # long enough to read six presets aloud
FLASH_MS = 4000
# the verdict is what the audience waited a step for: it stays until the speaker dismisses it (H) or flips again
VERDICT_MS: int | None = None


class StageHelp(QLabel):
    """A child of the window, kept at its bottom centre; transparent to the mouse."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self.setObjectName("stage-help")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.setStyleSheet("QLabel#stage-help { background: rgba(0, 0, 0, 240); color: #ffffff; "
                           "border: 3px solid #ffd400; border-radius: 12px; padding: 16px 26px; "
                           "font-size: 30px; }")
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        self._keys: list[tuple[str, str]] = []
        window.installEventFilter(self)
        self.hide()

    def set_keys(self, keys: list[tuple[str, str]]) -> None:
        self._keys = list(keys)

    def card_text(self) -> str:
        rows = "".join(f"<tr><td style='color:#ffd400; padding-right:18px'><b>{k}</b></td><td>{_esc(t)}</td></tr>"
                       for k, t in self._keys)
        return f"<table>{rows}</table>"

    def show_keys(self, ms: int = SHOW_MS) -> None:
        self._show(self.card_text(), ms)

    def toggle_keys(self) -> None:
        """H: the keys card, or away with the card on screen (a verdict that stays is dismissed with it)."""
        if self.isVisible() and (self.text() == self.card_text() or not self._timer.isActive()):
            self.hide()
        else:
            self.show_keys()

    def flash(self, text: str, ms: int = FLASH_MS) -> None:
        self._show(f"<span>{_esc(text)}</span>", ms)

    def show_verdict(self, data: dict[str, Any], ms: int | None = VERDICT_MS) -> None:
        """A flip's A/B verdict (a "verdict" event's data): the TPS line large, latency and waits below it."""
        v = event_verdict(data)
        # which kind of verdict this is: one window before and one after, or the Confirm action's blocks
        kind = f"Confirm, {order_text(str(data.get('order', '')))}" \
            if data.get("confirmed") else "a single flip (C confirms it)"
        head = f"{data.get('name')} {data.get('from')} → {data.get('to')} · {kind}"
        # the headline follows the load: TPS in closed loop, the p95 at the asked rate in open loop
        big = v.headline() if v else "too few settled seconds for a verdict"
        sense = v.better() if v is not None else 0
        colour = "#ffffff" if sense == 0 else "#5fd35f" if sense > 0 else "#ff6b6b"
        rows = [f"<div style='color:#ffd400'>{_esc(head)}</div>",
                f"<div style='font-size:46px; color:{colour}'><b>{_esc(big)}</b></div>"]
        if v is not None:
            rows += [f"<div>{_esc(v.check_text())}</div>"] if v.check_text() else []
            rows += [f"<div style='font-size:24px'>{_esc(short_wait(w.name))} {w.before:.1f} → {w.after:.1f} ms/s"
                     "</div>" for w in v.waits]
        if data.get("new_sessions_only"):
            rows.append("<div style='color:#ffd400'>applies to new connections only</div>")
        rows.append("<div style='font-size:18px; color:#bbbbbb'>H: dismiss</div>" if ms is None else "")
        self._show("".join(rows), ms)

    def _show(self, html: str, ms: int | None) -> None:
        """`ms` None: until dismissed (H) or replaced."""
        self.setText(html)
        self.setWordWrap(False)
        self.adjustSize()
        parent = self.parentWidget()
        room = parent.width() - 40 if parent is not None else self.width()
        if self.width() > room:  # a long line: wrapped to the window, never cut off at its edges
            self.setWordWrap(True)
            self.resize(room, self.heightForWidth(room))
        self._place()
        self.show()
        self.raise_()
        if ms is None:
            self._timer.stop()
        else:
            self._timer.start(ms)

    def _place(self) -> None:
        parent = self.parentWidget()
        if parent is not None:
            self.move(max(0, (parent.width() - self.width()) // 2), max(0, parent.height() - self.height() - 40))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and self.isVisible():
            self._place()
        return False


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
