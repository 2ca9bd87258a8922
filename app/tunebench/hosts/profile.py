"""The `profile` probe: where the server spends its CPU, sampled with Linux perf in windows of a few seconds on
the session clock (dim_STAT's PerfSTAT idea: the top functions of mysqld live). Per window, the top functions
by self time become series `profile.mysqld.<function>` (% of the window's samples); the folded stacks of the
whole step are kept for a flame graph. Opt-in (`--probes ...,profile`): perf costs some CPU.

perf needs the perf_event_paranoid setting to allow it (or root). Debian's mariadbd is stripped of its
internal symbols: frames without a name are counted per DSO ("mariadbd [unknown]"); kernel and libc frames
keep their names.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from tunebench.core.probe import ProbeUnavailable, Reading, name_part

_OFFSET = re.compile(r"\+0x[0-9a-f]+$")
TOP = 10  # functions per window as series (the rest is `other`)
FREQ = 99  # Hz: below the timer tick, not in lockstep with it
WINDOW = 5.0  # seconds per perf record
MAX_STACKS = 500  # folded stacks kept per step (the most frequent): a step summary stays small


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


def fold(script: str) -> Counter[str]:
    """`perf script` output (samples: a header line, then frames leaf first, a blank line) as folded stacks:
    "root;...;leaf" -> samples."""
    out: Counter[str] = Counter()
    frames: list[str] = []
    in_sample = False
    for line in [*script.splitlines(), ""]:
        if not line.strip():
            if in_sample and frames:
                out[";".join(reversed(frames))] += 1
            frames, in_sample = [], False
            continue
        if not line[0].isspace():
            in_sample, frames = True, []
            continue
        parts = line.strip().split(" ", 1)
        rest = parts[1] if len(parts) > 1 else ""
        sym, _, dso = rest.rpartition(" (")
        frames.append(frame_name(sym.strip() or rest.strip(), "(" + dso))
    return out


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


def perf_problem() -> str | None:
    """Why perf cannot sample here, or None."""
    if shutil.which("perf") is None:
        return "perf not found (Debian: apt-get install linux-perf)"
    try:
        level = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        level = 2
    if os.geteuid() != 0 and level > 1:
        return f"perf_event_paranoid is {level}: sampling another process needs 1 or less, or root"
    return None


class ProfileProbe:
    """Runs perf in consecutive windows on a thread of its own; `read` returns the latest window's top
    functions, `take_folded` the folded stacks since it was last called (a step's)."""

    name = "profile"

    def __init__(self, pids: Callable[[], Iterable[int]], label: str = "mysqld", window: float = WINDOW,
                 freq: int = FREQ):
        self.pids, self.label, self.window, self.freq = pids, label, window, freq
        self._latest: dict[str, float] = {}
        self._fresh = False
        self._folded: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._dir = tempfile.mkdtemp(prefix="tb-perf-")
        self.error: str | None = None

    def open(self) -> str:
        problem = perf_problem()
        if problem:
            raise ProbeUnavailable(f"profile: {problem}")
        if not list(self.pids()):
            raise ProbeUnavailable("profile: the server's process is not on this machine")
        self._thread = threading.Thread(target=self._loop, name="profile", daemon=True)
        self._thread.start()
        return f"profile: perf at {self.freq} Hz in {self.window:g} s windows, top {TOP} functions of the server"

    def _loop(self) -> None:
        data = os.path.join(self._dir, "perf.data")
        while not self._stop.is_set():
            pids = ",".join(str(p) for p in self.pids())
            cmd = ["perf", "record", "-q", "-F", str(self.freq), "-g", "-p", pids, "-o", data,
                   "--", "sleep", f"{self.window:g}"]
            try:
                self._proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                              start_new_session=True)
                _out, err = self._proc.communicate()
                if self._stop.is_set():
                    return
                if self._proc.returncode != 0:
                    self.error = (err.decode(errors="replace").strip().splitlines() or ["perf record failed"])[-1]
                    self._stop.wait(self.window)
                    continue
                script = subprocess.run(["perf", "script", "-i", data], capture_output=True, timeout=60).stdout
            except (OSError, subprocess.SubprocessError) as exc:
                self.error = str(exc)
                self._stop.wait(self.window)
                continue
            folded = fold(script.decode(errors="replace"))
            top = {f"profile.{self.label}.{series_part(f)}": pct for f, pct in self_top(folded)}
            with self._lock:
                self._latest, self._fresh = top, True
                self._folded.update(folded)
                if len(self._folded) > 4 * MAX_STACKS:
                    self._folded = Counter(dict(self._folded.most_common(MAX_STACKS)))

    def read(self) -> Reading:
        with self._lock:
            if not self._fresh:
                return Reading()
            self._fresh = False
            return Reading(gauges=dict(self._latest))

    def take_folded(self) -> dict[str, int]:
        """The folded stacks sampled since the last call (the most frequent MAX_STACKS)."""
        with self._lock:
            out = dict(self._folded.most_common(MAX_STACKS))
            self._folded = Counter()
        return out

    def close(self) -> None:
        self._stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        if self._thread is not None:
            self._thread.join(10)
        shutil.rmtree(self._dir, ignore_errors=True)
