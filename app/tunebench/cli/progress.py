"""How far a long task is, on a terminal: one line redrawn in place (a bar, rows/s, time left) on a TTY, plain
lines now and then otherwise (a log file or CI gets a few lines, not a carriage-return soup). No dependency."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from tunebench.load.prepare import RowsProgress

BAR = 30
PLAIN_EVERY = 5.0  # seconds between two plain lines


class ProgressBar:
    def __init__(self, out: TextIO | None = None, tty: bool | None = None, clock: Callable[[], float] = time.monotonic):
        self.out = out or sys.stderr
        self.tty = self.out.isatty() if tty is None else tty
        self.clock = clock
        self._last = -PLAIN_EVERY
        self._drawn = 0
        self._said = -1  # rows in the last plain line: the end is said once

    def __call__(self, p: RowsProgress) -> None:
        if self.tty:
            filled = int(BAR * p.fraction)
            text = f"\r[{'#' * filled}{'-' * (BAR - filled)}] {p.line()}"
            self.out.write(text + " " * max(0, self._drawn - len(text)))  # wipe a longer line before it
            self._drawn = len(text)
            self.out.flush()
            return
        now = self.clock()
        if (now - self._last >= PLAIN_EVERY or p.done >= p.total) and p.done != self._said:
            self._last, self._said = now, p.done
            self.out.write(p.line() + "\n")
            self.out.flush()

    def line(self, text: str) -> None:
        """A message between bar updates, on a line of its own."""
        self.end()
        self.out.write(text + "\n")
        self.out.flush()

    def end(self) -> None:
        if self.tty and self._drawn:
            self.out.write("\n")
            self.out.flush()
            self._drawn = 0


@contextmanager
def ctrl_c_sets(event: threading.Event) -> Iterator[None]:
    """The first Ctrl-C (or SIGTERM) sets `event` (the task stops cleanly and says what it left); a second Ctrl-C
    interrupts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_int(_sig: int, _frame: Any) -> None:
        if event.is_set() and _sig == signal.SIGINT:
            raise KeyboardInterrupt
        event.set()

    previous = signal.signal(signal.SIGINT, on_int)
    previous_term = signal.signal(signal.SIGTERM, on_int)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
