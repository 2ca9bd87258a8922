"""Open-loop load: a schedule of intended start times that a pool of connections serves.

Closed-loop load (each connection starts its next transaction when its last one ends) measures how fast the
server can go; it cannot say what the latency is at a given arrival rate, and it hides stalls: when the server
freezes for 2 s, N connections record N slow transactions and the thousands that would have arrived meanwhile
are never counted (coordinated omission). Here, as pgbench's `-R` and wrk2 do, transactions are due at times
drawn from an arrival process (Poisson, or fixed intervals) at the target rate; a connection that is free takes
the next due one, waits for its time if it is early, and its latency is measured from the *intended* start
(queue wait included); its service time from the actual start. `latency_limit` (pgbench's `--latency-limit`):
a transaction already later than the limit when a connection takes it is skipped and counted, never run.

One Schedule per client group and worker process, shared by that process's connections of the group under a
lock. A group's rate is split over its worker processes by their share of its connections; the superposition
of independent Poisson processes is a Poisson process of the summed rate, so the group's arrivals are those
of one Poisson process (fixed arrivals: each process's are evenly spaced, offset from the others').
Times are in nanoseconds of the process's `time.monotonic_ns` clock (CLOCK_MONOTONIC, the compiled loop's).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

ARRIVALS = ("poisson", "fixed")
MAX_RATE = 10_000_000  # transactions per second for one group
MIN_RATE = 0.01  # one transaction every 100 s: below it a "rate" is no load (1e-300 was taken, issue 43 item 18)
CHUNK = 4096  # arrival gaps drawn at a time
BACKLOG_LIMIT = 10_000_000  # due and not started: past this the schedule stops generating (and says so)
SECOND_NS = 1_000_000_000
EDGES_KEPT = 16  # seconds of edges whose backlog is kept for a reporter that wakes late


@dataclass(frozen=True, slots=True)
class Claim:
    """What a free connection gets: the intended start of its next transaction (possibly in the future: it waits
    until then), and how many due transactions were skipped before it for being later than the limit."""

    due_ns: int
    skipped: int


class Schedule:
    """Intended start times at `rate` per second from `start_ns`; thread-safe."""

    def __init__(self, rate: float, arrival: str = "poisson", seed: int | list[int] = 0, start_ns: int = 0,
                 latency_limit_ns: int | None = None, phase: float = 0.0):
        if rate <= 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        if arrival not in ARRIVALS:
            raise ValueError(f"arrival must be one of {', '.join(ARRIVALS)}, got {arrival!r}")
        self.rate = float(rate)
        self.arrival = arrival
        self.limit_ns = latency_limit_ns
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._gap_ns = 1e9 / self.rate
        # the due times drawn ahead, not taken yet: _times[_i:]
        self._times = np.empty(0, dtype=np.int64)
        self._i = 0
        # the first arrival: one gap (a Poisson one, or `phase` of a fixed one) after the start
        self._last = float(start_ns)
        if arrival == "fixed":
            self._last -= self._gap_ns * (1.0 - phase)
        self.taken = 0  # transactions handed out
        self.skipped = 0  # skipped for the latency limit (cumulative)
        self.dropped = 0  # due, never started, dropped by reset() (the warm-up's backlog)
        self.overflow = False  # the backlog passed BACKLOG_LIMIT: the schedule stopped drawing
        # the backlog as of each second's edge (grid()): kept at the first claim after the edge, before it, so that
        # a reporter waking late reads what was due and not started at the edge, not after a catch-up
        self._edge_next: int | None = None
        self._at_edges: dict[int, tuple[int, float]] = {}

    # -- drawing --
    def _draw(self) -> None:
        """CHUNK more due times after the last one drawn."""
        # as many as are pending (at least CHUNK): a backlog that grows while the server is frozen is drawn in
        # doubling chunks, each copy of the pending ones paid for by as many new ones
        n = max(CHUNK, len(self._times) - self._i)
        gaps = self._rng.exponential(self._gap_ns, n) if self.arrival == "poisson" else np.full(n, self._gap_ns)
        times = self._last + np.cumsum(gaps)
        self._last = float(times[-1])
        rest = self._times[self._i:]
        self._times = np.concatenate([rest, times.astype(np.int64)])
        self._i = 0

    def _next(self) -> int:
        if self._i >= len(self._times):
            self._draw()
        return int(self._times[self._i])

    def _drawn_to(self, now_ns: int) -> None:
        """Draw until a due time lies after `now_ns` (the backlog is then countable), within BACKLOG_LIMIT."""
        while (len(self._times) == 0 or int(self._times[-1]) <= now_ns) and not self.overflow:
            if len(self._times) - self._i >= BACKLOG_LIMIT:
                self.overflow = True
                return
            self._draw()

    def grid(self, grid0_ns: int, now_ns: int) -> None:
        """The reporter's seconds end at grid0_ns + k s: the backlog is kept as of each edge from now on."""
        with self._lock:
            self._edge_next = grid0_ns + max(0, (now_ns - grid0_ns) // SECOND_NS + 1) * SECOND_NS

    def _keep_edges(self, now_ns: int) -> None:
        """The backlog at every edge up to `now_ns` not kept yet, before a claim changes it (under the lock)."""
        edge = self._edge_next
        if edge is None or now_ns < edge:
            return
        if (now_ns - edge) // SECOND_NS >= EDGES_KEPT:  # seconds without a claim: the last few are enough
            edge += ((now_ns - edge) // SECOND_NS - EDGES_KEPT + 1) * SECOND_NS
        while edge <= now_ns:
            self._at_edges[edge] = self._backlog(edge)
            edge += SECOND_NS
        self._edge_next = edge
        for old in sorted(self._at_edges)[:-EDGES_KEPT]:
            del self._at_edges[old]

    # -- the connections' side --
    def claim(self, now_ns: int) -> Claim:
        """The next due transaction for a connection free at `now_ns`; those already later than the latency
        limit are skipped first (counted, not run)."""
        with self._lock:
            self._keep_edges(now_ns)
            skipped = 0
            due = self._next()
            if self.limit_ns is not None:
                while now_ns - due > self.limit_ns:
                    skipped += 1
                    self._i += 1
                    due = self._next()
            self._i += 1
            self.taken += 1
            self.skipped += skipped
            return Claim(due, skipped)

    def take_until(self, t_ns: int, room: int | None = None) -> np.ndarray:
        """Every due time up to `t_ns` not handed out yet, handed out now (the compiled loop's queue is fed
        these ahead of the clock, and its connections claim them there) - at most `room` of them (what the queue
        may still hold within BACKLOG_LIMIT): more than that due is the backlog's overflow, as in the Python
        loop's schedule (the rest stay here, handed out as the queue drains)."""
        with self._lock:
            cap = BACKLOG_LIMIT if room is None else max(0, room)
            while (len(self._times) == 0 or int(self._times[-1]) <= t_ns) and len(self._times) - self._i < cap:
                self._draw()
            pending = self._times[self._i:]
            n = int(np.searchsorted(pending, t_ns, side="right"))
            if n > cap:
                n, self.overflow = cap, True
            out = pending[:n].copy()
            self._i += n
            self.taken += n
            return out

    # -- the reporter's side --
    def backlog(self, now_ns: int, edge_ns: int | None = None) -> tuple[int, float]:
        """(due and not started at `now_ns`, how late the oldest of them is in ms: 0 without a backlog). With
        `edge_ns` (a second's edge of grid(), now or before): as of that edge -- kept at the first claim after it,
        or, with no claim since, the state now is the state then."""
        with self._lock:
            if edge_ns is None:
                return self._backlog(now_ns)
            kept = self._at_edges.pop(edge_ns, None)
            for old in [e for e in self._at_edges if e < edge_ns]:
                del self._at_edges[old]
            return kept if kept is not None else self._backlog(edge_ns)

    def _backlog(self, at_ns: int) -> tuple[int, float]:
        self._drawn_to(at_ns)
        pending = self._times[self._i:]
        n = int(np.searchsorted(pending, at_ns, side="right"))
        lag = (at_ns - int(pending[0])) / 1e6 if n else 0.0
        return n, lag

    def reset(self, now_ns: int) -> int:
        """Drop what is due and not started (the warm-up's backlog must not be carried into the measured
        seconds) and go on from `now_ns`; returns how many were dropped."""
        with self._lock:
            self._drawn_to(now_ns)
            pending = self._times[self._i:]
            n = int(np.searchsorted(pending, now_ns, side="right"))
            self._i += n
            self.dropped += n
            if self.overflow:  # nothing drawn past the limit: start again from now
                self._times, self._i, self._last, self.overflow = np.empty(0, dtype=np.int64), 0, float(now_ns), False
            return n


@dataclass(frozen=True, slots=True)
class OpenLoop:
    """A group's open-loop load for one step: its target rate (transactions per second for the whole group), the
    arrival process, and pgbench's latency limit (None: none)."""

    rate: float
    arrival: str = "poisson"
    latency_limit_ms: float | None = None

    def limit_ns(self) -> int | None:
        return None if self.latency_limit_ms is None else int(self.latency_limit_ms * 1e6)


def served(rate: float, achieved: float, seconds: float) -> bool:
    """Did a pool serve `rate` (per second) over `seconds` when it completed `achieved` per second? A Poisson
    stream's count varies by its square root: short by more than 3 % and more than three standard deviations of
    the arrivals' count is not served (at 250/s over 6 s a full 1,500 may well be 1,440)."""
    expected = rate * seconds
    if expected <= 0:
        return True
    short = expected - achieved * seconds
    return short <= max(0.03 * expected, 3.0 * expected ** 0.5)
