"""The `profile` probe: where the server spends its CPU, sampled with Linux perf in windows of a few seconds on
the session clock (dim_STAT's PerfSTAT idea: the top functions of mysqld live). Per window, the top functions
by self time become series `profile.mysqld.<function>` (% of the window's samples); the folded stacks of the
whole step are kept for a flame graph. Opt-in (`--probes ...,profile`): perf costs some CPU.

One perf samples the server and, when they run here, the load generator's processes (series
`profile.client.<function>`: what the client burns is taken from a server on the same host). On a database host
reached over SSH, perf runs there, agentless: one command per window.

perf needs the perf_event_paranoid setting to allow it (or root). Debian's mariadbd is stripped of its
internal symbols: frames without a name are counted per DSO ("mariadbd [unknown]"); kernel and libc frames
keep their names.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tunebench.core.errors import TunebenchError
from tunebench.core.probe import ProbeUnavailable, Reading, name_part
from tunebench.hosts.runner import child_env

_OFFSET = re.compile(r"\+0x[0-9a-f]+$")
TOP = 10  # functions per window as series (the rest is `other`)
FREQ = 99  # Hz: below the timer tick, not in lockstep with it
WINDOW = 5.0  # seconds per perf record
SERVER_BINARIES = ("mariadbd", "mysqld")  # the server's own DSO, as perf names it
MAX_STACKS = 500  # folded stacks kept per step (the most frequent): a step summary stays small
# call graphs; no build-id collection at the end of a window (-B -N: perf burned 2 s of system CPU per 5 s window
# on it under load, 40 % of a core) and no BPF program events
RECORD_FLAGS = ("-q", "-g", "-B", "-N", "--no-bpf-event")
SCRIPT_FIELDS = "comm,pid,ip,sym,dso"  # perf script: a sample's header is "comm pid", its frames "ip sym (dso)"
# how a cut window's perf exits: its workload (sleep) ended by SIGINT (local: the group) or by perf's SIGTERM
CUT_STATUS = (0, -signal.SIGINT, 128 + signal.SIGINT, 128 + signal.SIGTERM)
# seconds a step's end waits at most for the window it cut short (on this host): it comes in well under a second on
# an idle machine; on a loaded 2-core one perf's writing and `perf script` took over 2 s and the step lost its stacks
CUT_WAIT = 10.0


def frame_name(sym: str, dso: str) -> str:
    """A frame as the profile names it: the function (its offset dropped, so a function is one entry), kernel
    ones marked [k], nameless ones by their DSO."""
    base = os.path.basename(dso.strip("()")) or "?"
    sym = _OFFSET.sub("", sym)
    if sym in ("[unknown]", ""):
        return f"{base} [unknown]"
    return "[k] " + sym if base == "[kernel.kallsyms]" else sym


def series_part(function: str) -> str:
    """A function as one component of a series name: `[k] schedule` -> `k:schedule`, `mariadbd [unknown]` ->
    `mariadbd:unknown` (dots and other odd characters become _)."""
    if function.startswith("[k] "):
        function = "k:" + function[4:]
    return name_part(function.replace(" [unknown]", ":unknown"))


def _samples(script: str) -> Iterator[tuple[str, list[str]]]:
    """`perf script` output (samples: a header line, then frames leaf first, a blank line) as (header, frames
    root first)."""
    frames: list[str] = []
    header: str | None = None
    for line in [*script.splitlines(), ""]:
        if not line.strip():
            if header is not None and frames:
                yield header, frames[::-1]
            frames, header = [], None
            continue
        if not line[0].isspace():
            header, frames = line, []
            continue
        parts = line.strip().split(" ", 1)
        rest = parts[1] if len(parts) > 1 else ""
        sym, _, dso = rest.rpartition(" (")
        frames.append(frame_name(sym.strip() or rest.strip(), "(" + dso))


def fold(script: str) -> Counter[str]:
    """`perf script` output as folded stacks: "root;...;leaf" -> samples."""
    out: Counter[str] = Counter()
    for _header, frames in _samples(script):
        out[";".join(frames)] += 1
    return out


def fold_by_process(script: str, labels: Mapping[int, str]) -> dict[str, Counter[str]]:
    """`perf script -F comm,pid,...` output folded per process role: the header's last field is the pid, `labels`
    names its role (mysqld, client); samples of other pids are dropped."""
    out: dict[str, Counter[str]] = {}
    for header, frames in _samples(script):
        words = header.split()
        label = labels.get(int(words[-1])) if words and words[-1].isdigit() else None
        if label is not None:
            out.setdefault(label, Counter())[";".join(frames)] += 1
    return out


def stripped_note(folded: Mapping[str, int]) -> str | None:
    """One line when the server's own frames have no names (a stripped binary: Debian's mariadbd), with their share
    of its samples at the leaf; None when its functions are named (or it was not sampled)."""
    total = sum(folded.values())
    unnamed: Counter[str] = Counter()
    for stack, count in folded.items():
        leaf = stack.rsplit(";", 1)[-1]
        if leaf.endswith(" [unknown]") and leaf.split(" ", 1)[0] in SERVER_BINARIES:
            unnamed[leaf] += count
    if not total or not unnamed:
        return None
    leaf, _ = unnamed.most_common(1)[0]
    share = 100.0 * sum(unnamed.values()) / total
    return (f"profile: the server's binary has no symbols (stripped): its own functions count as '{leaf}' "
            f"({share:.0f} % of its samples); kernel and library functions are named (a build with symbols names "
            "them all)")


def self_top(folded: Counter[str], n: int = TOP) -> list[tuple[str, float]]:
    """The `n` functions with the most samples at the leaf (self time), in % of all samples; then 'other'."""
    total = sum(folded.values())
    if not total:
        return []
    leaves: Counter[str] = Counter()
    for stack, count in folded.items():
        leaves[stack.rsplit(";", 1)[-1]] += count
    top = leaves.most_common(n)
    rest = total - sum(c for _f, c in top)
    return [(f, 100.0 * c / total) for f, c in top] + ([("other", 100.0 * rest / total)] if rest else [])


def paranoid_level() -> int:
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        return 2


def system_wide_allowed(uid: int, level: int) -> bool:
    """Sample every CPU (-a) and keep the samples of our processes, rather than follow those processes (-p)? Yes
    where allowed (root, or perf_event_paranoid <= 0): per-task events are switched in and out at each of their
    threads' context switches, which under a point-select load (two switches a query) cost 23 % of the TPS at
    99 Hz here (bench/profile_overhead.py); per-CPU events cost nothing there."""
    return uid == 0 or level <= 0


def perf_problem() -> str | None:
    """Why perf cannot sample here, or None."""
    if shutil.which("perf") is None:
        return "perf not found (Debian: apt-get install linux-perf)"
    level = paranoid_level()
    if os.geteuid() != 0 and level > 1:
        return f"perf_event_paranoid is {level}: sampling another process needs 1 or less, or root"
    return None


class PerfFailed(Exception):
    """A perf window that gave no samples, with perf's last line of complaint."""


SPAN_MARK = "#tb-window"  # the line before a remote window's stacks: its start and end (`date +%s.%N` there)


def _timed_sleep(window: float) -> list[str]:
    """The workload of a perf window: it says when it starts (perf has set its events up by then: under load that
    took perf 0.5-0.7 s of a 5-s window here, load average 5), then sleeps the window."""
    return ["sh", "-c", f"date +%s.%N; exec sleep {window:g}"]


def recorded_span(out: str, started: float, ended: float, window: float) -> float:
    """The seconds a window recorded: from its workload's start (the first line it printed, wall clock) to `ended`
    (when perf returned), at most `window`; from `started` (before perf started) when the workload said nothing."""
    try:
        begin = float(out.split(maxsplit=1)[0])
    except (IndexError, ValueError):
        begin = started
    if not started - 1.0 <= begin <= ended:  # a clock step between the two readings: the coarser span
        begin = started
    return max(0.0, min(window, ended - begin))


class LocalPerf:
    """perf on this machine: a window is `perf record ... -- sleep W` in a process group of its own, which `cut`
    ends early (SIGINT: perf writes what it has) and `kill` ends for good."""

    where = "this host"
    cut_wait = CUT_WAIT

    def __init__(self) -> None:
        self.system_wide = False
        self._dir = tempfile.mkdtemp(prefix="tb-perf-")
        self._proc: subprocess.Popen[bytes] | None = None
        # once killed, no window starts again: the profile thread could start one between the kill and its own
        # look at the stop flag, and perf outlived the run that ended (a `perf record -- sleep 5` left running)
        self._plock = threading.Lock()
        self._killed = False
        self._script: subprocess.Popen[bytes] | None = None

    def problem(self) -> str | None:
        self.system_wide = system_wide_allowed(os.geteuid(), paranoid_level())
        return perf_problem()

    def record(self, pids: str, window: float, freq: int, cut: threading.Event | None = None) -> str:
        """One window's `perf script`; a `cut` already asked for ends it as soon as it starts."""
        data = os.path.join(self._dir, "perf.data")
        scope = ["-a"] if self.system_wide else ["-p", pids]
        cmd = ["perf", "record", *RECORD_FLAGS, "-F", str(freq), *scope, "-o", data, "--", *_timed_sleep(window)]
        try:
            started = time.time()
            proc = self._start(cmd)
            if cut is not None and cut.is_set():
                self._signal(signal.SIGINT)
            out, err = proc.communicate()
            self.recorded_seconds = recorded_span(out.decode(errors="replace"), started, time.time(), window)
            if proc.returncode not in CUT_STATUS or not os.path.exists(data):
                raise PerfFailed((err.decode(errors="replace").strip().splitlines() or ["perf record failed"])[-1])
            # (not the window's process: a cut at a step's edge signals the window, never the script reading it --
            # a SIGINT there lost the window's stacks, and a sweep's step came out without the server's)
            script = self._start(["perf", "script", "-F", SCRIPT_FIELDS, "-i", data], window=False)
            try:
                out, _err = script.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                script.kill()
                raise PerfFailed("perf script took over 60 s") from None
            return out.decode(errors="replace")
        except (OSError, subprocess.SubprocessError) as exc:
            raise PerfFailed(str(exc)) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(data)

    def _start(self, cmd: list[str], window: bool = True) -> subprocess.Popen[bytes]:
        """perf in a process group of its own, unless this perf was killed (then PerfFailed: nothing starts).
        `window`: the recording a cut ends early; else the script reading it, which only kill() ends."""
        with self._plock:
            if self._killed:
                raise PerfFailed("the profile ended")
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                    env=child_env())
            if window:
                self._proc = proc
            else:
                self._script = proc
            return proc

    def _signal(self, sig: int) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)

    def cut(self) -> bool:
        self._signal(signal.SIGINT)
        return True

    def kill(self) -> None:
        with self._plock:
            self._killed = True
            proc, script = self._proc, self._script
        if script is not None and script.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(script.pid, signal.SIGKILL)
        self._signal(signal.SIGTERM)
        if proc is not None:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                # reaped before the profile says it ended (under load 17 a perf killed with -9 was still in the
                # process list when the run had returned)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(5)
        shutil.rmtree(self._dir, ignore_errors=True)


class RemotePerf:
    """perf on a host reached over SSH (`runner`: an SshRunner), agentless like the telemetry: one command per
    window records into a temporary directory there, prints `perf script` and removes the directory. A window
    ends by itself (its `sleep`), so closing never leaves perf running there; `cut` ends it early with a second
    command (SIGINT to that perf)."""

    cut_wait = 20.0  # the cut window's samples come over SSH (at most: usually in a second or two)

    def __init__(self, runner: Any):
        self.runner = runner
        self.where = runner.host.label
        self.system_wide = False
        self._dir: str | None = None

    def problem(self) -> str | None:
        try:
            _rc, out = self.runner.run("command -v perf >/dev/null || echo no-perf; "
                                       "cat /proc/sys/kernel/perf_event_paranoid; id -u", timeout=15)
        except TunebenchError as exc:
            return str(exc)
        if "no-perf" in out:
            return f"perf not found on {self.where} (Debian: apt-get install linux-perf)"
        words = out.split()
        try:
            level, uid = int(words[-2]), int(words[-1])
        except (IndexError, ValueError):
            return f"cannot read perf_event_paranoid on {self.where}"
        if uid != 0 and level > 1:
            return f"perf_event_paranoid is {level} on {self.where}: sampling another process needs 1 or less, or root"
        self.system_wide = system_wide_allowed(uid, level)
        return None

    def record(self, pids: str, window: float, freq: int, cut: threading.Event | None = None) -> str:
        d = f"/tmp/tb-perf-{secrets.token_hex(6)}"
        if cut is not None and cut.is_set():
            window = 0.01
        script = (f"d={d}; mkdir -m 700 $d || exit 1; "
                  f"perf record {' '.join(RECORD_FLAGS)} -F {int(freq)} "
                  f"{'-a' if self.system_wide else '-p ' + shlex.quote(pids)} -o $d/p.data "
                  f"-- {' '.join(shlex.quote(w) for w in _timed_sleep(window))} "
                  f">$d/t0 2>$d/err & echo $! > $d/pid; wait $!; rc=$?; t1=$(date +%s.%N); "
                  f"case $rc in 130|143) rc=0;; esac; "
                  f"if [ $rc = 0 ]; then echo \"{SPAN_MARK} $(head -c 40 $d/t0) $t1\"; "
                  f"perf script -F {SCRIPT_FIELDS} -i $d/p.data 2>/dev/null; "
                  f"else tail -n 1 $d/err; fi; rm -rf $d; exit $rc")
        self._dir = d
        try:
            rc, out = self.runner.run(script, timeout=window + 60)
        except TunebenchError as exc:
            raise PerfFailed(str(exc)) from None
        finally:
            self._dir = None
        if rc != 0:
            raise PerfFailed(f"{self.where}: {out.strip().splitlines()[-1] if out.strip() else 'perf record failed'}")
        first, _, rest = out.partition("\n")
        words = first.split()
        if words[:1] == [SPAN_MARK]:  # the window's own start and end, on that host's clock
            try:
                self.recorded_seconds = max(0.0, min(window, float(words[2]) - float(words[1])))
            except (IndexError, ValueError):
                self.recorded_seconds = 0.0
            out = rest
        else:
            self.recorded_seconds = 0.0
        return out

    def cut(self) -> bool:
        d = self._dir
        if d is None:
            return True  # between windows: the next one starts cut (record's `cut`)
        try:
            self.runner.run(f"kill -INT $(cat {d}/pid 2>/dev/null) 2>/dev/null", timeout=10)
        except TunebenchError:
            return False
        return True

    def kill(self) -> None:
        pass


class ProfileProbe:
    """Runs perf in consecutive windows on a thread of its own over the processes of its roles (label -> pids:
    "mysqld" the server, "client" the load generator's processes), on this host or one reached over SSH
    (`perf`: LocalPerf or RemotePerf). `read` returns the latest window's top functions per role, `take_folded`
    each role's folded stacks since it was last called (a step's); `cut` ends the window in progress early so a
    step's stacks are its own."""

    name = "profile"

    def __init__(self, roles: Mapping[str, Callable[[], Iterable[int]]], perf: LocalPerf | RemotePerf | None = None,
                 window: float = WINDOW, freq: int = FREQ):
        self.roles, self.window, self.freq = dict(roles), window, freq
        self.perf = perf or LocalPerf()
        self._latest: dict[str, float] = {}
        self._fresh = False
        self._folded: dict[str, Counter[str]] = {}
        self._windows = 0  # windows ended so far (with samples or not)
        self._covered = 0.0  # seconds perf recorded since the last take_folded (its windows leave gaps between)
        self._cut = threading.Event()  # a step ended: the window in progress (or the next, if none) ends now
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None

    def _labels(self) -> dict[int, str]:
        out: dict[int, str] = {}
        for label, pids in self.roles.items():
            for pid in pids():
                out.setdefault(int(pid), label)
        return out

    def open(self) -> str:
        problem = self.perf.problem()
        if problem:
            self.perf.kill()
            raise ProbeUnavailable(f"profile: {problem}")
        if list(self.roles) == ["mysqld"] and not list(self.roles["mysqld"]()):
            self.perf.kill()
            raise ProbeUnavailable(f"profile: the server's process is not on {self.perf.where}")
        self._thread = threading.Thread(target=self._loop, name="profile", daemon=True)
        self._thread.start()
        what = " and ".join("the server" if r == "mysqld" else f"the {r} processes" for r in self.roles)
        if "mysqld" not in self.roles:
            what += f" (the server is not on {self.perf.where})"
        costly = ("" if self.perf.system_wide else "; following the processes (not root, perf_event_paranoid 1): "
                  "this costs the load more than sampling every CPU would (up to a quarter of the TPS measured here)")
        return (f"profile: perf at {self.freq} Hz in {self.window:g} s windows on {self.perf.where}, top {TOP} "
                f"functions of {what}{costly}")

    def _loop(self) -> None:
        while not self._stop.is_set():
            labels = self._labels()
            if not labels:
                self._ended({}, cut_only=True)
                self._stop.wait(1.0)
                continue
            try:
                script = self.perf.record(",".join(str(p) for p in sorted(labels)), self.window, self.freq, self._cut)
            except PerfFailed as exc:
                if self._stop.is_set():
                    return
                self.error = str(exc)
                self._ended({})
                self._stop.wait(self.window)
                continue
            if self._stop.is_set():
                return
            if self.perf.system_wide:
                # every CPU was sampled: processes that began during the window (the load generator's, which start
                # after the probes) are ours too; their samples were dropped, and a short step had no client part
                labels = {**self._labels(), **labels}
            self._ended(fold_by_process(script, labels), recorded=float(getattr(self.perf, "recorded_seconds", 0.0)))

    def _ended(self, folded: dict[str, Counter[str]], cut_only: bool = False, recorded: float = 0.0) -> None:
        """A window ended (`cut_only`: nothing ran; only a cut waiting is answered)."""
        top = {f"profile.{label}.{series_part(f)}": pct
               for label, stacks in folded.items() for f, pct in self_top(stacks)}
        with self._lock:
            if cut_only and not self._cut.is_set():
                return
            self._cut.clear()
            self._covered += recorded
            if top:
                self._latest, self._fresh = top, True
            for label, stacks in folded.items():
                kept = self._folded.setdefault(label, Counter())
                kept.update(stacks)
                if len(kept) > 4 * MAX_STACKS:
                    self._folded[label] = Counter(dict(kept.most_common(MAX_STACKS)))
            self._windows += 1
            self._lock.notify_all()

    def cut(self, wait: float | None = None) -> bool:
        """End the window in progress now (a step ended) and wait, `wait` seconds at most (by default what this
        host's perf needs), until its samples are in. False when the window did not come in time."""
        if self._thread is None:
            return False
        with self._lock:
            seen = self._windows
            self._cut.set()
        if not self.perf.cut():
            return False
        deadline = time.monotonic() + (self.perf.cut_wait if wait is None else wait)
        with self._lock:
            while self._windows == seen and not self._stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    def read(self) -> Reading:
        with self._lock:
            if not self._fresh:
                return Reading()
            self._fresh = False
            return Reading(gauges=dict(self._latest))

    def take_folded(self) -> dict[str, dict[str, int]]:
        """Each role's folded stacks sampled since the last call (the most frequent MAX_STACKS)."""
        return self.take()[0]

    def take(self) -> tuple[dict[str, dict[str, int]], float]:
        """take_folded's stacks, and the seconds perf recorded them over (its windows, less the gaps between them
        while `perf script` runs: wide on a loaded machine)."""
        with self._lock:
            out = {label: dict(stacks.most_common(MAX_STACKS)) for label, stacks in self._folded.items() if stacks}
            covered, self._folded, self._covered = self._covered, {}, 0.0
        return out, covered

    def close(self) -> None:
        self._stop.set()
        self.perf.kill()
        if self._thread is not None:
            self._thread.join(10)
