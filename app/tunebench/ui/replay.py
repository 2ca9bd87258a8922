"""Replay of a recorded session in the live dashboard: play/pause, 1x-60x, a scrubber, jump to markers.

The recorded arrays go into the dashboard's Timeline as they are (no copy per point); the play head only
says how much of each is shown, so the dashboard draws a replay exactly as it drew the run live: same
plots, markers, readouts and follow window.
"""

from __future__ import annotations

import math
import time
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QSlider, QWidget

from tunebench.core.display import is_time
from tunebench.core.errors import TunebenchError
from tunebench.core.interval import Event
from tunebench.load.workload import load_workload
from tunebench.store.repo import Store
from tunebench.ui.timeline import Timeline

SPEEDS = (1, 2, 5, 10, 30, 60)
TICK_MS = 100
SLIDER_MAX = 2**31 - 1  # a QSlider's int: 6.8 years in tenths of a second


def _tenths(seconds: float) -> int:
    """A position on the slider (tenths of a second), within what it holds whatever the session's times."""
    return int(min(max(seconds * 10, 0.0), SLIDER_MAX)) if math.isfinite(seconds) else 0


REPLAY_NOTES = 5000


def load_session(store: Store, session_id: int, timeline: Timeline,
                 prefixes: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Read a session into `timeline` (head at the end): every series, or those whose names start with one
    of `prefixes` (what the dashboard can show); returns the session's record."""
    # the timeline's events all; of the notes and errors (a million in a long session) the first REPLAY_NOTES
    session = store.get_session(session_id, other_events_limit=REPLAY_NOTES)
    names = None
    if prefixes is not None:
        names = [n for n in store.series_names(session_id) if n.startswith(prefixes)]
    series = store.series(session_id, names)
    events = [Event(e["t"], e["kind"], e["label"], e["data"]) for e in session["events"]]
    t0 = session["started_at"]
    if not is_time(t0):  # a start that is no date (a damaged row): the first sample's time instead
        t0 = min((float(d.t[0]) for d in series.values() if len(d.t)), default=0.0)
    timeline.load(float(t0), {n: (d.t, d.v) for n, d in series.items()}, events)
    timeline.headlines = group_headlines(session)
    return session


def group_headlines(session: dict[str, Any]) -> dict[str, tuple[str, float, str]]:
    """Each client group's headline figure as the session recorded it; a session from before it was recorded:
    its workload family's with the group's options (none when the workload is not known here)."""
    out: dict[str, tuple[str, float, str]] = {}
    for g in (session.get("config") or {}).get("groups") or ():
        head = g.get("headline")
        if head is None and "headline" not in g:
            try:
                head = load_workload(str(g.get("workload"))).family.headline_of(g.get("options") or {})
            except (TunebenchError, KeyError, TypeError):
                head = None
        if head:
            out[str(g.get("name"))] = (str(head[0]), float(head[1]), str(head[2]))
    return out


def clock(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--:--"
    s = int(max(0.0, seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


class ReplayBar(QWidget):
    """The transport of a replay. `moved(x)` after every change of the play head; `jumped(x)` after a jump."""

    moved = Signal(float)
    playing = Signal(bool)
    jumped = Signal(float)  # to a marker (or the start, the end) from the jump list: after its `moved`

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.timeline: Timeline | None = None
        self.play_button = QPushButton("Play")
        self.play_button.setCheckable(True)
        self.play_button.toggled.connect(self._on_play)
        self.speed = QComboBox()
        self.speed.addItems([f"{s}x" for s in SPEEDS])
        self.speed.setCurrentText("10x")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.valueChanged.connect(self._on_slider)
        self.position = QLabel("00:00 / 00:00")
        self.jump = QComboBox()
        self.jump.setMinimumContentsLength(24)
        self.jump.activated.connect(self._on_jump)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        for w in (self.play_button, self.speed, self.slider, self.position, QLabel("jump to"), self.jump):
            layout.addWidget(w, 1 if w is self.slider else 0)
        self.timer = QTimer(self)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._advance)
        self._last_tick = 0.0

    @property
    def speed_factor(self) -> float:
        return float(self.speed.currentText().rstrip("x"))

    def attach(self, timeline: Timeline) -> None:
        """A freshly loaded timeline: the head at the end (the whole session shown), ready to play."""
        self.timeline = timeline
        self.slider.blockSignals(True)
        self.slider.setRange(0, _tenths(timeline.end))
        self.slider.blockSignals(False)
        self.jump.clear()
        self.jump.addItem("start", 0.0)
        for m in sorted(timeline.all_markers, key=lambda m: m.t):
            self.jump.addItem(f"{clock(m.t)}  {m.label}", m.shown_at)  # (a verdict: where it is known)
        self.jump.addItem("end", timeline.end)
        self.seek(timeline.end)

    def seek(self, x: float) -> None:
        tl = self.timeline
        if tl is None:
            return
        x = min(max(0.0, x), tl.end)
        tl.seek(x)
        self.slider.blockSignals(True)
        self.slider.setValue(_tenths(x))
        self.slider.blockSignals(False)
        self.position.setText(f"{clock(x)} / {clock(tl.end)}")
        self.moved.emit(x)

    def play(self, on: bool = True) -> None:
        self.play_button.setChecked(on)

    def _on_play(self, on: bool) -> None:
        self.play_button.setText("Pause" if on else "Play")
        if on:
            if self.timeline is not None and self.timeline.head is not None and self.timeline.head >= self.timeline.end:
                self.seek(0.0)  # played to the end: from the start again
            self._last_tick = time.monotonic()
            self.timer.start()
        else:
            self.timer.stop()
        self.playing.emit(on)

    def _advance(self) -> None:
        tl = self.timeline
        if tl is None or tl.head is None:
            return
        now = time.monotonic()
        dt, self._last_tick = now - self._last_tick, now  # real elapsed time: a late tick does not slow it
        self.seek(tl.head + dt * self.speed_factor)
        if tl.head >= tl.end:
            self.play(False)

    def _on_slider(self, value: int) -> None:
        self.seek(value / 10)

    def _on_jump(self, index: int) -> None:
        x = self.jump.itemData(index)
        if x is not None:
            self.seek(float(x))  # at the marker: the head has passed it, its line is drawn
            self.jumped.emit(float(x))
