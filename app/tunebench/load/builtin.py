"""The builtin engine: worker processes driving many connections each, merged into per-second Intervals."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, cast

from tunebench.core.clocks import clock_pair
from tunebench.core.display import rate_text
from tunebench.core.errors import EngineError
from tunebench.core.histogram import LatencyHistogram
from tunebench.core.interval import Interval
from tunebench.core.schedule import OpenLoop, served
from tunebench.core.target import ConnParams
from tunebench.load.engine import ClientGroup, IntervalSink, NoteSink
from tunebench.load.postmortem import examine, read_tail
from tunebench.load.worker import STOP_GRACE, GroupPlan, WorkerSpec, worker_main

# Seconds in a row without one statement completed on any connection before it is said (a note, not a gap:
# a server that stalls on its redo log still answers, and that stall is the measurement; a server that does
# not answer at all is the run's ServerWatch's to call, see watch.py).
SILENCE_SECONDS = 2
# A step is measured once its connections are open, as sysbench starts its clock after its threads connect
# (4,096 connections take ~10 s to open here). Connections that stop opening (a user's or the server's
# connection limit, a lost worker) end the wait after RAMP_STALL_SECONDS without one more; RAMP_LIMIT_SECONDS
# bounds it. The seconds before are on the timeline, not in the step.
RAMP_STALL_SECONDS = 5
RAMP_LIMIT_SECONDS = 60
GapSink = Callable[[float, str, dict[str, Any]], None]


class NoteThrottle:
    """A connection's note ("connection 7: cannot connect (2002: ...)") is said once per `window` seconds per
    message, with how many more there were: 512 connections retrying a dead server every second would be 512
    lines (and 512 events in the session) a second."""

    def __init__(self, sink: NoteSink, window: float = 10.0):
        self.sink, self.window = sink, window
        self._since: dict[str, tuple[float, int, set[int]]] = {}

    def __call__(self, message: str) -> None:
        m = re.match(r"connection (\d+): (.*)$", message, re.S)
        if m is None:
            self.sink(message)
            return
        conn, what = int(m.group(1)), m.group(2)
        now = time.monotonic()
        first, more, conns = self._since.get(what, (0.0, 0, set()))
        if first and now - first < self.window:
            conns.add(conn)
            self._since[what] = (first, more + 1, conns)
            return
        if more:
            self.sink(f"{more} more time(s) on {len(conns)} connection(s) in {now - first:.0f} s: {what}")
        self.sink(message)
        self._since[what] = (now, 0, set())


EDGES_KEPT = 3600  # seconds of BuiltinEngine.edges


def default_workers(max_threads: int, compiled: bool = False) -> int:
    """The Python loop: few connections per process keep GIL hand-offs cheap (bench: 2 per process is 1.5x
    faster at 16 threads than 8 per process); capped at 8 processes per CPU so 1024 users stay affordable.
    The compiled loop holds no GIL while it runs: one process per CPU (more only cost memory and switches:
    16 processes for 64 threads ran 0.83x sysbench's QPS where 2 ran ...)."""
    cpus = os.cpu_count() or 1
    if compiled:
        return max(1, min(max_threads, cpus))
    return max(1, min(max_threads, max(cpus, min(-(-max_threads // 2), 8 * cpus))))


def runs_compiled(groups: list[ClientGroup]) -> bool:
    """Does every group run in the compiled loop (load/hotloop.py)?"""
    for g in groups:
        compile_hot = getattr(g.family, "hot_program", None)
        if compile_hot is None or compile_hot(g.family.plan(g.workload, g.options), g.options) is None:
            return False
    return True


class BuiltinEngine:
    """Worker processes, each with its own stderr file. A worker that dies mid-step is reported with its
    exit status and last stderr lines as a gap (the step goes on, incomplete, on the other workers) and is
    started again for the next step."""

    name = "builtin"
    EDGES_ON_OUR_CLOCK = True  # the workers' take instants are this machine's (Interval.edge)

    def __init__(self, params: ConnParams, groups: list[ClientGroup], workers: int | None = None,
                 seed: int | None = None, notes: NoteSink | None = None, on_gap: GapSink | None = None):
        self.params = params
        self.groups = groups
        total = sum(max(g.schedule) for g in groups)
        self.nworkers = workers or default_workers(total, runs_compiled(groups))
        self.given_seed = seed
        self.seed = seed if seed is not None else time.time_ns() & 0xFFFFFFFF
        self._notes = notes or (lambda _m: None)
        self._on_gap = on_gap or (lambda _t, _label, _data: None)
        self._conn_notes = NoteThrottle(self._notes)
        self._procs: list[Any] = []
        self._conns: list[Connection] = []
        self._specs: list[WorkerSpec] = []
        self._ticks: queue.Queue[tuple[int, dict[str, list[Any]]]] = queue.Queue()
        self._deaths: queue.Queue[int] = queue.Queue()
        self._lock = threading.Lock()
        self._gone: set[int] = set()  # workers whose pipe closed (dead), until started again
        self._since: dict[int, int] = {}  # live worker -> its first tick: ticks from then on wait for it
        self._reported: set[int] = set()  # workers whose death was told (not again at close)
        self._last_tick = -1
        self._fatal: str | None = None
        self._reader: threading.Thread | None = None
        self._closing = False
        self._stderr_dir: Path | None = None
        self._silent = 0  # seconds in a row in which no connection completed a statement
        # open loop: the last step's service times per group (latencies count from the intended start)
        self.service_hists: dict[str, LatencyHistogram] = {}
        self.ended: str | None = None
        # per group, its finished connections' transactions this step and the wall time the last one finished
        # (from the workers themselves: a step's first seconds are not all in its ticks)
        self.finished_work: dict[str, tuple[int, float]] = {}
        self._rates_live: dict[str, OpenLoop] = {}  # the step's open-loop groups, their rates now (set_rate)
        # per group, every transaction its connections ended since open(), by type (the group's family order),
        # measured or not: the ticks of a step's edges too, which Intervals leave out (for exact counts)
        self.ended_by_type: dict[str, list[int]] = {}
        # Where each merged second ended (wall clock): every connection keeps its counts as of each second's edge of
        # its worker's clock (load/worker.py Slot.take), so a reporter that wakes late still ends its second there;
        # a worker says its edge on the wall clock. Per tick, the reporters' edges weighted by their events (on one
        # machine they agree to the clocks' reading jitter; a remote host's are its own clock's); the truth tests
        # read the server's counters there (tests/server_clock.py). The last EDGES_KEPT ticks.
        self.edges: dict[int, float] = {}
        self._taken: dict[int, dict[int, float]] = {}

    # ---- lifecycle ---------------------------------------------------------------------------
    def open(self) -> None:
        self.t0_mono, self.t0_wall = clock_pair()  # read together (a preemption between two reads shifted t0_wall)
        self.start_workers(self.group_plans(secrets.randbits(32), self.nworkers))

    def group_plans(self, run_nonce: int, nworkers: int) -> list[GroupPlan]:
        """Every group's plan, no slots yet (start_workers deals them out)."""
        return [GroupPlan(g.name, g.family.name, g.family.plan(g.workload, g.options), dict(g.options),
                          tuple(t.name for t in g.family.transactions(g.options)), (), max(g.schedule),
                          self.group_seed(g), run_nonce, nworkers, bool(g.rates))
                for g in self.groups]

    def start_workers(self, plans: list[GroupPlan], host: int = 0, hosts: int = 1) -> None:
        """Start the worker processes on the groups' connection slots that are this host's (slot n runs on host
        n % hosts: with n threads each host runs its even share, as split_threads splits sysbench's), dealt out
        over the workers; returns once every worker is ready. The clock (t0_mono, t0_wall) is set before."""
        self._ctx = mp.get_context("spawn")  # the parent has threads; fork would copy their locks
        self._stderr_dir = Path(tempfile.mkdtemp(prefix="tunebench-workers-"))
        for w in range(self.nworkers):
            mine = tuple(replace(p, slots=tuple(n for n in range(p.nslots)
                                                if n % hosts == host and (n // hosts) % self.nworkers == w))
                         for p in plans)
            self._specs.append(WorkerSpec(w, self.params, mine, self.t0_mono, host=host, hosts=hosts))
            self._procs.append(None)
            self._conns.append(None)  # type: ignore[arg-type]
            self._spawn(w)
        for w in range(self.nworkers):
            if not self._await_ready(w):
                why = examine(self._procs[w].exitcode, read_tail(self._stderr_path(w))).describe()
                self.close()
                raise EngineError(f"builtin worker {w} did not start: {why}")
        self._reader = threading.Thread(target=self._read, name="builtin-reader", daemon=True)
        self._reader.start()

    def group_seed(self, group: ClientGroup) -> int:
        """What a group's connections draw from: --seed when given, else the group's `-o rand_seed` when set
        (sysbench's --rand-seed seeds its run too), else the run's time-based seed."""
        if self.given_seed is not None:
            return self.given_seed
        return int(group.options.get("rand_seed") or 0) or self.seed

    def _stderr_path(self, w: int) -> Path | None:
        return self._stderr_dir / f"worker-{w}.stderr" if self._stderr_dir else None

    def _spawn(self, w: int) -> None:
        parent, child = self._ctx.Pipe()
        path = self._stderr_path(w)
        if path is not None:
            path.unlink(missing_ok=True)  # a restarted worker's stderr is its own
        spec = self._specs[w]
        spec = replace(spec, stderr_path=str(path or ""))
        p = self._ctx.Process(target=worker_main, args=(child, spec), name=f"tunebench-worker-{w}", daemon=True)
        p.start()
        child.close()
        self._procs[w], self._conns[w] = p, parent

    def _await_ready(self, w: int) -> bool:
        try:
            return bool(self._conns[w].poll(60) and self._conns[w].recv()[0] == "ready")
        except (EOFError, OSError):
            return False

    def client_pids(self) -> list[int]:
        return [p.pid for p in self._procs if p is not None and p.pid]

    def close(self) -> None:
        """Stop every worker within a bounded time: a worker stuck on a frozen server is killed."""
        self._closing = True
        if self._silent >= SILENCE_SECONDS:
            self._notes(f"no statement completed for the last {self._silent} s")
        # a transaction under way may end (worker.STOP_GRACE), unless the server has stopped answering
        grace = 2.0 if self._silent >= SILENCE_SECONDS else STOP_GRACE
        for c in self._conns:
            try:
                c.send(("stop", grace))
            except (BrokenPipeError, OSError, AttributeError):
                pass
        deadline = time.monotonic() + 8
        killed = set()
        for w, p in enumerate(self._procs):
            if p is None:
                continue
            p.join(timeout=max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
                killed.add(w)
        # What the workers left on stderr is shown, not swallowed (a crash at exit must not pass unseen).
        for w, p in enumerate(self._procs):
            if p is None or w in self._reported:
                continue
            pm = examine(p.exitcode, read_tail(self._stderr_path(w)))
            if w in killed:
                self._notes(f"builtin worker {w} did not stop within 8 s (stuck on the server?): killed")
            elif p.exitcode != 0:
                self._notes(f"builtin worker {w} {pm.describe()}")
            elif pm.stderr_tail:
                self._notes(f"builtin worker {w} wrote on stderr: {' | '.join(pm.stderr_tail[-3:])}")
        for c in self._conns:
            if c is not None:
                c.close()
        self._procs, self._conns = [], []
        if self._stderr_dir is not None:
            shutil.rmtree(self._stderr_dir, ignore_errors=True)
            self._stderr_dir = None

    # ---- tick merging ------------------------------------------------------------------------
    def _read(self) -> None:
        pending: dict[int, dict[int, Any]] = {}
        while not self._closing:
            with self._lock:
                live = {c: w for w, c in enumerate(self._conns) if w not in self._gone}
            if not live:
                time.sleep(0.1)
                continue
            for ready in wait(list(live), timeout=0.5):
                c = cast(Connection, ready)
                w = live[c]
                try:
                    msg = c.recv()
                except (EOFError, OSError):
                    with self._lock:
                        self._gone.add(w)
                        self._since.pop(w, None)
                    if not self._closing:
                        self._deaths.put(w)
                    self._emit_ready(pending)
                    continue
                kind = msg[0]
                if kind == "tick":
                    _, widx, tick, report, taken_at = msg
                    self._taken.setdefault(tick, {})[widx] = taken_at
                    with self._lock:
                        # a worker joins (at start, or started again) from the first second not merged yet
                        self._since.setdefault(widx, max(tick, self._last_tick + 1))
                    if tick <= self._last_tick:
                        continue
                    pending.setdefault(tick, {})[widx] = report
                    self._emit_ready(pending)
                elif kind == "fatal":
                    self._fatal = msg[2].strip().splitlines()[-1]
                    self._ticks.put((-1, {}))
                elif kind == "note":
                    self._conn_notes(msg[2])

    def _emit_ready(self, pending: dict[int, dict[int, Any]]) -> None:
        """Merge every second that each live worker (running since then) has reported, in order."""
        with self._lock:
            since = dict(self._since)
        for tick in sorted(pending):
            need = {w for w, first in since.items() if first <= tick}
            if not need <= pending[tick].keys():
                break
            reports = pending.pop(tick)
            self._note_edge(tick, reports)
            self._ticks.put((tick, self._merged(tick, reports)))
            self._last_tick = tick

    def _note_edge(self, tick: int, reports: Mapping[int, Mapping[str, Any]]) -> None:
        taken = self._taken.pop(tick, {})
        weights = {w: sum(r[0][0] for r in report.values()) for w, report in reports.items() if w in taken}
        if weights:
            total = sum(weights.values())
            self.edges[tick] = (sum(taken[w] * n for w, n in weights.items()) / total if total
                                else sum(taken[w] for w in weights) / len(weights))
        self.edges.pop(tick - EDGES_KEPT, None)
        for old in [t for t in self._taken if t <= tick - EDGES_KEPT]:
            del self._taken[old]

    def _merged(self, tick: int, reports: Mapping[int, Mapping[str, Any]]) -> dict[str, list[Any]]:
        """One second merged over the workers that reported it (a hook: the client hosts' engine also records
        each host's own)."""
        return self._merge(reports)

    def _merge(self, reports: Mapping[int, Mapping[str, Any]]) -> dict[str, list[Any]]:
        merged: dict[str, list[Any]] = {}
        for report in reports.values():
            for group, (totals, idx, counts, max_ns, threads, finished, trx, open_loop, *rest) in report.items():
                m = merged.setdefault(group, [[0] * 6, LatencyHistogram(), 0, None, None, [0, 0, 0.0], {}])
                for code, n in (rest[0] if rest else {}).items():  # the second's errors by server error code
                    m[6][int(code)] = m[6].get(int(code), 0) + int(n)
                m[5] = [m[5][0] + finished[0], m[5][1] + finished[1], max(m[5][2], finished[2])]
                if open_loop is not None:
                    o_idx, o_counts, o_max, late, skipped, backlog, lag, dropped, overflow = open_loop
                    if m[4] is None:
                        m[4] = [LatencyHistogram(), 0, 0, 0, 0.0, 0, False]
                    o = m[4]
                    o[0].add_sparse(o_idx, o_counts, o_max)
                    o[1], o[2], o[3] = o[1] + late, o[2] + skipped, o[3] + backlog
                    o[4], o[5], o[6] = max(o[4], lag), o[5] + dropped, o[6] or overflow
                for i in range(6):
                    m[0][i] += totals[i]
                m[1].add_sparse(idx, counts, max_ns)
                m[2] += threads
                if trx is not None:
                    if m[3] is None:
                        m[3] = [[[0, 0, 0, 0], LatencyHistogram()] for _ in trx]
                    for (tot, hist), (*values, t_idx, t_counts, t_max) in zip(m[3], trx, strict=True):
                        for i in range(4):
                            tot[i] += values[i]
                        hist.add_sparse(t_idx, t_counts, t_max)
        return merged

    def _tally(self, merged: Mapping[str, list[Any]]) -> None:
        for name, m in merged.items():
            if m[3] is not None:
                acc = self.ended_by_type.setdefault(name, [0] * len(m[3]))
                for i, (tot, _hist) in enumerate(m[3]):
                    acc[i] += tot[0]

    def _trx(self, group: ClientGroup, per_type: list[Any] | None) -> dict[str, dict[str, float | None]]:
        """Interval.trx of one group: per transaction type, its rates and latency percentiles."""
        if per_type is None:
            return {}
        names = [t.name for t in group.family.transactions(group.options)]
        out: dict[str, dict[str, float | None]] = {}
        for name, ((ev, err, rb, retry), hist) in zip(names, per_type, strict=True):
            values: dict[str, float | None] = {"tps": float(ev), "errors": float(err), "rollbacks": float(rb),
                                               "retries": float(retry)}
            values.update({f"lat.{k}": v for k, v in hist.summary_ms().items()})
            out[name] = values
        return out

    def _current_tick(self) -> int:
        return int(time.monotonic() - self.t0_mono)

    # ---- dead workers ------------------------------------------------------------------------
    def _lost_worker(self, w: int, threads: Mapping[str, int] | None) -> None:
        """Say why worker `w` died. Mid-step (`threads` given) it is a gap: the step goes on without it."""
        p = self._procs[w]
        p.join(timeout=2)
        pm = examine(p.exitcode, read_tail(self._stderr_path(w)))
        what = f"builtin worker {w} {pm.describe()}"
        data: dict[str, Any] = {"worker": w, "pid": p.pid, "exitcode": p.exitcode, "signal": pm.signal,
                                "where": pm.where, "stderr": list(pm.stderr_tail)}
        self._reported.add(w)
        with self._lock:
            alive = self.nworkers - len(self._gone)
        if alive == 0 and threads is not None:
            raise EngineError(f"every builtin worker died; the last: {what}")
        if threads is None:
            self._notes(f"{what} (between steps; started again)")
            return
        lost = {plan.name: sum(1 for n in plan.slots if n < threads.get(plan.name, 0))
                for plan in self._specs[w].groups}
        data["lost_threads"] = lost
        label = f"gap: {what}; {sum(lost.values())} connection(s) lost for the rest of the step"
        self._notes(label)
        self._on_gap(time.time(), label, data)

    def _revive(self) -> None:
        """Before a step: report deaths not reported yet, start dead workers again."""
        while not self._deaths.empty():
            self._lost_worker(self._deaths.get(), None)
        with self._lock:
            gone = sorted(self._gone)
        for w in gone:
            self._conns[w].close()
            self._spawn(w)
            if self._await_ready(w):
                self._reported.discard(w)
                with self._lock:
                    self._gone.discard(w)
            else:
                why = examine(self._procs[w].exitcode, read_tail(self._stderr_path(w))).describe()
                self._notes(f"builtin worker {w} could not be started again: {why}")

    # ---- steps -------------------------------------------------------------------------------
    def run_step(self, threads: Mapping[str, int], seconds: int, sink: IntervalSink,
                 stop: threading.Event, warmup: int = 0, ramp: IntervalSink | None = None,
                 rates: Mapping[str, OpenLoop] | None = None) -> dict[str, LatencyHistogram | None]:
        rates = self._rates_live = dict(rates or {})
        self.ended = None
        self.finished_work = {}
        self._revive()
        # The tick in progress mixes the old and new concurrency: measure from the next full one.
        first = self._current_tick() + 1
        with self._lock:
            live = [c for w, c in enumerate(self._conns) if w not in self._gone]
            for w in range(self.nworkers):  # every live worker counts in every measured second
                if w not in self._gone:
                    self._since.setdefault(w, first)
        self._tell(live, ("active", dict(threads), rates))
        step_hist: dict[str, LatencyHistogram | None] = {g.name: LatencyHistogram() for g in self.groups}
        # open loop: the step's service times, its transactions, and whether the warm-up's backlog was dropped
        self.service_hists = {name: LatencyHistogram() for name in rates}
        done = dict.fromkeys(rates, 0)
        asked_rate = dict.fromkeys(rates, 0.0)  # the rate of each measured second, summed (changed live: set_rate)
        measured_seconds = 0
        dropped = not rates
        asked = sum(threads.values())
        # measured from the tick after one that ended with every connection open (the tick before `first`
        # counts: a step that keeps or lowers the previous one's connections starts measuring at `first`)
        opened = False
        measured: int | None = None
        most, stalled = -1, 0
        got = first - 1
        silence_reported = False
        while (measured is None or got < measured + seconds - 1) and not stop.is_set():
            while not self._deaths.empty():
                self._lost_worker(self._deaths.get(), threads)
            try:
                tick, merged = self._ticks.get(timeout=0.25)
            except queue.Empty:
                continue
            if tick < 0 or self._fatal:
                raise EngineError(f"builtin engine stopped: {self._fatal}")
            self._tally(merged)
            # a finished connection (max_rows) opened and is done: it counts as open
            running = {g.name: merged[g.name][2] + merged[g.name][5][0] if g.name in merged else 0
                       for g in self.groups}
            finished = {g.name: merged[g.name][5][0] if g.name in merged else 0 for g in self.groups}
            for name, m in merged.items():
                if m[5][0]:
                    self.finished_work[name] = (m[5][1], m[5][2])
            if tick < first:
                opened = all(running.get(g, 0) >= n for g, n in threads.items())
                continue
            got = tick
            if measured is None:
                if opened or ramp is None:
                    measured = tick
                else:
                    now = sum(running.values())
                    most, stalled = (now, 0) if now > most else (most, stalled + 1)
                    if stalled >= RAMP_STALL_SECONDS or tick - first + 1 >= RAMP_LIMIT_SECONDS:
                        measured = tick + 1  # with the connections open (the ramp's sink says how many)
                        # and only those: one that opens later (a slot of the account freed) would change the
                        # concurrency in the middle of the measured seconds
                        self._tell(live, ("ramp_over",))
                opened = all(running.get(g, 0) >= n for g, n in threads.items())
            out = sink if measured is not None and tick >= measured else ramp
            assert out is not None
            if not dropped and measured is not None and tick >= measured + warmup - 1:
                # the warm-up (or the connections' ramp) ends with this second: its backlog is dropped, not
                # carried into the measured seconds
                self._tell(live, ("drop_backlog", measured + warmup - 1))
                dropped = True
            t = self.t0_wall + tick + 1
            statements = 0
            in_step = measured is not None and tick >= measured + warmup
            measured_seconds += in_step
            for g in self.groups:
                (ev, r, w, o, err, rc), hist, nthreads, per_type, open_loop, _finished, codes = merged.get(
                    g.name, [[0] * 6, LatencyHistogram(), 0, None, None, [0, 0, 0.0], {}])
                statements += r + w + o
                lat = hist.summary_ms()
                h = step_hist[g.name]
                if h is not None and in_step:
                    h.merge(hist)
                extra: dict[str, Any] = {}
                if g.name in rates:
                    o_hist, late, skipped, backlog, lag, dropped_now, _overflow = open_loop or (
                        LatencyHistogram(), 0, 0, 0, 0.0, 0, False)
                    extra = {"rate": self._rates_live[g.name].rate, "svc_lat_ms": o_hist.summary_ms(),
                             "backlog": float(backlog), "dropped": float(dropped_now),
                             "lag_ms": float(lag), "late": float(late), "skipped": float(skipped)}
                    if in_step:
                        self.service_hists[g.name].merge(o_hist)
                        done[g.name] += ev
                        asked_rate[g.name] += self._rates_live[g.name].rate
                # the connections really running: a dead worker's are not, nor those not connected
                out(Interval(t=t, group=g.name, threads=nthreads, tps=float(ev),
                             qps=float(r + w + o), reads=float(r), writes=float(w), other=float(o),
                             lat_ms=lat, errors=float(err), reconnects=float(rc), trx=self._trx(g, per_type),
                             error_codes={int(k): float(n) for k, n in codes.items()},
                             edge=self.edges.get(tick) if self.EDGES_ON_OUR_CLOCK else None, **extra))
            # silence counts the connections asked for: a lost server's are reconnecting, not connected
            silence_reported = self._watch_silence(asked, statements, silence_reported)
            if asked and all(finished.get(g, 0) >= n for g, n in threads.items() if n):
                # every connection of the step is done with the run (iiBench's max_rows): the step ends here
                self.ended = "finished"
                break
        for name in rates:
            self._say_unserved(name, threads.get(name, 0), asked_rate[name] / max(1, measured_seconds), done[name],
                               measured_seconds)
        return step_hist

    def set_rate(self, group: str, load: OpenLoop) -> None:
        """An open-loop group's rate from now on, mid-step (the workers start its schedule again at `load`); the
        step's seconds from here say the new rate."""
        with self._lock:
            live = [c for w, c in enumerate(self._conns) if w not in self._gone]
        self._rates_live[group] = load
        self._tell(live, ("rate", dict(self._rates_live)))

    def _tell(self, conns: list[Connection], msg: tuple[Any, ...]) -> None:
        for c in conns:
            try:
                c.send(msg)
            except (BrokenPipeError, OSError):
                pass  # a worker that died now: the reader reports it

    def _say_unserved(self, group: str, threads: int, rate: float, done: int, seconds: int) -> None:
        """A rate the pool could not serve is said, with the rate achieved: never a silently lower rate."""
        if seconds <= 0:
            return
        achieved = done / seconds
        if not served(rate, achieved, seconds):
            self._notes(f"group {group}: {threads} connection(s) did not serve {rate_text(rate)}/s; achieved "
                        f"{rate_text(achieved)}/s over {seconds} s (the backlog grew: its latency counts the queue)")

    def _watch_silence(self, running: int, statements: int, reported: bool) -> bool:
        """Seconds in which no connection completed a statement: said once they last SILENCE_SECONDS."""
        if running and not statements:
            self._silent += 1
        else:
            if self._silent >= SILENCE_SECONDS:
                self._notes(f"statements completing again after {self._silent} s")
            self._silent = 0
        if self._silent >= SILENCE_SECONDS and not reported:
            self._notes(f"no statement completed on any of {running} connections for {self._silent} s")
            return True
        return reported
