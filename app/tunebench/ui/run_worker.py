"""Runs an Experiment in a child process and hands its records to the window on the GUI thread.

The run (engine, probes, SQLite writes) lives in its own process, so it never competes with the window
for the interpreter lock. Its records are read on the GUI thread itself, a few at a time, when a socket
notifier says the pipe has data: no second Python thread in the window's process holds the interpreter
lock while the run goes (a reader thread preempted while holding it stalled the window for 100+ ms under a
512-thread load). Connection tests and the like run on a thread through `call_in_background`; an Inbox
timer hands their result to the GUI thread.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QSocketNotifier, QTimer, Signal

from tunebench.core.errors import TunebenchError
from tunebench.run.child import RunRequest, child_main


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
    """A run in a child process (see run/child.py); its records arrive here as signals on the GUI thread."""

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
        self._conn: Any = None
        self._proc: Any = None
        self._notifier: Any = None
        self._ended = False
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
        self._notifier = QSocketNotifier(parent.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._read_some)

    def _read_some(self, *_args: object, limit: int = 50) -> None:
        """Up to `limit` records, then back to the event loop (the notifier fires again while data wait)."""
        for _ in range(limit):
            if self._conn is None:
                return
            try:
                if not self._conn.poll():
                    return
                msg = self._conn.recv()
            except (EOFError, OSError):
                self._closed()
                return
            self._dispatch(msg)

    def _dispatch(self, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind in self._signals:
            self._signals[kind].emit(*msg[1:])
        elif kind == "reply":
            self._reply(*msg[1:])
        elif kind in ("finished", "failed"):
            self._ended = True
            (self.finished if kind == "finished" else self.failed).emit(msg[1])

    def _closed(self) -> None:
        self._notifier.setEnabled(False)
        conn, self._conn = self._conn, None
        conn.close()
        if not self._ended:
            self._ended = True
            if self._proc is not None:
                self._proc.join(5)
            code = self._proc.exitcode if self._proc is not None else None
            self.failed.emit(f"the run process ended unexpectedly (exit code {code})")

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

    @property
    def ended(self) -> bool:
        """The run reported its end (its process may still be exiting)."""
        return self._ended

    def wait(self, timeout: float | None = None) -> None:
        """Until the run process has ended, and every record it sent has been handled."""
        if self._proc is not None:
            self._proc.join(timeout)
        while self._conn is not None and not self._proc.is_alive():
            if not self._conn.poll(0.5):  # dead, and nothing more to read
                self._closed()
                break
            self._read_some(limit=1000)


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
