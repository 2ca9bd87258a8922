"""Is the server answering? One connection of its own, pinged every second with short timeouts.

The load alone cannot tell: a killed server shows as zero-TPS seconds and a frozen one (SIGSTOP, a hung
disk) as no seconds at all. The watch keeps the periods in which the server did not answer (refused, lost,
or no reply within `timeout` s), so a step that overlaps one is reported incomplete with the reason, and
the run can wait a bounded time for the server to come back instead of measuring zeros.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mysql.connector

from tunebench.core.errors import TargetError, TunebenchError
from tunebench.core.interval import Event

# Refusals that come from a server at its connection limits (max_connections, a user's max_user_connections):
# it answers, so they are no outage. A run whose load takes every slot must not be called a lost server.
REFUSED_BUSY = {1040, 1203, 1226}

@dataclass(slots=True)
class Outage:
    start: float  # wall clock: the ping that did not get an answer was sent then
    why: str
    end: float | None = None

    def overlap(self, t0: float, t1: float) -> float:
        end = self.end if self.end is not None else time.time()
        return max(0.0, min(end, t1) - max(self.start, t0))


class ServerWatch:
    def __init__(self, connect: Callable[[], Any], on_down: Callable[[Outage], None] | None = None,
                 on_up: Callable[[Outage], None] | None = None, interval: float = 1.0):
        self.connect = connect  # must open with short connect/read timeouts (they bound every ping)
        self.on_down = on_down or (lambda _o: None)
        self.on_up = on_up or (lambda _o: None)
        self.interval = interval
        self.outages: list[Outage] = []
        self._stop = threading.Event()
        self._wake = threading.Event()  # a ping now (settle), not at the next interval
        self._up = threading.Event()
        self._up.set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._last_sent_ok = 0.0  # when the last ping that got its answer was sent
        self._last_answer = 0.0  # and when it was answered: the last moment the server is known to be up

    def start(self) -> None:
        self._stop.clear()
        self._wake.clear()
        self._thread = threading.Thread(target=self._loop, name="server-watch", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Bounded: a ping stuck on a frozen server ends by its read timeout; the thread owns its connection
        and closes it itself, so nothing here frees a connection in use."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def down(self) -> Outage | None:
        with self._lock:
            last = self.outages[-1] if self.outages else None
            return last if last is not None and last.end is None else None

    def down_during(self, t0: float, t1: float) -> tuple[float, str]:
        """Seconds in [t0, t1] the server did not answer, and the first reason."""
        with self._lock:
            hits = [(o.overlap(t0, t1), o.why) for o in self.outages]
        hits = [h for h in hits if h[0] > 0]
        return (sum(h[0] for h in hits), hits[0][1]) if hits else (0.0, "")

    def settle(self, at: float, timeout: float = 8.0) -> None:
        """Wait until the watch knows whether the server answered at `at` (a ping sent after it answered,
        or an outage called): a step that ends during a freeze must not pass before the freeze is seen. The
        ping's own timeouts bound this."""
        deadline = time.monotonic() + timeout
        self._wake.set()
        while time.monotonic() < deadline and self._thread is not None:
            with self._lock:
                if self._last_sent_ok >= at or (self.outages and self.outages[-1].end is None):
                    return
            time.sleep(0.02)

    def outage_within(self, grace: float, stop: threading.Event) -> Outage | None:
        """The outage in progress, if any, giving the watch up to `grace` seconds to notice one."""
        deadline = time.monotonic() + grace
        while self.down is None and time.monotonic() < deadline and not stop.is_set():
            time.sleep(0.25)
        return self.down

    def await_up(self, timeout: float, stop: threading.Event, then: str) -> None:
        """Wait up to `timeout` s for the server to answer again (or a stop); TargetError if it does not."""
        outage = self.down
        if outage is None or self.wait_up(timeout, stop) or stop.is_set():
            return
        raise TargetError(f"the server has not answered for {time.time() - outage.start:.0f} s ({outage.why}): "
                          f"{then}")

    def wait_up(self, timeout: float, stop: threading.Event | None = None) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._up.wait(min(0.25, max(0.0, deadline - time.monotonic()))):
                return True
            if stop is not None and stop.is_set():
                return False
        return self._up.is_set()

    def _loop(self) -> None:
        conn: Any = None
        try:
            while not self._stop.is_set():
                sent = time.time()
                try:
                    if conn is None:
                        conn = self.connect()
                    cur = conn.cursor()
                    try:
                        cur.execute("SELECT 1")
                        cur.fetchall()
                    finally:
                        cur.close()
                except (TunebenchError, mysql.connector.Error, OSError) as exc:
                    why = getattr(exc, "msg", None) or str(exc)
                    if getattr(exc, "errno", None) in REFUSED_BUSY:
                        self._answered(sent)  # a server at its connection limits answers: no outage
                    elif conn is not None:
                        with contextlib.suppress(Exception):
                            conn.close()
                        conn = None
                        # A broken connection says little ("Connection not available"); a fresh attempt tells
                        # a dead server (refused) from a dropped connection (which is no outage at all).
                        try:
                            conn = self.connect()
                        except (TunebenchError, mysql.connector.Error, OSError) as again:
                            why = getattr(again, "msg", None) or str(again)
                            if getattr(again, "errno", None) in REFUSED_BUSY:
                                self._answered(sent)
                            else:
                                self._failed(sent, why)
                        else:
                            self._answered(time.time())
                            continue
                    else:
                        self._failed(sent, why)
                else:
                    self._answered(sent)
                self._wake.wait(max(0.0, self.interval - (time.time() - sent)))
                self._wake.clear()
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()

    def _failed(self, sent: float, why: str) -> None:
        if self._stop.is_set():
            return  # the run is ending: a refusal now is not an outage of the run
        with self._lock:
            if self.outages and self.outages[-1].end is None:
                return
            # from the last moment it was known to answer: the seconds after that are not measurements
            outage = Outage(self._last_answer or sent, why)
            self.outages.append(outage)
            self._up.clear()
        self.on_down(outage)

    def _answered(self, sent: float) -> None:
        with self._lock:
            self._last_sent_ok, self._last_answer = sent, time.time()
            outage = self.outages[-1] if self.outages and self.outages[-1].end is None else None
            if outage is not None:
                outage.end = time.time()
            self._up.set()
        if outage is not None:
            self.on_up(outage)


def watch_server(connect: Callable[[], Any], note: Callable[[str], None],
                 record: Callable[[Event], None]) -> ServerWatch:
    """A started watch whose outages become a `gap` event (and its end a note) on the run's timeline."""
    def down(o: Outage) -> None:
        note(f"server not answering: {o.why}")
        record(Event(o.start, "gap", f"server not answering: {o.why}", {"server": "down", "why": o.why}))

    def up(o: Outage) -> None:
        took = (o.end or time.time()) - o.start
        note(f"server answering again after {took:.1f} s")
        record(Event(o.end or time.time(), "note", f"server answering again after {took:.1f} s",
                     {"server": "up", "seconds": round(took, 2)}))

    watch = ServerWatch(connect, down, up)
    watch.start()
    return watch


def stop_on_sigterm(stop: Callable[[], None]) -> Callable[[], None]:
    """SIGTERM asks the run to stop (it then puts every knob back); returns what puts the old handler back.
    Only the main thread can set handlers: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(_sig: int, _frame: Any) -> None:
        stop()

    signal.signal(signal.SIGTERM, on_term)

    def put_back() -> None:
        signal.signal(signal.SIGTERM, previous)

    return put_back
