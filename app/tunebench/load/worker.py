"""A builtin-engine worker process: many connection threads, one per-second reporter.

The C extension releases the GIL while it waits on the server, so one process drives many
connections; several processes use several cores. Each connection thread keeps cumulative
counters and a list of latencies; the reporter takes both at one instant (Slot.take), turns them into
per-second deltas and a sparse histogram and sends them to the parent, which merges workers into one
Interval per group.
"""

from __future__ import annotations

import faulthandler
import os
import threading
import time
import traceback
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from tunebench.core import schedule
from tunebench.core.clocks import wall_at
from tunebench.core.histogram import LatencyHistogram
from tunebench.core.schedule import OpenLoop, Schedule
from tunebench.core.target import ConnParams
from tunebench.load.driver import RECONNECT_ERRNOS, RETRY_ERRNOS, DriverError, init_client_library, open_session
from tunebench.load.families import get_family
from tunebench.load.family import ConnectionContext
from tunebench.load.hotloop import LAT_MASK, RUN_SECONDS, TYPE_SHIFT, HotProgram, HotSession, HotTotals, due_queue
from tunebench.load.program import VmProgram

# the compiled loop's due-time queues are kept this far ahead of the clock, topped up this often (s)
FEED_AHEAD_NS = 1_000_000_000
FEED_EVERY = 0.1


@dataclass(frozen=True, slots=True)
class GroupPlan:
    name: str
    family: str  # load/families.py name
    plan: Any  # family.plan(workload, options): picklable
    options: Mapping[str, Any]
    trx: tuple[str, ...]  # the family's transaction type names (per-type counts when more than one)
    slots: tuple[int, ...]  # global slot numbers this worker runs for the group
    nslots: int = 0  # connections the group may open in all
    seed: int = 0  # the group's connections draw from it (see connection_rng)
    run_nonce: int = 0  # differs in every run, whatever the seed (family.ConnectionContext.run_nonce)
    nworkers: int = 1  # worker processes the group's connections are spread over (fixed arrivals' phases)
    open_loop: bool = False  # the group runs at a rate (its schedule's intended starts) in some step


@dataclass(frozen=True, slots=True)
class SlotTake:
    """One connection's events since the previous take: their latencies (all, and per transaction type) and the
    cumulative counters of that same instant, so each counted event has its latency in the same take."""

    lat: list[int]
    trx_lat: list[list[int]]
    counters: tuple[int, int, int, int, int, int]
    trx_counts: list[list[int]]  # per type: events, errors, rollbacks, retries (cumulative)
    svc: list[int] = field(default_factory=list)  # open loop: service times (the latencies count from the due time)
    open_counts: tuple[int, int] = (0, 0)  # open loop: late, skipped (cumulative)
    codes: Mapping[int, int] = field(default_factory=dict)  # the errors by server error code (cumulative)


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    index: int
    params: ConnParams
    groups: tuple[GroupPlan, ...]
    t0_mono: float
    stderr_path: str = ""  # the parent reads it when the worker dies
    # the client host this worker runs on, of how many (load/remote_builtin.py): 0 of 1 on this machine
    host: int = 0
    hosts: int = 1


def connection_rng(group: GroupPlan, number: int) -> np.random.Generator:
    """One connection's generator: a function of its group's seed, the group's name and the connection's number in
    the group only, so that a seed sends the same draws again whichever worker process runs the connection. (Not
    hash(name): a str's hash differs in every spawned process.)"""
    return np.random.default_rng([group.seed, zlib.crc32(group.name.encode()), number])


SECOND_NS = 1_000_000_000
CUTS_KEPT = 16  # a slot's second edges not taken yet (the reporter's lag it absorbs, in seconds)


class Slot(threading.Thread):
    """One client connection running its family's transactions while active. It is the family's Counts
    (load/family.py): the family's statements add to reads/writes/other, errors are charged to `current`."""

    def __init__(self, spec: WorkerSpec, group: GroupPlan, number: int, notes: list[str],
                 hot: HotProgram | VmProgram | None = None):
        super().__init__(name=f"{group.name}-{number}", daemon=True)
        self.params = spec.params
        self.group = group
        self.family = get_family(group.family)
        self.number = number
        self.notes = notes
        self.rng = connection_rng(group, number)
        self.active = False
        self.shutdown = False
        self.gate = threading.Event()
        # An event's latency and its count change together under this lock, and `take` reads both under it: a
        # thread preempted between the two can neither lose its latency nor put it in another second than
        # its count (a sleep before reading the swapped lists only made that rare).
        self.handoff = threading.Lock()
        # The worker's seconds end at grid0_ns + k s (CLOCK_MONOTONIC): when an event ends after the next edge, the
        # state before it is kept (`_cut`), and take(until) gives the state as of that edge, however late the
        # reporter wakes (issue 41: a reporter that woke 0.3 s late made one second 1.3 s long and the next 0.7 s,
        # and the merged second's edge an average over processes that had taken their counters at other instants)
        self.grid0_ns = round(spec.t0_mono * 1e9)
        now = time.monotonic_ns()
        self.cut_next = self.grid0_ns + max(0, (now - self.grid0_ns) // SECOND_NS + 1) * SECOND_NS
        self.cuts: list[tuple[int, int, Any]] = []  # (first edge, last edge it stands for, the state)
        # cumulative counters: events, reads, writes, other, errors, reconnects
        self.events = self.reads = self.writes = self.other = self.errors = self.reconnects = 0
        self.codes: dict[int, int] = {}  # every error of `errors` by its server error code (cumulative)
        self.lat: list[int] = []
        # per transaction type (families with more than one): events, errors, rollbacks, retries; latencies
        self.ntrx = len(group.trx) if len(group.trx) > 1 else 0
        self.trx_counts = [[0, 0, 0, 0] for _ in range(self.ntrx)]
        self.trx_lat: list[list[int]] = [[] for _ in range(self.ntrx)]
        self.current = 0
        self.idle_until = 0.0  # a paced family's next start (iiBench inserts_per_second)
        # a connection that had not opened when the step's measured seconds began (a connection limit): it does not
        # try again until the next step, so the step is measured at the concurrency it said (the ramp's note)
        self.left_out = False
        self.finished = False  # the family has no more work for it (iiBench max_rows): parked for the run
        self.finished_at = 0.0  # when (wall clock)
        self.step_events = 0  # `events` when the step started: what it did this step is the difference
        self.fatal: str | None = None
        self.session: Any = None
        self.kept: dict[str, Any] = {}  # the family's per-connection state that outlives a reconnect
        # the compiled loop (load/hotloop.py), when the family's program runs there: its counts and latencies
        # are the C connection's, taken by the reporter through `hot`
        self.hot_program = hot
        self.hot = HotTotals(self.grid0_ns) if hot is not None else None
        # open loop (core/schedule.py): the schedule of intended starts this connection serves (shared with the
        # process's other connections of the group), None in closed loop; service times beside the latencies
        # (those count from the intended start), and transactions late (over the limit) and skipped
        self.schedule: Schedule | None = None
        self.queue: Any = None  # the compiled loop's: the DueQueue its schedule feeds (load/hotloop.py)
        self.svc: list[int] = []
        self.late = self.skipped = 0

    # ---- Counts -----------------------------------------------------------------------------
    def _error(self, code: int | None) -> None:
        """One more error (of `errors`), counted by its code too (0: none known); both at once for the reporter's
        take (an error is rare: the lock costs nothing)."""
        with self.handoff:
            self.errors += 1
            self.codes[code or 0] = self.codes.get(code or 0, 0) + 1

    def retry(self, code: int | None = None) -> None:
        self._error(code)
        if self.ntrx:
            self.trx_counts[self.current][3] += 1

    def rollback(self) -> None:
        if self.ntrx:
            self.trx_counts[self.current][2] += 1

    def _connect(self) -> None:
        if self.hot_program is not None and self.hot is not None:
            seed = int(self.rng.integers(0, 2**63 - 1))
            registers = None
            if isinstance(self.hot_program, VmProgram):
                registers = self.hot_program.registers(self.number, self.group.nslots or len(self.group.slots),
                                                       self.group.run_nonce, self.kept.get("vm"))
            self.session = HotSession(self.params, self.hot_program, seed, self.hot, registers)
            return
        self.session = open_session(self.params)
        ctx = ConnectionContext(self.session, self, self.rng, self.group.options, self.number,
                                self.group.nslots or len(self.group.slots), self.group.plan, self.group.run_nonce,
                                self.kept)
        self.work = self.family.connection_work(ctx)

    # ---- main loop ---------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._run()
        except Exception:
            self.fatal = traceback.format_exc(limit=3)

    def _ensure_connected(self) -> bool:
        while self.session is None and not self.shutdown:
            if self.left_out:
                time.sleep(0.1)
                return False
            try:
                self._connect()
                if self.left_out:  # it opened after the measured seconds began: out of this step all the same
                    self.session.close()
                    self.session = None
                    return False
                return True
            except DriverError as exc:
                self._error(exc.errno)
                self.notes.append(f"connection {self.number}: cannot connect ({exc.errno}: {exc.msg})")
                if self.session is not None:
                    self.session.close()
                    self.session = None
                time.sleep(1.0)
        return self.session is not None

    def _run(self) -> None:
        perf = time.monotonic_ns  # the grid's clock
        while not self.shutdown:
            if not self.active:
                self.gate.wait()
                continue
            if self.finished:
                self._park()
                continue
            if not self._ensure_connected():
                continue
            if self.schedule is not None and self.hot is None:
                self._run_open(self.work)
                continue
            if self.hot is not None:
                self._run_hot()
                continue
            work = self.work
            if self.ntrx:
                self._run_typed(work)
                continue
            while self.active:
                before = (self.reads, self.writes, self.other)
                t0 = perf()
                try:
                    work()
                except DriverError as exc:
                    self._on_error(exc)
                    break
                end = perf()
                dt = end - t0
                with self.handoff:
                    if end >= self.cut_next:
                        self._cut(end, before)
                    self.lat.append(dt)
                    self.events += 1
                if self.finished:
                    break
                if self.idle_until:
                    self._idle()

    def _run_open(self, work: Any) -> None:
        """Open loop: take the next due transaction of the schedule, wait for its time if early, run it; its
        latency counts from the intended start, its service time from the actual one."""
        perf = time.monotonic_ns  # the schedule's clock
        sched = self.schedule
        limit = sched.limit_ns if sched is not None else None
        while self.active and sched is not None and self.schedule is sched:
            claim = sched.claim(perf())
            if claim.skipped:
                with self.handoff:
                    self.skipped += claim.skipped
            if not self._wait_until(claim.due_ns):
                break  # stopped while waiting: the transaction was not run
            before = (self.reads, self.writes, self.other)
            t0 = perf()
            try:
                kind = work()
            except DriverError as exc:
                if self.ntrx and exc.errno in RETRY_ERRNOS:
                    self.trx_counts[self.current][1] += 1
                self._on_error(exc)
                break
            end = perf()
            lat = end - claim.due_ns
            with self.handoff:
                if end >= self.cut_next:
                    self._cut(end, before)
                self.lat.append(lat)
                self.svc.append(end - t0)
                if self.ntrx:
                    self.trx_lat[kind].append(lat)
                    self.trx_counts[kind][0] += 1
                self.events += 1
                if limit is not None and lat > limit:
                    self.late += 1
            if self.finished:
                break

    def _wait_until(self, due_ns: int) -> bool:
        """Sleep until `due_ns` (monotonic_ns), waking every 50 ms to see whether the connection was stopped."""
        while self.active:
            wait = due_ns - time.monotonic_ns()
            if wait <= 0:
                return True
            time.sleep(min(wait / 1e9, 0.05))
        return False

    def _run_hot(self) -> None:
        """The compiled loop: whole events in C with the GIL released, a return every RUN_SECONDS at most."""
        session = self.session
        while self.active:
            try:
                session.run(RUN_SECONDS, self.queue)
            except DriverError as exc:
                self._keep(session)
                self._on_error(exc)
                break
            if session.finished():  # the program has no more work this run (iiBench's max_rows)
                self._keep(session)
                self.finished = True
                break

    def _keep(self, session: HotSession) -> None:
        """A statement program's registers that outlive a reconnect (load/program.py Asm.keep)."""
        if isinstance(self.hot_program, VmProgram) and self.hot_program.kept:
            self.kept["vm"] = {name: session.conn.reg(r) for name, r in self.hot_program.kept}

    def total_events(self) -> int:
        """Events run so far, in either loop."""
        return self.events + (self.hot.events() if self.hot is not None else 0)

    def deactivate(self) -> None:
        """Stop running events: the compiled loop is told at once (else it notices within RUN_SECONDS)."""
        self.active = False
        session = self.session
        if isinstance(session, HotSession):
            session.interrupt()

    def _run_typed(self, work: Any) -> None:
        """The loop for families of several transaction types: each one also counted and timed by type."""
        perf = time.monotonic_ns  # the grid's clock
        counts = self.trx_counts
        while self.active:
            before = (self.reads, self.writes, self.other)
            t0 = perf()
            try:
                kind = work()
            except DriverError as exc:
                if exc.errno in RETRY_ERRNOS:
                    counts[self.current][1] += 1
                self._on_error(exc)
                break
            end = perf()
            dt = end - t0
            with self.handoff:
                if end >= self.cut_next:
                    self._cut(end, before)
                self.lat.append(dt)
                self.trx_lat[kind].append(dt)
                counts[kind][0] += 1
                self.events += 1
            if self.finished:
                break
            if self.idle_until:
                self._idle()

    def _park(self) -> None:
        """A finished connection: nothing more to run this run; it waits, connected, until the step ends."""
        if not self.finished_at:
            self.finished_at = time.time()
        while self.active and not self.shutdown:
            time.sleep(0.05)

    def _idle(self) -> None:
        """Wait until the paced family's next start (woken early when the connection is stopped)."""
        wait = self.idle_until - time.monotonic()
        self.idle_until = 0.0
        while wait > 0 and self.active:
            time.sleep(min(wait, 0.2))
            wait -= 0.2

    def _on_error(self, exc: DriverError) -> None:
        if exc.errno in RETRY_ERRNOS and self.ntrx and isinstance(self.session, HotSession):
            self.trx_counts[self.session.current()][1] += 1  # the compiled loop's type under way
        if exc.errno in RETRY_ERRNOS:
            self._error(exc.errno)
            try:
                self.session.query(b"ROLLBACK")
                self.other += 1
            except DriverError:
                pass
            return
        if exc.errno in RECONNECT_ERRNOS or exc.errno is None or exc.errno >= 2000:
            self.reconnects += 1
            self.session.close()
            self.session = None
            return
        # Anything else (missing table, syntax, privileges) ends this connection: sysbench aborts too.
        self.fatal = f"error {exc.errno}: {exc.msg}"
        self.active = False
        self.shutdown = True

    def counters(self) -> tuple[int, int, int, int, int, int]:
        return (self.events, self.reads, self.writes, self.other, self.errors, self.reconnects)

    def _cut(self, now: int, before: tuple[int, int, int]) -> None:
        """An event ends at `now`, after the next edge: the state before it (its statements' counts taken when it
        began) is the state as of every edge it crossed. Under `handoff`."""
        last = self.cut_next + (now - self.cut_next) // SECOND_NS * SECOND_NS
        state = ((self.events, *before, self.errors, self.reconnects), len(self.lat), [len(x) for x in self.trx_lat],
                 len(self.svc), [list(c) for c in self.trx_counts], (self.late, self.skipped), dict(self.codes))
        if len(self.cuts) == CUTS_KEPT:  # the reporter is seconds late: those events count in a later take
            del self.cuts[0]
        self.cuts.append((self.cut_next, last, state))
        self.cut_next = last + SECOND_NS

    def take(self, until_ns: int | None = None) -> SlotTake:
        """The latencies since the previous take, with the counters of the same instant: as of edge `until_ns` of
        the grid (events that ended after it stay for the next take; edges taken in order), or now (None)."""
        with self.handoff:
            i = next((i for i, c in enumerate(self.cuts) if c[1] >= until_ns), None) if until_ns is not None else None
            if i is None:  # no event ended since the edge: the state now is the state then
                self.cuts.clear()
                if until_ns is not None and self.cut_next <= until_ns:
                    self.cut_next = until_ns + SECOND_NS
                lat, self.lat = self.lat, []
                trx_lat, self.trx_lat = self.trx_lat, [[] for _ in range(self.ntrx)]
                svc, self.svc = self.svc, []
                return SlotTake(lat, trx_lat, self.counters(), [list(c) for c in self.trx_counts], svc,
                                (self.late, self.skipped), dict(self.codes))
            _first, last, (counters, nlat, ntrx_lat, nsvc, trx_counts, open_counts, codes) = self.cuts[i]
            lat, self.lat = self.lat[:nlat], self.lat[nlat:]
            trx_lat = [x[:k] for x, k in zip(self.trx_lat, ntrx_lat, strict=True)]
            self.trx_lat = [x[k:] for x, k in zip(self.trx_lat, ntrx_lat, strict=True)]
            svc, self.svc = self.svc[:nsvc], self.svc[nsvc:]
            # the cuts after (and one that also stands for later edges) keep their place in what is left
            rest = self.cuts[i if last > until_ns else i + 1:]  # type: ignore[operator]
            self.cuts = [(f, l_, (c, n - nlat, [a - b for a, b in zip(t, ntrx_lat, strict=True)], v - nsvc, tc, oc,
                                  cd))
                         for f, l_, (c, n, t, v, tc, oc, cd) in rest]
            return SlotTake(lat, trx_lat, counters, trx_counts, svc, open_counts, codes)


def _trx_report(slots: list[Slot], buffers: dict[int, list[list[int]]],
                last: dict[int, list[list[int]]], snaps: dict[int, list[list[int]]]) -> tuple[Any, ...] | None:
    """Per transaction type of one group over the last second: (events, errors, rollbacks, retries, sparse
    histogram index, counts, max ns) each; None for a single-type family."""
    ntrx = slots[0].ntrx if slots else 0
    if not ntrx:
        return None
    out = []
    for k in range(ntrx):
        totals = [0, 0, 0, 0]
        hist = LatencyHistogram()
        for s in slots:
            now, prev = snaps[id(s)][k], last[id(s)][k]
            for i in range(4):
                totals[i] += now[i] - prev[i]
            last[id(s)][k] = list(now)
            hist.add_ns(buffers[id(s)][k])
        idx, counts = hist.sparse()
        out.append((*totals, idx, counts, hist.max_ns))
    return tuple(out)


def open_schedule(spec: WorkerSpec, group: GroupPlan, active: int, load: OpenLoop | None,
                  step: int) -> Schedule | None:
    """This process's share of a group's open-loop schedule for a step: the group's rate times the share of its
    active connections that run here (None: closed loop, or none of them here). Seeded by the group's seed, the
    worker and the step, so a seed gives the same arrivals again."""
    if load is None or active <= 0:
        return None
    mine = sum(1 for n in group.slots if n < active)
    if not mine:
        return None
    workers = max(1, group.nworkers)
    # on client hosts each host's workers draw their own arrivals, and their phases spread over the hosts too
    where = [spec.host] if spec.hosts > 1 else []
    return Schedule(load.rate * mine / active, load.arrival,
                    [group.seed, zlib.crc32(group.name.encode()), spec.index, step, *where],
                    time.perf_counter_ns(), load.limit_ns(), phase=(spec.host + spec.index / workers) / spec.hosts)


def _feed(feeds: Mapping[str, tuple[Schedule, Any]]) -> None:
    """The compiled loop's queues kept FEED_AHEAD_NS ahead of the clock with their schedules' due times (the C
    connections claim them there); a thread of the worker, every FEED_EVERY seconds."""
    while True:
        time.sleep(FEED_EVERY)
        for sched, feed in list(feeds.values()):
            push_due(sched, feed)


def push_due(sched: Schedule, feed: Any) -> None:
    """The due times up to FEED_AHEAD_NS from now into the compiled loop's queue, which never holds more than
    BACKLOG_LIMIT (a rate above what the server serves: past it the schedule says overflow, as the Python loop's
    does; issue 43 item 19 - the queue grew without bound)."""
    room = schedule.BACKLOG_LIMIT - feed.pending()
    feed.push(sched.take_until(time.monotonic_ns() + FEED_AHEAD_NS, room).tobytes())


def _open_report(slots: list[Slot], taken: Mapping[int, SlotTake],
                 hot_open: Mapping[int, tuple[list[int], bytes]], last: dict[int, tuple[int, int]],
                 sched: Schedule | None, feed: Any, edge_ns: int | None = None) -> tuple[Any, ...] | None:
    """One group's open-loop second: (service histogram index, counts, max ns, late, skipped, backlog, lag ms,
    dropped, overflow); None in closed loop. The compiled loop's connections count their own (`hot_open`), and
    its backlog is its queue's."""
    if sched is None:
        return None
    hist = LatencyHistogram()
    late = skipped = 0
    for s in slots:
        t = taken[id(s)]
        oc = t.open_counts
        svc = np.asarray(t.svc, dtype=np.int64)
        if id(s) in hot_open:
            (hot_late, hot_skipped), hot_svc = hot_open[id(s)]
            oc = (oc[0] + hot_late, oc[1] + hot_skipped)
            svc = np.concatenate([svc, np.frombuffer(hot_svc, dtype=np.int64)])
        hist.add_ns(svc)
        prev = last[id(s)]
        late, skipped = late + oc[0] - prev[0], skipped + oc[1] - prev[1]
        last[id(s)] = (oc[0], oc[1])
    # as of the second's edge (`edge_ns`): what was due and not started then, whenever this reporter woke (one that
    # woke after a catch-up read 0 and under-counted what came due before the next window)
    now = time.monotonic_ns() if edge_ns is None else min(edge_ns, time.monotonic_ns())
    if feed is None:
        backlog, lag = sched.backlog(now, edge_ns)
    else:
        backlog, lag_ns = feed.backlog(now, edge_ns) if edge_ns is not None else feed.backlog(now)
        lag = lag_ns / 1e6
    dropped, sched.dropped = sched.dropped, 0
    idx, counts = hist.sparse()
    return idx, counts, hist.max_ns, late, skipped, backlog, lag, dropped, sched.overflow


def _hot_program(group: GroupPlan) -> HotProgram | VmProgram | None:
    """The group's program in the compiled loop's form, where its family has one (the OLTP family's event program,
    the others' statement programs) and the loop can run it; None: the Python loop."""
    compile_hot = getattr(get_family(group.family), "hot_program", None)
    return compile_hot(group.plan, group.options) if compile_hot is not None else None


def _split_typed(lat: bytes, ntrx: int) -> tuple[Any, list[Any]]:
    """A statement program's latencies (their type in the top bits): all of them, and per type."""
    arr = np.frombuffer(lat, dtype=np.int64)
    kinds = arr >> TYPE_SHIFT
    vals = arr & LAT_MASK
    return vals, [vals[kinds == k] for k in range(ntrx)]


def _capture_stderr(path: str) -> None:
    """fd 2 to the worker's own file (glibc and the C extension write there too); a crash dumps every
    thread's Python stack into it."""
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    faulthandler.enable(all_threads=True)


STOP_GRACE = 5.0  # the engine kills a worker not gone 8 s after its stop (BuiltinEngine.close)


def _stop_slots(slots: dict[str, list[Slot]], grace: float = STOP_GRACE) -> bool:
    """Tell every Slot to stop and close the sessions of those that did within `grace` seconds in all. A Slot
    ends the transaction it is in first: on a machine short of CPU one took more than the 2 s this once was, and
    was cut between two statements (the server had counted a TPC-C name count without the read it goes with).
    A Slot still inside the driver (a frozen server) keeps its session: freeing a connection another
    thread is using corrupts the heap. True when every Slot stopped."""
    every = [s for ss in slots.values() for s in ss]
    for s in every:
        s.shutdown = True
        s.deactivate()
        s.gate.set()
    deadline = time.monotonic() + grace
    stuck = False
    for s in every:
        if s.is_alive():
            s.join(timeout=max(0.0, deadline - time.monotonic()))
        if s.is_alive():
            stuck = True
        elif s.session is not None:
            s.session.close()
            s.session = None
    return not stuck


def worker_main(conn: Connection, spec: WorkerSpec) -> None:
    """Entry point of a worker process: obey ("active", {group: n}) / ("stop",); report every tick."""
    _capture_stderr(spec.stderr_path)
    init_client_library()  # on the main thread, before any Slot thread connects
    notes: list[str] = []
    hot = {g.name: _hot_program(g) for g in spec.groups}
    slots: dict[str, list[Slot]] = {
        g.name: [Slot(spec, g, n, notes, hot[g.name]) for n in g.slots] for g in spec.groups
    }
    last = {id(s): (0, 0, 0, 0, 0, 0) for ss in slots.values() for s in ss}
    last_trx = {id(s): [[0, 0, 0, 0] for _ in range(s.ntrx)] for ss in slots.values() for s in ss}
    active: dict[str, int] = {g.name: 0 for g in spec.groups}
    schedules: dict[str, Schedule] = {}  # the open-loop groups' of this step
    # those in the compiled loop: their schedule and the DueQueue its connections claim from
    feeds: dict[str, tuple[Schedule, Any]] = {}
    feeder = threading.Thread(target=_feed, args=(feeds,), name="feeder", daemon=True)
    feeder.start()
    last_open = {id(s): (0, 0) for ss in slots.values() for s in ss}
    last_codes: dict[int, dict[int, int]] = {id(s): {} for ss in slots.values() for s in ss}
    steps = 0
    fatal_sent = False
    grace = STOP_GRACE
    conn.send(("ready", spec.index))
    tick = max(0, int(time.monotonic() - spec.t0_mono))
    grid0_ns = round(spec.t0_mono * 1e9)  # the slots' grid
    try:
        while True:
            until_ns = grid0_ns + (tick + 1) * SECOND_NS  # this second's edge
            while True:
                timeout = (until_ns - time.monotonic_ns()) / 1e9
                if timeout <= 0:
                    break
                if conn.poll(timeout):
                    msg = conn.recv()
                    if msg[0] == "stop":
                        if len(msg) > 1:  # the engine's grace: short when no statement completes (frozen)
                            grace = float(msg[1])
                        return
                    if msg[0] == "ramp_over":  # measured from here with the connections open now
                        for ss in slots.values():
                            for s in ss:
                                if s.active and s.session is None:
                                    s.left_out = True
                        continue
                    if msg[0] == "drop_backlog":  # the warm-up ended: its backlog is not carried over
                        # what was due by the end of the warm-up's last second (the engine tells it once it merged
                        # that second: later, and what came due since is the measured seconds')
                        at = time.monotonic_ns()
                        if len(msg) > 1:
                            at = min(at, grid0_ns + (int(msg[1]) + 1) * SECOND_NS)
                        for name, running in schedules.items():
                            running.reset(at)
                            if name in feeds:
                                running.dropped += feeds[name][1].drop(at)
                        continue
                    if msg[0] in ("active", "rate"):  # a step's start, or an open-loop rate changed live
                        if msg[0] == "active":
                            active.update(msg[1])
                        rates: Mapping[str, OpenLoop] = msg[2] if msg[0] == "active" else msg[1]
                        steps += 1
                        for g in spec.groups:
                            if msg[0] == "rate" and g.name not in rates:
                                continue
                            sched = open_schedule(spec, g, active[g.name], rates.get(g.name), steps)
                            feed = None
                            schedules.pop(g.name, None)
                            feeds.pop(g.name, None)
                            if sched is not None:
                                schedules[g.name] = sched
                                sched.grid(grid0_ns, time.monotonic_ns())  # its backlog kept as of each edge
                                if hot[g.name]:
                                    feed = due_queue(sched.limit_ns)
                                    feed.grid(grid0_ns)
                                    push_due(sched, feed)
                                    feeds[g.name] = (sched, feed)  # one item: the feeder never mixes two steps
                            for s in slots[g.name]:
                                s.schedule, s.queue = sched, feed
                                if s.hot is not None and s.active and isinstance(s.session, HotSession):
                                    s.session.interrupt()  # its run() takes the new queue (or none)
                        if msg[0] == "rate":
                            continue
                        for name, n in active.items():
                            for s in slots[name]:
                                s.step_events = s.total_events()
                                s.left_out = False
                                want = s.number < n
                                if want and not s.is_alive() and not s.shutdown:
                                    s.active = True
                                    s.start()
                                elif want and not s.active:
                                    s.active = True
                                elif s.active and not want:
                                    s.deactivate()
                                if want:
                                    s.gate.set()
                                else:
                                    s.gate.clear()
            taken: dict[int, SlotTake] = {}
            trx_buffers: dict[int, list[Any]] = {}
            hot_taken: dict[int, Any] = {}
            hot_open: dict[int, Any] = {}
            snaps: dict[int, list[list[int]]] = {}
            # the slots' counts are as of the edge, however late this thread woke: it ends the second (wall clock)
            taken_at = wall_at(until_ns)
            for ss in slots.values():
                for s in ss:
                    taken[id(s)] = t = s.take(until_ns)
                    if s.ntrx:
                        trx_buffers[id(s)] = t.trx_lat
                    if s.hot is not None:  # counters and latencies together: each event in exactly one second
                        hot_taken[id(s)] = h = s.hot.take(until_ns)
                        svc_bytes = h[2]
                        if h[3] is not None:  # a statement program's: per type
                            vals, per_type = _split_typed(h[1], s.ntrx)
                            svc_bytes = (np.frombuffer(h[2], dtype=np.int64) & LAT_MASK).tobytes()
                            hot_taken[id(s)] = (h[0], vals.tobytes(), svc_bytes, h[3], h[4])
                            if s.ntrx:
                                trx_buffers[id(s)] = [np.concatenate([np.asarray(py, dtype=np.int64), hot])
                                                      for py, hot in zip(t.trx_lat, per_type, strict=True)]
                        hot_open[id(s)] = h[0][4:6], svc_bytes
            report: dict[str, Any] = {}
            for name, ss in slots.items():
                hist = LatencyHistogram()
                totals = [0] * 6
                codes: dict[int, int] = {}  # this second's errors by server error code
                # every connection's latencies in one histogram add (one per connection cost 2,048 numpy
                # bincounts a second in a worker of 2,048 connections)
                hot_ns: list[bytes] = []
                listed: list[int] = []
                for s in ss:
                    t = taken[id(s)]
                    now = t.counters
                    hot_typed = None
                    now_codes = dict(t.codes)
                    if id(s) in hot_taken:
                        (e, r, w, o, _late, _skipped, errs), lat, _svc, hot_typed, hot_codes = hot_taken[id(s)]
                        for k, v in hot_codes.items():
                            now_codes[k] = now_codes.get(k, 0) + v
                        now = (now[0] + e, now[1] + r, now[2] + w, now[3] + o, now[4] + errs, now[5])
                        hot_ns.append(lat)
                    if s.ntrx:
                        # the events are the per-type counts of this same instant: read apart, a transaction
                        # ending between the two reads was in one second's total and the next's types
                        snap = snaps[id(s)] = t.trx_counts
                        if hot_typed is not None:
                            snap = snaps[id(s)] = [[a + b for a, b in zip(py, hot, strict=True)]
                                                   for py, hot in zip(t.trx_counts, hot_typed, strict=True)]
                        now = (sum(c[0] for c in snap), *now[1:])
                    prev = last[id(s)]
                    last[id(s)] = now
                    before_codes, last_codes[id(s)] = last_codes[id(s)], now_codes
                    for k, v in now_codes.items():
                        if v != before_codes.get(k, 0):
                            codes[k] = codes.get(k, 0) + v - before_codes.get(k, 0)
                    for i in range(6):
                        totals[i] += now[i] - prev[i]
                    listed += t.lat
                hist.add_ns(np.concatenate([np.frombuffer(b"".join(hot_ns), dtype=np.int64),
                                            np.asarray(listed, dtype=np.int64)]))
                idx, counts = hist.sparse()
                # connections that run: asked for, not shut down, and connected (one the server refuses,
                # e.g. over max_connections, is not a user of the server)
                threads = sum(1 for s in ss if s.number < active[name] and not s.shutdown
                              and s.session is not None and not s.finished)
                # those done with the run (max_rows): not running, and the step ends once all of them are
                done = [s for s in ss if s.number < active[name] and s.finished and s.finished_at]
                finished = (len(done), sum(s.total_events() - s.step_events for s in done),
                            max((s.finished_at for s in done), default=0.0))
                report[name] = (tuple(totals), idx, counts, hist.max_ns, threads, finished,
                                _trx_report(ss, trx_buffers, last_trx, snaps),
                                _open_report(ss, taken, hot_open, last_open, schedules.get(name),
                                             feeds[name][1] if name in feeds else None, until_ns), codes)
            fatal = next((s.fatal for ss in slots.values() for s in ss if s.fatal), None)
            if fatal and not fatal_sent:
                conn.send(("fatal", spec.index, fatal))
                fatal_sent = True
            while notes:
                conn.send(("note", spec.index, notes.pop(0)))
            conn.send(("tick", spec.index, tick, report, taken_at))
            tick += 1
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        return
    finally:
        if not _stop_slots(slots, grace):
            # Connection threads blocked on a server that does not answer: leave now, before the
            # interpreter's shutdown frees objects they still use. The kernel closes their sockets.
            conn.close()
            os._exit(0)
