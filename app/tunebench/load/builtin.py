"""The builtin engine: worker processes driving many connections each, merged into per-second Intervals."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import threading
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection, wait
from typing import Any

from tunebench.core.errors import EngineError
from tunebench.core.histogram import LatencyHistogram
from tunebench.core.interval import Interval
from tunebench.load.engine import ClientGroup, IntervalSink, NoteSink
from tunebench.load.worker import GroupPlan, WorkerSpec, worker_main
from tunebench.mysql.target import ConnParams


def default_workers(max_threads: int) -> int:
    """Few connections per process keep GIL hand-offs cheap (bench: 2 per process is 1.5x faster at
    16 threads than 8 per process); capped at 8 processes per CPU so 1024 users stay affordable."""
    cpus = os.cpu_count() or 1
    return max(1, min(max_threads, max(cpus, min(-(-max_threads // 2), 8 * cpus))))


class BuiltinEngine:
    name = "builtin"

    def __init__(self, params: ConnParams, groups: list[ClientGroup], workers: int | None = None,
                 seed: int | None = None, notes: NoteSink | None = None):
        self.params = params
        self.groups = groups
        total = sum(max(g.schedule) for g in groups)
        self.nworkers = workers or default_workers(total)
        self.seed = seed if seed is not None else time.time_ns() & 0xFFFFFFFF
        self._notes = notes or (lambda _m: None)
        self._procs: list[Any] = []
        self._conns: list[Connection] = []
        self._ticks: queue.Queue[tuple[int, dict[str, list[Any]]]] = queue.Queue()
        self._fatal: str | None = None
        self._reader: threading.Thread | None = None
        self._closing = False

    # ---- lifecycle ---------------------------------------------------------------------------
    def open(self) -> None:
        ctx = mp.get_context("spawn")  # the parent has threads; fork would copy their locks
        self.t0_mono = time.monotonic()
        self.t0_wall = time.time()
        for w in range(self.nworkers):
            plans = tuple(
                GroupPlan(g.name, g.workload.program(g.options),
                          tuple(n for n in range(max(g.schedule)) if n % self.nworkers == w))
                for g in self.groups
            )
            parent, child = ctx.Pipe()
            spec = WorkerSpec(w, self.params, plans, self.t0_mono, self.seed)
            p = ctx.Process(target=worker_main, args=(child, spec), name=f"tunebench-worker-{w}", daemon=True)
            p.start()
            child.close()
            self._procs.append(p)
            self._conns.append(parent)
        for c, p in zip(self._conns, self._procs, strict=True):
            try:
                ok = c.poll(60) and c.recv()[0] == "ready"
            except (EOFError, OSError):
                ok = False
            if not ok:
                self.close()
                raise EngineError(f"builtin worker {p.name} did not start (exit code {p.exitcode})")
        self._reader = threading.Thread(target=self._read, name="builtin-reader", daemon=True)
        self._reader.start()

    def client_pids(self) -> list[int]:
        return [p.pid for p in self._procs if p.pid]

    def close(self) -> None:
        self._closing = True
        for c in self._conns:
            try:
                c.send(("stop",))
            except (BrokenPipeError, OSError):
                pass
        for p in self._procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        for c in self._conns:
            c.close()
        self._procs, self._conns = [], []

    # ---- tick merging ------------------------------------------------------------------------
    def _read(self) -> None:
        pending: dict[int, dict[int, Any]] = {}
        alive = list(self._conns)
        while alive and not self._closing:
            for c in wait(alive, timeout=1.0):
                try:
                    msg = c.recv()
                except (EOFError, OSError):
                    alive.remove(c)
                    if not self._closing:
                        self._fatal = self._fatal or "a builtin worker process died"
                        self._ticks.put((-1, {}))
                    continue
                kind = msg[0]
                if kind == "tick":
                    _, widx, tick, report = msg
                    pending.setdefault(tick, {})[widx] = report
                    if len(pending[tick]) == self.nworkers:
                        self._ticks.put((tick, self._merge(pending.pop(tick))))
                elif kind == "fatal":
                    self._fatal = msg[2].strip().splitlines()[-1]
                    self._ticks.put((-1, {}))
                elif kind == "note":
                    self._notes(msg[2])

    def _merge(self, reports: Mapping[int, Mapping[str, Any]]) -> dict[str, list[Any]]:
        merged: dict[str, list[Any]] = {}
        for report in reports.values():
            for group, (totals, idx, counts, max_ns, threads) in report.items():
                m = merged.setdefault(group, [[0] * 6, LatencyHistogram(), 0])
                for i in range(6):
                    m[0][i] += totals[i]
                m[1].add_sparse(idx, counts, max_ns)
                m[2] += threads
        return merged

    def _current_tick(self) -> int:
        return int(time.monotonic() - self.t0_mono)

    def run_step(self, threads: Mapping[str, int], seconds: int, sink: IntervalSink,
                 stop: threading.Event, warmup: int = 0) -> dict[str, LatencyHistogram | None]:
        # The tick in progress mixes the old and new concurrency: measure from the next full one.
        first = self._current_tick() + 1
        for c in self._conns:
            c.send(("active", dict(threads)))
        step_hist: dict[str, LatencyHistogram | None] = {g.name: LatencyHistogram() for g in self.groups}
        last = first + seconds - 1
        got = first - 1
        while got < last and not stop.is_set():
            try:
                tick, merged = self._ticks.get(timeout=0.25)
            except queue.Empty:
                if any(not p.is_alive() for p in self._procs):
                    raise EngineError("a builtin worker process died") from None
                continue
            if tick < 0 or self._fatal:
                raise EngineError(f"builtin engine stopped: {self._fatal}")
            if tick < first:
                continue
            got = tick
            t = self.t0_wall + tick + 1
            for g in self.groups:
                (ev, r, w, o, err, rc), hist, nthreads = merged.get(g.name, [[0] * 6, LatencyHistogram(), 0])
                lat = hist.summary_ms()
                h = step_hist[g.name]
                if h is not None and tick >= first + warmup:
                    h.merge(hist)
                sink(Interval(t=t, group=g.name, threads=threads.get(g.name, nthreads), tps=float(ev),
                              qps=float(r + w + o), reads=float(r), writes=float(w), other=float(o),
                              lat_ms=lat, errors=float(err), reconnects=float(rc)))
        return step_hist
