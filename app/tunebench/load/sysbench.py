"""The sysbench engine: builds sysbench 1.0 command lines, runs them, parses `--report-interval=1` live."""

from __future__ import annotations

import math
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunebench.core.errors import EngineError, TunebenchError
from tunebench.core.histogram import LatencyHistogram
from tunebench.core.interval import Interval
from tunebench.core.probe import name_part
from tunebench.core.schedule import OpenLoop
from tunebench.core.target import ConnParams
from tunebench.hosts.runner import LocalRunner, child_env
from tunebench.load.engine import ClientGroup, IntervalSink, NoteSink

# `[ 1s ] thds: 4 tps: 1.00 qps: 2.00 (r/w/o: 1.00/0.50/0.50) lat (ms,95%): 5.28 err/s: 0.00 reconn/s: 0.00`
# Some builds print `err/s 0.00` without the colon.
INTERVAL_RE = re.compile(
    r"^\[\s*(?P<sec>\d+(?:\.\d+)?)s\s*\]\s+thds:\s*(?P<thds>\d+)\s+tps:\s*(?P<tps>[\d.]+)\s+"
    r"qps:\s*(?P<qps>[\d.]+)\s+\(r/w/o:\s*(?P<r>[\d.]+)/(?P<w>[\d.]+)/(?P<o>[\d.]+)\)\s+"
    r"lat\s+\(ms,(?P<pct>[\d.]+)%\):\s*(?P<lat>[\d.]+)\s+err/s:?\s*(?P<err>[\d.]+)\s+"
    r"reconn/s:?\s*(?P<rc>[\d.]+)"
)
_SUMMARY_PATTERNS = {
    "read": r"read:\s+(\d+)",
    "write": r"write:\s+(\d+)",
    "other": r"other:\s+(\d+)",
    "total": r"total:\s+(\d+)",
    "transactions": r"transactions:\s+(\d+)",
    "queries": r"queries:\s+(\d+)",
    "ignored_errors": r"ignored errors:\s+(\d+)",
    "reconnects": r"reconnects:\s+(\d+)",
    "total_time_s": r"total time:\s+([\d.]+)s",
    "events": r"total number of events:\s+(\d+)",
    "lat_min_ms": r"min:\s+([\d.]+)",
    "lat_avg_ms": r"avg:\s+([\d.]+)",
    "lat_max_ms": r"max:\s+([\d.]+)",
    "lat_p95_ms": r"95th percentile:\s+([\d.]+)",
}


@dataclass(frozen=True, slots=True)
class SysbenchLine:
    sec: float
    threads: int
    tps: float
    qps: float
    reads: float
    writes: float
    other: float
    percentile: float
    lat_ms: float
    errors: float
    reconnects: float
    queue: int | None = None  # --rate: events generated and not started yet (sysbench's queue length)
    wall: float | None = None  # the wall clock (epoch s, on sysbench's host) when it took the second's counters


def parse_interval_line(line: str) -> SysbenchLine | None:
    m = INTERVAL_RE.match(line.strip())
    if not m:
        return None
    g = m.groupdict()
    return SysbenchLine(float(g["sec"]), int(g["thds"]), float(g["tps"]), float(g["qps"]), float(g["r"]),
                        float(g["w"]), float(g["o"]), float(g["pct"]), float(g["lat"]), float(g["err"]),
                        float(g["rc"]))


# sysbench runs this script, which runs the workload's and reports each second through its own hook with a token
# made for the run: a line a script prints (`[ 1s ] thds: 9999 tps: 123456789.00 …`) is never taken for a
# measurement. The hook gets sysbench's own counters (the ones its default report prints).
REPORT_SCRIPT = "tb_report.lua"
REPORT_MARK = "@tb-report"
REPORT_LUA = """-- Tunebench: runs the workload's script (TB_SCRIPT) and reports each second with the run's token
local script = os.getenv("TB_SCRIPT")
local token = os.getenv("TB_REPORT_TOKEN")
if not script:find("/") then
  script = assert(package.searchpath(script, package.path), "sysbench has no script " .. script)
end
dofile(script)
-- the wall clock when the hook runs, just after sysbench took the second's counters: where the second really ended
-- (the reader of these lines may get them late; sysbench's own elapsed time is not on the wall clock)
local ffi = require("ffi")
pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } tb_timespec; int clock_gettime(int, tb_timespec *);")
local ts = ffi.new("tb_timespec")
local function wall()
  if ffi.C.clock_gettime(0, ts) ~= 0 then return -1 end
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
sysbench.hooks.report_intermediate = function(stat)
  local s = stat.time_interval
  io.stdout:write(string.format("@tb-report %s %.3f %u %.4f %.4f %.4f %.4f %.4f %.6f %.4f %.4f %d %.6f\\n", token,
    stat.time_total, stat.threads_running, stat.events / s, (stat.reads + stat.writes + stat.other) / s,
    stat.reads / s, stat.writes / s, stat.other / s, stat.latency_pct * 1000, stat.errors / s, stat.reconnects / s,
    stat.queue_length or -1, wall()))
  io.stdout:flush()
end
"""


def parse_report_line(line: str, token: str, percentile: float = 95.0) -> SysbenchLine | None:
    """A second of sysbench's own report through Tunebench's hook (REPORT_LUA), carrying the run's token."""
    parts = line.split()
    if len(parts) not in (12, 13, 14) or parts[0] != REPORT_MARK or parts[1] != token:
        return None
    try:
        sec, thds = float(parts[2]), int(parts[3])
        tps, qps, r, w, o, lat, err, rc = (float(x) for x in parts[4:12])
        queue = int(parts[12]) if len(parts) >= 13 else -1
        wall = float(parts[13]) if len(parts) == 14 else -1.0
    except ValueError:
        return None
    return SysbenchLine(sec, thds, tps, qps, r, w, o, percentile, lat, err, rc, queue if queue >= 0 else None,
                        wall if math.isfinite(wall) and wall > 0 else None)


def parse_summary(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, pattern in _SUMMARY_PATTERNS.items():
        m = re.search(pattern, text)
        if m:
            out[key] = float(m.group(1))
    return out


def sysbench_binary() -> str | None:
    return shutil.which("sysbench")


def sysbench_version() -> str | None:
    binary = sysbench_binary()
    if not binary:
        return None
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10, env=child_env())
    except OSError:
        return None
    return out.stdout.strip().removeprefix("sysbench ").split()[0] if out.stdout.strip() else None


def build_command(group: ClientGroup, params: ConnParams, threads: int, seconds: int,
                  command: str = "run", binary: str | None = None, rate: int | None = None) -> list[str]:
    """The sysbench argv for one group. The password goes through $MYSQL_PWD, never argv. `binary`: the
    remote host's sysbench (default: this machine's). `rate`: sysbench's --rate (open loop: one generator
    thread queues events at that mean rate, Poisson; the latency it reports counts the time in its queue)."""
    binary = binary or sysbench_binary()
    if not binary:
        raise EngineError("sysbench not found on PATH (make run installs it: apt-get install sysbench)")
    script, flags = group.family.sysbench_args(group.workload, group.options)
    if script.endswith(".lua") and os.path.exists(script) and binary != "sysbench":
        script = os.path.abspath(script)  # sysbench may run in a folder of its own (TLS files)
    argv = [binary, script, "--db-driver=mysql", f"--mysql-user={params.user}",
            f"--mysql-db={params.database or 'tunebench'}"]
    if params.socket:
        argv.append(f"--mysql-socket={params.socket}")
    else:
        argv += [f"--mysql-host={params.host}", f"--mysql-port={params.port}"]
        argv.append(f"--mysql-ssl={'on' if sysbench_tls(params) else 'off'}")
    argv += flags
    argv += [f"--threads={threads}", f"--time={seconds}", "--report-interval=1", "--percentile=95",
             "--histogram=off", *([f"--rate={rate}"] if rate else []), command]
    return argv


def sysbench_tls(params: ConnParams) -> bool:
    """Whether sysbench's connections use TLS. sysbench 1.0 (`--mysql-ssl=on`) loads cacert.pem,
    client-cert.pem and client-key.pem from its working folder and checks the server's certificate against
    that CA: it can use TLS only with all three (--ssl-ca, --ssl-cert, --ssl-key)."""
    return params.tls and bool(params.ssl_ca and params.ssl_cert and params.ssl_key) and not params.socket


def check_sysbench_tls(params: ConnParams) -> str | None:
    """An EngineError for what sysbench cannot do; a note when it runs without the TLS the target asked."""
    if params.socket or not params.tls:
        return None
    if sysbench_tls(params):
        return None
    if params.tls_required:
        raise EngineError(f"ssl-mode {params.ssl_mode} with the sysbench engine needs --ssl-ca, --ssl-cert and "
                          "--ssl-key on the target (sysbench 1.0 uses TLS only with all three); or use the builtin "
                          "engine")
    return ("sysbench 1.0 uses TLS only with a CA, a client certificate and its key (--ssl-ca/--ssl-cert/--ssl-key "
            "on the target): its connections run without TLS")


def tls_files(params: ConnParams) -> dict[str, str]:
    """The target's CA, certificate and key under the names sysbench 1.0 loads from its working folder."""
    return {"cacert.pem": str(params.ssl_ca), "client-cert.pem": str(params.ssl_cert),
            "client-key.pem": str(params.ssl_key)}


def tls_folder(params: ConnParams) -> tempfile.TemporaryDirectory[str]:
    """A private working folder for sysbench: its report script, and the TLS files when it uses TLS (links:
    nothing is copied)."""
    folder = tempfile.TemporaryDirectory(prefix="tb-sysbench-")
    with open(os.path.join(folder.name, REPORT_SCRIPT), "w") as f:
        f.write(REPORT_LUA)
    if sysbench_tls(params):
        for name, path in tls_files(params).items():
            os.symlink(path, os.path.join(folder.name, name))
    return folder


def split_threads(n: int, hosts: int) -> list[int]:
    """`n` client threads over `hosts` client hosts: the concurrency axis stays the number of users."""
    base, extra = divmod(n, hosts)
    return [base + (1 if i < extra else 0) for i in range(hosts)]


class HostMerge:
    """Per-second intervals of one group from several client hosts, merged when every host still running
    has reported that second: sums of tps/qps/threads/errors, and the worst host's p95 (percentiles of
    separate histograms do not add up; the max is what the slowest clients saw)."""

    def __init__(self, group: str, hosts: Sequence[str], sink: IntervalSink):
        self.group = group
        self.expected = set(hosts)
        self.sink = sink
        self.pending: dict[int, dict[str, Interval]] = {}
        self.lock = threading.Lock()

    def add(self, host: str, sec: int, iv: Interval) -> None:
        with self.lock:
            self.pending.setdefault(sec, {})[host] = iv
            self._emit_ready()

    def host_done(self, host: str) -> None:
        with self.lock:
            self.expected.discard(host)
            self._emit_ready()

    def _emit_ready(self) -> None:
        for sec in sorted(self.pending):
            got = self.pending[sec]
            if not self.expected <= set(got):
                break
            del self.pending[sec]
            ivs = [got[h] for h in sorted(got)]  # also a host that reported this second, then finished
            p95 = [v for iv in ivs if (v := iv.lat_ms.get("p95")) is not None]
            self.sink(Interval(t=max(iv.t for iv in ivs), group=self.group, threads=sum(iv.threads for iv in ivs),
                               tps=sum(iv.tps for iv in ivs), qps=sum(iv.qps for iv in ivs),
                               reads=sum(iv.reads for iv in ivs), writes=sum(iv.writes for iv in ivs),
                               other=sum(iv.other for iv in ivs), lat_ms={"p95": max(p95)} if p95 else {},
                               errors=sum(iv.errors for iv in ivs), reconnects=sum(iv.reconnects for iv in ivs),
                               rate=ivs[0].rate, backlog=None if any(iv.backlog is None for iv in ivs)
                               else sum(iv.backlog or 0.0 for iv in ivs)))


QUEUE_FULL = "The event queue is full"  # sysbench 1.0's FATAL line when --rate outruns its threads


class SysbenchEngine:
    """One sysbench process per group per step (sysbench cannot change its thread count mid-run), on this
    machine or on client hosts through SSH runners (the step's threads split over the hosts; the hosts'
    seconds merged into the group's, each host also recorded as `client.GROUP@HOST.*`)."""

    name = "sysbench"

    def __init__(self, params: ConnParams, groups: list[ClientGroup], runner: Any = None,
                 notes: NoteSink | None = None, runners: Sequence[Any] = (),
                 host_sink: Callable[[float, dict[str, float]], None] | None = None,
                 on_gap: Callable[[float, str, dict[str, Any]], None] | None = None):
        self.params = params
        self.groups = groups
        self._tls_dir: tempfile.TemporaryDirectory[str] | None = None
        self._remote_dirs: dict[str, str] = {}  # client host -> its private folder (report script, TLS files)
        self._token = secrets.token_hex(8)  # the report lines of this engine's sysbench (REPORT_LUA)
        self.runners = list(runners) or [runner or LocalRunner()]
        self.remote = any(getattr(r, "host", "local") != "local" for r in self.runners)
        self._notes = notes or (lambda _m: None)
        self._host_sink = host_sink or (lambda _t, _v: None)
        self._on_gap = on_gap or (lambda _t, _label, _data: None)
        self._procs: list[Any] = []
        self.summaries: list[dict[str, Any]] = []
        self.incomplete_steps = 0
        self._rates: dict[str, OpenLoop] = {}  # the step's open-loop groups
        self.service_hists: dict[str, LatencyHistogram] = {}  # sysbench reports no service times
        self.ended: str | None = None  # sysbench runs its seconds

    def open(self) -> None:
        note = check_sysbench_tls(self.params)
        if note:
            self._notes(note)
        if not self.remote and not sysbench_binary():
            raise EngineError("sysbench not found on PATH (make run installs it: apt-get install sysbench)")
        self._tls_dir = tls_folder(self.params)  # sysbench's working folder here (its report script, TLS files)
        for r in self.runners if self.remote else ():
            r.connect()
            rc, _out = r.run("command -v sysbench && sysbench --version")
            if rc != 0:
                raise EngineError(f"{r.label}: sysbench not found on the client host (apt-get install sysbench)")
            # the same folder there, private to its user (TLS keys), removed at the end
            files = {name: os.path.join(self._tls_dir.name, name) for name in os.listdir(self._tls_dir.name)}
            self._remote_dirs[self._label(r)] = r.put_private_folder(files, "tb-sysbench-")

    def client_pids(self) -> list[int]:
        return [p.pid for p in self._procs if p.pid > 0]

    def close(self) -> None:
        for p in self._procs:
            p.stop()
        self._procs = []
        if self._tls_dir is not None:
            self._tls_dir.cleanup()
            self._tls_dir = None
        for r in self.runners:
            folder = self._remote_dirs.pop(self._label(r), None)
            if folder:
                r.remove_folder(folder)
            if hasattr(r, "close"):
                r.close()

    @staticmethod
    def _label(runner: Any) -> str:
        return str(getattr(runner, "label", "local"))

    def run_step(self, threads: Mapping[str, int], seconds: int, sink: IntervalSink,
                 stop: threading.Event, warmup: int = 0, ramp: IntervalSink | None = None,
                 rates: Mapping[str, OpenLoop] | None = None) -> dict[str, LatencyHistogram | None]:
        # sysbench's clock starts once its threads have connected: no ramp seconds to report
        self._rates = dict(rates or {})
        running = []
        for g in self.groups:
            n = threads.get(g.name, 0)
            if n <= 0:
                continue
            script = g.family.sysbench_args(g.workload, g.options)[0]
            if script.endswith(".lua"):
                script = os.path.abspath(script)  # sysbench runs in a folder of its own
            env = {"MYSQL_PWD": self.params.password, "TB_SCRIPT": script, "TB_REPORT_TOKEN": self._token}
            if script.endswith(".lua"):  # modules beside a script given by path: sysbench looks in its cwd only
                env["LUA_PATH"] = f"{Path(script).parent}/?.lua;;"
            shares = [(r, k) for r, k in zip(self.runners, split_threads(n, len(self.runners)), strict=True) if k]
            merge = HostMerge(g.name, [self._label(r) for r, _k in shares], sink) if self.remote else None
            load = self._rates.get(g.name)
            for runner, k in shares:
                # a host's share of the group's rate, as of its threads (each host's sysbench has its own queue)
                rate = None if load is None else max(1, round(load.rate * k / n))
                argv = build_command(g, self.params, k, seconds, binary="sysbench" if self.remote else None,
                                     rate=rate)
                argv[1] = REPORT_SCRIPT  # which runs the workload's script (TB_SCRIPT) and reports with the token
                assert self._tls_dir is not None, "open() first"
                try:
                    folder = self._remote_dirs[self._label(runner)] if self.remote else self._tls_dir.name
                    proc = runner.start(argv, env=env, cwd=folder)
                except TunebenchError as exc:
                    if not self.remote:
                        raise
                    self._gap(runner, f"{exc}")
                    if merge:
                        merge.host_done(self._label(runner))
                    continue
                self._procs.append(proc)
                running.append((g, runner, proc, time.time(), merge, k))
        readers = [threading.Thread(target=self._pump, args=(g, runner, proc, t0, sink, merge, k), daemon=True)
                   for g, runner, proc, t0, merge, k in running]
        for r in readers:
            r.start()
        deadline = time.monotonic() + seconds + 60
        while any(r.is_alive() for r in readers):
            if stop.is_set() or time.monotonic() > deadline:
                for _g, _r, proc, _t0, _m, _k in running:
                    proc.stop()
            for r in readers:
                r.join(timeout=0.25)
        failures = []
        for g, runner, proc, _t0, _m, _k in running:
            outcome = proc.wait(30)
            self._procs.remove(proc)
            text = "\n".join(outcome.tail)
            self.summaries.append({"group": g.name, "threads": threads[g.name], "host": self._label(runner),
                                   **parse_summary(text)})
            if getattr(proc, "lost", False):
                continue  # a gap, reported as it happened
            if outcome.returncode not in (0, None) and not stop.is_set() and any(
                    QUEUE_FULL in ln for ln in outcome.tail):
                # --rate beyond what its threads serve: sysbench stops the step; said, and the step is incomplete
                load = self._rates.get(g.name)
                self._gap(runner, f"sysbench's event queue overflowed: {threads[g.name]} thread(s) did not keep up "
                                  f"with --rate {load.rate if load else '?':,.0f}/s; the step stopped there")
                continue
            if outcome.returncode not in (0, None) and not stop.is_set():
                fatal = [ln for ln in outcome.tail if "FATAL" in ln or "error" in ln.lower()]
                where = f" on {self._label(runner)}" if self.remote else ""
                failures.append(f"sysbench ({g.name}){where} exited with {outcome.returncode}: "
                                f"{(fatal or list(outcome.tail) or ['no output'])[-1].strip()}")
        if failures:
            raise EngineError("; ".join(failures))
        return {g.name: None for g in self.groups}

    def _gap(self, runner: Any, why: str) -> None:
        """A client host lost mid-step: a gap on the timeline, the step marked incomplete; the next step
        reconnects (with backoff) and goes on."""
        self.incomplete_steps += 1
        label = f"gap: client host {self._label(runner)} lost ({why})"
        self._notes(label)
        self._on_gap(time.time(), label, {"host": self._label(runner), "reason": why})

    def _pump(self, group: ClientGroup, runner: Any, proc: Any, t0: float, sink: IntervalSink,
              merge: HostMerge | None, threads: int) -> None:
        """Reads one sysbench's output to its end. A reader that fails ends its sysbench and the step is
        incomplete, said in one line (never a short step that passes for a whole one)."""
        try:
            self._read(group, runner, proc, t0, sink, merge, threads)
        except Exception as exc:  # whatever stopped the reader, the step must not pass for a whole one
            proc.stop()
            self.incomplete_steps += 1
            label = f"gap: sysbench's output ({group.name}, {self._label(runner)}) could not be read: {exc!r}"
            self._notes(label)
            self._on_gap(time.time(), label, {"host": self._label(runner), "reason": repr(exc)})
            if merge is not None:
                merge.host_done(self._label(runner))

    def _read(self, group: ClientGroup, runner: Any, proc: Any, t0: float, sink: IntervalSink,
              merge: HostMerge | None, threads: int) -> None:
        host = self._label(runner)
        warned = False
        for line in proc.lines():
            parsed = parse_report_line(line, self._token)
            if parsed is None:
                continue
            if parsed.threads > threads and not warned:  # sysbench never runs more threads than it was given
                warned = True
                self._notes(f"sysbench ({group.name}) reported {parsed.threads} threads of {threads}: not a "
                            "measurement, left out")
            if parsed.threads > threads:
                continue
            lat = {"p95": parsed.lat_ms} if parsed.percentile == 95 else {}
            load = self._rates.get(group.name)
            open_loop: dict[str, Any] = {} if load is None else {
                "rate": load.rate, "backlog": None if parsed.queue is None else float(parsed.queue)}
            iv = Interval(t=t0 + parsed.sec, group=group.name, threads=parsed.threads, tps=parsed.tps,
                          qps=parsed.qps, reads=parsed.reads, writes=parsed.writes, other=parsed.other,
                          lat_ms=lat, errors=parsed.errors, reconnects=parsed.reconnects,
                          edge=None if self.remote else parsed.wall, **open_loop)
            if merge is None:
                sink(iv)
                continue
            prefix = f"client.{group.name}@{name_part(host)}"  # one dotted component: main@10_0_0_5
            values = {f"{prefix}.tps": iv.tps, f"{prefix}.qps": iv.qps, f"{prefix}.threads": float(iv.threads)}
            if "p95" in lat:
                values[f"{prefix}.lat.p95"] = lat["p95"]
            self._host_sink(iv.t, values)
            merge.add(host, round(parsed.sec), iv)
        if merge is not None:
            if getattr(proc, "lost", False):
                self._gap(runner, "connection dropped")
            merge.host_done(host)
