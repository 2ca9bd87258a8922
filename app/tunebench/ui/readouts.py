"""The dashboard's row of big readouts (TPS, QPS, p95, state, the REPLAY badge, follow), fitted to its width.

The bar's size never asks the window for room: whatever they read, the docks and plots keep their geometry
(a readout that widened the dashboard resized, and fully repainted, the whole window).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QResizeEvent, QShowEvent
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from tunebench.core.display import rate_text
from tunebench.core.error_codes import codes_text
from tunebench.core.interval import is_trx_series
from tunebench.ui.plot_panel import font
from tunebench.ui.timeline import Timeline

# A readout's width only ever grows (to fit the widest value it has shown): the readouts do not jump sideways
# whenever p95 goes from 9 to 10 ms and back.
READOUT_SAMPLES = {"tps": "TPS 88,888", "qps": "QPS 888,888", "p95": "p95 88.88 ms", "state": "running"}
READOUT_GAP = 24
READOUT_MIN_POINTS = 12.0  # the readouts shrink to fit their bar down to this (stage: its own floor), then the
# first one's text is elided (whole in its tooltip): at 720p beside side-by-side docks they went down to ~8 px


def headline_text(tl: Timeline, groups: list[str]) -> str:
    """The first readout: one group's TPS ("TPS 1,234"), or its family's headline ("NOPM 9,540", "rows/s
    120,000"); several groups each their own, named ("insert rows/s 120,000 · query TPS 736"), never one sum
    of transactions of different kinds. An open-loop group's says its rate: "TPS 1,980 of 2,000/s"."""
    if not groups:
        return "TPS —"
    parts = []
    for g in groups:
        label, value = tl.headline(g)
        text = f"{label} {'—' if value is None else f'{value:,.0f}'}"
        rate = tl.last(f"client.{g}.rate")
        if rate is not None and label == "TPS":  # open loop: what it was asked for beside what it did
            text += f" of {rate_text(rate)}/s"
        parts.append(f"{g} {text}" if len(groups) > 1 else text)
    return " · ".join(parts)


class ReadoutBar(QWidget):
    """The readouts, refitted whenever the bar's width changes."""

    def __init__(self, on_follow: Callable[[bool], None]):
        super().__init__()
        self.readout_size, self.badge_size = 22.0, 16.0  # points, at font scale 1: set_scale changes them
        self.min_points = READOUT_MIN_POINTS  # the smallest they are drawn at (stage raises it)
        self._tps_text = "TPS —"  # the first readout's whole text (shown elided when even the floor is too big)
        self._tps_room: int | None = None  # its width when elided, else None
        self._widest: dict[str, str] = {}  # per readout: the widest text it has shown
        rows = QVBoxLayout(self)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(0)
        self._row, self._row2 = QHBoxLayout(), QHBoxLayout()  # the second only when one row cannot hold them
        rows.addLayout(self._row)
        rows.addLayout(self._row2)
        self.two_rows = False
        self.tps_label = QLabel("TPS —")
        self.p95_label = QLabel("p95 — ms")
        self.qps_label = QLabel("QPS —")
        self.state_label = QLabel("idle")
        # the client errors so far (all groups, up to the play head): hidden while there are none
        self.errors_label = QLabel("")
        self.errors_label.setObjectName("errors-readout")
        self.errors_label.setStyleSheet("color: #d62728; font-weight: bold;")
        self.errors_label.setToolTip("Client errors (deadlocks, timeouts, refused statements) so far; per step in "
                                     "the session's details and the report")
        self.errors_label.hide()
        self.badge = QLabel(" REPLAY ")  # shown whenever what is on the plots is not live
        self.badge.setStyleSheet("background: #d62728; color: white; font-weight: bold; border-radius: 4px;")
        self.badge.hide()
        self.state_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.follow_box = QCheckBox("follow")
        self.follow_box.setChecked(True)
        self.follow_box.toggled.connect(on_follow)
        self._lay_out(False)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def _lay_out(self, two: bool) -> None:
        """One row (readouts, errors, then badge, state, follow at the right), or two: the readouts on the first,
        the rest under them (a narrow dashboard: they keep a readable size rather than shrink to ~8 px)."""
        for row in (self._row, self._row2):
            while row.count():
                row.takeAt(0)  # (the widgets stay; the spacers go)
        row = self._row
        for lab in (self.tps_label, self.qps_label, self.p95_label):
            row.addWidget(lab)
            row.addSpacing(READOUT_GAP)
        if two:
            row.addStretch(1)
            row = self._row2
        row.addWidget(self.errors_label)
        row.addStretch(1)
        row.addWidget(self.badge)
        row.addWidget(self.state_label)
        row.addWidget(self.follow_box)
        self.two_rows = two

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.fit()

    def showEvent(self, event: QShowEvent) -> None:
        # fitted while hidden (a replay opened from the Sessions tab shows its badge with the dashboard out of
        # sight), the readouts took their full size as if the bar had all the room; shown again at the same
        # width, nothing refitted them and the REPLAY badge sat over p95 (issue 30 item 14)
        super().showEvent(event)
        self.fit()

    def set_scale(self, scale: float) -> None:
        self.readout_size = 22 * scale
        self.badge_size = 16 * scale
        self.fit()

    def forget_widest(self) -> None:
        self._widest = {}

    def fit(self) -> None:
        """Fonts and widths of the readouts so that all of them fit the bar, side by side, never on top of
        each other: at their size (22 pt, 16 pt for the badge, times the font scale) when the bar is wide
        enough, else smaller until they fit. Each reserves room for its widest value so far (at least the
        sample), so a value changing width does not move the others. The bar's height is that of the full
        size: shrinking to fit never changes the dashboard's size hints."""
        readouts = {"tps": self.tps_label, "qps": self.qps_label, "p95": self.p95_label}
        texts = {"tps": self._tps_text, "qps": self.qps_label.text(), "p95": self.p95_label.text()}
        nominal = QFontMetrics(font(22, bold=True))
        for k, text in texts.items():  # the widest value so far, measured at one size
            if nominal.horizontalAdvance(text) > nominal.horizontalAdvance(self._widest.get(k, "")):
                self._widest[k] = text
        spacing = max(0, self._row.spacing())
        state_need = max(self.state_label.fontMetrics().horizontalAdvance(t)
                         for t in (READOUT_SAMPLES["state"], self.state_label.text())) + 8
        badge_shown = not self.badge.isHidden()
        errors_shown = not self.errors_label.isHidden()
        errors_need = self.errors_label.fontMetrics().horizontalAdvance(self.errors_label.text()) + 8 \
            if errors_shown else 0
        # the readouts' row: labels and their gaps; the rest: errors, the stretch, badge, state, follow
        gaps = READOUT_GAP * len(readouts) + spacing * (2 * len(readouts))
        rest = state_need + self.follow_box.sizeHint().width() + errors_need + spacing * (2 + errors_shown)
        avail = self.width() if self.isVisible() and self.width() > 0 else 10 ** 6

        def widths(points: float) -> tuple[dict[str, int], int]:
            fm = QFontMetrics(font(points, bold=True))
            out = {k: max(fm.horizontalAdvance(t) for t in (READOUT_SAMPLES[k], texts[k], self._widest[k])) + 8
                   for k in readouts}
            badge = 0
            if badge_shown:
                badge = QFontMetrics(font(points * self.badge_size / self.readout_size, bold=True)
                                     ).horizontalAdvance(self.badge.text()) + 8
            return out, badge

        floor = min(self.min_points, self.readout_size)

        def shrink(fixed: int, with_badge: bool) -> tuple[float, dict[str, int], int, int]:
            """The largest size down to the floor at which the readouts (and the badge) fit beside `fixed`."""
            points = self.readout_size
            need, badge = widths(points)
            while points > floor and fixed + sum(need.values()) + badge * with_badge > avail:
                points = max(floor, points * 0.95)
                need, badge = widths(points)
            return points, need, badge, fixed + sum(need.values()) + badge * with_badge - avail

        points, need, badge, over = shrink(gaps + rest + spacing * badge_shown, True)
        two = over > 0  # not on one row even at the floor: the rest goes under the readouts
        if two:
            points, need, badge, over = shrink(gaps, False)
        if two != self.two_rows:
            self._lay_out(two)
        # at the floor and still too wide: the first readout (two groups' headlines, an open loop's rate) gives
        # up the difference and is elided, never drawn over its neighbours
        self._tps_room = max(40, need["tps"] - over) if over > 0 else None
        if self._tps_room is not None:
            need["tps"] = self._tps_room
        self._show_tps(QFontMetrics(font(points, bold=True)))
        for k, lab in readouts.items():
            lab.setFont(font(points, bold=True))
            lab.setMinimumWidth(need[k])
        self.state_label.setMinimumWidth(state_need)
        self.badge.setFont(font(points * self.badge_size / self.readout_size, bold=True))
        self.badge.setMinimumWidth(badge)
        full = QFontMetrics(font(self.readout_size, bold=True)).height()
        rest_height = max(QFontMetrics(font(self.badge_size, bold=True)).height(), self.follow_box.sizeHint().height())
        if two:  # the readouts' row at the size they are drawn, the rest under it
            self.setFixedHeight(QFontMetrics(font(points, bold=True)).height() + rest_height)
        else:
            self.setFixedHeight(max(full, rest_height))

    def _show_tps(self, fm: QFontMetrics) -> None:
        """The first readout's text, elided to its room when the bar gave it less than it needs."""
        text = self._tps_text
        if self._tps_room is not None:
            text = fm.elidedText(text, Qt.TextElideMode.ElideRight, self._tps_room - 8)
        self.tps_label.setText(text)
        self.tps_label.setToolTip(self._tps_text if text != self._tps_text else "")

    def update_from(self, tl: Timeline) -> None:
        def groups(suffix: str) -> list[str]:  # the groups themselves: not their total, not their hosts
            return [n for n in tl.names("client.", suffix)
                    if not n.startswith("client.total.") and "@" not in n and not is_trx_series(n)]

        qps = sum(v for n in groups(".qps") if (v := tl.last(n)) is not None)
        p95 = [v for n in groups(".lat.p95") if (v := tl.last(n)) is not None]
        self._tps_text = headline_text(tl, [n.removeprefix("client.").removesuffix(".tps") for n in groups(".tps")])
        self._show_tps(self.tps_label.fontMetrics())
        self.qps_label.setText(f"QPS {qps:,.0f}")
        self.p95_label.setText(f"p95 {max(p95):.2f} ms" if p95 else "p95 — ms")
        errors = sum(float(np.nansum(buf.v[:buf.n])) for n in groups(".errors") if (buf := tl.series.get(n)))
        # every second of the session (warm-ups too): a step's row counts its measured seconds only -- each
        # number says which it is (issue 44 item 4: "errors 10" here against 9 in the step read as a disagreement)
        text = f"errors {errors:,.0f} in the session" if errors > 0 else ""
        codes: dict[int, float] = {}  # the same seconds by server error code
        for n in tl.names("client.", ""):
            head, sep, code = n.rpartition(".errcode.")
            if sep and "@" not in head and not head.startswith("client.total") and (buf := tl.series.get(n)):
                with contextlib.suppress(ValueError):
                    codes[int(code)] = codes.get(int(code), 0.0) + float(np.nansum(buf.v[:buf.n]))
        by_code = codes_text(codes)
        self.errors_label.setToolTip("failed transactions over every second of the session so far, warm-ups "
                                     "included; a step's row and the report count its measured seconds"
                                     + (f"\nby server error code: {by_code}" if by_code else ""))
        if text != self.errors_label.text():
            self.errors_label.setText(text)
            self.errors_label.setVisible(bool(text))
            self.fit()
        wider = self._tps_room is None and self.tps_label.text() != self._tps_text
        if wider or any(lab.fontMetrics().horizontalAdvance(lab.text()) > lab.minimumWidth() - 8
                        for lab in (self.tps_label, self.qps_label, self.p95_label)):
            self.fit()  # rare: a value wider than any before
