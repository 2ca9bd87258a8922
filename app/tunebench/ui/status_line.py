"""The window's status bar: target, engine, driver mode and the run's clock (ticking once a second)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QLabel, QStatusBar

from tunebench.load.driver import driver_mode


class StatusLine(QObject):
    def __init__(self, bar: QStatusBar, target: Callable[[], str], engine: Callable[[], str],
                 elapsed: Callable[[], float | None]):
        super().__init__(bar)
        self._target, self._engine, self._elapsed = target, engine, elapsed
        self.target = QLabel()
        self.engine = QLabel()
        self.driver = QLabel(f"driver: {driver_mode()}")
        self.clock = QLabel("00:00")
        for w in (self.target, self.engine, self.driver, self.clock):
            bar.addPermanentWidget(w)
        self.fix_clock_width()
        self.update()
        self.timer = QTimer(self)
        self.timer.setInterval(1000)
        self.timer.timeout.connect(self.update)
        self.timer.start()

    def message_room(self, bar: QStatusBar) -> int:
        """The pixels a temporary message has left of the permanent labels (a longer one overprinted them: the
        stage's key list after leaving stage)."""
        used = sum(w.sizeHint().width() for w in (self.target, self.engine, self.driver, self.clock) if w.isVisible())
        return max(80, bar.width() - used - 40)

    def fix_clock_width(self) -> None:
        """The clock ticks every second: a fixed width (of the present font), so it never relayouts the bar."""
        self.clock.setFixedWidth(self.clock.fontMetrics().horizontalAdvance("888:88") + 8)

    def update(self) -> None:
        self.target.setText(f"target: {self._target()}")
        self.engine.setText(f"engine: {self._engine()}")
        elapsed = self._elapsed()
        if elapsed is not None:
            s = int(elapsed)
            self.clock.setText(f"{s // 60:02d}:{s % 60:02d}")
