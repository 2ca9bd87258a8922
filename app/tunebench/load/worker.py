"""A builtin-engine worker process: many connection threads, one per-second reporter.

The C extension releases the GIL while it waits on the server, so one process drives many
connections; several processes use several cores. Each connection thread keeps cumulative
counters and a list of latencies; the reporter turns them into per-second deltas and a sparse
histogram and sends them to the parent, which merges workers into one Interval per group.
"""

from __future__ import annotations

import faulthandler
import itertools
import os
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from tunebench.core.histogram import LatencyHistogram
from tunebench.core.target import ConnParams
from tunebench.load.driver import RECONNECT_ERRNOS, RETRY_ERRNOS, DriverError, init_client_library, open_session
from tunebench.load.oltp import C_TEMPLATE, INSERT_TEXT, PAD_TEMPLATE, STATEMENTS, EventProgram
from tunebench.load.randgen import id_stream, string_stream


@dataclass(frozen=True, slots=True)
class GroupPlan:
    name: str
    program: EventProgram
    slots: tuple[int, ...]  # global slot numbers this worker runs for the group


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    index: int
    params: ConnParams
    groups: tuple[GroupPlan, ...]
    t0_mono: float
    seed: int
    stderr_path: str = ""  # the parent reads it when the worker dies


class Slot(threading.Thread):
    """One client connection running events while active."""

    def __init__(self, spec: WorkerSpec, group: GroupPlan, number: int, notes: list[str]):
        super().__init__(name=f"{group.name}-{number}", daemon=True)
        self.params = spec.params
        self.program = group.program
        self.number = number
        self.notes = notes
        self.rng = np.random.default_rng([spec.seed, spec.index, number, hash(group.name) & 0xFFFF])
        self.active = False
        self.shutdown = False
        self.gate = threading.Event()
        # cumulative counters: events, reads, writes, other, errors, reconnects
        self.events = self.reads = self.writes = self.other = self.errors = self.reconnects = 0
        self.lat: list[int] = []
        self.fatal: str | None = None
        self.session: Any = None

    # ---- statements ------------------------------------------------------------------------
    def _connect(self) -> None:
        self.session = open_session(self.params)
        opts = self.program.options
        self.stmts = []
        for t in range(1, opts["tables"] + 1):
            self.stmts.append({k: self.session.prepare(STATEMENTS[k][0] % t) for k in self.program.prepared_keys()})
        if self.program.has_trx:
            self.begin = self.session.prepare("BEGIN")
            self.commit = self.session.prepare("COMMIT")

    def _build_event(self) -> Any:
        """Compile the program into a list of closures; the hot path is a loop over them."""
        opts = self.program.options
        rand_opts = {k: opts[k] for k in opts if k.startswith("rand_")}
        ids = id_stream(self.rng, opts["rand_type"], 1, opts["table_size"], rand_opts).__next__
        ntables = opts["tables"]
        tnum = (lambda: 0) if ntables == 1 else id_stream(self.rng, "uniform", 0, ntables - 1, {}).__next__
        cvals = string_stream(self.rng, C_TEMPLATE).__next__
        pads = string_stream(self.rng, PAD_TEMPLATE).__next__
        rsize = opts["range_size"] - 1
        execute = self.session.execute
        steps = []
        for block in self.program.blocks:
            kind, count = block.kind, block.count
            if kind in ("begin", "commit"):
                steps.append(self._step_other(execute, kind))
            elif kind in ("point_selects", "index_updates"):
                steps.append(self._step_point(execute, kind, count, tnum, ids))
            elif kind in ("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges"):
                steps.append(self._step_range(execute, kind, count, tnum, ids, rsize))
            elif kind == "non_index_updates":
                steps.append(self._step_non_index(execute, count, tnum, ids, cvals))
            elif kind == "delete_inserts":
                steps.append(self._step_delete_insert(execute, count, tnum, ids, cvals, pads))
            elif kind == "delete":
                steps.append(self._step_point(execute, "deletes", 1, tnum, ids))
            elif kind == "insert":
                steps.append(self._step_insert_text(tnum, ids, cvals, pads, opts["auto_inc"]))
        return steps

    def _step_other(self, execute: Any, kind: str) -> Any:
        def run() -> None:
            execute(self.begin if kind == "begin" else self.commit)
            self.other += 1
        return run

    def _step_point(self, execute: Any, key: str, count: int, tnum: Any, ids: Any) -> Any:
        is_read = STATEMENTS[key][1] == "read"

        def run() -> None:
            stmt = self.stmts[tnum()][key]
            for _ in range(count):
                execute(stmt, ids())
                if is_read:
                    self.reads += 1
                else:
                    self.writes += 1
        return run

    def _step_range(self, execute: Any, key: str, count: int, tnum: Any, ids: Any, rsize: int) -> Any:
        def run() -> None:
            stmt = self.stmts[tnum()][key]
            for _ in range(count):
                i = ids()
                execute(stmt, i, i + rsize)
                self.reads += 1
        return run

    def _step_non_index(self, execute: Any, count: int, tnum: Any, ids: Any, cvals: Any) -> Any:
        def run() -> None:
            stmt = self.stmts[tnum()]["non_index_updates"]
            for _ in range(count):
                execute(stmt, cvals(), ids())
                self.writes += 1
        return run

    def _step_delete_insert(self, execute: Any, count: int, tnum: Any, ids: Any, cvals: Any, pads: Any) -> Any:
        def run() -> None:
            stmts = self.stmts[tnum()]
            for _ in range(count):
                i, k = ids(), ids()
                execute(stmts["deletes"], i)
                self.writes += 1
                execute(stmts["inserts"], i, k, cvals(), pads())
                self.writes += 1
        return run

    def _step_insert_text(self, tnum: Any, ids: Any, cvals: Any, pads: Any, auto_inc: bool) -> Any:
        query = self.session.query
        unique = itertools.count(self.number << 20)

        def run() -> None:
            # oltp_insert.lua: id 0 lets AUTO_INCREMENT assign it; otherwise a unique value in INT range.
            i = 0 if auto_inc else (next(unique) & 0xFFFFFFFF) - 2147483648
            sql = INSERT_TEXT % (tnum() + 1, i, ids(), cvals().decode(), pads().decode())
            query(sql.encode())
            self.writes += 1
        return run

    # ---- main loop ---------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._run()
        except Exception:
            self.fatal = traceback.format_exc(limit=3)

    def _ensure_connected(self) -> bool:
        while self.session is None and not self.shutdown:
            try:
                self._connect()
                self.steps = self._build_event()
                return True
            except DriverError as exc:
                self.errors += 1
                self.notes.append(f"connection {self.number}: cannot connect ({exc.errno}: {exc.msg})")
                if self.session is not None:
                    self.session.close()
                    self.session = None
                time.sleep(1.0)
        return self.session is not None

    def _run(self) -> None:
        perf = time.perf_counter_ns
        while not self.shutdown:
            if not self.active:
                self.gate.wait()
                continue
            if not self._ensure_connected():
                continue
            steps = self.steps
            while self.active:
                t0 = perf()
                try:
                    for step in steps:
                        step()
                except DriverError as exc:
                    self._on_error(exc)
                    break
                # Look the buffer up after the event: the reporter may have swapped it meanwhile.
                self.lat.append(perf() - t0)
                self.events += 1

    def _on_error(self, exc: DriverError) -> None:
        if exc.errno in RETRY_ERRNOS:
            self.errors += 1
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


def _capture_stderr(path: str) -> None:
    """fd 2 to the worker's own file (glibc and the C extension write there too); a crash dumps every
    thread's Python stack into it."""
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    faulthandler.enable(all_threads=True)


def _stop_slots(slots: dict[str, list[Slot]], grace: float = 2.0) -> bool:
    """Tell every Slot to stop and close the sessions of those that did within `grace` seconds in all.
    A Slot still inside the driver (a frozen server) keeps its session: freeing a connection another
    thread is using corrupts the heap. True when every Slot stopped."""
    every = [s for ss in slots.values() for s in ss]
    for s in every:
        s.shutdown = True
        s.active = False
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
    slots: dict[str, list[Slot]] = {
        g.name: [Slot(spec, g, n, notes) for n in g.slots] for g in spec.groups
    }
    last = {id(s): (0, 0, 0, 0, 0, 0) for ss in slots.values() for s in ss}
    active: dict[str, int] = {g.name: 0 for g in spec.groups}
    fatal_sent = False
    conn.send(("ready", spec.index))
    tick = max(0, int(time.monotonic() - spec.t0_mono))
    try:
        while True:
            deadline = spec.t0_mono + tick + 1
            while True:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    break
                if conn.poll(timeout):
                    msg = conn.recv()
                    if msg[0] == "stop":
                        return
                    if msg[0] == "active":
                        active.update(msg[1])
                        for name, n in active.items():
                            for s in slots[name]:
                                want = s.number < n
                                if want and not s.is_alive() and not s.shutdown:
                                    s.active = True
                                    s.start()
                                elif want != s.active:
                                    s.active = want
                                if want:
                                    s.gate.set()
                                else:
                                    s.gate.clear()
            # Swap latency buffers first, then read them a moment later so an append in flight lands.
            buffers = {}
            for ss in slots.values():
                for s in ss:
                    buffers[id(s)], s.lat = s.lat, []
            time.sleep(0.002)
            report: dict[str, Any] = {}
            for name, ss in slots.items():
                hist = LatencyHistogram()
                totals = [0] * 6
                for s in ss:
                    now = s.counters()
                    prev = last[id(s)]
                    last[id(s)] = now
                    for i in range(6):
                        totals[i] += now[i] - prev[i]
                    hist.add_ns(buffers[id(s)])
                idx, counts = hist.sparse()
                threads = sum(1 for s in ss if s.number < active[name] and not s.shutdown)
                report[name] = (tuple(totals), idx, counts, hist.max_ns, threads)
            fatal = next((s.fatal for ss in slots.values() for s in ss if s.fatal), None)
            if fatal and not fatal_sent:
                conn.send(("fatal", spec.index, fatal))
                fatal_sent = True
            while notes:
                conn.send(("note", spec.index, notes.pop(0)))
            conn.send(("tick", spec.index, tick, report))
            tick += 1
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        return
    finally:
        if not _stop_slots(slots):
            # Connection threads blocked on a server that does not answer: leave now, before the
            # interpreter's shutdown frees objects they still use. The kernel closes their sockets.
            conn.close()
            os._exit(0)
