"""The window's one runner for blocking work (a connection test, server facts, a plan, prepare, sandbox start).

Each task runs on a thread of its own; its result, its progress lines and every exception it raises come
back to the GUI thread (Orange's ConcurrentMixin in spirit). Starting a task of a kind that is still running
supersedes it: the old one cannot be interrupted mid-call, but nothing of it reaches the window any more.
An environment error arrives as its one line; any other exception (a driver error we did not wrap, a bug)
arrives as one line naming it, and its traceback goes to stderr — so no panel waits forever on a task that
died.
"""

from __future__ import annotations

import inspect
import queue
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from tunebench.core.errors import TunebenchError
from tunebench.ui.wording import for_window

Progress = Callable[[str], None]


def describe_failure(exc: BaseException) -> str:
    """One line for the user: an environment error as it is, anything else named (a driver error's own text
    says what happened; a bug says it is one)."""
    if isinstance(exc, TunebenchError):
        return for_window(str(exc))  # a field or a choice to change, not a CLI flag
    module = type(exc).__module__ or ""
    if module.startswith(("mysql.connector", "_mysql_connector", "paramiko")):
        return f"{type(exc).__name__}: {exc}"
    return f"unexpected error ({type(exc).__name__}: {exc}); please report it with the traceback on stderr"


@dataclass
class Task:
    """A submitted task: `cancel()` drops whatever it still has to say."""

    kind: str
    generation: int
    cancelled: threading.Event = field(default_factory=threading.Event)

    def cancel(self) -> None:
        self.cancelled.set()


class TaskRunner(QObject):
    """Runs `fn` off the GUI thread; `on_done(result)` or `on_failed(message)` on the GUI thread, once."""

    failed = Signal(str, str)  # kind, message: every failure, for the window's log
    busy_changed = Signal(str, bool)  # kind, busy

    def __init__(self, parent: QObject | None = None, poll_ms: int = 30):
        super().__init__(parent)
        self._inbox: queue.SimpleQueue[tuple[Task, Callable[..., None], tuple[Any, ...]]] = queue.SimpleQueue()
        self._current: dict[str, Task] = {}
        self._generation = 0
        self._timer = QTimer(self)
        self._timer.setInterval(poll_ms)
        self._timer.timeout.connect(self._drain)

    def submit(self, kind: str, fn: Callable[..., Any], on_done: Callable[[Any], None],
               on_failed: Callable[[str], None] | None = None, on_progress: Progress | None = None) -> Task:
        """Start `fn` (which takes a `progress(line)` argument if it names one) and supersede the running
        task of the same `kind`."""
        previous = self._current.get(kind)
        if previous is not None:
            previous.cancel()
        self._generation += 1
        task = Task(kind, self._generation)
        self._current[kind] = task
        fail = on_failed or (lambda _m: None)

        def progress(line: str) -> None:
            if on_progress is not None:
                self._inbox.put((task, on_progress, (line,)))

        def work() -> None:
            try:
                result = fn(progress=progress) if "progress" in inspect.signature(fn).parameters else fn()
            except BaseException as exc:  # every exception comes back as one message
                if not isinstance(exc, TunebenchError):
                    traceback.print_exc(file=sys.stderr)
                self._inbox.put((task, self._failed, (fail, describe_failure(exc))))
                return
            self._inbox.put((task, self._done, (on_done, result)))

        threading.Thread(target=work, name=f"task-{kind}", daemon=True).start()
        if not self._timer.isActive():
            self._timer.start()
        self.busy_changed.emit(kind, True)
        return task

    def busy(self, kind: str) -> bool:
        return kind in self._current

    def cancel(self, kind: str) -> None:
        task = self._current.pop(kind, None)
        if task is not None:
            task.cancel()
            self.busy_changed.emit(kind, False)

    def _finish(self, task: Task) -> None:
        if self._current.get(task.kind) is task:
            del self._current[task.kind]
            self.busy_changed.emit(task.kind, False)

    def _done(self, task: Task, on_done: Callable[[Any], None], result: Any) -> None:
        self._finish(task)
        on_done(result)

    def _failed(self, task: Task, on_failed: Callable[[str], None], message: str) -> None:
        self._finish(task)
        self.failed.emit(task.kind, message)
        on_failed(message)

    def _drain(self, limit: int = 1000) -> None:
        for _ in range(limit):
            try:
                task, fn, args = self._inbox.get_nowait()
            except queue.Empty:
                break
            if task.cancelled.is_set():
                continue
            if fn in (self._done, self._failed):
                fn(task, *args)
            else:
                fn(*args)
        if not self._current and self._inbox.empty():
            self._timer.stop()
