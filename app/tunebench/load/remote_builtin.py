"""The builtin engine on SSH client hosts: each host runs the engine's workers (load/remote_workers.py) on its share
of the connections, and its seconds merge into the run's as local workers' do (a host is to this engine what a
worker process is to the local one: histograms merged, connections counted, a lost one a gap).

Before a run, `check_client_python` makes sure each host has the interpreter and this very version of Tunebench.
The server's password goes to a host inside the first line on the channel: never on a command line or in an
environment.
"""

from __future__ import annotations

import secrets
import shlex
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tunebench import __version__
from tunebench.core.clocks import clock_pair
from tunebench.core.errors import ConfigError, EngineError, TunebenchError
from tunebench.core.histogram import LatencyHistogram
from tunebench.core.probe import name_part
from tunebench.core.schedule import OpenLoop
from tunebench.core.target import ConnParams
from tunebench.load import wire
from tunebench.load.builtin import SILENCE_SECONDS, BuiltinEngine, GapSink
from tunebench.load.engine import ClientGroup, IntervalSink, NoteSink

DEFAULT_PYTHON = "python3.11"
ENTRY = "tunebench.load.remote_workers"
PROTOCOL = 2  # load/remote_workers.PROTOCOL (not imported: this side needs no worker machinery)
READY_SECONDS = 60  # a host's workers are ready within this (their connections open later, in the step)
CHECK_MARK = "@tb-python"


class ClientPythonError(EngineError):
    """A client host cannot run the builtin engine: no interpreter, no Tunebench, or another version."""


def python_argv(python: str) -> list[str]:
    """`--remote-python` as words: an interpreter, maybe with `NAME=value` settings first (PYTHONPATH=/opt/tb/app
    python3.11), which `env` sets."""
    try:
        words = shlex.split(python)
    except ValueError as exc:
        raise ConfigError(f"--remote-python {python!r}: {exc}") from None
    if not words:
        raise ConfigError("--remote-python is empty")
    if "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words = ["env", *words]
    return words


_CHECK = (f"import sys; print('{CHECK_MARK}', *sys.version_info[:2]); import tunebench; "
          f"print('{CHECK_MARK}', 'tunebench', tunebench.__version__); import {ENTRY} as r; "
          f"print('{CHECK_MARK}', 'protocol', r.PROTOCOL)")


def check_client_python(runner: Any, python: str = DEFAULT_PYTHON) -> None:
    """The host runs `python` as Python of this minor version, imports Tunebench of this version and its remote
    workers; else ClientPythonError with one line saying what is missing on which host."""
    argv = python_argv(python)
    label = getattr(runner, "label", "?")
    command = " ".join(shlex.quote(a) for a in [*argv, "-c", _CHECK])
    rc, out = runner.run(command, timeout=60)
    facts = [ln.split()[1:] for ln in out.splitlines() if ln.startswith(CHECK_MARK)]
    want = f"{sys.version_info[0]}.{sys.version_info[1]}"
    shown = " ".join(argv)
    if not facts:
        if rc == 127 or "not found" in out or "No such file" in out:
            raise ClientPythonError(f"client host {label}: no {shown} there (the builtin engine runs Python {want} "
                                    "with Tunebench on each client host; install them, or name the interpreter "
                                    "with --remote-python)")
        raise ClientPythonError(f"client host {label}: {shown} does not run: {_last(out)}")
    there = ".".join(facts[0][:2])
    if there != want:
        raise ClientPythonError(f"client host {label}: {shown} is Python {there}; the builtin engine needs {want} "
                                "there (name another interpreter with --remote-python)")
    if len(facts) < 2:
        raise ClientPythonError(f"client host {label}: {shown} cannot import tunebench ({_last(out)}): install "
                                f"Tunebench {__version__} there, or give its path: --remote-python "
                                f"'PYTHONPATH=/path/to/tunebench/app {shown}'")
    version = facts[1][1] if len(facts[1]) > 1 else "?"
    if version != __version__:
        raise ClientPythonError(f"client host {label}: Tunebench {version} there, {__version__} here: install "
                                f"the same version there")
    if len(facts) < 3:
        raise ClientPythonError(f"client host {label}: Tunebench {version} there cannot import its workers "
                                f"({_last(out)})")
    if facts[2][1:] != [str(PROTOCOL)]:
        raise ClientPythonError(f"client host {label}: its remote workers speak another protocol "
                                f"({' '.join(facts[2][1:])}, here {PROTOCOL}): install the same version there")


def _last(out: str) -> str:
    # (never one of the protocol's own lines: a raw message is no reason)
    lines = [ln.strip() for ln in out.splitlines()
             if ln.strip() and not ln.startswith(CHECK_MARK) and not ln.lstrip().startswith('{"__tuple__"')]
    return lines[-1][:300] if lines else "no output"


def _a_report(r: Any) -> bool:
    """A group's second as the remote workers send it (remote_workers.report): totals, the histogram's indexes
    and counts, its max, threads, finished, per-type totals (or None), the open loop's part (or None), and the
    errors by server error code (a host of an older Tunebench: none)."""
    def nums(x: Any, n: int | None = None) -> bool:
        return (isinstance(x, (tuple, list)) and (n is None or len(x) == n)
                and all(isinstance(v, (int, float)) for v in x))
    return (isinstance(r, (tuple, list)) and len(r) in (8, 9) and nums(r[0], 6) and nums(r[1]) and nums(r[2], len(r[1]))
            and isinstance(r[3], int) and isinstance(r[4], int) and nums(r[5], 3)
            and (r[6] is None or isinstance(r[6], (tuple, list))) and (r[7] is None or nums(r[7][2:], 7))
            and (len(r) == 8 or (isinstance(r[8], Mapping) and nums(list(r[8]), None) and nums(list(r[8].values())))))


@dataclass(eq=False)
class HostLink:
    """One client host's remote workers: the process over SSH, the run's orders to it, its lines from it."""

    runner: Any
    proc: Any
    ready: threading.Event = field(default_factory=threading.Event)
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # said by the host before it was ready
    why: str | None = None  # said by the host when it gave up (every worker there died)
    folder: str | None = None  # the private folder of the TLS files there
    garbled: bool = False  # a message in a shape this Tunebench does not send came (said once)

    def send(self, msg: tuple[Any, ...]) -> None:
        self.proc.send((wire.dumps(msg) + "\n").encode())

    def close(self) -> None:
        """Nothing: the process is stopped by the engine (closing its stdin stops it)."""


class _EveryHostLost(Exception):
    """Mid-step, the last client host was lost: the step ends there (incomplete), the next one starts them again."""


class RemoteBuiltinEngine(BuiltinEngine):
    """The builtin engine with its workers on client hosts over SSH (RunSpec.client_hosts): connection slot n of a
    group runs on host n % hosts, so a step's threads split over the hosts as sysbench's split_threads does; each
    host's seconds are also recorded as `client.GROUP@HOST.*`."""

    EDGES_ON_OUR_CLOCK = False  # a client host's take instants are on its own clock

    def __init__(self, params: ConnParams, groups: list[ClientGroup], runners: Sequence[Any],
                 python: str = DEFAULT_PYTHON, workers: int | None = None, seed: int | None = None,
                 notes: NoteSink | None = None, on_gap: GapSink | None = None,
                 host_sink: Callable[[float, dict[str, float]], None] | None = None):
        super().__init__(params, groups, workers=len(runners), seed=seed, notes=notes, on_gap=on_gap)
        self.runners = list(runners)
        self.python = python
        self.workers_per_host = workers
        self._host_sink = host_sink or (lambda _t, _v: None)
        self._links: list[HostLink | None] = [None] * len(self.runners)
        self._merge_lock = threading.Lock()
        self._pending: dict[int, dict[int, Any]] = {}
        self._plans: list[Any] = []
        self._stepping = False

    def _label(self, h: int) -> str:
        return str(getattr(self.runners[h], "label", f"host{h}"))

    # ---- lifecycle ---------------------------------------------------------------------------
    def open(self) -> None:
        self.t0_mono, self.t0_wall = clock_pair()  # read together (a preemption between two reads shifted t0_wall)
        self._plans = self.group_plans(secrets.randbits(32), 0)  # each host sets its own number of workers
        self._conns = [None] * len(self.runners)  # type: ignore[list-item]
        self._procs = [None] * len(self.runners)
        try:
            for h in range(len(self.runners)):
                self._start_host(h)
            for h in range(len(self.runners)):
                self._await_host(h)
        except TunebenchError:
            self.close()
            raise

    def _start_host(self, h: int) -> None:
        runner = self.runners[h]
        params = self.params
        folder = None
        if params.tls and (params.ssl_ca or params.ssl_cert):
            # the TLS files go to a folder only the host's user reads; the connections there use them
            files = {n: p for n, p in (("ca.pem", params.ssl_ca), ("cert.pem", params.ssl_cert),
                                       ("key.pem", params.ssl_key)) if p}
            folder = runner.put_private_folder(files, "tb-builtin-")
            params = replace(params, ssl_ca=f"{folder}/ca.pem" if params.ssl_ca else None,
                             ssl_cert=f"{folder}/cert.pem" if params.ssl_cert else None,
                             ssl_key=f"{folder}/key.pem" if params.ssl_key else None)
        argv = [*python_argv(self.python), "-m", ENTRY]
        proc = runner.start(argv, talk=True, display=[f"{self.python} -m {ENTRY}"])
        link = HostLink(runner, proc, folder=folder)
        self._links[h] = link
        self._conns[h] = link  # type: ignore[call-overload]
        self._procs[h] = proc
        threading.Thread(target=self._read_host, args=(h, link), name=f"builtin-host-{h}", daemon=True).start()
        hello = {"protocol": PROTOCOL, "version": __version__, "params": params, "plans": self._plans, "host": h,
                 "hosts": len(self.runners), "workers": self.workers_per_host,
                 "elapsed": time.monotonic() - self.t0_mono, "t0_wall": self.t0_wall}
        try:
            link.send(("hello", hello))
        except OSError as exc:
            raise EngineError(f"client host {self._label(h)}: cannot start the builtin workers: {exc}") from None

    def _await_host(self, h: int) -> None:
        link = self._links[h]
        assert link is not None
        if not link.ready.wait(READY_SECONDS) or link.error or not link.info:
            proc = link.proc
            why = link.error or (_last("\n".join(proc.wait(0).tail)) if proc.wait(0).tail else
                                 f"not ready within {READY_SECONDS} s")
            raise EngineError(f"client host {self._label(h)}: the builtin workers did not start: {why}")

    def client_pids(self) -> list[int]:
        return []  # on other machines: no local process to watch

    def close(self) -> None:
        self._closing = True
        if self._silent >= SILENCE_SECONDS:
            self._notes(f"no statement completed for the last {self._silent} s")
        for link in self._links:
            if link is not None:
                try:
                    link.send(("stop",))
                except OSError:
                    pass
        for h, link in enumerate(self._links):
            if link is None:
                continue
            outcome = link.proc.stop(grace=10)
            if outcome.returncode not in (0, None) and h not in self._reported and not link.proc.lost:
                self._notes(f"client host {self._label(h)}: the builtin workers exited with {outcome.returncode}: "
                            f"{_last(chr(10).join(outcome.tail))}")
            if link.folder:
                link.runner.remove_folder(link.folder)
        self._links = [None] * len(self.runners)
        self._procs, self._conns = [], []
        for r in self.runners:
            if hasattr(r, "close"):
                r.close()

    # ---- each host's lines -------------------------------------------------------------------
    def _read_host(self, h: int, link: HostLink) -> None:
        label = self._label(h)
        for line in link.proc.lines():
            if not line.startswith('{"__tuple__"'):  # not one of its messages (a warning the interpreter wrote)
                continue
            try:
                msg = wire.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, tuple) or not msg:
                continue
            try:
                self._dispatch(h, link, label, msg)
            except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
                # a message of ours in a shape Tunebench does not send: said once, and this reader goes on
                if not link.garbled:
                    link.garbled = True
                    self._notes(f"{label}: a message that is not of this Tunebench was ignored ({type(exc).__name__})")
        link.ready.set()
        if self._closing or self._links[h] is not link:
            return
        with self._lock:
            self._gone.add(h)
            self._since.pop(h, None)
        self._deaths.put(h)
        with self._merge_lock:
            self._emit_ready(self._pending)

    def _dispatch(self, h: int, link: HostLink, label: str, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "tick":
            report = msg[2]
            if not isinstance(report, Mapping) or not all(_a_report(r) for r in report.values()):
                raise TypeError("a tick without a report")
            self._on_tick(h, int(msg[1]), report, None if msg[3] is None else float(msg[3]))
        elif kind == "ready":
            link.info = dict(msg[1])
            link.ready.set()
        elif kind == "error":
            link.error = str(msg[1])
            link.ready.set()
        elif kind == "note":
            self._notes(f"{label}: {msg[1]}")
        elif kind == "gap":
            self._on_gap(float(msg[1]), f"{label}: {msg[2]}", {**dict(msg[3]), "host": label})
        elif kind == "fatal":
            self._fatal = f"{label}: {msg[1]}"
            self._ticks.put((-1, {}))
        elif kind == "lost":
            link.why = str(msg[1])

    def _on_tick(self, h: int, tick: int, report: Mapping[str, Any], taken_at: float | None) -> None:
        with self._merge_lock:
            if taken_at is not None:  # where the host's second ended, on its clock
                self._taken.setdefault(tick, {})[h] = float(taken_at)
            with self._lock:
                # a host joins (at start, or started again) from the first second not merged yet
                self._since.setdefault(h, max(tick, self._last_tick + 1))
            if tick <= self._last_tick:
                return
            self._pending.setdefault(tick, {})[h] = report
            self._emit_ready(self._pending)

    def _merged(self, tick: int, reports: Mapping[int, Mapping[str, Any]]) -> dict[str, list[Any]]:
        if self._stepping:
            t = self.t0_wall + tick + 1
            values: dict[str, float] = {}
            for h, report in reports.items():
                for group, (totals, idx, counts, max_ns, threads, *_rest) in report.items():
                    prefix = f"client.{group}@{name_part(self._label(h))}"  # one dotted component: main@10_0_0_5
                    hist = LatencyHistogram()
                    hist.add_sparse(idx, counts, max_ns)
                    values[f"{prefix}.tps"] = float(totals[0])
                    values[f"{prefix}.qps"] = float(sum(totals[1:4]))
                    values[f"{prefix}.threads"] = float(threads)
                    p95 = hist.summary_ms().get("p95")
                    if p95 is not None:
                        values[f"{prefix}.lat.p95"] = p95
            self._host_sink(t, values)
        return self._merge(reports)

    # ---- lost hosts --------------------------------------------------------------------------
    def _lost_worker(self, w: int, threads: Mapping[str, int] | None) -> None:
        """Host `w` was lost: said as sysbench's lost host is (a gap mid-step: the step goes on without it)."""
        link = self._links[w]
        proc = link.proc if link is not None else None
        why = (link.why if link is not None else None) or (
            "connection dropped" if proc is None or proc.lost else
            f"its builtin workers exited: {_last(chr(10).join(proc.wait(2).tail))}")
        self._reported.add(w)
        label = self._label(w)
        if threads is None:
            self._notes(f"client host {label} lost between steps ({why}); starting its workers again")
            return
        text = f"gap: client host {label} lost ({why})"
        self._notes(text)
        self._on_gap(time.time(), text, {"host": label, "reason": why})
        with self._lock:
            alive = len(self.runners) - len(self._gone)
        if alive == 0:
            raise _EveryHostLost

    def _revive(self) -> None:
        """Before a step: hosts lost earlier are reached again (the SSH runner reconnects with backoff) and their
        workers started again; one that cannot be is said, and the step runs on the others."""
        while not self._deaths.empty():
            self._lost_worker(self._deaths.get(), None)
        with self._lock:
            gone = sorted(self._gone)
        for h in gone:
            old = self._links[h]
            if old is not None:
                self._links[h] = None
                old.proc.stop(grace=2)
                if old.folder:
                    old.runner.remove_folder(old.folder)
            try:
                self._start_host(h)
                self._await_host(h)
            except TunebenchError as exc:
                self._notes(f"client host {self._label(h)} could not be started again: {exc}")
                continue
            self._reported.discard(h)
            with self._lock:
                self._gone.discard(h)

    # ---- steps -------------------------------------------------------------------------------
    def run_step(self, threads: Mapping[str, int], seconds: int, sink: IntervalSink,
                 stop: threading.Event, warmup: int = 0, ramp: IntervalSink | None = None,
                 rates: Mapping[str, OpenLoop] | None = None) -> dict[str, LatencyHistogram | None]:
        self._stepping = True
        try:
            return super().run_step(threads, seconds, sink, stop, warmup, ramp, rates)
        except _EveryHostLost:
            return {g.name: None for g in self.groups}  # the step's seconds so far stand; it is incomplete
        finally:
            self._stepping = False
