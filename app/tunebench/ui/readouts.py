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
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QSizePolicy, QWidget

from tunebench.core.display import rate_text
from tunebench.core.error_codes import codes_text
from tunebench.core.interval import is_trx_series
from tunebench.ui.plot_panel import font
from tunebench.ui.timeline import Timeline

# A readout's width only ever grows (to fit the widest value it has shown): the readouts do not jump sideways
# whenever p95 goes from 9 to 10 ms and back.
READOUT_SAMPLES = {"tps": "TPS 88,888", "qps": "QPS 888,888", "p95": "p95 88.88 ms", "state": "running"}
READOUT_GAP = 24


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
        self._widest: dict[str, str] = {}  # per readout: the widest text it has shown
        row = self._row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
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
        for lab in (self.tps_label, self.qps_label, self.p95_label):
            row.addWidget(lab)
            row.addSpacing(READOUT_GAP)
        row.addWidget(self.errors_label)
        row.addStretch(1)
        self.state_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.badge)
        row.addWidget(self.state_label)
        self.follow_box = QCheckBox("follow")
        self.follow_box.setChecked(True)
        self.follow_box.toggled.connect(on_follow)
        row.addWidget(self.follow_box)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

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
        nominal = QFontMetrics(font(22, bold=True))
        for k, lab in readouts.items():  # the widest value so far, measured at one size
            if nominal.horizontalAdvance(lab.text()) > nominal.horizontalAdvance(self._widest.get(k, "")):
                self._widest[k] = lab.text()
        row = self._row
        m = row.contentsMargins()
        state_need = max(self.state_label.fontMetrics().horizontalAdvance(t)
                         for t in (READOUT_SAMPLES["state"], self.state_label.text())) + 8
        badge_shown = not self.badge.isHidden()
        errors_shown = not self.errors_label.isHidden()
        # labels, gaps, the stretch, state, follow, badge, errors
        items = 2 * len(readouts) + 1 + 2 + badge_shown + errors_shown
        errors_need = self.errors_label.fontMetrics().horizontalAdvance(self.errors_label.text()) + 8 \
            if errors_shown else 0
        fixed = m.left() + m.right() + READOUT_GAP * len(readouts) + row.spacing() * (items - 1) \
            + state_need + self.follow_box.sizeHint().width() + errors_need
        avail = self.width() if self.isVisible() and self.width() > 0 else 10 ** 6

        def widths(points: float) -> tuple[dict[str, int], int]:
            fm = QFontMetrics(font(points, bold=True))
            out = {k: max(fm.horizontalAdvance(t) for t in (READOUT_SAMPLES[k], lab.text(), self._widest[k])) + 8
                   for k, lab in readouts.items()}
            badge = 0
            if badge_shown:
                badge = QFontMetrics(font(points * self.badge_size / self.readout_size, bold=True)
                                     ).horizontalAdvance(self.badge.text()) + 8
            return out, badge

        points = self.readout_size
        need, badge = widths(points)
        while points > 6 and fixed + sum(need.values()) + badge > avail:
            points = max(6.0, points * 0.95)
            need, badge = widths(points)
        for k, lab in readouts.items():
            lab.setFont(font(points, bold=True))
            lab.setMinimumWidth(need[k])
        self.state_label.setMinimumWidth(state_need)
        self.badge.setFont(font(points * self.badge_size / self.readout_size, bold=True))
        self.badge.setMinimumWidth(badge)
        full = QFontMetrics(font(self.readout_size, bold=True)).height()
        self.setFixedHeight(max(full, QFontMetrics(font(self.badge_size, bold=True)).height(),
                                self.follow_box.sizeHint().height()) + m.top() + m.bottom())

    def update_from(self, tl: Timeline) -> None:
        def groups(suffix: str) -> list[str]:  # the groups themselves: not their total, not their hosts
            return [n for n in tl.names("client.", suffix)
                    if not n.startswith("client.total.") and "@" not in n and not is_trx_series(n)]

        qps = sum(v for n in groups(".qps") if (v := tl.last(n)) is not None)
        p95 = [v for n in groups(".lat.p95") if (v := tl.last(n)) is not None]
        self.tps_label.setText(headline_text(tl, [n.removeprefix("client.").removesuffix(".tps")
                                                  for n in groups(".tps")]))
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
        if any(lab.fontMetrics().horizontalAdvance(lab.text()) > lab.minimumWidth() - 8
               for lab in (self.tps_label, self.qps_label, self.p95_label)):
            self.fit()  # rare: a value wider than any before
