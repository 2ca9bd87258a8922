"""Runs an Experiment in a child process and hands its records to the window on the GUI thread.

The run (engine, probes, SQLite writes) lives in its own process, so it never competes with the window
for the interpreter lock. A reader thread receives its records and puts them on a queue; an Inbox timer
on the GUI thread drains it and emits Qt signals there, so no Qt object is touched from a foreign thread.
Connection tests and the like go through `call_in_background` the same way.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from tunebench.core.errors import TunebenchError
from tunebench.runproc import RunRequest, child_main


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
    """A run in a child process (see runproc.py); its records arrive here as signals on the GUI thread."""

    interval = Signal(object)  # Interval
    samples = Signal(float, object)  # t, {series: value}
    event = Signal(object)  # Event
    step = Signal(object)  # StepResult
    note = Signal(str)
    finished = Signal(object)  # result dict
    failed = Signal(str)

    def __init__(self, request: RunRequest, parent: QObject | None = None):
        super().__init__(parent)
        self.request = request
        self.inbox = Inbox(self)
        self._conn: Any = None
        self._proc: Any = None
        self._reader: threading.Thread | None = None
        self._replies: dict[int, tuple[Callable[[Any], None], Callable[[str], None]]] = {}
        self._next_id = 0
        self._signals = {"interval": self.interval, "samples": self.samples, "event": self.event,
                         "step": self.step, "note": self.note}

    def start(self) -> None:
        ctx = mp.get_context("spawn")  # this process runs Qt threads: never fork it
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=child_main, args=(self.request, child), name="tunebench-run")
        self._proc.start()
        child.close()
        self._conn = parent
        self._reader = threading.Thread(target=self._read, name="tunebench-run-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        ended = False
        while True:
            try:
                msg = self._conn.recv()
            except (EOFError, OSError):
                break
            kind = msg[0]
            if kind in self._signals:
                self.inbox.post(self._signals[kind].emit, *msg[1:])
            elif kind == "reply":
                self.inbox.post(self._reply, *msg[1:])
            elif kind == "finished":
                ended = True
                self.inbox.post(self.finished.emit, msg[1])
            elif kind == "failed":
                ended = True
                self.inbox.post(self.failed.emit, msg[1])
        if not ended:
            code = self._proc.exitcode if self._proc is not None else None
            self.inbox.post(self.failed.emit, f"the run process ended unexpectedly (exit code {code})")

    def _reply(self, rid: int, ok: bool, payload: Any) -> None:
        on_done, on_failed = self._replies.pop(rid, (lambda _p: None, lambda _m: None))
        (on_done if ok else on_failed)(payload)

    def _send(self, *msg: Any) -> bool:
        if self._conn is None or not self.running():
            return False
        try:
            self._conn.send(msg)
        except (BrokenPipeError, OSError):
            return False
        return True

    def _request(self, kind: str, args: tuple[Any, ...], on_done: Callable[[Any], None],
                 on_failed: Callable[[str], None]) -> None:
        self._next_id += 1
        self._replies[self._next_id] = (on_done, on_failed)
        if not self._send(kind, self._next_id, *args):
            self._replies.pop(self._next_id)
            on_failed("no run in progress")

    def change_knob(self, name: str, value: str, on_done: Callable[[Any], None],
                    on_failed: Callable[[str], None]) -> None:
        self._request("knob", (name, value), on_done, on_failed)

    def restore_knobs(self, on_done: Callable[[Any], None], on_failed: Callable[[str], None]) -> None:
        self._request("restore", (), on_done, on_failed)

    def mark(self, label: str) -> bool:
        return self._send("mark", label)

    def stop(self) -> None:
        self._send("stop")

    def running(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        if self._proc is not None:
            self._proc.join(timeout)
        if self._reader is not None:
            self._reader.join(timeout)
        self.inbox.drain()


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
