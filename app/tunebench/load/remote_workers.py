"""The builtin engine's workers on a client host: `python3.11 -m tunebench.load.remote_workers`, started over SSH
by load/remote_builtin.py.

It reads JSON lines (load/wire.py) on stdin: first the run (connection parameters with the password, the groups'
plans, which host of how many this is), then the steps' orders ("active", "rate", "ramp_over", "drop_backlog",
"stop"). It runs the builtin engine's worker processes on this host's share of the connections and writes each
second, merged over them, as one JSON line on stdout, in the shape of one worker's report, so the run merges hosts as
it merges workers.
The end of stdin (a stop, a dropped connection, a dead Tunebench) stops everything here.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from tunebench import __version__
from tunebench.core.errors import EngineError, TunebenchError
from tunebench.load import wire
from tunebench.load.builtin import BuiltinEngine, default_workers
from tunebench.load.worker import GroupPlan, _hot_program

PROTOCOL = 2  # what the lines mean; both ends must agree (checked with the package version before a run)
STOP_LIMIT = 20.0  # seconds from the end of stdin to this process's exit, whatever is stuck


def report_of(merged: Mapping[str, list[Any]]) -> dict[str, tuple[Any, ...]]:
    """A second merged over this host's workers, as one worker's report (worker.py) - what BuiltinEngine._merge
    takes - with the histograms sparse."""
    out: dict[str, tuple[Any, ...]] = {}
    for group, (totals, hist, threads, per_type, open_loop, finished, *rest) in merged.items():
        codes = rest[0] if rest else {}  # the second's errors by server error code
        idx, counts = hist.sparse()
        trx = None if per_type is None else tuple(
            (*tot, *t_hist.sparse(), t_hist.max_ns) for tot, t_hist in per_type)
        o = None
        if open_loop is not None:
            o_hist, late, skipped, backlog, lag, dropped, overflow = open_loop
            o = (*o_hist.sparse(), o_hist.max_ns, late, skipped, backlog, lag, dropped, overflow)
        out[group] = (tuple(totals), idx, counts, hist.max_ns, threads, tuple(finished), trx, o, dict(codes))
    return out


class HostWorkers(BuiltinEngine):
    """This host's worker processes: the builtin engine's, on the slots that are this host's, without its steps
    (the run's engine drives those from Tunebench)."""

    def __init__(self, hello: Mapping[str, Any], send: Callable[[tuple[Any, ...]], None]):
        plans: list[GroupPlan] = list(hello["plans"])
        host, hosts = int(hello["host"]), int(hello["hosts"])
        mine = max((sum(1 for n in range(p.nslots) if n % hosts == host) for p in plans), default=1)
        compiled = all(_hot_program(p) is not None for p in plans)
        workers = hello.get("workers") or default_workers(max(1, mine), compiled)
        super().__init__(hello["params"], [], workers=workers, notes=lambda m: send(("note", m)),
                         on_gap=lambda t, label, data: send(("gap", t, label, data)))
        self.plans = [replace(p, nworkers=workers) for p in plans]
        self.host, self.hosts = host, hosts
        self.t0_mono = run_clock(float(hello["elapsed"]), float(hello["t0_wall"]), time.time(), time.monotonic())
        self.t0_wall = float(hello["t0_wall"])

    def open(self) -> None:
        self.start_workers(self.plans, self.host, self.hosts)

    def begin_step(self, threads: Mapping[str, int]) -> None:
        """A step's orders: dead workers started again, and every live one counts from the next full second."""
        self._revive()
        first = self._current_tick() + 1
        with self._lock:
            for w in range(self.nworkers):
                if w not in self._gone:
                    self._since.setdefault(w, first)

    def live(self) -> list[Any]:
        with self._lock:
            return [c for w, c in enumerate(self._conns) if w not in self._gone]


MAX_START_DELAY = 60.0  # seconds between the run's hello and this process reading it that the wall clock may show


def run_clock(elapsed: float, t0_wall: float, now_wall: float, now_mono: float) -> float:
    """The run's tick 0 on this host's monotonic clock. The hello says the run's tick 0 began `elapsed` seconds
    before it was sent; this process reads it later by the channel's delay and its own start-up -- seconds on a busy
    machine -- so `elapsed` alone put this host's seconds late by that much (issue 41: beside the suite's other
    workers, two hosts' seconds ~0.5 s apart merged into one, and a step's TPS was 10 % off the server's
    Com_commit). The wall clocks agree (one machine; NTP): when this host's says the run began between `elapsed`
    and `elapsed` + MAX_START_DELAY ago, it is the better clock; otherwise (a host whose clock is off) `elapsed`."""
    by_wall = now_wall - t0_wall
    return now_mono - (by_wall if elapsed - 0.05 <= by_wall <= elapsed + MAX_START_DELAY else elapsed)


def _read_orders(orders: queue.Queue[Any]) -> None:
    try:
        for line in sys.stdin.buffer:
            try:
                orders.put(wire.loads(line))
            except ValueError:
                continue
    finally:
        orders.put(("stop",))


def serve(send: Callable[[tuple[Any, ...]], None]) -> int:
    first = sys.stdin.buffer.readline()
    if not first:
        return 1
    try:
        kind, hello = wire.loads(first)
    except (ValueError, TypeError):
        send(("error", "the first line is not the run's"))
        return 2
    if kind != "hello" or hello.get("protocol") != PROTOCOL or hello.get("version") != __version__:
        send(("error", f"Tunebench {__version__} (protocol {PROTOCOL}) here, {hello.get('version')} (protocol "
                       f"{hello.get('protocol')}) there: install the same version on both"))
        return 2
    pool = HostWorkers(hello, send)
    try:
        pool.open()
    except TunebenchError as exc:
        send(("error", str(exc)))
        return 1
    send(("ready", {"workers": pool.nworkers, "pid": os.getpid(), "cpus": os.cpu_count()}))
    orders: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=_read_orders, args=(orders,), name="orders", daemon=True).start()
    threads: dict[str, int] = {}
    try:
        while True:
            try:
                msg = orders.get(timeout=0.05)
            except queue.Empty:
                msg = None
            if msg is not None:
                if msg[0] == "stop":
                    return 0
                if msg[0] == "active":
                    threads = dict(msg[1])
                    pool.begin_step(threads)
                pool._tell(pool.live(), msg)
            while not pool._deaths.empty():
                try:
                    pool._lost_worker(pool._deaths.get(), threads if any(threads.values()) else None)
                except EngineError as exc:  # every worker here died: this host is lost to the run
                    send(("lost", str(exc)))
                    return 1
            while True:
                try:
                    tick, merged = pool._ticks.get_nowait()
                except queue.Empty:
                    break
                if tick < 0:
                    send(("fatal", pool._fatal or "stopped"))
                    continue
                send(("tick", tick, report_of(merged), pool.edges.get(tick)))
    finally:
        # whatever is stuck (a worker on a frozen server), this process is gone within STOP_LIMIT seconds
        threading.Timer(STOP_LIMIT, os._exit, args=(3,)).start()
        pool.close()


def main() -> int:
    lock = threading.Lock()
    out = sys.stdout

    def send(msg: tuple[Any, ...]) -> None:
        line = wire.dumps(msg) + "\n"
        with lock:
            try:
                out.write(line)
                out.flush()
            except (BrokenPipeError, OSError):
                pass  # Tunebench is gone: stdin's end stops us

    return serve(send)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the Timer thread and daemon threads never hold the exit
