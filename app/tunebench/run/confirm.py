"""Confirm: a live flip judged from replicated evidence (issue 42).

A live flip compares one window before with one after: a change in the machine's load at the flip reads the same
as the knob. Confirm alternates the knob between the flip's two values on the running load in eight blocks, ABBA
BAAB (or BAAB ABBA when the knob is at B now: one change fewer), each measured after the settle time that follows
a change, and judges B over A from the spread between adjacent pairs of blocks (core.verdict.confirm_verdict:
what changes between windows is in it), busy seconds left out. The knob ends at the value it had when the
confirmation began. The verdict is a "verdict" event (kind of data: `blocks`), so the window, a replay and a
report show it and `recompute` gets the same numbers back from the stored series.

The CLI reaches a running run through its control socket (ControlServer: a Unix socket of the user's, mode 0600,
in the data dir's `control/`, one per running run): `tunebench live flip` and `tunebench live confirm`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tunebench import paths
from tunebench.core.busy import other_series
from tunebench.core.errors import ConfigError, TargetError, TunebenchError
from tunebench.core.interval import Event, Interval
from tunebench.core.verdict import CONFIRM_ORDER, MIN_PAIRS, confirm_verdict, order_text
from tunebench.store.samples import as_stored

BLOCK_SECONDS = 10  # each block's measured seconds (the simulation in tests/unit/test_verdict.py: 10 s)
SETTLE_SECONDS = 5  # after each change, before its block is measured
MIN_BLOCK_SECONDS = 2
EXTRA_ROUNDS = 1  # times the eight blocks run again when busy seconds left fewer than MIN_PAIRS pairs
MAX_FLOOR_PCT = 1000.0  # a noise floor read from the store above this is no calibration's (an A/A 0.1x-11x)
MAX_BLOCK_SECONDS = 600


def confirm_order(at_b: bool) -> str:
    """ABBABAAB, or its mirror BAABABBA when the knob is at B now (each pair still one A and one B, balanced)."""
    return CONFIRM_ORDER.translate(str.maketrans("AB", "BA")) if at_b else CONFIRM_ORDER


def planned_seconds(order: str, block: int, settle: int) -> int:
    """The blocks' seconds and the settle time before the first block and after each change between blocks."""
    return len(order) * block + (1 + sum(a != b for a, b in itertools.pairwise(order))) * settle


class Confirmation:
    """One confirmation on a running Experiment, in its own thread; `feed`/`feed_samples` get the run's seconds."""

    def __init__(self, exp: Any, name: str, a: str, b: str, group: str, block_seconds: int, settle_seconds: int,
                 order: str, first_change: bool, back: str | None, aa: bool = False):
        self.exp, self.name, self.a, self.b, self.group = exp, name, a, b, group
        self.back = back
        self.aa = aa  # an A/A calibration: the same configuration in every block, nothing set
        self.block, self.settle, self.order, self.first_change = block_seconds, settle_seconds, order, first_change
        self.seconds: dict[str, list[tuple[float, float]]] = {}  # series name -> (t, value), the group's and busy
        self._lock = threading.Lock()
        self._last_t = -math.inf
        self.done = threading.Event()
        self._cancelled = threading.Event()
        self._set_lock = threading.Lock()
        self.verdict_label: str | None = None  # the verdict's line once known, or why there is none
        self.event: Event | None = None
        self.started = time.time()
        # the wall clock, and a pause that returns True when the run stops (tests drive both)
        self.clock: Callable[[], float] = time.time
        self.pause: Callable[[float], bool] = exp.stop_event.wait
        self.blocks: list[tuple[str, float, float]] = []
        self._thread = threading.Thread(target=self._main, name="tunebench-confirm", daemon=True)

    # -- the run's seconds --
    def feed(self, iv: Interval) -> None:
        if iv.group != self.group:
            return
        with self._lock:
            for n, v in iv.series().items():
                if n.endswith((".tps", ".lat.p95", ".lat.p99")):
                    self.seconds.setdefault(n, []).append(as_stored(iv.t, v))
            self._last_t = max(self._last_t, iv.t)

    def feed_samples(self, t: float, values: Mapping[str, float]) -> None:
        with self._lock:
            for n in other_series(values):
                self.seconds.setdefault(n, []).append(as_stored(t, float(values[n])))

    # -- the blocks --
    def start(self) -> None:
        self._thread.start()

    def _wait(self, until: float) -> bool:
        """Until the wall clock passes `until`; False when the run or its step ended meanwhile."""
        while self.clock() < until:
            if self.pause(min(0.2, max(0.01, until - self.clock()))):
                return False
            if self.exp._step_stop.is_set() or self._cancelled.is_set():
                return False
        return True

    def cancel(self) -> None:
        """The run is ending: no more changes (the one in flight finishes first), and the thread is gone when this
        returns (bounded), so the run puts the knob back after the confirmation's last change, never before it."""
        with self._set_lock:
            self._cancelled.set()
        self._thread.join(30)

    def _set(self, value: str) -> None:
        with self._set_lock:
            if self._cancelled.is_set():
                raise ConfigError("the run is ending")
            if not self.aa:
                self.exp.controller.set_live(self.name, value)

    def _main(self) -> None:
        try:
            self._blocks()
        except TunebenchError as exc:
            self._say(f"the confirmation of {self.name} stopped: {exc}")
        except Exception as exc:  # a connector error mid-change: the run goes on; its end puts the knob back
            self._say(f"the confirmation of {self.name} stopped: {exc}")
        finally:
            self.exp._confirm_ended(self)
            self.done.set()

    def _say(self, line: str) -> None:
        self.verdict_label = line
        self.exp.on_note(line)

    def _blocks(self) -> None:
        current = None if self.first_change else self.order[0]
        planned = self.order
        for rnd in range(1 + EXTRA_ROUNDS):
            for side in planned:
                changed = self.clock()
                if side != current:
                    self._set(self.a if side == "A" else self.b)
                settle = self.settle if side != current or not self.blocks else 0
                current = side
                lo = changed + settle
                hi = lo + self.block
                if not self._wait(hi):
                    self._say(f"the confirmation of {self.name} did not finish: the step or the run ended first")
                    return
                self.blocks.append((side, lo, hi))
                value = self.a if side == "A" else self.b
                what = f"A/A block {len(self.blocks)}" if self.aa else f"confirm {side} ({self.name}={value})"
                self.exp._record(Event(self.clock(), "trial", what,
                                       {"confirm": side, "t0": changed, "t1": hi, "name": self.name}))
            self._await_last_second()
            # Busy seconds took so many blocks that fewer than MIN_PAIRS pairs keep quiet seconds on both sides:
            # the same blocks once more, when the step has the time (the decision depends on how busy the machine
            # was, never on the ratio: no false claim comes of it)
            v = self._verdict()
            left = (self.exp._step_ends or math.inf) - self.clock()
            more = planned_seconds(planned, self.block, self.settle)
            if rnd == EXTRA_ROUNDS or (v is not None and v.repeats >= MIN_PAIRS) or more > left - 1:
                break
            self.exp.on_note(f"the confirmation of {self.name}: {v.repeats if v else 0} pairs of blocks kept quiet "
                             f"seconds on both sides, it needs {MIN_PAIRS}; {len(planned)} blocks more ({more} s)")
            self.order += planned
        if self.back is not None and self.back != (self.a if current == "A" else self.b):
            self._set(self.back)  # the value the knob had when the confirmation began
        self._judge()

    def _await_last_second(self) -> None:
        """The last block's last second, and the probe sample beside it, have come (bounded)."""
        interval = float(getattr(self.exp.spec, "probe_interval", 1.0))
        limit = time.monotonic() + 3.0 + interval
        while self._last_t < self.blocks[-1][2] - 1e-3 and time.monotonic() < limit:
            if self.pause(0.05):
                return
        self.pause(min(1.0, interval))

    def _verdict(self) -> Any:
        import numpy as np

        with self._lock:
            series = {n: (np.array([x[0] for x in v]), np.array([x[1] for x in v])) for n, v in self.seconds.items()}
        return confirm_verdict(series, self.group, self.blocks, busy_pct=getattr(self.exp.spec, "busy_pct", None))

    def _judge(self) -> None:
        busy_pct = getattr(self.exp.spec, "busy_pct", None)
        v = self._verdict()
        if self.aa:
            self._calibrated(v, busy_pct)
            return
        floor = self.exp.noise_floor(self.group)
        if v is not None and floor is not None:
            v = dataclasses.replace(v, floor_pct=floor["floor_pct"])
        head = f"{self.name} {self.a} → {self.b} (Confirm)"
        text = v.text() if v is not None else "not judged: no quiet second on one side (the machine was busy)"
        data = {"name": self.name, "from": self.a, "to": self.b, "group": self.group, "at": self.blocks[0][1],
                "start": self.blocks[0][1], "end": self.blocks[-1][2], "blocks": [list(b) for b in self.blocks],
                "order": self.order, "busy_pct": busy_pct, "excluded": [], "confirmed": True,
                "floor_pct": floor["floor_pct"] if floor is not None else None,
                "verdict": v.to_dict() if v is not None else None}
        self.event = Event(self.clock(), "verdict", f"{head}: {text}", data)
        self.verdict_label = self.event.label
        self.exp._record(self.event)
        self.exp.on_note(self.event.label)


    def _calibrated(self, v: Any, busy_pct: float | None) -> None:
        """An A/A calibration's result: this machine's noise floor for the load, in the session's summary."""
        floor = floor_of(v)
        cal = {"floor_pct": floor, "ratio": v.ratio if v is not None else None,
               "ci_low": v.ci_low if v is not None and v.judged else None,
               "ci_high": v.ci_high if v is not None and v.judged else None,
               "pairs": v.repeats if v is not None else 0, "busy_left_out": v.busy_left_out if v is not None else 0,
               "block_seconds": self.block, "settle_seconds": self.settle, "group": self.group,
               "blocks": [list(b) for b in self.blocks], "busy_pct": busy_pct,
               "workload": self.exp.workload_name(self.group), "threads": self.exp.threads_now(self.group)}
        self.exp.extras["calibration"] = cal
        text = calibration_text(cal)
        self.event = Event(self.clock(), "verdict", f"A/A calibration: {text}",
                           {"name": "A/A", "from": "A", "to": "A", "group": self.group, "calibration": True,
                            "blocks": cal["blocks"], "order": self.order, "busy_pct": busy_pct, "excluded": [],
                            "start": self.blocks[0][1], "end": self.blocks[-1][2], "at": self.blocks[0][1],
                            "calibrated_floor_pct": floor, "verdict": v.to_dict() if v is not None else None})
        self.verdict_label = self.event.label
        self.exp._record(self.event)
        self.exp.on_note(self.event.label)


def floor_of(v: Any) -> float | None:
    """The noise floor an A/A verdict gives, in %: how far from 1 its 95 % interval reaches (None: not judged)."""
    if v is None or not v.judged:
        return None
    return round(100.0 * max(v.ci_high - 1.0, 1.0 / v.ci_low - 1.0, 0.0), 1)


def calibration_text(cal: Mapping[str, Any]) -> str:
    if cal.get("floor_pct") is None:
        pairs = "1 pair" if cal.get("pairs") == 1 else f"{cal.get('pairs', 0)} pairs"
        return (f"not calibrated: only {pairs} of blocks kept quiet seconds on both sides (the machine was busy): "
                "run it again when it is quieter")
    busy = f", {cal['busy_left_out']} busy s left out" if cal.get("busy_left_out") else ""
    return (f"this machine's noise floor for this load is ±{cal['floor_pct']:.0f} % (A/A over {cal['pairs']} pairs "
            f"of {cal['block_seconds']}-s blocks: {cal['ratio']:.3f}x, 95 % CI {cal['ci_low']:.3f}-"
            f"{cal['ci_high']:.3f}{busy})")


def start_calibration(exp: Any, block_seconds: int, settle_seconds: int) -> Confirmation:
    """An A/A calibration on the running load: eight blocks of the same configuration, judged as a confirmation is
    (the spread of the A/A ratio is the floor under which a difference is this machine's noise)."""
    if exp.controller is None or exp._measured_since is None:
        raise ConfigError("a calibration runs on a running load: no step is measuring now")
    if exp._confirming is not None:
        raise ConfigError(f"a confirmation of {exp._confirming.name} is running: its verdict comes first")
    group = exp.spec.groups[0].name
    c = Confirmation(exp, "A/A", "A", "A", group, block_seconds, settle_seconds, CONFIRM_ORDER, False, None, aa=True)
    exp._confirm_started(c)
    c.start()
    return c


def find_floor(sessions: Any, target: str, host: str | None, workload: str | None, threads: int | None
               ) -> dict[str, Any] | None:
    """The latest calibration of this machine (`host`) for `workload` at `threads` on `target`, from the store's
    sessions: {"floor_pct", "session", "at"} or None. Only sessions recorded here count (another machine's noise
    is not this one's), and only a plausible floor (0-MAX_FLOOR_PCT): a shared or imported store is untrusted."""
    best: dict[str, Any] | None = None
    for s in sessions:
        summary = s.get("summary") or {}
        cal = summary.get("calibration") if isinstance(summary, Mapping) else None
        if not isinstance(cal, Mapping) or s.get("status") != "completed" or s.get("target") != target:
            continue
        if host is None or s.get("host") != host or cal.get("workload") != workload or cal.get("threads") != threads:
            continue
        floor = cal.get("floor_pct")
        if not isinstance(floor, int | float) or isinstance(floor, bool) or not 0 <= float(floor) <= MAX_FLOOR_PCT:
            continue
        if best is None or int(s.get("id") or 0) > best["session"]:
            best = {"floor_pct": float(floor), "session": int(s.get("id") or 0), "at": s.get("started_at")}
    return best


def start_confirmation(exp: Any, name: str | None, values: tuple[str, str] | None, block_seconds: int,
                       settle_seconds: int) -> Confirmation:
    """Checks (a run measuring, no other confirmation or a tune's search, the flip's values, time left in the step)
    then starts one; ConfigError with one line otherwise, before anything changes."""
    if exp.controller is None or exp._measured_since is None:
        raise ConfigError("Confirm works on a running load: no step is measuring now")
    if exp.spec.extra.get("tune") is not None:
        raise ConfigError("a tune confirms its own best (ABBA BAAB) at the end of its search: Confirm is for a run's "
                          "or a sweep's live flips")
    if exp._confirming is not None:
        raise ConfigError(f"a confirmation of {exp._confirming.name} is running: its verdict comes first")
    if not MIN_BLOCK_SECONDS <= block_seconds <= MAX_BLOCK_SECONDS:
        raise ConfigError(f"--block-seconds: {MIN_BLOCK_SECONDS} to {MAX_BLOCK_SECONDS}, got {block_seconds}")
    if not 0 <= settle_seconds <= MAX_BLOCK_SECONDS:
        raise ConfigError(f"--settle-seconds: 0 to {MAX_BLOCK_SECONDS}, got {settle_seconds}")
    if values is None:
        flips = [c for _t, c in exp._live_marks if not c.get("cut") and (name is None or c.get("name") == name)]
        if not flips:
            raise ConfigError("Confirm alternates a knob flipped live in this run: flip one first"
                              + (f" ({name} was not)" if name else "") + ", or name both values (NAME=A,B)")
        last = flips[-1]
        name, a, b = str(last["name"]), str(last.get("from")), str(last.get("to"))
    else:
        assert name is not None
        info = exp.controller.knobs.get(name) or exp.controller.describe([name])[name]
        info.check_settable()
        if not info.dynamic:
            raise ConfigError(f"{name} is static: it cannot change while the load runs")
        a, b = (str(info.normalize(x)) for x in values)
    if a == b:
        raise ConfigError(f"Confirm needs two different values of {name}, got {a} twice")
    now_value = exp.controller.describe([name])[name].current
    info = exp.controller.knobs[name]
    at_a, at_b = info.same(a, now_value), info.same(b, now_value)
    order = confirm_order(at_b)
    first_change = not (at_a or at_b)
    need = planned_seconds(order, block_seconds, settle_seconds)
    left = (exp._step_ends or math.inf) - time.time()
    if need > left - 1:
        raise ConfigError(f"a confirmation of {name} takes {need} s ({len(order)} blocks of {block_seconds} s, "
                          f"{settle_seconds} s to settle after each change) and the step ends in {max(0, left):.0f} s"
                          ": shorter blocks (--block-seconds) or a longer step")
    group = exp.spec.groups[0].name
    back = a if at_a else b if at_b else now_value
    c = Confirmation(exp, name, a, b, group, block_seconds, settle_seconds, order, first_change, back)
    exp._confirm_started(c)
    c.start()
    return c


def plan_text(c: Confirmation) -> dict[str, Any]:
    need = planned_seconds(c.order, c.block, c.settle)
    return {"name": c.name, "from": c.a, "to": c.b, "order": c.order, "seconds": need,
            "text": f"confirming {c.name} {c.a} → {c.b}: {order_text(c.order)} blocks of {c.block} s "
                    f"({c.settle} s to settle after each change), about {need} s"}


# -- the control socket ------------------------------------------------------------------------------------------
def control_dir() -> Path:
    return paths.data_dir() / "control"


class ControlServer:
    """A running run's Unix socket: one JSON request a connection, one JSON reply ({"ok": ...} or {"error": line}).
    Requests: {"flip": {"name", "value"}}, {"confirm": {"name"?, "values"?, "block_seconds"?, "settle_seconds"?}},
    {"await": {}} (until the confirmation ends: its verdict), {"status": {}}. The socket is the user's own (0600 in
    a 0700 directory)."""

    def __init__(self, exp: Any):
        self.exp = exp
        self.path = control_dir() / f"{os.getpid()}.sock"
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def open(self) -> None:
        d = self.path.parent
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)
        for stale in d.glob("*.sock"):  # the sockets of runs killed -9 (their process is gone), this pid's too
            if stale == self.path or stale not in running_controls():
                with contextlib.suppress(FileNotFoundError):
                    stale.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(str(self.path))
        finally:
            os.umask(old)
        sock.listen(4)
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="tunebench-control", daemon=True)
        self._thread.start()

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def _serve(self) -> None:
        while self._sock is not None:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(5)
                raw = b""
                while not raw.endswith(b"\n") and len(raw) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    raw += chunk
                conn.settimeout(None)
                reply = self._answer(json.loads(raw.decode()))
            except (ValueError, UnicodeDecodeError, TypeError, KeyError):
                reply = {"error": "a control request is one JSON object on one line"}
            except TunebenchError as exc:
                reply = {"error": str(exc)}
            except OSError:
                return
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps(reply).encode() + b"\n")

    def _answer(self, req: Mapping[str, Any]) -> dict[str, Any]:
        exp = self.exp
        if "status" in req:
            return {"ok": {"pid": os.getpid(), "session": exp.writer.id if exp.writer else None,
                           "target": exp.target.name, "workload": exp.spec.groups[0].workload.name
                           if hasattr(exp.spec.groups[0], "workload") else None,
                           "confirming": exp._confirming.name if exp._confirming else None}}
        if "flip" in req:
            f = req["flip"]
            return {"ok": exp.change_knob(str(f["name"]), str(f["value"]))}
        if "confirm" in req:
            c = req["confirm"]
            values = c.get("values")
            if values is not None and (not isinstance(values, list) or len(values) != 2):
                raise ConfigError("Confirm's values are two: NAME=A,B")
            conf = exp.confirm_knob(c.get("name"), tuple(str(v) for v in values) if values else None,
                                    int(c.get("block_seconds") or BLOCK_SECONDS),
                                    int(SETTLE_SECONDS if c.get("settle_seconds") is None else c["settle_seconds"]))
            return {"ok": plan_text(conf)}
        if "await" in req:  # the running (or last) confirmation's end: its verdict line and event data
            conf = exp._confirming or exp._last_confirmation
            if conf is None:
                raise ConfigError("no confirmation has run in this run")
            conf.done.wait()
            return {"ok": {**plan_text(conf), "verdict": conf.verdict_label,
                           "data": dict(conf.event.data) if conf.event is not None else None}}
        raise ConfigError(f"unknown control request: {', '.join(map(str, req)) or 'empty'}")


def running_controls() -> list[Path]:
    """The control sockets of runs whose process is alive (a killed run's socket file is left out)."""
    out = []
    for p in sorted(control_dir().glob("*.sock")):
        with contextlib.suppress(ValueError):
            pid = int(p.stem)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            except PermissionError:
                pass
            out.append(p)
    return out


def control_request(request: Mapping[str, Any], pid: int | None = None, timeout: float | None = None
                    ) -> dict[str, Any]:
    """Sends `request` to the running run (the only one, or `pid`'s); its reply's "ok" payload, or TargetError."""
    socks = running_controls()
    if pid is not None:
        socks = [p for p in socks if p.stem == str(pid)]
        if not socks:
            raise TargetError(f"no running Tunebench run with pid {pid} (runs: {_pids() or 'none'})")
    if not socks:
        raise TargetError("no Tunebench run is running on this machine (tunebench run/sweep in another terminal, "
                          "or the window)")
    if len(socks) > 1:
        raise ConfigError(f"{len(socks)} runs are running (pids {_pids()}): say which with --pid")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(10)
        s.connect(str(socks[0]))
        s.settimeout(timeout)
        s.sendall(json.dumps(dict(request)).encode() + b"\n")
        raw = b""
        while not raw.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
    except OSError as exc:
        raise TargetError(f"the run's control socket did not answer: {exc}") from None
    finally:
        s.close()
    try:
        reply = json.loads(raw.decode())
    except ValueError:
        raise TargetError("the run ended before it answered") from None
    if "error" in reply:
        raise ConfigError(str(reply["error"]))
    return dict(reply.get("ok") or {})


def _pids() -> str:
    return ", ".join(p.stem for p in running_controls())
