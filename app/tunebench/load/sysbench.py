"""The sysbench engine: builds sysbench 1.0 command lines, runs them, parses `--report-interval=1` live."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunebench.core.errors import EngineError
from tunebench.core.histogram import LatencyHistogram
from tunebench.core.interval import Interval
from tunebench.hosts.runner import LocalProcess, LocalRunner
from tunebench.load.engine import ClientGroup, IntervalSink, NoteSink
from tunebench.load.options import OPTIONS
from tunebench.mysql.target import ConnParams

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


def parse_interval_line(line: str) -> SysbenchLine | None:
    m = INTERVAL_RE.match(line.strip())
    if not m:
        return None
    g = m.groupdict()
    return SysbenchLine(float(g["sec"]), int(g["thds"]), float(g["tps"]), float(g["qps"]), float(g["r"]),
                        float(g["w"]), float(g["o"]), float(g["pct"]), float(g["lat"]), float(g["err"]),
                        float(g["rc"]))


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
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    except OSError:
        return None
    return out.stdout.strip().removeprefix("sysbench ").split()[0] if out.stdout.strip() else None


def _flag(name: str, value: Any) -> str:
    if isinstance(value, bool):
        value = "on" if value else "off"
    return f"--{name.replace('_', '-')}={value}"


def build_command(group: ClientGroup, params: ConnParams, threads: int, seconds: int,
                  command: str = "run") -> list[str]:
    """The sysbench argv for one group. The password goes through $MYSQL_PWD, never argv."""
    binary = sysbench_binary()
    if not binary:
        raise EngineError("sysbench not found on PATH (make run installs it: apt-get install sysbench)")
    script = group.lua_script or group.workload.sysbench_script
    argv = [binary, script, "--db-driver=mysql", f"--mysql-user={params.user}",
            f"--mysql-db={params.database or 'tunebench'}"]
    if params.socket:
        argv.append(f"--mysql-socket={params.socket}")
    else:
        argv += [f"--mysql-host={params.host}", f"--mysql-port={params.port}"]
    for name, value in group.options.items():
        spec = OPTIONS[name]
        if name == "rand_seed" and not value:
            continue
        # Table shape always (it must match the prepared data) and sysbench's core --rand-* options;
        # script options only where they differ from sysbench's defaults, so a foreign Lua script that
        # declares none of them still runs.
        if spec.sysbench_global or name in ("tables", "table_size") or value != spec.default:
            argv.append(_flag(name, value))
    argv += [f"--threads={threads}", f"--time={seconds}", "--report-interval=1", "--percentile=95",
             "--histogram=off", command]
    return argv


class SysbenchEngine:
    """One sysbench process per group per step (sysbench cannot change its thread count mid-run)."""

    name = "sysbench"

    def __init__(self, params: ConnParams, groups: list[ClientGroup], runner: LocalRunner | None = None,
                 notes: NoteSink | None = None):
        self.params = params
        self.groups = groups
        self.runner = runner or LocalRunner()
        self._notes = notes or (lambda _m: None)
        self._procs: list[LocalProcess] = []
        self.summaries: list[dict[str, Any]] = []

    def open(self) -> None:
        if not sysbench_binary():
            raise EngineError("sysbench not found on PATH (make run installs it: apt-get install sysbench)")

    def client_pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def close(self) -> None:
        for p in self._procs:
            p.stop()
        self._procs = []

    def run_step(self, threads: Mapping[str, int], seconds: int, sink: IntervalSink,
                 stop: threading.Event, warmup: int = 0) -> dict[str, LatencyHistogram | None]:
        env = {"MYSQL_PWD": self.params.password}
        running = []
        for g in self.groups:
            n = threads.get(g.name, 0)
            if n <= 0:
                continue
            argv = build_command(g, self.params, n, seconds)
            proc = self.runner.start(argv, env=env)
            self._procs.append(proc)
            running.append((g, proc, time.time()))
        readers = [threading.Thread(target=self._pump, args=(g, proc, t0, sink), daemon=True)
                   for g, proc, t0 in running]
        for r in readers:
            r.start()
        deadline = time.monotonic() + seconds + 60
        while any(r.is_alive() for r in readers):
            if stop.is_set() or time.monotonic() > deadline:
                for _g, proc, _t0 in running:
                    proc.stop()
            for r in readers:
                r.join(timeout=0.25)
        failures = []
        for g, proc, _t0 in running:
            outcome = proc.wait(30)
            self._procs.remove(proc)
            text = "\n".join(outcome.tail)
            self.summaries.append({"group": g.name, "threads": threads[g.name], **parse_summary(text)})
            if outcome.returncode not in (0, None) and not stop.is_set():
                fatal = [ln for ln in outcome.tail if "FATAL" in ln or "error" in ln.lower()]
                failures.append(f"sysbench ({g.name}) exited with {outcome.returncode}: "
                                f"{(fatal or list(outcome.tail) or ['no output'])[-1].strip()}")
        if failures:
            raise EngineError("; ".join(failures))
        return {g.name: None for g in self.groups}

    def _pump(self, group: ClientGroup, proc: LocalProcess, t0: float, sink: IntervalSink) -> None:
        for line in proc.lines():
            parsed = parse_interval_line(line)
            if parsed is None:
                continue
            lat = {"p95": parsed.lat_ms} if parsed.percentile == 95 else {}
            sink(Interval(t=t0 + parsed.sec, group=group.name, threads=parsed.threads, tps=parsed.tps,
                          qps=parsed.qps, reads=parsed.reads, writes=parsed.writes, other=parsed.other,
                          lat_ms=lat, errors=parsed.errors, reconnects=parsed.reconnects))


def lua_script_exists(script: str) -> bool:
    return Path(script).exists() or Path("/usr/share/sysbench", f"{script}.lua").exists()
