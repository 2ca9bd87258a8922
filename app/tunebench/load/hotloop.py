"""The builtin engine's compiled hot loop (load/_hotloop.c), its Python side: which OLTP event programs it runs,
how a connection is opened and given its program (an OLTP event program, or a family's statement program,
load/program.py), and how its counters and latencies reach the reporter.

The C loop runs whole events with the GIL released: per query the client burns what libmariadb burns, as
sysbench's does, not the Python interpreter's statement dispatch. What reaches the server is unchanged: the
statements of load/oltp.py, prepared the same way, in the same per-event order; ids from sysbench's distributions
(load/randgen.py's arithmetic); the other families' statements as their Python code sends them
(tests/integration/test_both_loops.py). A program it cannot run (oltp_insert's plain-text INSERT, an unknown
--rand-type) or a build without the extension uses the Python loop; TUNEBENCH_HOT_LOOP=0 forces the Python loop
(to compare).
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tunebench.core.target import SSL_MODES, ConnParams
from tunebench.load.driver import DriverError
from tunebench.load.oltp import C_TEMPLATE, PAD_TEMPLATE, STATEMENTS, EventProgram
from tunebench.load.program import VmProgram


def _load() -> tuple[Any, str]:
    """The extension, or None and why not in one line: not built (no compiler or libmariadb-dev at install: setup.py
    builds it as optional), or built but not loadable (e.g. libmariadb removed since). `make hotloop` builds it
    again whatever the timestamps say (`make venv` would not: its install is done)."""
    try:
        from tunebench.load import _hotloop  # type: ignore[attr-defined]
    except ImportError as exc:
        if importlib.util.find_spec("tunebench.load._hotloop") is None:
            return None, ("the compiled loop is not built (apt-get install gcc libmariadb-dev, then make hotloop): "
                          "the builtin workloads cost more client CPU")
        return None, f"the compiled loop does not load ({' '.join(str(exc).split())}): make hotloop rebuilds it"
    return _hotloop, ""


_hotloop, NOT_LOADED = _load()
HAVE_HOT = _hotloop is not None

# op kinds and statement classes, as _hotloop.c numbers them
OP_OTHER, OP_POINT, OP_RANGE, OP_NON_INDEX, OP_DELETE_INSERT = range(5)
COUNTS_AS = {"read": 0, "write": 1, "other": 2}
DISTRIBUTIONS = {"uniform": 0, "gaussian": 1, "pareto": 2, "special": 3}
RANGES = ("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges")
# One run() call, between two returns to Python. A deactivated or stopped connection is interrupted at once
# (HotSession.interrupt), so this only sets how often a connection thread wants the GIL. At 0.05 s, 2,048
# connections in a worker starved its reporter thread of the GIL (ticks came minutes late). At 1 s, ~2,000
# connections in a worker, started together, came back for the GIL together: the waiters' timed wake-ups took
# the CPU (perf: futex waits and task switches) and 3,990 users fell to a few hundred TPS for seconds at a time.
RUN_SECONDS = 30.0
# Connections opened at once per worker process: the library is initialised at import, so opens need no lock,
# but thousands at once overflow the server's accept backlog (and the busy server answers handshakes slowly).
# 16 took 37-43 s to open 3,990 connections while the others ran; 64 took 11 s.
OPENING = threading.BoundedSemaphore(64)


def hot_enabled() -> bool:
    return HAVE_HOT and os.environ.get("TUNEBENCH_HOT_LOOP", "1") != "0"


def loop_mode() -> str:
    """What `doctor` and a run's notes say about the builtin engine's loop."""
    if not HAVE_HOT:
        return f"Python loop: {NOT_LOADED}"
    if not hot_enabled():
        return "Python loop (TUNEBENCH_HOT_LOOP=0)"
    return f"compiled loop (libmariadb {_hotloop.client_version()})"


@dataclass(frozen=True, slots=True)
class HotProgram:
    """An OLTP event program as _hotloop.c takes it (picklable: it goes to the worker processes)."""

    statements: tuple[str, ...]  # prepared in this order; ops refer to them by index
    ops: tuple[tuple[int, int, int, tuple[int, ...], tuple[int, ...] | None], ...]
    ntables: int
    range_extra: int
    dist: tuple[int, int, int, int, float, int, int]  # kind, a, b, iters, pareto power, spec pct, spec res


def hot_program(program: EventProgram) -> HotProgram | None:
    """The compiled loop's form of `program`, or None where only the Python loop runs it."""
    if not hot_enabled():
        return None
    opts = program.options
    if any(b.kind == "insert" for b in program.blocks) or opts["rand_type"] not in DISTRIBUTIONS:
        return None
    ntables = int(opts["tables"])
    statements: list[str] = []
    index: dict[tuple[str, int], int] = {}
    for t in range(1, ntables + 1):  # as OltpEvent prepares them: every table's keys, then BEGIN and COMMIT
        for key in program.prepared_keys():
            index[key, t] = len(statements)
            statements.append(STATEMENTS[key][0] % t)
    if program.has_trx:
        for key in ("begin", "commit"):
            index[key, 0] = len(statements)
            statements.append(key.upper())

    def per_table(key: str) -> tuple[int, ...]:
        return tuple(index[key, t] for t in range(1, ntables + 1))

    ops: list[tuple[int, int, int, tuple[int, ...], tuple[int, ...] | None]] = []
    for b in program.blocks:
        if b.kind in ("begin", "commit"):
            ops.append((OP_OTHER, 1, COUNTS_AS["other"], (index[b.kind, 0],) * ntables, None))
        elif b.kind in ("point_selects", "index_updates"):
            ops.append((OP_POINT, b.count, COUNTS_AS[STATEMENTS[b.kind][1]], per_table(b.kind), None))
        elif b.kind in RANGES:
            ops.append((OP_RANGE, b.count, COUNTS_AS["read"], per_table(b.kind), None))
        elif b.kind == "non_index_updates":
            ops.append((OP_NON_INDEX, b.count, COUNTS_AS["write"], per_table(b.kind), None))
        elif b.kind == "delete_inserts":
            ops.append((OP_DELETE_INSERT, b.count, COUNTS_AS["write"], per_table("deletes"), per_table("inserts")))
        elif b.kind == "delete":
            ops.append((OP_POINT, 1, COUNTS_AS["write"], per_table("deletes"), None))
        else:
            return None
    h = float(opts.get("rand_pareto_h", 0.2))
    power = math.log(h) / math.log(1 - h) if 0 < h < 1 else 1.0
    dist = (DISTRIBUTIONS[opts["rand_type"]], 1, int(opts["table_size"]), int(opts.get("rand_spec_iter", 12)), power,
            int(opts.get("rand_spec_pct", 1)), int(opts.get("rand_spec_res", 75)))
    return HotProgram(tuple(statements), tuple(ops), ntables, int(opts["range_size"]) - 1, dist)


def due_queue(limit_ns: int | None) -> Any:
    """The compiled loop's queue of due times for an open-loop group's connections in this process."""
    return _hotloop.DueQueue(limit_ns or 0)


def open_conn(params: ConnParams, program: HotProgram | VmProgram, seed: int,
              registers: list[tuple[int, Any]] | None = None) -> Any:
    """A connection with its program set: an OLTP program's statements prepared, or a statement program (a
    family's, load/program.py) with this connection's parameter registers (_hotloop.HotError on failure)."""
    conn = _hotloop.Conn(params.host if not params.socket else None, int(params.port or 0), params.socket or None,
                         params.user, params.password, params.database, 10, seed & 0xFFFFFFFFFFFFFFFF,
                         SSL_MODES.index(params.ssl_mode), params.ssl_ca, params.ssl_cert, params.ssl_key)
    try:
        if isinstance(program, VmProgram):
            conn.vm(program.as_args(), registers or [])
            return conn
        for sql in program.statements:
            conn.prepare(sql.encode())
        conn.program(list(program.ops), program.ntables, program.range_extra, program.dist, C_TEMPLATE.encode(),
                     PAD_TEMPLATE.encode())
    except Exception:
        conn.close()
        raise
    return conn


TYPE_SHIFT = 56  # a statement program's latencies carry their transaction type in bits 56-63 (_hotloop.c)
LAT_MASK = (1 << TYPE_SHIFT) - 1


class HotTotals:
    """One Slot's compiled-loop counters across reconnects: the reporter's take() gives the cumulative
    (events, reads, writes, other, late, skipped, errors), per transaction type (events, errors, rollbacks,
    retries) for a statement program, and the latencies since its last take, whichever connection ran them."""

    def __init__(self, grid0_ns: int | None = None) -> None:
        """`grid0_ns`: the worker's clock origin (CLOCK_MONOTONIC ns): take(until) then gives the state as of a
        second's edge (each connection keeps it when its first event ends after the edge)."""
        self.grid0_ns = grid0_ns
        self._lock = threading.Lock()
        self._base = [0] * 7  # events, reads, writes, other, late, skipped, errors
        self._typed: list[list[int]] | None = None
        self._codes: dict[int, int] = {}  # the errors by server error code of the connections gone
        self._pending: list[bytes] = []
        self._svc: list[bytes] = []
        self.conn: Any = None

    def attach(self, conn: Any) -> None:
        with self._lock:
            self.conn = conn
            if self.grid0_ns is not None:
                conn.grid(self.grid0_ns)

    @staticmethod
    def _counts(taken: tuple[Any, ...]) -> tuple[list[int], Any]:
        e, r, w, o, _lat, _svc, late, skipped, errors, typed, _codes = taken
        return [e, r, w, o, late, skipped, errors], typed

    def _add(self, taken: tuple[Any, ...]) -> None:
        counts, typed = self._counts(taken)
        self._base = [a + b for a, b in zip(self._base, counts, strict=True)]
        self._codes = _plus(self._codes, taken[10])
        if typed is not None:
            base = self._typed or [[0, 0, 0, 0] for _ in typed]
            self._typed = [[a + b for a, b in zip(x, y, strict=True)] for x, y in zip(base, typed, strict=True)]
        self._pending.append(taken[4])
        self._svc.append(taken[5])

    def events(self) -> int:
        """The cumulative events, whichever connection ran them (the latencies stay for the reporter's take)."""
        with self._lock:
            return self._base[0] + (int(self.conn.events()) if self.conn is not None else 0)

    def detach(self) -> None:
        """The connection is going away (a reconnect, the end): its counts stay."""
        with self._lock:
            if self.conn is not None:
                self._add(self.conn.take())
                self.conn = None

    def take(self, until_ns: int | None = None
             ) -> tuple[list[int], bytes, bytes, list[list[int]] | None, dict[int, int]]:
        """(cumulative events, reads, writes, other, late, skipped, errors), the latencies and the open loop's
        service times since the last take (int64 ns, as bytes: the reporter joins every connection's before one
        numpy conversion; a statement program's carry their type, see TYPE_SHIFT), per type the cumulative
        (events, errors, rollbacks, retries) -- None for an OLTP program -- and the cumulative errors by server
        error code. `until_ns`: as of that edge of the grid (events that ended after it stay for the next take);
        None: everything so far."""
        with self._lock:
            counts, lats, svc, codes = list(self._base), self._pending, self._svc, dict(self._codes)
            typed = [list(t) for t in self._typed] if self._typed is not None else None
            self._pending, self._svc = [], []
            if self.conn is not None:  # its counters are cumulative: added to the base only when it goes
                taken = self.conn.take() if until_ns is None else self.conn.take(until_ns)
                now, now_typed = self._counts(taken)
                counts = [a + b for a, b in zip(counts, now, strict=True)]
                codes = _plus(codes, taken[10])
                if now_typed is not None:
                    base = typed or [[0, 0, 0, 0] for _ in now_typed]
                    typed = [[a + b for a, b in zip(x, y, strict=True)] for x, y in zip(base, now_typed, strict=True)]
                lats.append(taken[4])
                svc.append(taken[5])
        return counts, b"".join(lats), b"".join(svc), typed, codes


def _plus(a: Mapping[int, int], b: Mapping[int, int]) -> dict[int, int]:
    """Two counts by error code, added."""
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


class HotSession:
    """A Slot's session in the compiled loop: run() for the events, query() and close() as RawSession has them;
    the library's errors as DriverError, as the Python loop raises them."""

    def __init__(self, params: ConnParams, program: HotProgram | VmProgram, seed: int, totals: HotTotals,
                 registers: list[tuple[int, Any]] | None = None):
        with OPENING:
            self.conn = _mapped(open_conn, params, program, seed, registers)
        self.totals = totals
        totals.attach(self.conn)

    def run(self, seconds: float = RUN_SECONDS, queue: Any = None) -> None:
        """Events for `seconds` (or until interrupted); with a DueQueue, open loop (its due times)."""
        _mapped(self.conn.run, seconds, queue)

    def current(self) -> int:
        """The transaction type under way, or the last one (a failed event's errors are charged to it)."""
        return int(self.conn.current())

    def finished(self) -> bool:
        """The statement program said it has no more work this run (Asm.finish)."""
        return bool(self.conn.finished())

    def interrupt(self) -> None:
        """run() returns after the event in flight (any thread)."""
        self.conn.stop()

    def query(self, sql: bytes) -> None:
        _mapped(self.conn.query, sql)

    def close(self) -> None:
        self.totals.detach()
        self.conn.close()


def _mapped(fn: Any, *args: Any) -> Any:
    """fn(*args), the library's errors raised as the Python loop's DriverError."""
    try:
        return fn(*args)
    except _hotloop.HotError as exc:
        raise DriverError(*exc.args) from None
