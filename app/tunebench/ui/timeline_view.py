"""The Dashboard tab: the dashboard over the live timeline, or over a recorded session with the replay
transport above it. Either way the same plots, markers and readouts."""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget

from tunebench.ui.dashboard import Dashboard
from tunebench.ui.replay import ReplayBar
from tunebench.ui.theme import Theme
from tunebench.ui.timeline import Timeline


class TimelineView(QWidget):
    def __init__(self, live: Timeline, theme: Theme, parent: QWidget | None = None):
        super().__init__(parent)
        self.live = live
        self.dashboard = Dashboard(live, theme)
        self.replay_bar = ReplayBar()
        self.replay_bar.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.replay_bar)
        layout.addWidget(self.dashboard, 1)
        self.replay_bar.playing.connect(self._on_playing)
        # the plots and readouts at the new head in the frame it moved (the redraw tick comes up to 160 ms later:
        # 1.6 s of a 10x replay, and the sweep's results grid is at the head already)
        self.replay_bar.moved.connect(self._on_moved)
        self.replay_bar.jumped.connect(self._on_jumped)

    def _on_playing(self, on: bool) -> None:
        if on:  # a replay that plays follows its head, as live follows the run
            self.dashboard.follow_box.setChecked(True)

    def _on_moved(self, _x: float) -> None:
        self.dashboard.redraw_data()

    def _on_jumped(self, x: float) -> None:
        """A jump lands where the plots show it: a marker outside the range the user was looking at brings
        the view to the head (following), as playing does."""
        lo, hi = self.dashboard.panels[0].view.viewRange()[0]
        if not lo <= x <= hi:
            self.dashboard.follow_box.setChecked(True)
            self.dashboard.redraw_data()

    def is_live(self) -> bool:
        return self.dashboard.timeline is self.live

    def show_replay(self, timeline: Timeline) -> None:
        """A recorded session, whole (Play replays it from the start)."""
        self.dashboard.set_timeline(timeline, replay=True)
        self.replay_bar.attach(timeline)
        self.replay_bar.show()
        self.dashboard.follow_box.setChecked(False)
        self.dashboard.redraw()
        end = max(1.0, timeline.end)
        self.dashboard.set_x_range(-0.01 * end, 1.01 * end)

    def show_live(self) -> None:
        if self.is_live():
            return
        self.replay_bar.play(False)
        self.replay_bar.hide()
        self.dashboard.set_timeline(self.live, replay=False)
