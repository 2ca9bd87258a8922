"""The stage hotkey card: shown for a while on entering stage mode and on H, so the speaker sees F1-F8 where the
audience's window is (the Events dock is hidden on stage). It also flashes what a preset key did, and why it
failed, and a flip's A/B verdict when it arrives.

It never covers a plot's data: on stage it sits in the dashboard's card strip under the plots (a band reserved
for it, `Dashboard.card_strip`), which grows while a card taller than it is shown (the keys card at 1024x768)
and shrinks back after -- the plots give up that height rather than be drawn under the card. Its text sizes
follow the screen: the smallest is the stage's floor (a share of the screen's height, ui/stage.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QHideEvent
from PySide6.QtWidgets import QLabel, QWidget

from tunebench.core.verdict import event_verdict, order_text, short_wait

# the keys' words on the card (the actions keep the long ones: Help > Keyboard shortcuts, tooltips)
CARD_WORDS = {"open loop: rate x2": "rate x2", "open loop: rate /2": "rate /2",
              "a rate sweep's p99 against rate (the knees)": "the knee (rate sweep)",
              "confirm the last flip (ABBA BAAB)": "confirm the flip", "show these keys (or dismiss a verdict)":
              "keys / dismiss", "leave stage mode": "leave stage"}
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
        self.strip: QWidget | None = None  # the band it sits in (the dashboard's card strip), while on stage
        self._again: Callable[[int | None], None] | None = None  # shows the card on screen again (new sizes)
        self.px = {"small": 18, "text": 30, "big": 46}  # its text sizes in pixels (set_sizes)
        self.set_sizes(18)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        self._keys: list[tuple[str, str]] = []
        window.installEventFilter(self)
        self.hide()

    def set_sizes(self, small: float) -> None:
        """Text sizes from the smallest (pixels): its text 4/3 of it, the verdict's headline twice (a 1080-line
        screen: 24, 32, 48 px)."""
        s = max(12, math.ceil(small))
        self.px = {"small": s, "text": round(s * 4 / 3), "big": 2 * s}
        self.setStyleSheet("QLabel#stage-help { background: rgba(0, 0, 0, 240); color: #ffffff; "
                           "border: 3px solid #ffd400; border-radius: 12px; padding: 12px 22px; "
                           f"font-size: {self.px['text']}px; }}")
        again = getattr(self, "_again", None)
        if again is not None and self.isVisible():  # the card on screen, in the new sizes, for the time it had
            again(self._timer.remainingTime() if self._timer.isActive() else None)

    def reserve(self) -> int:
        """The card strip's height when no card is taller: a verdict's four lines (head, headline, check, a wait)."""
        return 3 * round(self.px["text"] * 1.25) + round(self.px["big"] * 1.25) + 24 + 6 + 8

    def attach(self, strip: QWidget | None) -> None:
        """On stage: the card sits in `strip` (None: off stage, over the window's bottom centre)."""
        if self.strip is not None:
            self.strip.removeEventFilter(self)
        self.strip = strip
        if strip is not None:
            strip.installEventFilter(self)
            strip.setFixedHeight(self.reserve())

    def set_keys(self, keys: list[tuple[str, str]]) -> None:
        self._keys = list(keys)

    def card_text(self) -> str:
        """The keys in two columns past six (half the height: the strip grows less at a projector's size)."""
        # at the stage's smallest size, the shorter words (a 1024x768 projector: the long ones wrapped and the card
        # ran past the screen's bottom over the plots)
        cells = [f"<td style='color:#ffd400; padding-right:12px'><b>{k}</b></td><td style='padding-right:26px'>"
                 f"{_esc(CARD_WORDS.get(t, t))}</td>" for k, t in self._keys]
        half = (len(cells) + 1) // 2 if len(cells) > 6 else len(cells)
        rows = "".join(f"<tr>{cells[i]}{cells[i + half] if i + half < len(cells) else ''}</tr>"
                       for i in range(half))
        return f"<table style='font-size:{self.px['small']}px'>{rows}</table>"

    def show_keys(self, ms: int | None = SHOW_MS) -> None:
        self._again = self.show_keys
        self._show(self.card_text(), ms)

    def toggle_keys(self) -> None:
        """H: the keys card, or away with the card on screen (a verdict that stays is dismissed with it)."""
        if self.isVisible() and (self.text() == self.card_text() or not self._timer.isActive()):
            self.hide()
        else:
            self.show_keys()

    def flash(self, text: str, ms: int | None = FLASH_MS) -> None:
        self._again = lambda left: self.flash(text, left)
        self._show(f"<span>{_esc(text)}</span>", ms)

    def show_verdict(self, data: dict[str, Any], ms: int | None = VERDICT_MS) -> None:
        """A flip's A/B verdict (a "verdict" event's data): the TPS line large, latency and waits below it."""
        self._again = lambda left: self.show_verdict(data, left)
        v = event_verdict(data)
        # which kind of verdict this is: one window before and one after, or the Confirm action's blocks
        kind = f"Confirm, {order_text(str(data.get('order', '')))}" \
            if data.get("confirmed") else "a single flip (C confirms it)"
        head = f"{data.get('name')} {data.get('from')} → {data.get('to')} · {kind}"
        # the headline follows the load: TPS in closed loop, the p95 at the asked rate in open loop
        big = v.headline() if v else str(data.get("text") or "too few settled seconds for a verdict")
        sense = v.better() if v is not None else 0
        colour = "#ffffff" if sense == 0 else "#5fd35f" if sense > 0 else "#ff6b6b"
        px = self.px
        rows = [f"<div style='color:#ffd400'>{_esc(head)}</div>",
                f"<div style='font-size:{px['big']}px; color:{colour}'><b>{_esc(big)}</b></div>"]
        if v is not None:
            rows += [f"<div>{_esc(v.check_text())}</div>"] if v.check_text() else []
            waits = " · ".join(f"{short_wait(w.name)} {w.before:.1f} → {w.after:.1f} ms/s" for w in v.waits)
            rows += [f"<div style='font-size:{px['small']}px'>{_esc(waits)}</div>"] if waits else []
        if data.get("new_sessions_only"):
            rows.append("<div style='color:#ffd400'>applies to new connections only</div>")
        rows.append(f"<div style='font-size:{px['small']}px; color:#bbbbbb'>H: dismiss</div>" if ms is None else "")
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
        strip = self.strip
        if strip is not None:  # a card taller than the strip: the strip grows (the plots give up the room)
            strip.setFixedHeight(max(self.reserve(), self.height() + 8))
            holder = strip.parentWidget()
            layout = holder.layout() if holder is not None else None
            if layout is not None:
                layout.activate()  # the strip where it now is, before the card is placed in it
        self._place()
        self.show()
        self.raise_()
        if ms is None:
            self._timer.stop()
        else:
            self._timer.start(ms)

    def _place(self) -> None:
        parent = self.parentWidget()
        if parent is None:
            return
        strip = self.strip
        if strip is not None and strip.isVisible():  # centred in the strip, under the plots
            top_left = strip.mapTo(parent, strip.rect().topLeft())
            self.move(max(0, top_left.x() + (strip.width() - self.width()) // 2),
                      max(0, top_left.y() + (strip.height() - self.height()) // 2))
            return
        self.move(max(0, (parent.width() - self.width()) // 2), max(0, parent.height() - self.height() - 40))

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        if self.strip is not None:
            self.strip.setFixedHeight(self.reserve())  # the plots take their room back

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Move) and self.isVisible():
            self._place()
        return False


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
