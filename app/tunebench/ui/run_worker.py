"""Runs an Experiment in a child process and hands its records to the window on the GUI thread.

The run (engine, probes, SQLite writes) lives in its own process, so it never competes with the window
for the interpreter lock. Its records are read on the GUI thread itself, a few at a time, when a socket
notifier says the pipe has data: no second Python thread in the window's process holds the interpreter
lock while the run goes (a reader thread preempted while holding it stalled the window for 100+ ms under a
512-thread load). Shorter blocking work (a connection test, a plan) goes through ui/tasks.py.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QSocketNotifier, Signal

from tunebench.core.interval import Event, Interval
from tunebench.core.openmetrics import LiveReading
from tunebench.core.sweep import Plan
from tunebench.run.child import RunRequest, child_main
from tunebench.run.records import (
    ChangeKnob,
    ChangeRate,
    ConfirmKnob,
    Mark,
    Note,
    Reply,
    RestoreKnobs,
    RunError,
    RunOutcome,
    RunSession,
    Samples,
    StepResult,
    Stop,
)
from tunebench.run.tune import Trial


class RunWorker(QObject):
    """A run in a child process (see run/child.py); its typed records arrive here as signals on the GUI thread,
    and its end as exactly one RunOutcome on `finished` (a failure included: the outcome carries a RunError)."""

    interval = Signal(object)  # Interval
    samples = Signal(float, object)  # t, {series: value}
    timeline_event = Signal(object)  # Event (not `event`: that is QObject's event handler)
    step = Signal(object)  # StepResult
    plan = Signal(object)  # a sweep's Plan, before its first step
    note = Signal(str)
    trial = Signal(object)  # a tune's Trial, as it ends (run/tune.py)
    finished = Signal(object)  # RunOutcome
    session = Signal(object)  # RunSession: the session the run records into
    reading = Signal(object)  # LiveReading (only with RunRequest.live_metrics)

    def __init__(self, request: RunRequest, parent: QObject | None = None):
        super().__init__(parent)
        self.request = request
        self._conn: Any = None
        self._proc: Any = None
        self._notifier: Any = None
        self._ended = False
        self._replies: dict[int, tuple[Callable[[Any], None], Callable[[str], None]]] = {}
        self._next_id = 0

    def start(self) -> None:
        ctx = mp.get_context("spawn")  # this process runs Qt threads: never fork it
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=child_main, args=(self.request, child), name="tunebench-run")
        try:
            proc.start()
        except BaseException:  # never started: nothing to wait for (closing the window joined it and raised)
            child.close()
            parent.close()
            raise
        self._proc = proc
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
                record = self._conn.recv()
            except (EOFError, OSError):
                self._closed()
                return
            self._dispatch(record)

    def _dispatch(self, record: object) -> None:
        match record:
            case Interval():
                self.interval.emit(record)
            case Samples(t=t, values=values):
                self.samples.emit(t, values)
            case Event():
                self.timeline_event.emit(record)
            case StepResult():
                self.step.emit(record)
            case Plan():
                self.plan.emit(record)
            case Trial():
                self.trial.emit(record)
            case Note(text=text):
                self.note.emit(text)
            case Reply():
                self._reply(record)
            case RunSession():
                self.session.emit(record)
            case LiveReading():
                self.reading.emit(record)
            case RunOutcome():
                self._ended = True
                self.finished.emit(record)
            case _:
                raise TypeError(f"unexpected record from the run process: {record!r}")

    def _closed(self) -> None:
        self._notifier.setEnabled(False)
        conn, self._conn = self._conn, None
        conn.close()
        if not self._ended:
            self._ended = True
            if self._proc is not None:
                self._proc.join(5)
            code = self._proc.exitcode if self._proc is not None else None
            self.finished.emit(RunOutcome("failed", None, error=RunError(
                "lost", f"the run process ended unexpectedly (exit code {code})")))

    def _reply(self, reply: Reply) -> None:
        on_done, on_failed = self._replies.pop(reply.rid, (lambda _p: None, lambda _m: None))
        if reply.error is None:
            on_done(reply.payload)
        else:
            on_failed(reply.error.message)

    def _send(self, command: object) -> bool:
        if self._conn is None or not self.running():
            return False
        try:
            self._conn.send(command)
        except (BrokenPipeError, OSError):
            return False
        return True

    def _request(self, command: Callable[[int], object], on_done: Callable[[Any], None],
                 on_failed: Callable[[str], None]) -> None:
        self._next_id += 1
        self._replies[self._next_id] = (on_done, on_failed)
        if not self._send(command(self._next_id)):
            self._replies.pop(self._next_id)
            on_failed("no run in progress")

    def change_knob(self, name: str, value: str, on_done: Callable[[Any], None],
                    on_failed: Callable[[str], None]) -> None:
        self._request(lambda rid: ChangeKnob(rid, name, value), on_done, on_failed)

    def confirm_knob(self, name: str | None, on_done: Callable[[Any], None], on_failed: Callable[[str], None],
                     block_seconds: int = 10) -> None:
        self._request(lambda rid: ConfirmKnob(rid, name, block_seconds), on_done, on_failed)

    def change_rate(self, group: str, rate: float, on_done: Callable[[Any], None],
                    on_failed: Callable[[str], None]) -> None:
        self._request(lambda rid: ChangeRate(rid, group, rate), on_done, on_failed)

    def restore_knobs(self, on_done: Callable[[Any], None], on_failed: Callable[[str], None]) -> None:
        self._request(RestoreKnobs, on_done, on_failed)

    def mark(self, label: str) -> bool:
        return self._send(Mark(label))

    def stop(self, by_user: bool = True) -> None:
        self._send(Stop(by_user))

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
