"""Performance over time: sessions that ran the same experiment line up as a series, and the series' persistent
shifts (change points) are found with the noise the series itself shows, not a fixed percentage.

A series is one experiment: the workload (family and options), the load (threads or rates per step), the probes
that change the load (statements, profile), the engine and transport, the server's flavor and major version (or a
line the user named), the machine, and the experiment's own knob settings. What the server was set to outside the
experiment is not part of it: that is what a change point names when it moved between two sessions.

Each session gives one point per step (its threads or rate): the step's headline -- TPS, or the p95 latency in
open loop, or the family's own (NOPM, rows/s) -- with the step's interval, the server's version, the machine's
busy seconds. Change points are searched on the log of a step's points in session order: candidates by PELT
(`ruptures`, an l1 cost: medians, so a session beside a busy machine moves no segment), each kept only if the
medians on either side differ by more than the series' own noise allows (a robust scale from successive
differences) -- the false-claim rate and the power are measured by simulation in tests/unit/test_history.py."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tunebench.core.verdict import dependence

# probes whose cost changes what is measured (core/probe.py: only when asked for)
LOAD_PROBES = ("statements", "profile")
# A change point is kept when its shift, in units of its standard error from the series' own noise, is at least
# this (two-sided). Chosen with tests/unit/test_history.py's simulations (session-to-session noise of 2-8 %,
# sessions that move together (AR(1), 0.3) and a drift of one noise's worth over the series): 2-4 % of no-change
# series of 8-40 sessions show any change point; a 20 % shift at 5 % noise is found at its place in 61 % of series
# of 12 and 87 % of 20, a 10 % shift at 2 % noise in 80 % of 12, a doubling in 99 %. 3.5 gave fewer false claims
# (1-5 %) at less power (57 % / 76 %).
Z_KEEP = 3.0
BUSY_SHARE = 0.2  # a step whose seconds were busy (other processes' CPU) for more than this share is not evidence
MIN_SEGMENT = 3  # sessions on each side of a change point
PENALTY = 3.0  # PELT's penalty per change point (l1 cost), in units of the noise times log(n)
MIN_NOISE = 0.005  # a floor on the noise (log units): identical values would make any wiggle significant
TAU_MIN_SESSIONS = 10  # a regression check estimates how its history's sessions move together from this many on


def number(v: float) -> str:
    """A headline as people read it: 12,940 TPS, 3.42 ms."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def major_version(version: str | None) -> str:
    """'10.11.19-MariaDB' -> '10.11'; '9.7.4' -> '9.7'."""
    parts = (version or "").split("-", 1)[0].split(".")
    return ".".join(parts[:2]) if parts and parts[0] else ""


def _probes(config: Mapping[str, Any]) -> list[str]:
    probes = config.get("probes")
    if probes in (None, "", "all", "none"):  # 'all': the default probes, which leave these two out
        names: Iterable[str] = ()
    elif isinstance(probes, str):
        names = [p.strip() for p in probes.split(",")]
    else:
        names = [str(p) for p in probes]
    return sorted(p for p in set(names) if p in LOAD_PROBES)


def experiment_knobs(session: Mapping[str, Any]) -> dict[str, str]:
    """The knob settings the experiment itself made (its steps' configurations), as name -> sorted values."""
    out: dict[str, set[str]] = {}
    for step in session.get("steps") or []:
        for name, value in ((step.get("config") or {}).get("knobs") or {}).items():
            out.setdefault(str(name), set()).add(str(value))
    return {k: ",".join(sorted(v)) for k, v in sorted(out.items())}


def identity(session: Mapping[str, Any], line: str | None = None) -> dict[str, Any]:
    """What makes two sessions the same experiment (see the module's docstring). `line`: a name the user gave that
    stands for the server (a series across versions, e.g. 'mariadb-releases'), instead of flavor and major version."""
    config = session.get("config") or {}
    groups = []
    for g in config.get("groups") or []:
        groups.append({"workload": g.get("workload"), "options": g.get("options") or {},
                       "schedule": list(g.get("schedule") or []), "rates": list(g.get("rates") or []),
                       "arrival": g.get("arrival") if g.get("rates") else None,
                       "latency_limit_ms": g.get("latency_limit_ms"), "lua_script": g.get("lua_script")})
    server: dict[str, Any] = {"line": line} if line else {
        "flavor": session.get("flavor"), "major": major_version(session.get("version"))}
    return {"groups": groups, "step_seconds": config.get("step_seconds"),
            "warmup_seconds": config.get("warmup_seconds"), "engine": session.get("engine"),
            "transport": session.get("transport"), "probes": _probes(config), "server": server,
            "machine": session.get("machine") or session.get("host"), "knobs": experiment_knobs(session)}


def series_key(ident: Mapping[str, Any]) -> str:
    """A short stable id of an identity."""
    return hashlib.sha256(_canonical(ident).encode()).hexdigest()[:12]


def describe(ident: Mapping[str, Any]) -> str:
    """One line: 'oltp_update_index 4 thr, 8 s steps, mariadb 10.11 on vm (builtin, socket)'."""
    loads = []
    for g in ident.get("groups") or []:
        load = ",".join(f"{r:g}/s" for r in g["rates"]) if g.get("rates") else \
            ",".join(str(t) for t in g.get("schedule") or []) + " thr"
        loads.append(f"{g.get('workload')} {load}")
    server = ident.get("server") or {}
    where = server.get("line") or f"{server.get('flavor') or '?'} {server.get('major') or '?'}"
    knobs = ident.get("knobs") or {}
    extra = (", " + ", ".join(f"{k}={v}" for k, v in knobs.items())) if knobs else ""
    probes = (", probes " + "+".join(ident["probes"])) if ident.get("probes") else ""
    return (f"{'; '.join(loads) or '?'}, {ident.get('step_seconds')} s steps{extra}{probes}, {where} "
            f"on {ident.get('machine') or '?'} ({ident.get('engine')}, {ident.get('transport')})")


@dataclass(frozen=True)
class Point:
    """One step of one session in a series."""

    session_id: int
    started_at: float
    step: int  # the step's position in the session (its load: `load`)
    load: str  # '4 thr' or '300/s'
    value: float  # the headline
    low: float | None  # the step's interval (within the session: the seconds' own spread)
    high: float | None
    metric: str  # 'TPS', 'p95 ms', 'NOPM', ...
    version: str
    busy_seconds: int = 0
    seconds: int = 0
    higher_is_better: bool = True

    @property
    def busy(self) -> bool:
        """The machine was busy with other work for much of the step: shown, not used to find a change."""
        return self.seconds > 0 and self.busy_seconds > BUSY_SHARE * self.seconds


def _step_interval(summary: Mapping[str, Any], value: float, higher: bool) -> tuple[float | None, float | None]:
    """A rough interval of a step's headline from its seconds' spread (cv) and count; None when not known. The
    seconds move together (autocorrelation): the effective count is taken as a third of them, as the verdicts'
    dependence estimates come out on these loads (core/verdict.py)."""
    cv, n = summary.get("cv"), summary.get("seconds")
    if not higher or not isinstance(cv, (int, float)) or not isinstance(n, (int, float)) or n < 3:
        return None, None
    half = 1.96 * float(cv) / math.sqrt(max(1.0, float(n) / 3.0))
    return value * math.exp(-half), value * math.exp(half)


def points(session: Mapping[str, Any], group: str = "main") -> list[Point]:
    """The session's steps as series points (steps without a headline are left out)."""
    out: list[Point] = []
    for i, step in enumerate(session.get("steps") or []):
        summary = (step.get("summary") or {}).get(group)
        if not isinstance(summary, Mapping):
            continue
        busy = (step.get("summary") or {}).get("_busy") or {}
        rate = summary.get("rate")
        if rate:
            value, metric, higher = summary.get("lat_p95_ms"), "p95 ms", False
            load = f"{float(rate):g}/s"
        elif summary.get("headline") is not None:
            value, metric, higher = summary.get("headline"), str(summary.get("headline_label") or "headline"), True
            load = f"{summary.get('threads')} thr"
        else:
            value, metric, higher = summary.get("tps"), "TPS", True
            load = f"{summary.get('threads')} thr"
        if not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
            continue
        low, high = _step_interval(summary, float(value), higher)
        out.append(Point(int(session["id"]), float(session.get("started_at") or 0.0), i, load, float(value), low,
                         high, metric, str(session.get("version") or ""),
                         int(busy.get("seconds") or 0) if isinstance(busy, Mapping) else 0,
                         int(summary.get("seconds") or 0), higher))
    return out


@dataclass
class ChangePoint:
    """A persistent shift between sessions `before` (the last one of the old level) and `after` (the first of the
    new), in a series' step `load`."""

    load: str
    index: int  # the first point of the new level
    before: int  # session ids
    after: int
    ratio: float  # median after / median before
    low: float
    high: float
    z: float
    n_before: int
    n_after: int
    metric: str = "TPS"
    higher_is_better: bool = True
    differed: list[str] = field(default_factory=list)  # what else differed (the fair-comparison diff), filled later

    @property
    def regression(self) -> bool:
        return self.ratio < 1.0 if self.higher_is_better else self.ratio > 1.0

    def text(self) -> str:
        way = "regression" if self.regression else "improvement"
        return (f"{self.load}: {way} between sessions {self.before} and {self.after}: {self.ratio:.2f}x {self.metric} "
                f"(95 % CI {self.low:.2f}-{self.high:.2f}; {self.n_before} sessions before, {self.n_after} after)")

    def as_dict(self) -> dict[str, Any]:
        return {"load": self.load, "index": self.index, "before": self.before, "after": self.after,
                "ratio": self.ratio, "low": self.low, "high": self.high, "z": self.z, "n_before": self.n_before,
                "n_after": self.n_after, "metric": self.metric, "regression": self.regression,
                "differed": list(self.differed), "text": self.text()}


def noise(logs: Sequence[float] | np.ndarray) -> float:
    """A robust scale of a series' session-to-session noise (log units): the median absolute successive difference
    over sqrt(2) and the normal's 0.6745 -- a level shift moves one difference, a busy session two."""
    x = np.asarray(logs, dtype=np.float64)
    if len(x) < 3:
        return MIN_NOISE
    d = np.abs(np.diff(x))
    return max(float(np.median(d)) / 0.6745 / math.sqrt(2.0), MIN_NOISE)


def _candidates(x: np.ndarray, sigma: float) -> list[int]:
    import ruptures as rpt  # (a heavy import: only when a series is searched)

    if len(x) < 2 * MIN_SEGMENT:
        return []
    algo = rpt.Pelt(model="l1", min_size=MIN_SEGMENT, jump=1).fit(x.reshape(-1, 1))
    # l1 cost is in absolute deviations: its penalty in units of sigma (not sigma^2)
    return [int(b) for b in algo.predict(pen=PENALTY * sigma * math.log(len(x)))[:-1]]


def _scale(x: np.ndarray, bounds: Sequence[int]) -> tuple[float, float]:
    """The noise around the levels between `bounds` (a level shift is not noise; drift and sessions that move
    together are) and how many sessions move together (the verdicts' dependence: conservative at these lengths).
    Each level's median takes a degree of freedom (levels of 3 leave a residual of 0 each); never below the
    successive differences' scale, which no placement of the levels moves."""
    resid = np.concatenate([x[a:b] - np.median(x[a:b]) for a, b in itertools.pairwise(bounds)])
    levels = len(bounds) - 1
    mad = float(np.median(np.abs(resid - np.median(resid))))
    spread = 1.4826 * mad * math.sqrt(len(x) / max(1, len(x) - levels))
    return max(spread, noise(x)), dependence(resid)


def change_points(values: Sequence[float], z_keep: float = Z_KEEP) -> list[tuple[int, float, float, float, float]]:
    """Persistent shifts of a positive series: (index of the first point of the new level, ratio of the medians
    after/before, its 95 % interval low and high, z), each between its neighbouring change points' segments."""
    x = np.log(np.asarray(values, dtype=np.float64))
    if len(x) < 2 * MIN_SEGMENT or not np.all(np.isfinite(x)):
        return []
    bounds = [0, *_candidates(x, noise(x)), len(x)]
    sigma, tau = _scale(x, bounds)
    kept: list[tuple[int, float, float, float, float]] = []
    for j in range(1, len(bounds) - 1):
        a, k, b = bounds[j - 1], bounds[j], bounds[j + 1]
        left, right = x[a:k], x[k:b]
        # the standard error of a difference of medians (1.2533 sigma / sqrt(n) each, for normal noise; n / tau
        # sessions that count as independent)
        se = 1.2533 * sigma * math.sqrt(tau * (1.0 / len(left) + 1.0 / len(right)))
        shift = float(np.median(right) - np.median(left))
        z = shift / se
        if abs(z) >= z_keep:
            kept.append((k, math.exp(shift), math.exp(shift - 1.96 * se), math.exp(shift + 1.96 * se), z))
    return kept


def series_changes(pts: Sequence[Point], z_keep: float = Z_KEEP) -> list[ChangePoint]:
    """Change points of each load's points (in session order)."""
    out: list[ChangePoint] = []
    by_load: dict[str, list[Point]] = {}
    for p in sorted(pts, key=lambda p: (p.started_at, p.session_id, p.step)):
        if not p.busy:
            by_load.setdefault(p.load, []).append(p)
    for load, ps in by_load.items():
        for k, ratio, low, high, z in change_points([p.value for p in ps], z_keep):
            out.append(ChangePoint(load, k, ps[k - 1].session_id, ps[k].session_id, ratio, low, high, z, k,
                                   len(ps) - k, ps[k].metric, ps[k].higher_is_better))
    return out


def regression_check(history: Sequence[float], new: Sequence[float], higher_is_better: bool = True,
                     z_keep: float = Z_KEEP) -> tuple[bool, float, float, float, float]:
    """Whether `new` (one or more repeats of the latest result) is a regression beyond `history`'s noise:
    (regression, ratio of new's median to history's, its 95 % interval, z). The noise is the history's own (its
    robust scale and how its sessions move together; with at least MIN_SEGMENT points, else nothing is claimed)."""
    h = np.log(np.asarray(history, dtype=np.float64))
    n = np.log(np.asarray(new, dtype=np.float64))
    if len(h) < MIN_SEGMENT or len(n) < 1:
        return False, math.nan, math.nan, math.nan, 0.0
    sigma, tau = _scale(h, [0, len(h)])
    if len(h) < TAU_MIN_SESSIONS:  # too few to tell sessions that move together from noise (tau's correction
        tau = 1.0                  # alone doubled it at 6): as independent runs
    se = 1.2533 * sigma * math.sqrt(tau / len(h) + 1.0 / len(n))
    shift = float(np.median(n) - np.median(h))
    z = shift / se
    worse = z <= -z_keep if higher_is_better else z >= z_keep
    return bool(worse), math.exp(shift), math.exp(shift - 1.96 * se), math.exp(shift + 1.96 * se), z
