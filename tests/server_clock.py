"""The server's own counters read at the engine's second edges, for the truth tests (TPS vs Com_commit, a rate vs
Com_select): both sides count over the same instants, however late a report line or a status query runs.

Reading the counter when an interval reaches the test (the old way) put each edge at that interval's arrival plus
a SHOW GLOBAL STATUS: two independent delays, at the window's two ends. On a busy machine they are tens of ms, and
at 2,000 TPS that moved a 6 s window's server count by ~2 % (client 1,971.7 vs server 2,015). Here a thread polls
the counters every few ms, each reading stamped with when its query was sent and when its answer was read; the
counter's value at an edge lies between the last reading answered before it and the first one sent after it, and
is interpolated there (a reading whose thread waited for the CPU has a wide stamp and is not used near an edge).

Where an engine's seconds end:
- the builtin engines (local and over SSH): each connection keeps its counts as of every second's edge of its
  worker's clock (when its first event ends after the edge), so a worker's second ends at the edge however late
  its reporter wakes; the engine keeps each tick's edge on the wall clock (`BuiltinEngine.edges`). Before, a
  worker's counters were read when its reporter woke and the edge was those instants averaged over the workers:
  beside CPU hogs one such second counted 838 TPS and its neighbour 209, and the step 6 % more than the server;
- sysbench reports each `--report-interval=1` second through Tunebench's hook (load/sysbench.py REPORT_LUA), which
  also prints the wall clock when it runs, just after sysbench took the second's counters (`Interval.edge`). Its
  rates are over the interval's real length (events / time_interval) and `Interval.t` is our launch time plus
  sysbench's elapsed time, so an interval runs from the previous line's `t` to its own and counts its rate times
  that length. The hook itself can wait for the CPU after the counters were taken: the edges are sysbench's own
  times plus the smallest (wall clock - `t`) of the step's lines, the hook that ran soonest.
  Before the hook said the wall clock, the edges were `Interval.t` plus one offset per process, the
  smallest (arrival - t) over the step's lines: beside the suite's other workers every line of a step could reach
  the reader late (all six at once, 5 s after the first was taken), the offset came out 0.15 s too late and the
  server's window lost 3 % (client 4,890 vs server 4,749).
"""

from __future__ import annotations

import bisect
import os
import threading
import time

from tunebench.core.interval import Interval
from tunebench.mysql.connect import open_connection, query_all

POLL_SECONDS = 0.005


class ServerCounters:
    """Polls global status counters (`names`) from a thread until `close()`; collects an engine's intervals via
    `sink`. Use as a context manager or call `close()`."""

    def __init__(self, params, names: tuple[str, ...] = ("Com_commit",), engine=None):
        """`engine`: a builtin engine, whose `edges` say where its seconds ended; None for sysbench."""
        self.names, self.engine = names, engine
        self.conn = open_connection(params)
        # SHOW (never SELECT): the poll must not move Com_select, which the open-loop test counts
        self._sql = "SHOW GLOBAL STATUS WHERE Variable_name IN ({})".format(", ".join(f"'{n}'" for n in names))
        self.sent: list[float] = []  # when each reading's query was sent
        self.read: list[float] = []  # when its answer was read (the value is of some instant in between)
        self.values: list[dict[str, int]] = []
        self.intervals: list[Interval] = []
        self.arrivals: list[float] = []
        self._stop = threading.Event()
        self._read()  # a reading before any interval can arrive
        self._thread = threading.Thread(target=self._poll, name="server-counters", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        before = time.time()
        rows = query_all(self.conn, self._sql)
        after = time.time()
        got = {(k.decode() if isinstance(k, bytes) else k): int(v) for k, v in rows}
        assert set(got) == set(self.names), (got, self.names)
        self.sent.append(before)
        self.read.append(after)
        self.values.append(got)

    def _poll(self) -> None:
        # ahead of the load for the CPU (root; else as it is): beside two CPU hogs and the suite's other workers
        # this thread read 19 times in 6 s, and a 300 ms gap interpolated over a swinging rate cost 2.5 %
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -10)
        except PermissionError:
            pass
        while not self._stop.is_set():
            self._read()
            self._stop.wait(POLL_SECONDS)

    def sink(self, iv: Interval) -> None:
        self.arrivals.append(time.time())
        self.intervals.append(iv)

    def close(self) -> None:
        """Stops polling after one more reading (so the last edge is bracketed) and closes the connection."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(10)
            assert not self._thread.is_alive(), "the status poll did not stop"
            self._read()
            self.conn.close()

    def __enter__(self) -> ServerCounters:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def edges(self, first: int, last: int) -> tuple[float, float]:
        """Where interval `first` began and interval `last` ended, on the wall clock."""
        if self.engine is not None:
            tick = round(self.intervals[first].t - self.engine.t0_wall) - 1
            end = round(self.intervals[last].t - self.engine.t0_wall) - 1
            return self.engine.edges[tick - 1], self.engine.edges[end]
        ivs = self.intervals
        assert all(iv.edge is not None for iv in ivs), "sysbench's lines carry no wall clock"
        # sysbench's elapsed time (`t` less our launch time) plus the offset of the line whose hook ran soonest
        # after its counters were taken: one hook delayed by the CPU moved its own edge (a 4 % short server count
        # on 11.8 when the step's first edge came ~0.1 s late during its ramp-up)
        offset = min(iv.edge - iv.t for iv in ivs)  # type: ignore[operator]
        return self._start(first) + offset, ivs[last].t + offset

    def _start(self, i: int) -> float:
        """sysbench: where interval `i` began, on its own clock (the previous line's end; the first: a second)."""
        return self.intervals[i - 1].t if i > 0 else self.intervals[i].t - 1.0

    def seconds(self, first: int, last: int) -> float:
        """How long intervals `first`..`last` lasted, edge to edge."""
        start, end = self.edges(first, last)
        return end - start

    def at(self, t: float, name: str) -> float:
        """The counter at wall time `t`: at least the value of the last reading answered by `t`, at most that of
        the first one sent after `t`; interpolated between the two readings' instants. A reading's value is of some
        instant between its query's sending and its answer's reading: the middle of the two is taken (the answer's
        end put a reading whose query waited 100 ms on a loaded server 100 ms late, and the count at an edge short
        by that many milliseconds of the rate)."""
        lo = bisect.bisect_right(self.read, t) - 1  # read is increasing: the readings are one after another
        hi = bisect.bisect_left(self.sent, t)
        assert lo >= 0 and hi < len(self.sent), f"no reading on both sides of {t} ({self.sent[0]}..{self.read[-1]})"
        t0, t1 = (self.sent[lo] + self.read[lo]) / 2, (self.sent[hi] + self.read[hi]) / 2
        v0, v1 = self.values[lo][name], self.values[hi][name]
        return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else float(v1)

    def width(self, t: float) -> float:
        """How long the instants of the two readings that bracket wall time `t` may lie apart (what `at`
        interpolates over): from the first one's sending to the second one's answer."""
        lo = bisect.bisect_right(self.read, t) - 1
        hi = bisect.bisect_left(self.sent, t)
        return self.read[hi] - self.sent[lo] if lo >= 0 and hi < len(self.sent) else float("inf")

    def window(self, min_intervals: int = 3) -> tuple[int, int]:
        """The intervals (first, last) to compare, leaving out the step's first: among the spans of at least
        `min_intervals` seconds, the one whose two edges the server's readings bracket most tightly for its
        length. At an edge the server's count is interpolated between two readings, so its error is up to the
        rate times their gap; beside CPU hogs a reading can wait 100 ms and more for the server, and an edge there
        moved a 5-s window's count by 5 % (client 2,234 vs server 2,124 at load 11). The edges are still the
        engine's; only which of its seconds are compared is chosen, and the tolerance is what it was."""
        n = len(self.intervals)
        spans = [(f, last) for f in range(1, n) for last in range(f + min_intervals - 1, n)]
        if not spans:
            return 1, n - 1

        def cost(span: tuple[int, int]) -> float:
            start, end = self.edges(*span)
            return (self.width(start) + self.width(end)) / max(end - start, 1e-3)

        return min(spans, key=cost)

    def over(self, first: int, last: int, name: str = "Com_commit") -> float:
        """The server's count from the start of interval `first` to the end of interval `last` (inclusive)."""
        start, end = self.edges(first, last)
        return self.at(end, name) - self.at(start, name)

    def client(self, first: int, last: int) -> float:
        """The client's count over the same seconds: a builtin engine's tick counts its events (whatever its length);
        a sysbench line's rate is over its interval's real length."""
        if self.engine is not None:
            return sum(iv.tps for iv in self.intervals[first:last + 1])
        return sum(self.intervals[i].tps * (self.intervals[i].t - self._start(i)) for i in range(first, last + 1))

    def describe(self) -> str:
        """The intervals as the comparison saw them (for a failure's message): per interval its end on the engine's
        clock and its edge relative to the first, its threads and count, and the poll's readings."""
        ivs = self.intervals
        if not ivs:
            return "no intervals"
        t0 = ivs[0].t
        rows = [f"({iv.t - t0:.3f}, edge {'-' if iv.edge is None else f'{iv.edge - t0:.3f}'}, thds {iv.threads}, "
                f"tps {iv.tps:.0f})" for iv in ivs]
        gaps = sorted((b - a for a, b in zip(self.read, self.sent[1:], strict=False)), reverse=True)[:3]
        slow = sorted((b - a for a, b in zip(self.sent, self.read, strict=True)), reverse=True)[:3]
        return (f"{len(self.sent)} readings {self.sent[0] - t0:.3f}..{self.read[-1] - t0:.3f} (widest gaps "
                + ", ".join(f"{g * 1000:.0f} ms" for g in gaps) + "; slowest readings "
                + ", ".join(f"{g * 1000:.0f} ms" for g in slow) + "); " + " ".join(rows))

