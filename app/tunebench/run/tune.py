"""A live knob search (`tunebench tune`, the window's Tune panel): better values of dynamic knobs, found on the
running load in minutes, reported with the A/B verdict's 95 % interval.

One load runs throughout (one step of an Experiment). A trial sets the knobs it is given (live, journaled by the
run's KnobController, so they go back at the end and after a kill -9), lets the server settle, and measures. The
baseline, the knobs' original values, is measured again after every trial: a trial is judged against the
baseline seconds just before and just after it, so the machine's drift does not pass for a knob's effect. A trial
whose TPS stays under half the baseline's for 3 seconds ends, its knobs put back -- the second time, and only if the
load came back when they were put back: a machine busy with something else (another process's burst: 33,000 TPS
fell to 6,800 for 3 s in a busy test run, with innodb_io_capacity under a read-only load) halves TPS too. After the
first collapse the knobs go back for 2 s and the trial runs once more: a second collapse ends it if the load came
back meanwhile; if it stayed low, the machine is busy, nothing points at the knobs, and the trial is measured in
full and judged against its baselines like any other.

Optuna's TPE sampler proposes the values (seeded: the same seed proposes the same first values): a well-kept
library with ask/tell (the load, not the library, owns the loop), log-scaled ranges, integer and categorical
knobs, and few trials to work with (its first third are random draws, as its startup trials). The best trial is
then confirmed in eight alternating blocks, ABBA BAAB (A the baseline, B the best), whose ratio and interval from
the spread between adjacent pairs of blocks (core.verdict.paired_blocks) is the result: an improvement only when
that interval is above 1 and the ratio at least MIN_GAIN above it; otherwise "no clear improvement", and the
originals stay. (Until issue 42 it was A/B/A/B judged from the seconds inside the segments: a change in the
machine's load between two segments read as the knob's effect, and a read-only load "improved" 2.61x.)
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mysql.connector
import numpy as np

from tunebench.core.errors import ConfigError, TunebenchError
from tunebench.core.interval import Event, Interval
from tunebench.core.knobs import KnobInfo, check_knob_name
from tunebench.core.tune import MIN_GAIN, TABLE_HEADER, Trial, TuneResult, result_text, size_text

__all__ = ["MIN_GAIN", "TABLE_HEADER", "Dimension", "KnobRange", "Trial", "TuneResult", "TuneSpec", "Tuner",
           "check_tune", "parse_duration", "resolve", "result_text", "run_tune", "size_text", "tune_run_spec"]
from tunebench.core.busy import BUSY_PCT, busy_mask, other_series
from tunebench.core.verdict import CONFIRM_ORDER, paired_blocks, ratio_ci

OBJECTIVES = ("tps", "p99")
EARLY_FRACTION = 0.5  # a trial whose TPS stays under this share of the baseline's ...
EARLY_SECONDS = 3  # ... for this many seconds ends ...
CHECK_SECONDS = 2  # ... the second time: after the first, the knobs go back for these seconds and it runs again
MAX_KNOBS = 8
MIN_TRIAL_SECONDS = 5
MIN_BLOCK_SECONDS = 3  # a confirmation block's measured seconds at the least (the shortest trials: 5 s)
RESIZE_WAIT = 120.0  # the longest wait for a buffer pool resize to finish before a trial measures
WARM_WAIT = 180.0  # the longest wait for a grown buffer pool's data pages to stop growing
WARM_GROWTH = 0.005  # ... growing by less than this share over WARM_SECONDS: warm
WARM_SECONDS = 3
# the events that void a trial they fall in: the server not answering (a freeze, a restart), a knob the server
# moved behind the run's back (a restart's defaults), a lost load worker
DISTURBANCES = ("gap", "drift", "restart")


@dataclass(frozen=True, slots=True)
class KnobRange:
    """One `--knob`: NAME=LO..HI[:log] (a number or size range) or NAME=v1,v2,... (the values to try)."""

    name: str
    low: str | None = None
    high: str | None = None
    log: bool = False
    choices: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> KnobRange:
        name, sep, rest = text.partition("=")
        name, rest = name.strip().lower(), rest.strip()
        if not sep or not name or not rest:
            raise ConfigError(f"--knob {text!r}: give NAME=LO..HI (a range, :log for a log scale) or NAME=V1,V2,... "
                              "(the values to try)")
        try:
            name = check_knob_name(name)
        except ConfigError as exc:
            raise ConfigError(f"--knob {exc}") from None
        if ".." in rest:
            body, colon, flag = rest.partition(":")
            if colon and flag.strip().lower() != "log":
                raise ConfigError(f"--knob {name}: {flag.strip()!r} after the range; only :log is known")
            low, _, high = body.partition("..")
            if not low.strip() or not high.strip():
                raise ConfigError(f"--knob {name}: a range is LO..HI, got {body!r}")
            return cls(name, low.strip(), high.strip(), bool(colon))
        choices = tuple(c.strip() for c in rest.split(",") if c.strip())
        if len(choices) < 2:
            raise ConfigError(f"--knob {name}: give a range LO..HI or two values or more (V1,V2,...), got {rest!r}")
        if len({c.lower() for c in choices}) != len(choices):
            raise ConfigError(f"--knob {name}: a value is given twice in {rest!r}")
        return cls(name, choices=choices)

    def text(self) -> str:
        if self.choices:
            return f"{self.name}={','.join(self.choices)}"
        return f"{self.name}={self.low}..{self.high}" + (":log" if self.log else "")


@dataclass(frozen=True, slots=True)
class Dimension:
    """A knob's search space, checked against the server's catalog: numbers (int or float) or choices."""

    name: str
    kind: str  # "int", "float" or "choice"
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    choices: tuple[str, ...] = ()

    def distribution(self) -> Any:
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        if self.kind == "choice":
            return CategoricalDistribution(list(self.choices))
        if self.kind == "int":
            return IntDistribution(int(self.low), int(self.high), log=self.log)
        return FloatDistribution(self.low, self.high, log=self.log)

    def text(self) -> str:
        if self.kind == "choice":
            return f"{self.name} in {', '.join(self.choices)}"
        return f"{self.name} {size_text(self.low)}..{size_text(self.high)}" + (" (log scale)" if self.log else "")


def resolve(kr: KnobRange, info: KnobInfo) -> Dimension:
    """The knob's range against what the server says of it: a dynamic knob, values of its type within its bounds;
    ConfigError naming what is wrong otherwise (before anything runs)."""
    info.check_settable()
    if not info.dynamic:
        raise ConfigError(f"{info.name} is static: a tune changes knobs while the load runs (a static knob needs a "
                          "restart per value: make it a sweep axis instead)")
    if kr.choices:
        return Dimension(info.name, "choice", choices=tuple(str(info.normalize(c)) for c in kr.choices))
    if info.type not in ("int", "float"):
        offered = f" ({', '.join(info.choices)})" if info.choices else ""
        raise ConfigError(f"--knob {info.name}: a {info.type} knob takes a list of values{offered}, not a range")
    low, high = info.normalize(kr.low), info.normalize(kr.high)
    assert isinstance(low, int | float) and isinstance(high, int | float)
    if not low < high:
        raise ConfigError(f"--knob {info.name}: the range's low end must be below its high end, got "
                          f"{kr.low}..{kr.high}")
    if kr.log and low <= 0:
        raise ConfigError(f"--knob {info.name}: a log-scaled range starts above 0, got {kr.low}")
    return Dimension(info.name, info.type, float(low), float(high), kr.log)


@dataclass(frozen=True, slots=True)
class TuneSpec:
    """What the search does; the load is the run's RunSpec (one group, one thread count, one long step)."""

    knobs: tuple[KnobRange, ...]
    budget_seconds: int = 600
    trial_seconds: int = 20
    settle_seconds: int = 5
    objective: str = "tps"
    seed: int = 0
    warmup_seconds: int = 10
    calibrate: bool = False  # an A/A of eight blocks before the search: this machine's noise floor for the load

    @property
    def baseline_seconds(self) -> int:
        """Each baseline between trials: half a trial (a trial is judged on the two around it)."""
        return max(MIN_TRIAL_SECONDS, self.trial_seconds // 2)

    @property
    def trial_cost(self) -> int:
        """A trial and the baseline after it, each after its settle time."""
        return 2 * self.settle_seconds + self.trial_seconds + self.baseline_seconds

    @property
    def block_seconds(self) -> int:
        """A confirmation block's measured seconds: half a trial."""
        return max(MIN_BLOCK_SECONDS, self.trial_seconds // 2)

    @property
    def confirm_seconds(self) -> int:
        """The confirmation after the search: eight blocks (CONFIRM_ORDER), each change's settle time before the
        block after it (six: the first block follows the last trial's baseline)."""
        changes = 1 + sum(a != b for a, b in itertools.pairwise(CONFIRM_ORDER))
        return len(CONFIRM_ORDER) * self.block_seconds + changes * self.settle_seconds

    @property
    def planned_trials(self) -> int:
        return max(0, (self.budget_seconds - self.settle_seconds - self.baseline_seconds) // self.trial_cost)

    @property
    def calibrate_seconds(self) -> int:
        """`--calibrate`'s eight blocks of the load as it is (nothing changes: no settle time between them)."""
        return len(CONFIRM_ORDER) * self.block_seconds if self.calibrate else 0

    @property
    def step_seconds(self) -> int:
        """The run's one step: the search, the confirmation, and room for knob changes and resizes."""
        return self.warmup_seconds + self.calibrate_seconds + self.budget_seconds + self.confirm_seconds + 600

    def validate(self) -> None:
        if not 1 <= len(self.knobs) <= MAX_KNOBS:
            raise ConfigError(f"a tune searches 1 to {MAX_KNOBS} knobs (--knob NAME=LO..HI), got {len(self.knobs)}")
        names = [k.name for k in self.knobs]
        if len(set(names)) != len(names):
            raise ConfigError(f"--knob {next(n for n in names if names.count(n) > 1)} is given twice")
        if self.objective not in OBJECTIVES:
            raise ConfigError(f"--objective is tps or p99, got {self.objective!r}")
        if not MIN_TRIAL_SECONDS <= self.trial_seconds <= 3600:
            raise ConfigError(f"--trial-seconds must be from {MIN_TRIAL_SECONDS} to 3600, got {self.trial_seconds}")
        if not 0 <= self.settle_seconds <= 600:
            raise ConfigError(f"--settle-seconds must be from 0 to 600, got {self.settle_seconds}")
        if not 0 <= self.warmup_seconds <= 3600:
            raise ConfigError(f"--warmup-seconds must be from 0 to 3600, got {self.warmup_seconds}")
        if not 0 <= self.seed < 2**32:
            raise ConfigError(f"--seed must be from 0 to {2**32 - 1}, got {self.seed}")
        if self.budget_seconds > 86_400:
            raise ConfigError(f"--budget is at most 24h, got {self.budget_seconds} s")
        if self.planned_trials < 2:
            least = self.settle_seconds + self.baseline_seconds + 2 * self.trial_cost
            raise ConfigError(f"--budget {self.budget_seconds} s holds fewer than 2 trials of {self.trial_cost} s "
                              f"(settle, trial, settle, baseline): give at least {least} s, or shorter trials")

    def to_dict(self) -> dict[str, Any]:
        return {"knobs": [k.text() for k in self.knobs], "budget_seconds": self.budget_seconds,
                "trial_seconds": self.trial_seconds, "settle_seconds": self.settle_seconds,
                "baseline_seconds": self.baseline_seconds, "objective": self.objective, "seed": self.seed,
                "warmup_seconds": self.warmup_seconds, "planned_trials": self.planned_trials,
                "confirm_seconds": self.confirm_seconds, "calibrate": self.calibrate}

    def plan_text(self) -> str:
        return (f"tune: {self.budget_seconds} s of search, about {self.planned_trials} trials of "
                f"{self.trial_seconds} s (each after {self.settle_seconds} s to settle, then "
                f"{self.baseline_seconds} s of baseline), objective {self.objective}, seed {self.seed}; then an "
                f"ABBA BAAB confirmation of the best ({self.confirm_seconds} s)"
                + (f"; first an A/A calibration ({self.calibrate_seconds} s)" if self.calibrate else ""))


def parse_duration(text: str) -> int:
    """`10m`, `90s`, `1h`, `300` (seconds) -> seconds; ConfigError otherwise."""
    t = text.strip().lower()
    mult = {"s": 1, "m": 60, "h": 3600}.get(t[-1:], 0)
    body = t[:-1] if mult else t
    try:
        value = float(body)
    except ValueError:
        value = -1.0
    seconds = value * (mult or 1)
    if not math.isfinite(seconds) or seconds <= 0 or seconds != int(seconds):
        raise ConfigError(f"--budget takes a duration like 10m, 90s or 1h, got {text!r}")
    return int(seconds)


class Stopped(Exception):
    """The run ended (stopped, lost) while the search waited for its seconds."""


class Tuner:
    """Drives the trials on a running Experiment: `feed` gets every Interval of the run, `start` the search in its
    own thread, which waits for the step to measure, and ends the step when done (the result then sits in the
    Experiment's extras, "tune", and in a "tune" event)."""

    def __init__(self, exp: Any, spec: TuneSpec, group: str,
                 on_trial: Callable[[Trial], None] | None = None, on_note: Callable[[str], None] | None = None):
        spec.validate()
        self.exp, self.spec, self.group = exp, spec, group
        self.on_trial = on_trial or (lambda _t: None)
        self.on_note = on_note or (lambda _m: None)
        self._seconds: list[tuple[float, float, float | None]] = []  # (t, tps, p99 ms) of the group
        self._cond = threading.Condition()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.result: TuneResult | None = None
        self.error: BaseException | None = None
        self.dims: list[Dimension] = []
        self.clock: Callable[[], float] = time.time  # the run's seconds are stamped with this clock
        self.waiting = threading.Event()  # set while the search waits for the run's next second (tests drive it)
        # the hosts' other CPU per probe sample (core/busy.py): (sample end, the largest host's %), in order
        self._other: list[tuple[float, float]] = []
        self._disturbances: list[tuple[float, str]] = []  # (when, what) of the events that void a trial
        self.poll_wait: Callable[[float], Any] = self._done.wait  # between two status reads (tests: no sleep)
        self.busy_pct: float | None = getattr(getattr(exp, "spec", None), "busy_pct", BUSY_PCT)

    # -- the run's seconds --
    def feed(self, iv: Interval) -> None:
        if iv.group != self.group:
            return
        with self._cond:
            self._seconds.append((iv.t, iv.tps, (iv.lat_ms or {}).get("p99")))
            self.waiting.clear()
            self._cond.notify_all()

    def feed_event(self, ev: Any) -> None:
        """The run's events: a server that stopped answering (a freeze, a restart), a knob moved behind the run's
        back (a restart's defaults) or a lost worker voids the trial it falls in (issue 42 item 5)."""
        if ev.kind in DISTURBANCES:
            with self._cond:
                self._disturbances.append((float(ev.t), str(ev.label)))

    def _disturbed(self, t0: float, t1: float) -> str | None:
        """Why [t0, t1] cannot be measured (the first disturbance in it), or None."""
        with self._cond:
            hits = [label for t, label in self._disturbances if t0 - 1.0 <= t <= t1]
        return hits[0] if hits else None

    def feed_samples(self, t: float, values: Mapping[str, float]) -> None:
        """A probe sample: the hosts' other CPU (`proc.<host>.other.cpu`), for the busy seconds."""
        other = [float(values[n]) for n in other_series(values)]
        if other:
            with self._cond:
                self._other.append((t, max(other)))

    def _quiet(self, seconds: Sequence[tuple[float, float, float | None]]
               ) -> tuple[list[tuple[float, float, float | None]], int]:
        """The seconds that were not busy (no host's other CPU over busy_pct in the probe sample nearest their end,
        within half a second), and how many were left out."""
        if self.busy_pct is None or not seconds:
            return list(seconds), 0
        with self._cond:
            other = list(self._other)
        if not other:
            return list(seconds), 0
        pt = np.array([o[0] for o in other])
        pv = np.array([o[1] for o in other])
        series = {"proc.host.other.cpu": (pt, pv)}
        busy = busy_mask(series, np.array([s[0] for s in seconds]), self.busy_pct)
        return [s for s, b in zip(seconds, busy, strict=True) if not b], int(busy.sum())

    def close(self) -> None:
        """The run is over: a search still waiting stops."""
        self._done.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _alive(self) -> bool:
        return not self._done.is_set() and not self.exp.stop_event.is_set()

    def _collect(self, start: float, count: int, floor: float | None = None
                 ) -> tuple[list[tuple[float, float, float | None]], str | None]:
        """The `count` seconds starting at `start` (wall clock); with `floor`, every second from `start` on is
        watched and EARLY_SECONDS in a row under it end the collection early (returns why)."""
        got: list[tuple[float, float, float | None]] = []
        low_run = 0
        seen = 0
        while True:
            with self._cond:
                while seen >= len(self._seconds) and self._alive():
                    self.waiting.set()
                    self._cond.wait(0.5)
                self.waiting.clear()
                if not self._alive():
                    raise Stopped()
                fresh = self._seconds[seen:]
                seen = len(self._seconds)
            for s in fresh:
                if s[0] - 1 < start - 1e-3:
                    continue
                got.append(s)
                low_run = low_run + 1 if floor is not None and s[1] < floor else 0
                if low_run >= EARLY_SECONDS:
                    return got, f"{EARLY_SECONDS} s under half the baseline's TPS ({floor:,.0f})"
                if len(got) >= count:
                    return got, None

    def _after(self, t: float, seconds: float) -> float:
        """The start of the first whole second at least `seconds` after `t` (the run's seconds end on whole
        seconds of its clock)."""
        with self._cond:
            last = self._seconds[-1][0] if self._seconds else t
        frac = last - math.floor(last)
        edge = math.floor(t + seconds - frac) + frac
        return edge if edge >= t + seconds - 1e-6 else edge + 1

    # -- the search --
    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name="tunebench-tune", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self._search()
        except Stopped:
            pass
        except BaseException as exc:  # a bug or a server error: the run stops, the knobs go back
            self.error = exc
            self.on_note(f"the tune stopped: {exc}")
            self.exp.request_stop()
        finally:
            if self.result is not None:
                self._finish()
            self.exp.end_step()

    def _wait_measuring(self) -> None:
        while self._alive() and (self.exp.controller is None or self.exp._measured_since is None):
            self._done.wait(0.2)
        if not self._alive():
            raise Stopped()

    def _set(self, values: Mapping[str, Any]) -> dict[str, str | None]:
        ctl = self.exp.controller
        got: dict[str, str | None] = {}
        grew = False
        for name, value in values.items():
            change = ctl.set_live(name, value)
            got[name] = change["to"]
            if name == "innodb_buffer_pool_size":
                with contextlib.suppress(TypeError, ValueError):
                    grew = int(str(change["to"])) > int(str(change["from"]))
        if "innodb_buffer_pool_size" in values:
            self._await_resize()
            if grew:
                self._await_warm()
        return got

    def _status(self, name: str) -> float | None:
        conn = self.exp.controller.connect()
        try:
            cur = conn.cursor()
            cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
            row = cur.fetchone()
            cur.close()
        finally:
            conn.close()
        try:
            return float(row[1]) if row else None
        except (TypeError, ValueError):
            return None

    def _await_warm(self) -> None:
        """A grown buffer pool fills from disk as the load reads: a trial measured before its data pages stop
        growing measures the warm-up, not the size (issue 42 item 5). Waits until they grow by less than WARM_GROWTH
        over WARM_SECONDS (or the pool is nearly full, or WARM_WAIT), then says how long it took."""
        t0 = time.monotonic()
        readings: list[float] = []
        while time.monotonic() - t0 < WARM_WAIT and self._alive():
            pages = self._status("Innodb_buffer_pool_pages_data")
            total = self._status("Innodb_buffer_pool_pages_total")
            if pages is None:
                return
            readings.append(pages)
            if total and pages >= 0.98 * total:
                break
            if len(readings) > WARM_SECONDS and readings[-1] - readings[-1 - WARM_SECONDS] \
                    <= WARM_GROWTH * max(readings[-1], 1.0):
                break
            self.poll_wait(1.0)
        else:
            if self._alive():
                self.on_note(f"the grown buffer pool was still filling after {WARM_WAIT:.0f} s; measuring anyway")
                return
        if len(readings) > 1:
            self.on_note(f"the grown buffer pool warmed in {time.monotonic() - t0:.0f} s (data pages "
                         f"{readings[0]:,.0f} → {readings[-1]:,.0f}): the trial measures from here")

    def _await_resize(self) -> None:
        """A buffer pool resize runs in the background after the SET: the trial measures once it is done."""
        conn = self.exp.controller.connect()
        try:
            deadline = time.monotonic() + RESIZE_WAIT
            while time.monotonic() < deadline and self._alive():
                cur = conn.cursor()
                cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_resize_status%'")
                status = {str(k).lower(): (v.decode() if isinstance(v, bytes) else str(v)) for k, v in cur.fetchall()}
                cur.close()
                code = status.get("innodb_buffer_pool_resize_status_code")
                text = status.get("innodb_buffer_pool_resize_status", "")
                if (code is not None and code in ("0", "")) or (code is None and (
                        not text or text.lower().startswith(("completed", "size did not change")))):
                    return
                time.sleep(0.5)
            self.on_note(f"the buffer pool resize did not finish within {RESIZE_WAIT:.0f} s; measuring anyway")
        finally:
            conn.close()

    def _search(self) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        spec = self.spec
        self._wait_measuring()
        ctl = self.exp.controller
        infos = ctl.describe([k.name for k in spec.knobs])
        self.dims = [resolve(k, infos[k.name]) for k in spec.knobs]
        originals = {d.name: infos[d.name].current for d in self.dims}
        r = self.result = TuneResult(spec.to_dict(), originals, started_at=self.clock())
        startup = max(2, spec.planned_trials // 3)
        sampler = optuna.samplers.TPESampler(seed=spec.seed, n_startup_trials=startup)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        dists = {d.name: d.distribution() for d in self.dims}
        self.on_note(spec.plan_text())
        if spec.calibrate:  # after the warm-up: the load as it is, in eight blocks judged as the confirmation is
            self._calibrate(self._after(self.clock(), spec.warmup_seconds))
        # the warm-up, then the first baseline
        t = self._after(self.clock(), 0 if spec.calibrate else spec.warmup_seconds + spec.settle_seconds)
        base, _ = self._collect(t, spec.baseline_seconds)
        self._event("trial", f"baseline: {np.mean([s[1] for s in base]):,.0f} TPS", {"n": 0, "baseline": True,
                    "t0": base[0][0] - 1, "t1": base[-1][0]})
        deadline = (r.started_at or self.clock()) + spec.warmup_seconds + spec.budget_seconds
        # A configuration measured once is not measured again: the sampler hears the same ratio. The originals
        # are known without a trial: the baseline, 1.0 (when the search space holds them).
        tried: dict[tuple[str, ...], float] = {}
        home = {d.name: _typed(d, originals[d.name]) for d in self.dims}
        if all(v is not None for v in home.values()):
            study.add_trial(optuna.trial.create_trial(params=home, distributions=dists, value=1.0))
            tried[tuple(_param(d, home[d.name]) for d in self.dims)] = 1.0
        space = math.prod(len(d.choices) for d in self.dims) if all(d.kind == "choice" for d in self.dims) else None
        n = repeats = rounded_in_a_row = 0
        said_rounded: set[tuple[str, ...]] = set()
        def more() -> bool:  # the planned trials (each segment starts on a whole second: a little late), or room
            now = self.clock()
            return now <= deadline if n < spec.planned_trials else now + spec.trial_cost <= deadline + 1

        while more() and self._alive():
            if space is not None and len(tried) >= space:
                self.on_note(f"every one of the {space} combinations has been measured: the search ends")
                break
            ot = study.ask(dists)
            asked = {d.name: _param(d, ot.params[d.name]) for d in self.dims}
            key = tuple(asked.values())
            if key in tried:  # measured (its ratio again), or refused by the server (failed again, never re-run)
                if math.isnan(tried[key]):
                    study.tell(ot, state=optuna.trial.TrialState.FAIL)
                else:
                    study.tell(ot, tried[key])
                repeats += 1
                if repeats >= 200:
                    self.on_note("the sampler proposes only configurations already measured: the search ends")
                    break
                continue
            repeats = 0
            n += 1
            voided: str | None = None
            rounded = False
            for measure in (1, 2):  # a measurement a restart or a freeze fell in is void: once more
                floor: float | None = EARLY_FRACTION * float(np.mean([s[1] for s in base]))
                again_from: float | None = None  # when a trial that fell under the floor started again
                for attempt in (1, 2):
                    trial = Trial(n, {}, asked, self.clock(), voided=voided)
                    try:
                        trial.values = self._set(asked)
                    except (ConfigError, TunebenchError, mysql.connector.Error) as exc:
                        trial.error = str(exc).splitlines()[0]
                        break
                    held = tuple(str(trial.values.get(d.name)) for d in self.dims)
                    if held != key and held in tried:
                        # the server rounds the value to one measured already (a buffer pool to its chunk size):
                        # the same configuration, one trial (issue 42 item 5)
                        rounded = True
                        break
                    start = self._after(trial.changed_at, spec.settle_seconds)
                    # watched from the change on: a knob that stalls the server ends the trial in its settle time too
                    seen, early = self._trial_seconds(trial.changed_at, start, floor)
                    trial.ended_early = early
                    self._put_back(originals)
                    if early is None or attempt == 2:
                        break
                    assert floor is not None
                    again_from = self.clock()
                    back = self._came_back(floor)
                    why = ("the load came back with the knobs put back; once more, to tell them from a burst of "
                           "other work on the machine" if back else "the TPS stayed low with the knobs put back: "
                           "the machine, not the knobs; once more, measured in full")
                    self.on_note(f"trial {n} fell under half the baseline's TPS ({floor:,.0f}): {why}")
                    self._event("note", f"trial {n} runs again: {why}", {"n": n, "floor": floor, "came_back": back})
                    if not back:  # no sign against the knobs: nothing to end early for, the baselines judge it
                        floor = None
                if again_from is not None:  # the machine's burst is not the search's budget: its end moves as late
                    deadline += self.clock() - again_from
                if trial.error is not None or rounded:
                    break
                after, _ = self._collect(self._after(self.clock(), spec.settle_seconds), spec.baseline_seconds)
                voided = self._disturbed(trial.changed_at, self.clock())
                if voided is None:
                    break
                # never reported under a value the server may not have held: marked, and measured again (the
                # values set again: a restart put the server's own back); its time is not the search's budget
                deadline += self.clock() - trial.changed_at
                what = "measured again" if measure == 1 else "void twice: not measured"
                self.on_note(f"trial {n} ({trial.values_text()}) is void: {voided}; {what}")
                self._event("note", f"trial {n} void: {voided}; {what}", {"n": n, "voided": voided})
                self._put_back(originals)
                if measure == 2:
                    trial.error = f"void twice ({voided})"
            if rounded:
                n -= 1
                self._put_back(originals)
                if held not in said_rounded:  # once per value the server holds
                    said_rounded.add(held)
                    self.on_note(f"{', '.join(f'{k}={v}' for k, v in asked.items())} is "
                                 f"{', '.join(f'{k}={v}' for k, v in trial.values.items())} on the server: measured "
                                 "already, not again")
                tried[key] = tried[held]
                rounded_in_a_row += 1
                if rounded_in_a_row >= 200:
                    self.on_note("the sampler proposes only values the server holds as ones already measured: the "
                                 "search ends")
                    break
                if math.isnan(tried[held]):
                    study.tell(ot, state=optuna.trial.TrialState.FAIL)
                else:
                    study.tell(ot, tried[held])
                continue
            if trial.error is not None:
                study.tell(ot, state=optuna.trial.TrialState.FAIL)
                # issue 42 item 5: a value the server refused is never proposed to it again (a 40 s budget once ran
                # 669 refused trials of one value); one void twice may be (the machine, not the value)
                if voided is None:
                    tried[key] = math.nan
                self._put_back(originals)
                self._trial_done(trial)
                continue
            rounded_in_a_row = 0
            self._judge(trial, seen, base + after)
            base = after
            study.tell(ot, trial.objective if trial.objective is not None else 0.0)
            tried[key] = trial.objective if trial.objective is not None else 0.0
            tried[tuple(str(trial.values.get(d.name)) for d in self.dims)] = tried[key]
            self._trial_done(trial)
        self._confirm()

    def _came_back(self, floor: float) -> bool:
        """After a first collapse, with the knobs put back: does the TPS come back over the floor?"""
        check, _ = self._collect(self._after(self.clock(), 0), CHECK_SECONDS)
        return float(np.mean([s[1] for s in check])) >= floor

    def _trial_seconds(self, changed: float, start: float, floor: float | None
                       ) -> tuple[list[tuple[float, float, float | None]], str | None]:
        """The trial's measured seconds (from `start`), the seconds from the change watched for an early end."""
        spec = self.spec
        settle = round(start - self._after(changed, 0))  # the whole seconds between the change and `start`
        seen, early = self._collect(changed, settle + spec.trial_seconds, floor)
        measured = [s for s in seen if s[0] - 1 >= start - 1e-3]
        return (measured or seen), early

    def _put_back(self, originals: Mapping[str, str | None]) -> None:
        ctl = self.exp.controller
        for name, value in originals.items():
            if value is not None:
                ctl.set_live(name, value)
        # the variables the server moved with the knobs (the controller found them: MariaDB raises
        # innodb_io_capacity_max with innodb_io_capacity), after their knobs, so every baseline runs with the
        # original settings
        for name, value in dict(ctl.companions).items():
            if value is not None and name not in originals and ctl.describe([name])[name].current != value:
                ctl.set_live(name, value)
        if "innodb_buffer_pool_size" in originals:
            self._await_resize()

    def _judge(self, trial: Trial, seen: Sequence[tuple[float, float, float | None]],
               base: Sequence[tuple[float, float, float | None]]) -> None:
        spec = self.spec
        trial.seconds = len(seen)
        if seen:
            trial.measure_from, trial.ended_at = seen[0][0] - 1, seen[-1][0]
        # busy seconds (another process's load) are the machine's, not the knob's: left out of both sides
        seen, _n = self._quiet(seen)
        base, _n = self._quiet(base)
        tps = [s[1] for s in seen]
        btps = [s[1] for s in base]
        trial.tps = float(np.mean(tps)) if tps else None
        trial.baseline_tps = float(np.mean(btps)) if btps else None
        p99 = [s[2] for s in seen if s[2] is not None]
        bp99 = [s[2] for s in base if s[2] is not None]
        trial.p99_ms = float(np.mean(p99)) if p99 else None
        trial.baseline_p99_ms = float(np.mean(bp99)) if bp99 else None
        before, after = (btps, tps) if spec.objective == "tps" else (p99, bp99)
        if len(before) >= 2 and len(after) >= 2 and np.mean(before) > 0:
            trial.objective, low, high, _b = ratio_ci(before, after)
            # NaN: too few independent seconds for an interval (the trial's line shows "-")
            trial.ci_low, trial.ci_high = (None, None) if math.isnan(low) else (low, high)
        elif trial.tps is not None and trial.baseline_tps:
            trial.objective = trial.tps / trial.baseline_tps if spec.objective == "tps" else None

    def _trial_done(self, trial: Trial) -> None:
        r = self.result
        assert r is not None
        prior = [t.objective for t in r.trials if t.objective is not None and not t.ended_early]
        mine = trial.objective if trial.objective is not None and not trial.ended_early else None
        trial.best_so_far = max([*prior, *([mine] if mine is not None else [])], default=None)
        r.trials.append(trial)
        t0 = trial.changed_at
        t1 = trial.ended_at or self.clock()
        self._event("trial", trial.line(self.spec.objective), {"n": trial.n, "t0": t0, "t1": t1,
                                                               "trial": trial.to_dict()})
        self.on_trial(trial)

    def _calibrate(self, start: float) -> None:
        """`--calibrate`: this machine's noise floor for the load (an A/A of eight blocks, busy seconds left out),
        in the result, and the confirmation's verdict measured against it."""
        from tunebench.core.verdict import Verdict
        from tunebench.run.confirm import calibration_text, floor_of

        r = self.result
        assert r is not None
        blocks: list[tuple[str, list[float]]] = []
        t, left_out = start, 0
        for side in CONFIRM_ORDER:
            got, _ = self._collect(t, self.spec.block_seconds)
            t = got[-1][0]
            quiet, n = self._quiet(got)
            left_out += n
            blocks.append((side, [s[1] if self.spec.objective == "tps" else (s[2] or 0.0) for s in quiet]))
        ratio, low, high, pairs = paired_blocks(blocks)
        v = Verdict(1.0, ratio, ratio, low, high, 0, 0, 1, repeats=pairs) if not math.isnan(ratio) else None
        r.calibration = {"floor_pct": floor_of(v), "ratio": ratio if not math.isnan(ratio) else None,
                         "ci_low": None if math.isnan(low) else low, "ci_high": None if math.isnan(high) else high,
                         "pairs": pairs, "busy_left_out": left_out, "block_seconds": self.spec.block_seconds}
        self.on_note(f"calibration: {calibration_text(r.calibration)}")
        self._event("note", f"calibration: {calibration_text(r.calibration)}", {"calibration": r.calibration})

    def _confirm(self) -> None:
        """The baseline (A) and the best trial's values (B) in eight alternating blocks (ABBA BAAB), each after the
        settle time when the values changed; judged from the spread between adjacent pairs of blocks (what changes
        between windows: another process's load, drift), not from the seconds inside them (issue 42)."""
        r = self.result
        assert r is not None
        valid = [t for t in r.trials if t.objective is not None and not t.ended_early and not t.error]
        best = max(valid, key=lambda t: t.objective or 0.0, default=None)
        if best is None or (best.objective or 0.0) <= 1.0:
            r.best = None
            return
        r.best = best.n
        spec = self.spec
        blocks: list[tuple[str, list[tuple[float, float, float | None]]]] = []
        windows: list[tuple[str, float, float]] = []
        self.on_note(f"confirming the best ({best.values_text()}): {' '.join([CONFIRM_ORDER[:4], CONFIRM_ORDER[4:]])}"
                     f" blocks of {spec.block_seconds} s, {spec.confirm_seconds} s")
        previous = "A"  # the last trial's baseline: the originals are in place
        for i, side in enumerate(CONFIRM_ORDER):
            changed = self.clock()
            if side != previous:
                if side == "B":
                    self._set(best.values)
                else:
                    self._put_back(r.originals)
            settle = spec.settle_seconds if side != previous or i == 0 else 0
            previous = side
            got, _ = self._collect(self._after(changed, settle), spec.block_seconds)
            blocks.append((side, got))
            windows.append((side, got[0][0] - 1, got[-1][0]))
            self._event("trial", f"confirm {side}", {"n": best.n, "confirm": side, "t0": changed, "t1": got[-1][0]})
        self._put_back(r.originals)
        self._collect(self._after(self.clock(), 0), 1)  # the blocks' last probe sample has come too
        busy_left_out = 0
        for i, (side, got) in enumerate(blocks):
            quiet, n = self._quiet(got)
            blocks[i] = (side, quiet)
            busy_left_out += n
        a = [s[1] for side, got in blocks if side == "A" for s in got]
        b = [s[1] for side, got in blocks if side == "B" for s in got]
        pa = [s[2] for side, got in blocks if side == "A" for s in got if s[2] is not None]
        pb = [s[2] for side, got in blocks if side == "B" for s in got if s[2] is not None]
        if spec.objective == "tps":
            judged = [(side, [s[1] for s in got]) for side, got in blocks]
        else:  # p99: the baseline's over the best's, so that over 1 is better here too
            judged = [("B" if side == "A" else "A", [s[2] for s in got if s[2] is not None]) for side, got in blocks]
        ratio, low, high, pairs = paired_blocks(judged)
        r.confirm = {"ratio": ratio, "ci_low": None if math.isnan(low) else low,
                     "ci_high": None if math.isnan(high) else high, "pairs": pairs, "order": CONFIRM_ORDER,
                     "tps_a": float(np.mean(a)) if a else None, "tps_b": float(np.mean(b)) if b else None,
                     "p99_a": float(np.mean(pa)) if pa else None, "p99_b": float(np.mean(pb)) if pb else None,
                     "seconds": [len(a), len(b)], "busy_left_out": busy_left_out, "busy_pct": self.busy_pct,
                     "windows": windows, "values": dict(best.values)}
        # this machine's noise floor for the load (`tunebench calibrate`), when it was calibrated: an improvement
        # inside it is the machine's, not the knob's (issue 42 item 3)
        noise = getattr(self.exp, "noise_floor", None)
        floor = noise(self.group) if callable(noise) else None
        if r.calibration is not None and r.calibration.get("floor_pct") is not None:  # this run's own, first
            floor = {"floor_pct": r.calibration["floor_pct"]}
        r.confirm["floor_pct"] = floor["floor_pct"] if floor is not None else None
        inside = floor is not None and (ratio - 1.0) * 100.0 < floor["floor_pct"]
        r.verdict = "improvement" if not math.isnan(low) and low > 1.0 and ratio >= 1.0 + MIN_GAIN and not inside \
            else "no clear improvement"

    def _finish(self) -> None:
        r = self.result
        assert r is not None
        r.stopped = not self._alive() or self.error is not None
        r.ended_at = self.clock()
        r.text = result_text(r) if not r.stopped else "stopped before the search ended: " + result_text(r)
        self.exp.extras["tune"] = r.to_dict()
        self._event("tune", r.text, {"tune": r.to_dict()})
        self.on_note(r.text)

    def _event(self, kind: str, label: str, data: dict[str, Any]) -> None:
        with contextlib.suppress(TunebenchError):
            self.exp._record(Event(self.clock(), kind, label, data))  # type: ignore[arg-type]


def _typed(d: Dimension, original: str | None) -> Any:
    """An original value as the sampler's parameter, or None when the search space does not hold it."""
    if original is None:
        return None
    if d.kind == "choice":
        return next((c for c in d.choices if c.lower() == original.strip().lower()), None)
    try:
        v = float(original)
    except ValueError:
        return None
    if not d.low <= v <= d.high:
        return None
    return int(v) if d.kind == "int" else v


def _param(d: Dimension, v: Any) -> str:
    if d.kind == "int":
        return str(int(v))
    if d.kind == "float":
        return f"{float(v):.6g}"
    return str(v)


# -- a tune as a run ------------------------------------------------------------------------------------------
def tune_run_spec(spec: Any, tune: TuneSpec) -> Any:
    """The run a tune rides on: its one group at one thread count, one step as long as the search needs (the
    search ends it), the tune's settings in the session's config."""
    from dataclasses import replace

    tune.validate()
    if tune.objective == "p99" and spec.engine != "builtin":
        raise ConfigError("--objective p99 needs the builtin engine: sysbench reports one percentile per second, "
                          "the 95th")
    if len(spec.groups) != 1 or len(spec.groups[0].schedule) != 1:
        raise ConfigError("a tune runs one workload at one thread count (--threads T): the search compares "
                          "seconds of one load")
    return replace(spec, step_seconds=tune.step_seconds, warmup_seconds=0, extra={**spec.extra, "tune": tune.to_dict()})


def check_tune(target: Any, spec: Any, tune: TuneSpec) -> list[Dimension]:
    """Every knob against the server's catalog (known, dynamic, its type and bounds), and a buffer pool range
    beyond this machine's memory when the server runs here: ConfigError before anything runs or changes."""
    from tunebench.load.capacity import mem_available_mb
    from tunebench.mysql.connect import introspect, open_connection
    from tunebench.mysql.knobs import check_set_privilege, describe_knobs
    from tunebench.mysql.target import conn_params
    from tunebench.run.monitor import server_is_local

    params = conn_params(target, spec.transport)
    conn = open_connection(params, target.name)
    try:
        info = introspect(conn)
        infos = describe_knobs(conn, info, [k.name for k in tune.knobs])
        dims = [resolve(k, infos[k.name]) for k in tune.knobs]
        # a session-only variable (sql_log_bin) and a knob this account may not change: said here, before the
        # session (issue 43 item 15: it passed, and the tune aborted later)
        check_set_privilege(conn, [d.name for d in dims], params.user)
    finally:
        conn.close()
    for d in dims:
        if d.name == "innodb_buffer_pool_size" and server_is_local(target, spec.transport):
            avail = mem_available_mb()
            if avail is not None and d.high / 2**20 > avail:
                raise ConfigError(f"--knob innodb_buffer_pool_size up to {size_text(d.high)} is more than the "
                                  f"{avail:,.0f} MB this machine has available (the server runs here)")
    return dims


def run_tune(store: Any, target: Any, spec: Any, tune: TuneSpec, *, on_interval: Callable[[Interval], None],
             on_note: Callable[[str], None], on_trial: Callable[[Trial], None] | None = None,
             on_event: Callable[[Event], None] | None = None,
             on_samples: Callable[[float, dict[str, float]], None] | None = None,
             on_step: Callable[[Any], None] | None = None,
             on_experiment: Callable[[Any], None] | None = None) -> Any:
    """The tune's run: the Experiment and its Tuner; the RunOutcome, whose details hold "tune" (TuneResult.to_dict)
    when the search got as far as its first baseline."""
    from tunebench.run.experiment import Experiment

    spec = tune_run_spec(spec, tune)
    check_tune(target, spec, tune)
    tuner: Tuner | None = None

    def interval(iv: Interval) -> None:
        if tuner is not None:
            tuner.feed(iv)
        on_interval(iv)

    def samples(t: float, values: dict[str, float]) -> None:
        if tuner is not None:
            tuner.feed_samples(t, values)
        if on_samples is not None:
            on_samples(t, values)

    def event(ev: Event) -> None:
        if tuner is not None:
            tuner.feed_event(ev)
        if on_event is not None:
            on_event(ev)

    exp = Experiment(store, target, spec, on_interval=interval, on_note=on_note, on_event=event,
                     on_samples=samples, on_step=on_step)
    tuner = Tuner(exp, tune, spec.groups[0].name, on_trial=on_trial, on_note=on_note)
    exp.on_ending.append(tuner.close)
    if on_experiment is not None:
        on_experiment(exp)
    tuner.start()
    try:
        outcome = exp.run()
    finally:
        tuner.close()
    if tuner.error is not None and not isinstance(tuner.error, TunebenchError | mysql.connector.Error):
        raise tuner.error
    return outcome
