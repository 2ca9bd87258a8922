"""Runs an Experiment off the GUI thread and hands its records to the window on the GUI thread.

The experiment's callbacks fire on the run thread (intervals, events) and on probe threads (samples).
They only put records on a queue; an Inbox timer on the GUI thread drains it and emits Qt signals there,
so no Qt object is ever touched from a foreign thread. Knob flips and connection tests go through
`call_in_background` the same way, so a slow server never blocks the event loop.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from tunebench.core.errors import TunebenchError


class Inbox(QObject):
    """Calls queued from any thread, run on the GUI thread every `interval_ms`."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = 50):
        super().__init__(parent)
        self._queue: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]]] = queue.SimpleQueue()
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.drain)
        self._timer.start()

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        self._queue.put((fn, args))

    def drain(self, limit: int = 5000) -> int:
        n = 0
        while n < limit:
            try:
                fn, args = self._queue.get_nowait()
            except queue.Empty:
                break
            fn(*args)
            n += 1
        return n


class RunWorker(QObject):
    interval = Signal(object)  # Interval
    samples = Signal(float, object)  # t, {series: value}
    event = Signal(object)  # Event
    step = Signal(object)  # StepResult
    note = Signal(str)
    finished = Signal(object)  # result dict
    failed = Signal(str)

    def __init__(self, make_experiment: Callable[..., Any], parent: QObject | None = None):
        super().__init__(parent)
        self._make = make_experiment
        self.inbox = Inbox(self)
        self.experiment: Any = None
        self._thread: threading.Thread | None = None

    def _relay(self, signal: Any) -> Callable[..., None]:
        return lambda *args: self.inbox.post(signal.emit, *args)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tunebench-run", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.experiment = self._make(on_interval=self._relay(self.interval), on_note=self._relay(self.note),
                                         on_samples=self._relay(self.samples), on_event=self._relay(self.event),
                                         on_step=self._relay(self.step))
            result = self.experiment.run()
        except TunebenchError as exc:
            self.inbox.post(self.failed.emit, str(exc))
            return
        self.inbox.post(self.finished.emit, result)

    def stop(self) -> None:
        if self.experiment is not None:
            self.experiment.request_stop()

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)


class BackgroundCall(QObject):
    """One blocking call on a thread; `done(result)` or `failed(message)` on the GUI thread."""

    done = Signal(object)
    failed = Signal(str)

    def __init__(self, fn: Callable[[], Any], parent: QObject | None = None):
        super().__init__(parent)
        self._fn = fn
        self.inbox = Inbox(self, 30)

    def start(self) -> BackgroundCall:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        try:
            result = self._fn()
        except TunebenchError as exc:
            self.inbox.post(self._finish, self.failed, str(exc))
            return
        self.inbox.post(self._finish, self.done, result)

    def _finish(self, signal: Any, value: Any) -> None:
        signal.emit(value)
        self.deleteLater()


def call_in_background(parent: QObject, fn: Callable[[], Any], on_done: Callable[[Any], None],
                       on_failed: Callable[[str], None]) -> BackgroundCall:
    call = BackgroundCall(fn, parent)
    call.done.connect(on_done)
    call.failed.connect(on_failed)
    return call.start()
