"""A knob A/B verdict: before vs after on per-second values (TPS, p95/p99, the top waits), after a settle time,
with a 95 % confidence interval on the TPS ratio that respects the autocorrelation of per-second values.

Issue 42. Per-second TPS is autocorrelated (a checkpoint, a purge wave, a burst of another process's load lasts
several seconds), so 30 seconds are not 30 independent draws. Each side's variance of the mean is s^2 * tau / n,
tau = (1+r)/(1-r) the integrated autocorrelation time of an AR(1) with the side's lag-1 autocorrelation r --
bias-corrected and raised by one standard error, because a side whose r came out low by chance is exactly the one
whose interval would be too narrow -- and the interval is Welch's t on the log of the ratio (delta method) with
n / tau - 1 degrees of freedom per side. A side with fewer than MIN_EFFECTIVE effectively independent seconds
gives no interval: "not judged". Measured on simulated A/A pairs (AR(1), lag-1 drawn from 0.2-0.8; 600 each):
intervals that exclude 1 in 1.8 % of 30-s sides (3.2 % of those judged) and 1.7 % of 60-s sides; the moving-block
bootstrap this replaced did so in 9.5 % (independent seconds), 17.5 % (lag-1 0.5) and 31 % (0.8) of 27-s sides,
and batch means (tried first) in 11 % of the 30-s sides they judged. A single window before and one after cannot
tell the knob from a change in the machine at the flip: the confirmation (paired_blocks) can.
Pure arithmetic: the run, a replay, the report and a recomputation from the store get the same numbers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from tunebench.core.busy import BUSY_PCT, busy_mask, other_series
from tunebench.core.interval import Event
from tunebench.core.knobs import new_sessions_only
from tunebench.core.stats import steady_start

SETTLE_SECONDS = 3  # skipped after a change: the server reacts within a second or two, clients a second later
LEVEL = 0.95
MIN_EFFECTIVE = 3  # effectively independent seconds a side needs for an interval (fewer: not judged)
MIN_PAIRS = 3  # pairs of blocks a confirmation needs for an interval
TOP_WAITS = 3
MIN_SECONDS = 3  # fewer settled seconds on either side: no verdict
# a sweep step left with fewer quiet seconds (busy ones out) is no measurement of its configuration: its repeat is
# left out of the repeats' verdict (tests/unit/test_verdict.py: with it, no false claim over 5 %)
MIN_QUIET_SECONDS = 5

Floats = npt.NDArray[np.float64]
SeriesMap = Mapping[str, tuple[Sequence[float] | Floats, Sequence[float] | Floats]]


@dataclass(frozen=True, slots=True)
class WaitShift:
    """A wait instrument's mean wait time per second (ms/s), before and after."""

    name: str
    before: float
    after: float


@dataclass(frozen=True, slots=True)
class Verdict:
    """Before vs after a change, on settled per-second values; `ratio` is mean TPS after / before."""

    tps_before: float
    tps_after: float
    ratio: float
    ci_low: float
    ci_high: float
    seconds_before: int
    seconds_after: int
    block: int  # seconds the per-second values move together over (the larger side's); the interval is NaN when
    # not judged (fewer than MIN_EFFECTIVE effectively independent seconds on a side)
    p95_before: float | None = None
    p95_after: float | None = None
    p99_before: float | None = None
    p99_after: float | None = None
    waits: tuple[WaitShift, ...] = ()
    windows: tuple[tuple[float, float], tuple[float, float]] | None = None  # the settled (from, to) of each side
    left_out: int = 0  # seconds of the two windows left out because the server was not answering
    busy_left_out: int = 0  # busy seconds left out (core/busy.py: the machine's CPU went elsewhere)
    repeats: int = 0  # a sweep's repeats the interval is over (paired_blocks); 0: one run's seconds
    order: str = ""  # a confirmed flip's blocks in order ("ABBABAAB"), the interval from their pairs' spread
    floor_pct: float | None = None  # this machine's noise floor for the load (`tunebench calibrate`), when known
    # Open loop (a rate asked: TPS follows the rate, so a TPS ratio says nothing): the latency is the headline --
    # the mean per-second p95 after / before with its interval (lower is better), at the asked rate, and whether
    # that rate was served on both sides; TPS stays as the check. None in closed loop.
    rate: float | None = None
    lat_ratio: float | None = None
    lat_low: float | None = None
    lat_high: float | None = None
    served: bool | None = None

    @property
    def judged(self) -> bool:
        """Whether there is an interval: each side had enough independent batches of seconds."""
        return math.isfinite(self.ci_low) and math.isfinite(self.ci_high)

    @property
    def clear(self) -> bool:
        """Whether the interval excludes 1.0 (no change)."""
        return self.ci_low > 1.0 or self.ci_high < 1.0

    @property
    def open_loop(self) -> bool:
        return self.rate is not None

    @property
    def lat_judged(self) -> bool:
        return self.lat_low is not None and self.lat_high is not None and math.isfinite(self.lat_low) \
            and math.isfinite(self.lat_high)

    @property
    def lat_clear(self) -> bool:
        return self.lat_judged and (self.lat_low > 1.0 or self.lat_high < 1.0)  # type: ignore[operator]

    def better(self) -> int:
        """The headline's sense: 1 better (more TPS, or less latency at the asked rate), -1 worse, 0 no clear
        difference or not judged."""
        if self.open_loop:
            if not self.lat_clear or self.lat_ratio is None:
                return 0
            return 1 if self.lat_ratio < 1.0 else -1
        if not self.judged or not self.clear:
            return 0
        return 1 if self.ratio > 1.0 else -1

    def headline(self) -> str:
        """What the verdict is about, first: TPS in closed loop, the p95 at the asked rate in open loop."""
        return self.lat_headline() if self.open_loop else self.tps_text()

    def check_text(self) -> str:
        """The second line: the latency in closed loop; TPS (the rate's, a check) in open loop."""
        if self.open_loop:
            return f"TPS {self.tps_before:,.0f} → {self.tps_after:,.0f} (the rate's: a check, not the verdict)"
        return self.latency_text()

    def rate_text(self) -> str:
        if self.rate is None:
            return ""
        served = "" if self.served is None else ", served" if self.served else ", NOT served on both sides"
        return f"at {self.rate:g}/s{served}"

    def lat_headline(self) -> str:
        """Open loop: "p95 11.1 → 5.15 ms, 0.46x (95 % CI 0.41-0.52) at 300/s, served"."""
        move = f"p95 {_ms(self.p95_before)} → {_ms(self.p95_after)} ms" \
            if self.p95_before is not None and self.p95_after is not None else "p95 unknown"
        if self.lat_ratio is None:
            return f"{move} (no latency on one side) {self.rate_text()}"
        if not self.lat_judged:
            return (f"not judged: {move}, {self.lat_ratio:.2f}x, but its seconds move together too long for "
                    f"{min(self.seconds_before, self.seconds_after)} s a side {self.rate_text()}")
        ci = f"95 % CI {self.lat_low:.2f}-{self.lat_high:.2f}"
        if not self.lat_clear:
            return f"no clear difference in p95 latency ({move}, {self.lat_ratio:.2f}x, {ci}) {self.rate_text()}"
        return f"{move}, {self.lat_ratio:.2f}x ({ci}) {self.rate_text()}"

    def tps_text(self) -> str:
        return self._tps_text() + self.floor_text()

    def within_floor(self) -> bool:
        """Whether the ratio is inside the machine's calibrated noise floor (False when there is none)."""
        return self.floor_pct is not None and abs(self.ratio - 1.0) * 100.0 < self.floor_pct

    def floor_text(self) -> str:
        if self.floor_pct is None or not self.judged:
            return ""
        if self.within_floor():
            return f" -- within this machine's noise (±{self.floor_pct:.0f} %)"
        return f" (this machine's noise: ±{self.floor_pct:.0f} %)"

    def _tps_text(self) -> str:
        if self.order:
            return self._confirmed_text()
        if not self.judged:
            return (f"not judged: {self.ratio:.2f}x TPS, but the seconds move together over ~{self.block} s, too long "
                    f"for {min(self.seconds_before, self.seconds_after)} s a side")
        ci = f"95 % CI {self.ci_low:.2f}-{self.ci_high:.2f}"
        if not self.clear:
            return f"no clear difference in TPS ({self.ratio:.2f}x, {ci})"
        return f"{self.ratio:.2f}x TPS ({ci})"

    def _confirmed_text(self) -> str:
        how = f"confirmed over {self.repeats} pairs of blocks, {order_text(self.order)}"
        if not self.judged:
            pairs = "1 pair" if self.repeats == 1 else f"{self.repeats} pairs"
            return (f"not judged: {self.ratio:.2f}x TPS, but only {pairs} of blocks had seconds on both sides (it "
                    f"needs {MIN_PAIRS}: the machine was busy)")
        ci = f"95 % CI {self.ci_low:.2f}-{self.ci_high:.2f}"
        if not self.clear:
            return f"no clear difference in TPS ({self.ratio:.2f}x, {ci}; {how})"
        return f"{self.ratio:.2f}x TPS ({ci}; {how})"

    def short_text(self) -> str:
        """For a plot's annotation: "1.24x TPS (CI 1.18-1.30)" or "no clear TPS difference (CI 0.97-1.05)"; open
        loop: "p95 0.46x (CI 0.41-0.52) at 300/s"."""
        if self.open_loop:
            if self.lat_ratio is None or not self.lat_judged:
                return f"p95 not judged {self.rate_text()}"
            ci = f"CI {self.lat_low:.2f}-{self.lat_high:.2f}"
            return (f"p95 {self.lat_ratio:.2f}x ({ci}) {self.rate_text()}" if self.lat_clear
                    else f"no clear p95 difference ({ci}) {self.rate_text()}")
        if not self.judged:
            return f"{self.ratio:.2f}x TPS (not judged: too few independent seconds)"
        ci = f"CI {self.ci_low:.2f}-{self.ci_high:.2f}"
        if self.within_floor():
            return f"{self.ratio:.2f}x TPS ({ci}), within the noise (±{self.floor_pct:.0f} %)"
        return f"{self.ratio:.2f}x TPS ({ci})" if self.clear else f"no clear TPS difference ({ci})"

    def latency_text(self) -> str:
        parts = [f"{name} {_ms(b)} → {_ms(a)} ms" for name, b, a in
                 (("p95", self.p95_before, self.p95_after), ("p99", self.p99_before, self.p99_after))
                 if b is not None and a is not None]
        return ", ".join(parts)

    def waits_text(self) -> str:
        if not self.waits:
            return ""
        return "waits " + ", ".join(f"{short_wait(w.name)} {_ms(w.before)} → {_ms(w.after)} ms/s" for w in self.waits)

    def text(self, waits: bool = False) -> str:
        """One line: "1.24x TPS (95 % CI 1.18-1.30), p95 11.7 → 9.9 ms" (and the top waits if asked); open loop, the
        latency first and TPS as the check: "p95 11.1 → 5.15 ms, 0.46x (95 % CI 0.41-0.52) at 300/s, served; TPS
        300 → 300 (the rate's)"."""
        if self.open_loop:
            parts = [self.lat_headline() + f"; TPS {self.tps_before:,.0f} → {self.tps_after:,.0f} (the rate's: a "
                                           "check, not the verdict)"] + ([self.waits_text()] if waits else [])
            return ", ".join(p for p in parts if p) + self.left_out_text()
        parts = [self.tps_text(), self.latency_text()] + ([self.waits_text()] if waits else [])
        return ", ".join(p for p in parts if p) + self.left_out_text()

    def left_out_text(self) -> str:
        parts = ([f"{self.left_out} s without the server"] if self.left_out else []) + (
            [f"{self.busy_left_out} busy s"] if self.busy_left_out else [])
        return f" ({' and '.join(parts)} left out)" if parts else ""

    def to_dict(self) -> dict[str, object]:
        """JSON-safe: an interval not judged is None (not NaN)."""
        d = asdict(self)
        for k in ("ci_low", "ci_high", "lat_low", "lat_high"):
            if d[k] is not None and not math.isfinite(d[k]):
                d[k] = None
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        """From to_dict() after a JSON round trip (tuples came back as lists)."""
        names = set(cls.__dataclass_fields__)
        kw = {k: v for k, v in d.items() if k in names}
        kw["waits"] = tuple(WaitShift(**w) for w in d.get("waits") or ())
        for k in ("ci_low", "ci_high"):
            kw[k] = math.nan if kw.get(k) is None else float(kw[k])
        if kw.get("lat_ratio") is not None:  # a ratio without its interval: not judged
            for k in ("lat_low", "lat_high"):
                kw[k] = math.nan if kw.get(k) is None else float(kw[k])
        win = d.get("windows")
        kw["windows"] = tuple(tuple(w) for w in win) if win else None
        return cls(**kw)


def order_text(order: str) -> str:
    """Blocks in fours: "ABBA BAAB", "BAAB ABBA BAAB ABBA"."""
    return " ".join(order[i:i + 4] for i in range(0, len(order), 4))


def short_wait(name: str) -> str:
    """`waits.wait/synch/mutex/innodb/log_sys_mutex.ms` -> `log_sys_mutex`."""
    inst = name.removeprefix("waits.").removesuffix(".ms")
    return inst.rsplit("/", 1)[-1]


def _ms(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def lag1(x: Floats) -> float:
    """Lag-1 autocorrelation (0 for a constant or a too short series)."""
    if len(x) < 3:
        return 0.0
    d = x - x.mean()
    den = float(np.dot(d, d))
    return float(np.dot(d[:-1], d[1:]) / den) if den > 0 else 0.0


def dependence(x: Floats) -> float:
    """How many seconds x's seconds move together over: (1+r)/(1-r), the integrated autocorrelation time of an
    AR(1) with lag-1 autocorrelation r -- the estimate bias-corrected (r + (1+4r)/n: it is low by about that at
    these lengths) and raised by one standard error (sqrt((1-r^2)/n)), clipped to [0, 0.95]. Raised: a side whose
    estimate came out low by chance is exactly the side whose interval would be too narrow."""
    n = len(x)
    if n < 3:
        return 1.0
    r = lag1(x)
    r = r + (1 + 4 * r) / n
    r = min(max(r + math.sqrt(max(1 - r * r, 0.0) / n), 0.0), 0.95)
    return (1 + r) / (1 - r)


def ratio_ci(before: Sequence[float] | Floats, after: Sequence[float] | Floats, naive: bool = False,
             level: float = LEVEL) -> tuple[float, float, float, int]:
    """mean(after)/mean(before), its interval, and how many seconds the seconds move together over (the larger
    side's, rounded up): (ratio, low, high, seconds). The interval is Welch's t on the log ratio, each side's
    variance of the mean s^2 * tau / n (tau = dependence(side)) with n / tau - 1 degrees of freedom; NaN when a side
    has fewer than MIN_EFFECTIVE effectively independent seconds (n / tau). `naive`: tau = 1 (independent
    seconds), for comparison."""
    b, a = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    if len(b) < 2 or len(a) < 2 or b.mean() <= 0:
        raise ValueError("a ratio needs at least 2 seconds on each side and a positive mean before")
    ratio = float(a.mean() / b.mean())
    tb, ta = (1.0, 1.0) if naive else (dependence(b), dependence(a))
    low, high = _welch_log_ratio(b, a, tb, ta, level)
    return ratio, low, high, math.ceil(max(tb, ta) - 1e-9)


def _welch_log_ratio(b: Floats, a: Floats, tb: float, ta: float, level: float) -> tuple[float, float]:
    nb, na = len(b) / tb, len(a) / ta  # effectively independent seconds
    mb, ma = float(b.mean()), float(a.mean())
    if nb < MIN_EFFECTIVE or na < MIN_EFFECTIVE or mb <= 0 or ma <= 0:
        return math.nan, math.nan
    vb = float(b.var(ddof=1)) * tb / len(b) / mb**2
    va = float(a.var(ddof=1)) * ta / len(a) / ma**2
    center = math.log(ma / mb)
    if vb + va == 0:
        return math.exp(center), math.exp(center)
    df = (vb + va) ** 2 / ((vb**2 / (nb - 1) if vb else 0.0) + (va**2 / (na - 1) if va else 0.0))
    half = t_quantile(1 - (1 - level) / 2, round(df, 2)) * math.sqrt(vb + va)
    return math.exp(center - half), math.exp(center + half)


@functools.lru_cache(maxsize=512)
def t_quantile(p: float, df: float) -> float:
    """Student's t quantile for p in (0.5, 1) and df > 0: bisection on the distribution function, its density
    integrated by Simpson's rule (no scipy)."""
    if not 0.5 < p < 1 or df <= 0:
        raise ValueError("t_quantile needs 0.5 < p < 1 and df > 0")
    const = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def upper_half(t: float) -> float:  # P(0 < T < t)
        u = np.linspace(0.0, t, 4001)
        f = const * (1 + u * u / df) ** (-(df + 1) / 2)
        return float((t / 4000 / 3) * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum()))

    lo, hi = 0.0, 1.0
    while upper_half(hi) < p - 0.5:
        hi *= 2
        if hi > 1e6:
            return math.inf
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if upper_half(mid) < p - 0.5 else (lo, mid)
    return (lo + hi) / 2


CONFIRM_ORDER = "ABBABAAB"  # a confirmation's blocks: balanced, so a linear drift adds nothing to the mean ratio


def paired_blocks(blocks: Sequence[tuple[str, Sequence[float]]], level: float = LEVEL
                  ) -> tuple[float, float, float, int]:
    """B over A from alternating blocks (CONFIRM_ORDER: each adjacent pair holds one A and one B): the mean of the
    pairs' log ratios of block means, with Student's t over the pairs (their spread is what changes between
    windows: the machine's load, drift, a stall), as (ratio, low, high, pairs). NaN interval with fewer than
    MIN_PAIRS pairs that have seconds on both sides."""
    d: list[float] = []
    for (s1, v1), (s2, v2) in zip(blocks[0::2], blocks[1::2], strict=False):
        if {s1, s2} != {"A", "B"}:
            raise ValueError(f"a pair of blocks is {s1}{s2}, not one A and one B")
        a, b = (v1, v2) if s1 == "A" else (v2, v1)
        if len(a) and len(b) and float(np.mean(a)) > 0 and float(np.mean(b)) > 0:
            d.append(math.log(float(np.mean(b)) / float(np.mean(a))))
    if not d:
        return math.nan, math.nan, math.nan, 0
    m = float(np.mean(d))
    if len(d) < MIN_PAIRS:
        return math.exp(m), math.nan, math.nan, len(d)
    half = t_quantile(1 - (1 - level) / 2, len(d) - 1) * float(np.std(d, ddof=1)) / math.sqrt(len(d))
    return math.exp(m), math.exp(m - half), math.exp(m + half), len(d)


def settled_from(values: Sequence[float] | Floats, skip: int) -> int:
    """Leading seconds left out of one side: `skip` fixed seconds (after a change), then the seconds the
    steady-state detector finds below the side's steady level (core.stats.steady_start). The fixed seconds are
    never shortened to make room: a side left with too few seconds gets no verdict."""
    if len(values) <= skip:
        return len(values)
    return skip + steady_start(list(values[skip:]))


def inside(t: Floats, lo: float, hi: float) -> npt.NDArray[np.bool_]:
    """Which samples cover a second wholly inside [lo, hi]: a sample is stamped at the end of its second (like
    the run's intervals). The second a change falls in is neither before nor after it; and a probe's read still
    in flight when a step ends is not needed (its second ends after the step)."""
    mask: npt.NDArray[np.bool_] = (t - 1.0 >= lo) & (t <= hi)
    return mask


def window(t: Floats, v: Floats, lo: float, hi: float, excluded: Outages = ()) -> Floats:
    """The values of the samples whose second lies wholly inside [lo, hi] and touches no `excluded` interval."""
    picked: Floats = v[inside(t, lo, hi) & ~touching(t, excluded)]
    return picked


Outages = Sequence[tuple[float, float]]


def touching(t: Floats, excluded: Outages) -> npt.NDArray[np.bool_]:
    """Which samples' seconds (t-1, t] overlap one of the `excluded` (from, to) intervals."""
    mask = np.zeros(len(t), dtype=bool)
    for lo, hi in excluded:
        mask |= (t > lo) & (t - 1.0 < hi)
    return mask


def outages(events: Sequence[Mapping[str, Any]], end: float) -> list[tuple[float, float]]:
    """When the server was not answering, from a session's events: a `gap` event with data server=down opens
    an outage, the next note with server=up closes it (an outage still open closes at `end`)."""
    out: list[tuple[float, float]] = []
    opened: float | None = None
    for e in sorted(events, key=lambda e: float(e["t"])):
        state = (e.get("data") or {}).get("server")
        if e["kind"] == "gap" and state == "down" and opened is None:
            opened = float(e["t"])
        elif state == "up" and opened is not None:
            out.append((opened, float(e["t"])))
            opened = None
    if opened is not None:
        out.append((opened, end))
    return out


def ab_verdict(series: SeriesMap, group: str, start: float, flip: float, end: float,
               settle_before: int = 0, settle_after: int = SETTLE_SECONDS, excluded: Outages = (),
               busy_pct: float | None = None) -> Verdict | None:
    """Before = seconds in [start, flip], after = [flip, end] (whole seconds, see `inside`), of
    `client.<group>.tps`; each side settled
    (`settle_*` fixed seconds, then the steady-state detector); p95/p99 are the mean of the per-second
    percentiles over the same settled seconds; the waits are `waits.*.ms` series, the top ones by their larger
    side. Seconds that touch an `excluded` interval (the server not answering) are left out of both sides and
    counted in `left_out`. With `busy_pct`, so are the busy seconds (some host's other CPU over it, core/busy.py),
    counted in `busy_left_out`. None when either side has fewer than MIN_SECONDS settled seconds or no TPS before."""
    def arrays(name: str) -> tuple[Floats, Floats] | None:
        if name not in series:
            return None
        t, v = series[name]
        return np.asarray(t, dtype=np.float64), np.asarray(v, dtype=np.float64)

    tps = arrays(f"client.{group}.tps")
    if tps is None:
        return None
    t, v = tps
    sides = []
    down = touching(t, excluded)
    left_out = int((inside(t, start, end) & down).sum())
    busy = busy_mask(series, t, busy_pct) & ~down if busy_pct is not None else np.zeros(len(t), dtype=bool)
    busy_left_out = int((inside(t, start, end) & busy).sum())
    for lo, hi, skip in ((start, flip, settle_before), (flip, end, settle_after)):
        mask = inside(t, lo, hi) & ~down & ~busy
        ts, vs = t[mask], v[mask]
        cut = settled_from(vs, skip)
        if len(vs) - cut < MIN_SECONDS:
            return None
        sides.append(((float(ts[cut] - 1.0), hi), vs[cut:]))
    (wb, before), (wa, after) = sides
    if before.mean() <= 0:
        return None
    ratio, low, high, block = ratio_ci(before, after)

    busy_t = [(float(x) - 1.0, float(x)) for x in t[busy]]  # the other series' seconds too

    def means(name: str) -> tuple[float, float] | None:
        arr = arrays(name)
        if arr is None:
            return None
        b, a = window(*arr, *wb, [*excluded, *busy_t]), window(*arr, *wa, [*excluded, *busy_t])
        b, a = b[np.isfinite(b)], a[np.isfinite(a)]
        return (float(b.mean()), float(a.mean())) if len(b) and len(a) else None

    p95, p99 = means(f"client.{group}.lat.p95"), means(f"client.{group}.lat.p99")
    waits = []
    for name in sorted(n for n in series if is_wait(n)):
        m = means(name)
        if m is not None and max(m) > 0:
            waits.append(WaitShift(name, *m))
    waits.sort(key=lambda w: -max(w.before, w.after))
    loop = open_loop_verdict(arrays(f"client.{group}.rate"), arrays(f"client.{group}.lat.p95"), wb, wa,
                             [*excluded, *busy_t], float(before.mean()), float(after.mean()))
    return Verdict(
        tps_before=float(before.mean()), tps_after=float(after.mean()), ratio=ratio, ci_low=low, ci_high=high,
        seconds_before=len(before), seconds_after=len(after), block=block,
        p95_before=p95[0] if p95 else None, p95_after=p95[1] if p95 else None,
        p99_before=p99[0] if p99 else None, p99_after=p99[1] if p99 else None,
        waits=tuple(waits[:TOP_WAITS]), windows=(wb, wa), left_out=left_out, busy_left_out=busy_left_out, **loop)


SERVED = 0.95  # an open-loop side served its rate when its TPS was at least this share of it


def open_loop_verdict(rate: tuple[Floats, Floats] | None, p95: tuple[Floats, Floats] | None,
                      wb: tuple[float, float], wa: tuple[float, float], excluded: Outages, tps_before: float,
                      tps_after: float) -> dict[str, Any]:
    """An open-loop flip's headline (Verdict.rate, lat_ratio, lat_low, lat_high, served): the per-second p95 over
    the same settled seconds as the TPS, after / before, with its interval (core.verdict.ratio_ci: the seconds'
    dependence counted, as for TPS). {} in closed loop (no `rate` series in the window)."""
    if rate is None:
        return {}
    rb = window(*rate, *wb, excluded)
    ra = window(*rate, *wa, excluded)
    rates = np.concatenate([rb, ra])
    rates = rates[np.isfinite(rates) & (rates > 0)]
    if not len(rates):
        return {}
    asked = float(np.median(rates))
    served = bool(tps_before >= SERVED * float(np.mean(rb[np.isfinite(rb)] if len(rb) else rates))
                  and tps_after >= SERVED * float(np.mean(ra[np.isfinite(ra)] if len(ra) else rates)))
    out: dict[str, Any] = {"rate": asked, "served": served}
    if p95 is None:
        return out
    lb, la = window(*p95, *wb, excluded), window(*p95, *wa, excluded)
    lb, la = lb[np.isfinite(lb) & (lb > 0)], la[np.isfinite(la) & (la > 0)]
    if len(lb) < MIN_SECONDS or len(la) < MIN_SECONDS:
        return out
    lat_ratio, lat_low, lat_high, _block = ratio_ci(lb, la)
    return {**out, "lat_ratio": lat_ratio, "lat_low": lat_low, "lat_high": lat_high}


def series_names(group: str, names: Sequence[str]) -> list[str]:
    """The series a verdict for `group` reads, out of a session's `names`."""
    # (the rate: an open-loop flip is judged on its latency at that rate -- without it a run's verdict, read back
    # from the store, was judged on TPS, the rate's)
    own = [f"client.{group}.{s}" for s in ("tps", "lat.p95", "lat.p99", "rate")]
    return [n for n in names if n in own or is_wait(n)] + other_series(names)


def is_wait(name: str) -> bool:
    """An instrument's wait time series (not the probe's `total` and `other` sums)."""
    return name.startswith("waits.") and name.endswith(".ms") and name not in ("waits.total.ms", "waits.other.ms")


def step_window(t: Floats, v: Floats, step: Mapping[str, Any]) -> Floats:
    """A recorded step's measured seconds (from `measure_from`, after the warm-up, to `ended_at`) of a series."""
    return window(t, v, float(step["measure_from"]), float(step["ended_at"]))


def pair_verdict(before: Sequence[float], after: Sequence[float]) -> Verdict | None:
    """Two steps' per-second TPS (a sweep configuration against the baseline at the same threads), each
    settled by the steady-state detector; None when either has fewer than MIN_SECONDS seconds."""
    b = np.asarray(before, dtype=np.float64)
    a = np.asarray(after, dtype=np.float64)
    b, a = b[settled_from(b, 0):], a[settled_from(a, 0):]
    if len(b) < MIN_SECONDS or len(a) < MIN_SECONDS or b.mean() <= 0:
        return None
    ratio, low, high, block = ratio_ci(b, a)
    return Verdict(tps_before=float(b.mean()), tps_after=float(a.mean()), ratio=ratio, ci_low=low, ci_high=high,
                   seconds_before=len(b), seconds_after=len(a), block=block)


def repeats_verdict(pairs: Sequence[tuple[float, float]]) -> Verdict | None:
    """A sweep configuration against the baseline over its repeats: (baseline TPS, configuration TPS) per repeat
    at the same threads (the order interleaves them); the interval is from the repeats' spread (paired_blocks),
    NaN with fewer than MIN_PAIRS. None with fewer than 2 repeats (one run's verdict is pair_verdict's)."""
    pairs = [(b, a) for b, a in pairs if b > 0 and a > 0]
    if len(pairs) < 2:
        return None
    ratio, low, high, n = paired_blocks([x for b, a in pairs for x in (("A", [b]), ("B", [a]))])
    return Verdict(tps_before=float(np.mean([b for b, _ in pairs])), tps_after=float(np.mean([a for _, a in pairs])),
                   ratio=ratio, ci_low=low, ci_high=high, seconds_before=0, seconds_after=0, block=0, repeats=n)


def confirm_verdict(series: SeriesMap, group: str, blocks: Sequence[tuple[str, float, float]], excluded: Outages = (),
                    busy_pct: float | None = None) -> Verdict | None:
    """A confirmed flip (the Confirm action): `blocks` are (side, from, to) in order, each side's measured window
    after its settle time; the TPS seconds wholly inside each, less the busy ones (with `busy_pct`) and those
    without the server, judged by paired_blocks (adjacent pairs' spread: what changes between windows). None
    when a side has no such second."""
    if f"client.{group}.tps" not in series:
        return None
    t = np.asarray(series[f"client.{group}.tps"][0], dtype=np.float64)
    v = np.asarray(series[f"client.{group}.tps"][1], dtype=np.float64)
    down = touching(t, excluded)
    busy = busy_mask(series, t, busy_pct) & ~down if busy_pct is not None else np.zeros(len(t), dtype=bool)
    judged: list[tuple[str, list[float]]] = []
    kept: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
    left_out = busy_left_out = 0
    for side, lo, hi in blocks:
        inn = inside(t, lo, hi)
        left_out += int((inn & down).sum())
        busy_left_out += int((inn & busy).sum())
        judged.append((side, [float(x) for x in v[inn & ~down & ~busy]]))
        kept[side].append((lo, hi))
    ratio, low, high, pairs = paired_blocks(judged)
    a = [x for side, xs in judged if side == "A" for x in xs]
    b = [x for side, xs in judged if side == "B" for x in xs]
    if not a or not b or float(np.mean(a)) <= 0:
        return None
    busy_t = [(float(x) - 1.0, float(x)) for x in t[busy]]

    def means(name: str) -> tuple[float | None, float | None]:
        if name not in series:
            return None, None
        st, sv = (np.asarray(x, dtype=np.float64) for x in series[name])
        out = []
        for side in ("A", "B"):
            vals = np.concatenate([window(st, sv, lo, hi, [*excluded, *busy_t]) for lo, hi in kept[side]] or
                                  [np.array([])])
            vals = vals[np.isfinite(vals)]
            out.append(float(vals.mean()) if len(vals) else None)
        return out[0], out[1]

    p95, p99 = means(f"client.{group}.lat.p95"), means(f"client.{group}.lat.p99")
    return Verdict(tps_before=float(np.mean(a)), tps_after=float(np.mean(b)),
                   ratio=ratio, ci_low=low, ci_high=high, seconds_before=len(a), seconds_after=len(b), block=1,
                   p95_before=p95[0], p95_after=p95[1], p99_before=p99[0], p99_after=p99[1],
                   left_out=left_out, busy_left_out=busy_left_out, repeats=pairs,
                   order="".join(side for side, _lo, _hi in blocks))


def verdict_event(series: SeriesMap, group: str, change: Mapping[str, object], start: float, at: float, end: float,
                  settle_before: int, stamped: float, several_groups: bool = False, excluded: Outages = (),
                  busy_pct: float | None = BUSY_PCT, floor_pct: float | None = None,
                  measured_from: float | None = None) -> Event:
    """The "verdict" event of one live change for one client group: its label is the Events line, its data the
    numbers (`verdict`: Verdict.to_dict() or None) and the window, so a replay or a report reads them back and a
    test can recompute them from the stored series. Stamped when it is known (`stamped`, the step's end);
    `data["at"]` is the change's own time."""
    excluded = [(lo, hi) for lo, hi in excluded if hi > start and lo < end]
    v = ab_verdict(series, group, start, at, end, settle_before=settle_before, excluded=excluded, busy_pct=busy_pct)
    if v is not None and floor_pct is not None:
        v = replace(v, floor_pct=floor_pct)
    name = str(change.get("name"))
    # when: on the one clock a flip is told by everywhere (the step's row says "at 21 s of 60 measured")
    when = f" at {at - measured_from:.0f} s of the step's measured seconds" if measured_from is not None else ""
    head = f"{name} {change.get('from')} → {change.get('to')}{when}" + (f" ({group})" if several_groups else "")
    text = flip_text(v) if v else "too few settled seconds on one side for a verdict"
    if v is None and busy_pct is not None and ab_verdict(series, group, start, at, end, settle_before=settle_before,
                                                          excluded=excluded) is not None:
        t = np.asarray(series[f"client.{group}.tps"][0], dtype=np.float64)
        n = int((inside(t, start, end) & busy_mask(series, t, busy_pct)).sum())
        text = (f"not judged: the machine was busy ({n} of {int(inside(t, start, end).sum())} s with over "
                f"{busy_pct:g} % of its CPU used by other processes)")
    warn = new_sessions_only(name)
    if warn:
        text += " (applies to new connections only: the load's open connections kept the old value)"
    return Event(stamped, "verdict", f"{head}: {text}",
                 {"name": name, "from": change.get("from"), "to": change.get("to"), "group": group, "at": at,
                  "start": start, "end": end, "settle_before": settle_before, "new_sessions_only": warn,
                  "excluded": [list(x) for x in excluded], "busy_pct": busy_pct, "floor_pct": floor_pct,
                  **({"measured_from": measured_from} if measured_from is not None else {}),
                  "verdict": v.to_dict() if v else None,
                  # why there is none, as the Events say it (the stage card and the knob panel said "too few
                  # settled seconds" where the Events said the machine was busy)
                  **({"text": text} if v is None else {})})


def flip_text(v: Verdict) -> str:
    """A live flip's verdict in words; a clear one says what a single window before and one after cannot tell
    apart from the knob (issue 42)."""
    text = v.text(waits=True)
    if (v.lat_clear if v.open_loop else v.clear):
        text += " (a single flip: a change in the machine's load at the flip would read the same)"
    return text


def event_verdict(data: Mapping[str, Any]) -> Verdict | None:
    """The Verdict a "verdict" event's data carries (None: too few seconds for one)."""
    v = data.get("verdict")
    return Verdict.from_dict(v) if isinstance(v, Mapping) else None


def recompute(series: SeriesMap, data: Mapping[str, Any]) -> Verdict | None:
    """A verdict event's numbers again, from `series` and the window the event names (a confirmed flip's: its
    blocks), with the noise floor it was judged against."""
    excluded = [(float(lo), float(hi)) for lo, hi in data.get("excluded") or ()]
    busy_pct = None if data.get("busy_pct") is None else float(data["busy_pct"])
    if data.get("blocks"):
        v = confirm_verdict(series, str(data["group"]), [(str(s), float(lo), float(hi)) for s, lo, hi in
                                                         data["blocks"]], excluded=excluded, busy_pct=busy_pct)
    else:
        v = ab_verdict(series, str(data["group"]), float(data["start"]), float(data["at"]), float(data["end"]),
                       settle_before=int(data.get("settle_before") or 0), excluded=excluded, busy_pct=busy_pct)
    floor = data.get("floor_pct")
    return replace(v, floor_pct=float(floor)) if v is not None and floor is not None else v
