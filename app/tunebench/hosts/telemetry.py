"""Host telemetry from /proc: CPU of the whole host and of chosen processes.

Parsing is separate from reading: the parsers take the text of /proc files, so the same code reads a
remote host over SSH later (one `cat` per sample) as it reads this one now.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tunebench.core.probe import ProbeUnavailable, Reading, name_part
from tunebench.hosts.server_binary import program_of

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """Aggregate CPU jiffies of a host (the 'cpu' line of /proc/stat), plus a few gauges."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int
    ncpu: int
    procs_running: int
    procs_blocked: int
    ctxt: int

    @property
    def total(self) -> int:
        # guest time is already included in user/nice by the kernel.
        return (self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq
                + self.steal)


def parse_proc_stat(text: str) -> CpuTimes:
    values: dict[str, int] = {}
    cpu: list[int] | None = None
    ncpu = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        key = parts[0]
        if key == "cpu":
            cpu = [int(x) for x in parts[1:]] + [0] * 10
        elif key.startswith("cpu") and key[3:].isdigit():
            ncpu += 1
        elif key in ("procs_running", "procs_blocked", "ctxt") and len(parts) > 1:
            values[key] = int(parts[1])
    if cpu is None:
        raise ValueError("no aggregate 'cpu' line in /proc/stat")
    user, nice, system, idle, iowait, irq, softirq, steal = cpu[:8]
    return CpuTimes(user, nice, system, idle, iowait, irq, softirq, steal, ncpu=max(ncpu, 1),
                    procs_running=values.get("procs_running", 0), procs_blocked=values.get("procs_blocked", 0),
                    ctxt=values.get("ctxt", 0))


def cpu_percentages(prev: CpuTimes, cur: CpuTimes) -> dict[str, float] | None:
    """Share of the whole host (all CPUs = 100 %) spent in each state between two readings."""
    total = cur.total - prev.total
    if total <= 0:
        return None

    def pct(a: int, b: int) -> float:
        return max(0.0, 100.0 * (a - b) / total)

    return {
        "user": pct(cur.user + cur.nice, prev.user + prev.nice),
        "system": pct(cur.system + cur.irq + cur.softirq, prev.system + prev.irq + prev.softirq),
        "iowait": pct(cur.iowait, prev.iowait),
        "steal": pct(cur.steal, prev.steal),
        "idle": pct(cur.idle, prev.idle),
    }


@dataclass(frozen=True, slots=True)
class ProcTimes:
    pid: int
    comm: str
    utime: int  # clock ticks, all threads
    stime: int
    starttime: int  # clock ticks after boot: tells a reused pid from the old process
    rss_pages: int
    threads: int


def parse_pid_stat(text: str) -> ProcTimes:
    """/proc/PID/stat: the command name is in parentheses and may itself hold spaces or parentheses."""
    lpar, rpar = text.index("("), text.rindex(")")
    pid = int(text[:lpar])
    comm = text[lpar + 1:rpar]
    rest = text[rpar + 2:].split()
    # rest[0] is field 3 (state); utime is field 14, stime 15, num_threads 20, starttime 22, rss 24.
    return ProcTimes(pid=pid, comm=comm, utime=int(rest[11]), stime=int(rest[12]), starttime=int(rest[19]),
                     rss_pages=int(rest[21]), threads=int(rest[17]))


@dataclass(frozen=True, slots=True)
class DiskTimes:
    reads: int
    writes: int
    sectors_read: int
    sectors_written: int
    ms_busy: int


VIRTUAL_DISKS = ("loop", "ram", "zram", "sr", "fd", "nbd")


def parse_diskstats(text: str) -> dict[str, DiskTimes]:
    """Whole disks of /proc/diskstats (partitions, loop and RAM devices left out: they would count the
    same I/O twice, or none that reaches a disk)."""
    rows: dict[str, DiskTimes] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 14 or f[2].startswith(VIRTUAL_DISKS):
            continue
        rows[f[2]] = DiskTimes(int(f[3]), int(f[7]), int(f[5]), int(f[9]), int(f[12]))
    names = sorted(rows, key=len)
    partitions = {n for n in rows for d in names if d != n and n.startswith(d) and len(d) < len(n)
                  and n[len(d):].lstrip("p").isdigit()}
    return {n: t for n, t in rows.items() if n not in partitions}


# ---- reading this host ---------------------------------------------------------------------------
def read_text(path: str) -> str:
    with open(path) as f:
        return f.read()


def clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def page_size() -> int:
    return os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class HostCpuProbe:
    """`host.<host>.cpu.{user,system,iowait,steal,idle,busy}` (% of all CPUs), run queue, context switches,
    and the whole disks: `host.<host>.disk.{reads,writes}` (IOPS), `.disk.{read_mb,write_mb}` (MB/s) summed,
    `host.<host>.disk.<dev>.util` (% of time busy) each."""

    name = "cpu"

    def __init__(self, host: str = "local", reader: Callable[[str], str] = read_text):
        self.host = name_part(host)
        self.reader = reader
        self._prev: CpuTimes | None = None

    def open(self) -> str:
        try:
            times = parse_proc_stat(self.reader("/proc/stat"))
        except (OSError, ValueError) as exc:
            raise ProbeUnavailable(f"cannot read /proc/stat on {self.host}: {exc}") from None
        self._prev = times
        return f"/proc/stat on {self.host}, {times.ncpu} CPUs"

    def read(self) -> Reading:
        cur = parse_proc_stat(self.reader("/proc/stat"))
        prev, self._prev = self._prev, cur
        prefix = f"host.{self.host}."
        r = Reading(counters={prefix + "ctxt": float(cur.ctxt)},
                    gauges={prefix + "procs_running": float(cur.procs_running),
                            prefix + "procs_blocked": float(cur.procs_blocked)})
        if prev is not None and (pct := cpu_percentages(prev, cur)) is not None:
            for k, v in pct.items():
                r.gauges[f"{prefix}cpu.{k}"] = v
            r.gauges[prefix + "cpu.busy"] = 100.0 - pct["idle"] - pct["iowait"]
        try:
            disks = parse_diskstats(self.reader("/proc/diskstats"))
        except (OSError, ValueError, IndexError):
            disks = {}  # no disk statistics (a container): the CPU is still worth having
        if disks:
            r.counters[prefix + "disk.reads"] = float(sum(d.reads for d in disks.values()))
            r.counters[prefix + "disk.writes"] = float(sum(d.writes for d in disks.values()))
            r.counters[prefix + "disk.read_mb"] = sum(d.sectors_read for d in disks.values()) * 512 / 1e6
            r.counters[prefix + "disk.write_mb"] = sum(d.sectors_written for d in disks.values()) * 512 / 1e6
            for dev, d in disks.items():
                r.counters[f"{prefix}disk.{name_part(dev)}.util"] = d.ms_busy / 10.0  # ms/s -> % busy
        return r

    def close(self) -> None:
        self._prev = None


class ProcessCpuProbe:
    """CPU of process roles, e.g. the server and the load generator: `proc.<host>.<role>.cpu`.

    CPU is a share of the whole host (100 % = every CPU busy), on the same scale as `host.*.cpu.*`,
    so the two can be stacked. Each role is a callable giving its current pids (the sysbench engine
    starts a new process every step). A process that appears between two samples counts from its
    start; one that exits loses only its last partial second.

    `proc.<host>.other.cpu`: what the host's CPUs spent outside every role (other processes, the kernel's own
    threads, steal: a neighbour on the hypervisor), from /proc/stat read with the roles in the same sample. It is
    the machine's share a measurement did not get: seconds where it is high are busy seconds (core/busy.py).
    """

    name = "proc"

    def __init__(self, roles: Mapping[str, Callable[[], Iterable[int]]], host: str = "local",
                 reader: Callable[[str], str] = read_text, ncpu: int | None = None, hz: int | None = None,
                 note: str = ""):
        self.roles = dict(roles)
        self.note = note
        self.host = name_part(host)
        self.reader = reader
        self.ncpu = ncpu or os.cpu_count() or 1
        self.hz = hz or clock_ticks()
        self.page = page_size()
        self._prev: dict[str, dict[int, ProcTimes]] = {}
        self._prev_t: float | None = None
        self._boot_ticks: float = 0.0
        self._host: CpuTimes | None = None

    def _sample(self, pids: Iterable[int]) -> dict[int, ProcTimes]:
        out = {}
        for pid in set(pids):
            try:
                out[pid] = parse_pid_stat(self.reader(f"/proc/{pid}/stat"))
            except (OSError, ValueError, IndexError):
                continue  # gone between listing and reading
        return out

    def _uptime_ticks(self) -> float:
        return float(self.reader("/proc/uptime").split()[0]) * self.hz

    def open(self) -> str:
        if not self.roles:
            raise ProbeUnavailable("no local processes to watch")
        try:
            self._uptime_ticks()
        except (OSError, ValueError, IndexError) as exc:
            raise ProbeUnavailable(f"cannot read /proc on {self.host}: {exc}") from None
        found = {role: sorted(self._sample(pids())) for role, pids in self.roles.items()}
        return "; ".join([*(f"{role} pids {','.join(map(str, p)) or '(none yet)'}" for role, p in found.items()),
                          *([self.note] if self.note else [])])

    def _host_times(self) -> CpuTimes | None:
        try:
            return parse_proc_stat(self.reader("/proc/stat"))
        except (OSError, ValueError, LookupError):
            return None

    def read(self) -> Reading:
        now_ticks = self._uptime_ticks()
        host = self._host_times()
        r = Reading()
        prev_t = self._prev_t
        roles_ticks = 0.0
        for role, pids in self.roles.items():
            cur = self._sample(pids())
            prev = self._prev.get(role, {})
            used_u = used_s = 0.0
            if prev_t is not None:
                for pid, p in cur.items():
                    old = prev.get(pid)
                    if old is not None and old.starttime == p.starttime:
                        used_u += p.utime - old.utime
                        used_s += p.stime - old.stime
                    elif p.starttime >= prev_t:  # started since the last sample
                        used_u += p.utime
                        used_s += p.stime
                roles_ticks += used_u + used_s
                elapsed = now_ticks - prev_t
                if elapsed > 0:
                    scale = 100.0 / (elapsed * self.ncpu)
                    prefix = f"proc.{self.host}.{name_part(role)}."
                    r.gauges[prefix + "cpu"] = max(0.0, (used_u + used_s) * scale)
                    r.gauges[prefix + "cpu.user"] = max(0.0, used_u * scale)
                    r.gauges[prefix + "cpu.sys"] = max(0.0, used_s * scale)
                    r.gauges[prefix + "rss_mb"] = sum(p.rss_pages for p in cur.values()) * self.page / 2**20
                    r.gauges[prefix + "procs"] = float(len(cur))
            self._prev[role] = cur
        self._prev_t = now_ticks
        before, self._host = self._host, host
        if prev_t is not None and before is not None and host is not None and host.total > before.total:
            busy = (host.total - host.idle - host.iowait) - (before.total - before.idle - before.iowait)
            other = max(0.0, 100.0 * (busy - roles_ticks) / (host.total - before.total))
            r.gauges[f"proc.{self.host}.other.cpu"] = min(100.0, other)
        return r

    def close(self) -> None:
        self._prev.clear()
        self._prev_t = None
        self._host = None


def server_pid_from(pid_file: str | None, binaries: tuple[str, ...] = ("mysqld", "mariadbd")) -> int | None:
    """The server's pid from its pid file, if it is a live mysqld/mariadbd on this host."""
    if not pid_file:
        return None
    try:
        pid = int(Path(pid_file).read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if process_program(pid) in binaries else None


def process_program(pid: int | str) -> str:
    """What a process runs: its comm, or for a server kit started through its own loader (comm
    `ld-linux-x86-64`) the binary the loader runs."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        if comm.startswith("ld-linux"):
            return program_of(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"))
    except OSError:
        return ""
    return comm


def find_server_pids(binaries: tuple[str, ...] = ("mysqld", "mariadbd")) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and process_program(entry.name) in binaries:
            out.append(int(entry.name))
    return sorted(out)
