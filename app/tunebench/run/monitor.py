"""Runs the probes beside a load: one sampling thread per probe, on the session's wall clock.

Each probe samples every `interval` seconds on its own thread (a slow SQL probe never delays the /proc
ones, and nothing here touches the engine's hot path). Counters become per-second rates here; samples
go to `sink(t, values, kinds)` stamped with the wall-clock midpoint of the read, the same clock as the
engine's Interval.t -- or, for a SQL probe that reads the server's clock before and after its statements in the same
round trip, that instant mapped onto this clock (core.probe.ServerClock): on a machine short of CPU a request or its
answer can wait long enough on the way to move a midpoint by a hundred ms and more. A probe that cannot work says
so once (`report`) and the others keep going; a probe that fails mid-run reports the first failure and its recovery,
not every second of it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import mysql.connector

from tunebench.core.errors import StoreError, TunebenchError
from tunebench.core.interval import Event
from tunebench.core.kinds import ProbeEventKind
from tunebench.core.openmetrics import LiveReading
from tunebench.core.probe import DEFAULT_PROBES, Probe, ProbeUnavailable, RateTracker
from tunebench.hosts.profile import ProfileProbe, RemotePerf
from tunebench.hosts.telemetry import (
    HostCpuProbe,
    ProcessCpuProbe,
    find_server_pids,
    parse_proc_stat,
    server_pid_from,
)
from tunebench.mysql.connect import ServerInfo, open_connection
from tunebench.mysql.probes import MetricsProbe, SettingsJournal, StatusProbe, WaitsProbe
from tunebench.mysql.probes.sql_probe import SqlProbe
from tunebench.mysql.probes.statements import StatementsProbe
from tunebench.mysql.probes.tables import TablesProbe
from tunebench.mysql.target import ConnParams, Target
from tunebench.store.writer import SessionWriter

Sink = Callable[[float, dict[str, float], dict[str, str]], None]
Report = Callable[[ProbeEventKind, str, str], None]  # (kind, probe, message)
LOOPBACK = ("localhost", "127.0.0.1", "::1", "")


@dataclass(frozen=True, slots=True)
class ProbeStatus:
    name: str
    ok: bool
    detail: str


def server_is_local(target: Target, transport: str | None = None) -> bool:
    if transport not in ("tcp", "tcp+tls") and target.socket:
        return True
    return (target.host or "") in LOOPBACK


def local_server_pid(target: Target, info: ServerInfo, transport: str | None = None) -> tuple[int | None, str]:
    """The server's pid when it runs on this host, else None and why."""
    if not server_is_local(target, transport):
        return None, f"the server runs on {target.host}, not this host (its CPU comes with SSH telemetry)"
    pid = server_pid_from(info.variables.get("pid_file"))
    if pid:
        return pid, ""
    candidates = find_server_pids()
    if len(candidates) == 1:
        return candidates[0], ""
    return None, "cannot tell which local mysqld/mariadbd process is the server (pid file not readable)"


def remote_pids(runner: Any, role: str, pid_file: str | None = None) -> Callable[[], list[int]]:
    """The pids of what runs for us on an SSH host: the server (role 'db', from its pid file when known) or
    sysbench (role 'client'), looked up again at each call (a restarted server has a new pid)."""
    binaries = "mariadbd mysqld" if role == "db" else "sysbench"
    find = f"cat {shlex.quote(pid_file)} 2>/dev/null || pidof {binaries}" if pid_file else f"pidof {binaries}"

    def pids() -> list[int]:
        rc, out_text = runner.run(find, timeout=10)
        return [int(p) for p in out_text.split() if p.isdigit()] if rc == 0 else []
    return pids


def remote_probes(names: Sequence[str], label: str, role: str, runner: Any,
                  pid_file: str | None = None) -> list[Probe]:
    """The cpu/proc/profile probes of a host reached over SSH (`runner`: an SshRunner): its CPU and disks, the
    CPU of what runs there for us (role 'db': mysqld; 'client': sysbench), and perf on the server there. One
    command per read."""
    out: list[Probe] = []
    if "cpu" in names:
        cpu = HostCpuProbe(label, reader=runner.read_file)
        cpu.name = f"cpu@{label}"
        out.append(cpu)
    pids = remote_pids(runner, role, pid_file)
    if "proc" in names:
        def ncpu() -> int:
            try:
                return parse_proc_stat(runner.read_file("/proc/stat")).ncpu or 1
            except (OSError, ValueError, TunebenchError):
                return 1

        proc = ProcessCpuProbe({"mysqld" if role == "db" else "sysbench": pids}, label, reader=runner.read_file,
                               ncpu=ncpu(), hz=100, note=f"over SSH ({runner.host.url()})")
        proc.name = f"proc@{label}"
        out.append(proc)
    if "profile" in names and role == "db":
        profile = ProfileProbe({"mysqld": pids}, RemotePerf(runner))
        profile.name = f"profile@{label}"
        out.append(profile)
    return out


def build_probes(selected: Sequence[str] | None, params: ConnParams, target_name: str, info: ServerInfo,
                 server_pid: int | None, client_pids: Callable[[], Iterable[int]] | None,
                 server_note: str = "", pid_file: str | None = None,
                 remote: Sequence[tuple[str, str, Any]] = (), journal: SettingsJournal | None = None,
                 schema: str | None = None) -> list[Probe]:
    """The probes asked for (None = the default ones), in PROBE_NAMES order; then those of the SSH hosts in `remote`
    ((label, role, runner): the database host, the client hosts). What the SQL probes switch on at the server
    goes into `journal` first. `schema`: the run's, whose tables the `tables` probe sizes (default: the
    connection's database)."""
    names = DEFAULT_PROBES if selected is None else tuple(selected)

    def connect() -> Any:
        return open_connection(params, f"{target_name} (probe)", timeout=5)

    probes: list[Probe] = []
    for name in names:
        if name == "status":
            probes.append(StatusProbe(connect, info))
        elif name == "waits":
            probes.append(WaitsProbe(connect, info, journal=journal))
        elif name == "metrics":
            probes.append(MetricsProbe(connect, info, journal=journal))
        elif name == "tables":
            probes.append(TablesProbe(connect, info, schema or params.database or "tunebench"))
        elif name == "statements":
            probes.append(StatementsProbe(connect, info, journal=journal))
        elif name == "cpu":
            probes.append(HostCpuProbe("local"))
        elif name == "proc":
            roles: dict[str, Callable[[], Iterable[int]]] = {}
            if server_pid:
                # re-read the pid file each time: a restarted server has a new pid
                roles["server"] = lambda: [server_pid_from(pid_file) or server_pid]
            if client_pids is not None:
                roles["client"] = client_pids
            roles["tunebench"] = lambda: [os.getpid()]
            note = "" if server_pid else f"server CPU not measured: {server_note or 'server pid unknown'}"
            probes.append(ProcessCpuProbe(roles, "local", note=note))
        elif name == "profile":
            prof_roles: dict[str, Callable[[], Iterable[int]]] = {}
            db_host = any(role == "db" for _label, role, _runner in remote)
            if server_pid and not db_host:  # (a database host given over SSH is where the server is profiled)
                prof_roles["mysqld"] = lambda: [p for p in [server_pid_from(pid_file) or server_pid] if p]
            if client_pids is not None:
                prof_roles["client"] = client_pids
            if prof_roles:
                probes.append(ProfileProbe(prof_roles))
            elif not db_host:
                probes.append(ProfileProbe({"mysqld": list}))  # opens with the reason: no server here
    for label, role, runner in remote:
        probes += remote_probes(names, label, role, runner, pid_file if role == "db" else None)
    if server_pid:  # the server is on this machine: the SQL probes' instants need no clock offset
        for p in probes:
            if isinstance(p, SqlProbe):
                p.same_clock()
    return probes


class ProbeSampler:
    """Every wait is bounded: a probe stuck on a server that does not answer is left behind (its thread
    is a daemon) rather than waited for, and its connection is never touched by another thread."""

    STOP_GRACE = 3.0  # seconds stop() waits for the sampling threads, in all
    CLOSE_GRACE = 6.0  # close(): more seconds for a read in progress, then as many to put settings back
    LOST_GRACE = 1.0  # each of those when the server is known lost (the watch called it, the run ends for it)

    def __init__(self, probes: Sequence[Probe], interval: float, sink: Sink, report: Report,
                 record: Callable[[Event], None] | None = None,
                 on_reading: Callable[[LiveReading], None] | None = None):
        self.probes = list(probes)
        self.interval = interval
        self.sink = sink
        self.report = report
        self.record = record  # where a reading's events go (the session)
        # each reading with its kinds and the cumulative counters behind its rates (a live metrics endpoint's)
        self.on_reading = on_reading
        self.active: list[Probe] = []
        self.statuses: list[ProbeStatus] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        # probe id -> its sampling thread, from start until the thread has really left its loop
        self._threads: dict[int, threading.Thread] = {}
        self._stall_until = 0.0  # time.monotonic() at which the last stall of this process was seen to end
        self._stalls: list[tuple[float, float]] = []  # the last stalls seen (monotonic start, end), for slow reads
        self._watch: threading.Thread | None = None  # (_watch_stalls)

    def open(self) -> list[ProbeStatus]:
        for p in self.probes:
            try:
                detail = p.open()
            except (ProbeUnavailable, TunebenchError, mysql.connector.Error, OSError) as exc:
                with contextlib.suppress(Exception):
                    p.close()
                self.statuses.append(ProbeStatus(p.name, False, str(exc)))
                self.report("probe_unavailable", p.name, f"probe {p.name} unavailable: {exc}")
                continue
            self.active.append(p)
            self.statuses.append(ProbeStatus(p.name, True, detail))
            self.report("probe", p.name, f"probe {p.name}: {detail}")
        return self.statuses

    def start(self) -> None:
        with self._lock:
            self._stop.clear()
            for p in self.active:
                if id(p) in self._threads:
                    continue  # its thread, left behind by stop(), never left its loop: it goes on
                th = threading.Thread(target=self._loop, args=(p,), name=f"probe-{p.name}", daemon=True)
                self._threads[id(p)] = th
                th.start()
            if self.active and (self._watch is None or not self._watch.is_alive()):
                self._watch = threading.Thread(target=self._watch_stalls, name="probe-stall-watch", daemon=True)
                self._watch.start()

    def _watch_stalls(self) -> None:
        """A thread that only waits, one interval at a time: a stop of this process is seen by it whatever the
        probes were doing. When every probe was inside a read as the stop landed, none was waiting to see it, and
        each said "a read took 2.0 s" of the stop's time (a clean-clone run at load 6-9, issue 41)."""
        while True:
            deadline = time.monotonic() + self.interval
            if self._stop.wait(self.interval):
                return
            now = time.monotonic()
            if now - deadline >= self.interval:
                self._stalled(now - deadline, now)

    def _stopping(self, probe: Probe) -> bool:
        with self._lock:
            if self._stop.is_set():
                self._threads.pop(id(probe), None)
                return True
            return False

    def _loop(self, probe: Probe) -> None:
        rates = RateTracker()
        failing: str | None = None
        behind_said = False
        first = True  # the first read also sets up (an SSH probe's connection): not a sign of falling behind
        deadline = time.monotonic()
        overslept = 0.0  # how long after its deadline the last wait ended
        slow: tuple[float, float] | None = None  # a slow read (monotonic start, end) not told yet
        while not self._stopping(probe):
            t_start, m_start = time.time(), time.monotonic()
            try:
                r = probe.read()
            except (TunebenchError, mysql.connector.Error, OSError, ValueError) as exc:
                msg = getattr(exc, "msg", None) or str(exc)
                if failing is None and not self._stop.is_set():
                    self.report("probe_error", probe.name, f"probe {probe.name} failing: {msg}")
                failing = msg
                rates.reset()  # a restarted server starts its counters again
            else:
                t = r.at if r.at is not None else (t_start + time.time()) / 2
                if self._stop.is_set():
                    continue  # a read that outlived stop(): the session may be closed already
                if failing is not None:
                    self.report("probe", probe.name, f"probe {probe.name} recovered")
                    failing = None
                values: dict[str, float] = dict(r.gauges)
                kinds = dict.fromkeys(r.gauges, "gauge")
                for name, v in (*rates.rates(t, r.counters, r.uncertainty).items(), *r.rates.items()):
                    values[name] = v
                    kinds[name] = "rate"
                if values:
                    self.sink(t, values, kinds)
                if self.on_reading is not None and (values or r.counters):
                    self.on_reading(LiveReading(t, values, kinds, dict(r.counters)))
                if self.record is not None:
                    for ev in r.events:
                        self.record(ev)
            deadline += self.interval
            now = time.monotonic()
            was_first, first = first, False
            if slow is not None and now - slow[1] >= self.interval and not self._stop.is_set():
                # told one read later: a stop of this process that landed inside the read is seen by then by
                # a probe that was waiting (it woke late), and the read's time was the stop's
                if not behind_said and not self._in_a_stall(*slow):
                    behind_said = True  # said once
                    self.report("probe_slow", probe.name, f"probe {probe.name}: a read took {slow[1] - slow[0]:.1f} "
                                f"s (one every {self.interval:g} s asked): its series skips the seconds in between "
                                "while its reads are this slow")
                slow = None
            if deadline < now:  # fell behind (a slow server): skip the missed ticks, keep the cadence
                late = now - deadline
                if not was_first and late >= self.interval and not self._stop.is_set():
                    # seconds without a sample: said, or a gap in the series looks like no data
                    busy = now - m_start  # the read and its samples' delivery
                    if busy < self.interval:
                        self._stalled(overslept, now)  # both quick: the time went by while the loop waited
                    elif not behind_said and slow is None:
                        slow = (m_start, now)
                deadline = now + self.interval - (late % self.interval)
            self._stop.wait(deadline - now)
            overslept = time.monotonic() - deadline

    def _stalled(self, late: float, now: float) -> None:
        """A probe's wait ended `late` seconds after its deadline and its read was quick: this process did not run
        in that time (SIGSTOP then SIGCONT, a suspended machine, no CPU for it). Said once for every probe that saw the
        same stall, and not as a slow read of the probe's (it said "a read took 0.0 s")."""
        with self._lock:
            seen = now - late < self._stall_until  # the stall another probe has told already
            self._stall_until = max(self._stall_until, now)
            self._stalls = [*self._stalls[-7:], (now - late, now)]
        if not seen:
            self.report("probe_stalled", "all", f"probes: this process was stopped for at least {late:.1f} s "
                        "(SIGSTOP, a suspended machine, or no CPU for it), not slow reads: the series have no samples "
                        "for that time")

    def _in_a_stall(self, start: float, end: float) -> bool:
        """Whether a read from `start` to `end` (monotonic) spent all but its own short time in a stall of this
        process another probe saw (a waiting probe sees a stall's length less at most one interval)."""
        with self._lock:
            stalls = list(self._stalls)
        inside = max((min(end, s1) - max(start, s0) for s0, s1 in stalls), default=0.0)
        return end - start - inside < 1.5 * self.interval

    def stop(self, grace: float | None = None) -> list[Probe]:
        """Stop sampling within STOP_GRACE seconds (or `grace`); returns the probes whose thread is still inside
        a read (a server that does not answer), left behind."""
        self._stop.set()
        return self._join(self.STOP_GRACE if grace is None else grace)

    def _join(self, grace: float) -> list[Probe]:
        """Wait up to `grace` seconds in all for the sampling threads; the probes still inside a read."""
        end = time.monotonic() + grace
        with self._lock:
            threads = list(self._threads.values())
        for th in threads:
            th.join(timeout=max(0.0, end - time.monotonic()))
        with self._lock:
            return [p for p in self.active if id(p) in self._threads]

    def close(self, lost: bool = False) -> None:
        """Stop sampling and put back whatever the probes changed on the server, within bounded time: a
        slow read (a loaded server) gets CLOSE_GRACE seconds to end; a probe still inside one after that
        (a server that does not answer) is left as it is. `lost`: the server watch has called the server lost
        (the run ends for it), so a read in progress gets LOST_GRACE seconds, not the graces a slow one gets."""
        stop_grace, close_grace = (self.LOST_GRACE, self.LOST_GRACE) if lost else (self.STOP_GRACE, self.CLOSE_GRACE)
        self.stop(stop_grace)
        end = time.monotonic() + close_grace
        stuck = self._join(close_grace)
        for p in stuck:
            self.report("probe_error", p.name, f"probe {p.name}: the server did not answer within "
                        f"{stop_grace + close_grace:.0f} s; its connection is left as it is "
                        "(settings not put back)")
        closing = [p for p in self.active if p not in stuck]
        failures: list[tuple[Probe, str]] = []

        def close_all() -> None:
            for p in closing:
                try:
                    p.close()
                except (TunebenchError, mysql.connector.Error, OSError) as exc:
                    failures.append((p, getattr(exc, "msg", None) or str(exc)))

        # close() speaks to the server; a frozen one must not hold the run's end forever
        closer = threading.Thread(target=close_all, name="probe-close", daemon=True)
        closer.start()
        closer.join(max(close_grace, end - time.monotonic()))
        if closer.is_alive():
            self.report("probe_error", "all", f"probes: the server did not answer within {close_grace:.0f} s "
                        "while they put their settings back; given up")
        for p, msg in list(failures):
            self.report("probe_error", p.name, f"probe {p.name} could not put its settings back: {msg}")
        self.active = []


def status_map(statuses: Iterable[ProbeStatus]) -> dict[str, dict[str, Any]]:
    """{probe: {"ok", "detail"}}: what a run's result and `doctor` report."""
    return {s.name: {"ok": s.ok, "detail": s.detail} for s in statuses}


def start_sampler(probes: list[Any], interval: float, writer: SessionWriter,
                  on_samples: Callable[[float, dict[str, float]], None], on_store_failed: Callable[[StoreError], None],
                  note: Callable[[str], None], record: Callable[[Event], None],
                  on_reading: Callable[[LiveReading], None] | None = None) -> tuple[ProbeSampler, dict[str, Any]]:
    """A started sampler whose seconds go to the session (flushed about once a second) and to `on_samples`;
    a probe that fails or stops is a note and an event. Returns it with each probe's status."""
    def sink(t: float, values: dict[str, float], kinds: dict[str, str]) -> None:
        writer.add_samples(t, values, kinds)
        try:
            writer.maybe_flush()
        except StoreError as exc:
            on_store_failed(exc)
        on_samples(t, values)

    def report(kind: ProbeEventKind, probe: str, message: str) -> None:
        if kind != "probe":
            note(message)
        record(Event(time.time(), kind, message, {"probe": probe}))

    def reading_event(ev: Event) -> None:
        if ev.kind == "note":
            note(ev.label)
        record(ev)

    sampler = ProbeSampler(probes, interval, sink, report, reading_event, on_reading)
    status = status_map(sampler.open())
    sampler.start()
    return sampler, status
