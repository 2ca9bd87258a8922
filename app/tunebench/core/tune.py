"""A live knob search's results as data (run/tune.py runs the search): its trials, the best, the ABBA BAAB
confirmation and the conclusion in words; what the store keeps, the CLI and the Markdown report print, and the
window draws."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

MIN_GAIN = 0.02  # a confirmed ratio below 1 + this is no improvement worth a change, however narrow its interval


def size_text(v: float) -> str:
    """1073741824 -> 1G, 67108864 -> 64M, 200 -> 200."""
    if float(v).is_integer():
        n = int(v)
        for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
            if n >= mult and n % mult == 0:
                return f"{n // mult}{unit}"
        return str(n)
    return f"{v:g}"


@dataclass(slots=True)
class Trial:
    """One trial: the values set (read back from the server), its seconds, and its objective against the baselines
    just before and after it (a ratio, higher is better: TPS over the baseline's, or the baseline's p99 over its)."""

    n: int
    values: dict[str, str | None]
    asked: dict[str, str]
    changed_at: float
    measure_from: float | None = None
    ended_at: float | None = None
    tps: float | None = None
    p99_ms: float | None = None
    baseline_tps: float | None = None
    baseline_p99_ms: float | None = None
    objective: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    seconds: int = 0
    ended_early: str | None = None  # why it ended early
    error: str | None = None  # the server refused a value, or the trial was void twice: no measurement
    voided: str | None = None  # why a first measurement was void (a restart, a freeze): measured again
    best_so_far: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Trial:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})

    def values_text(self) -> str:
        return _values(self.values)

    def line(self, objective: str) -> str:
        what = self.values_text()
        if self.error:
            return f"trial {self.n}: {what}: refused ({self.error})"
        ratio = f"{self.objective:.2f}x" if self.objective is not None else "-"
        ci = f" (95 % CI {self.ci_low:.2f}-{self.ci_high:.2f})" if self.ci_low is not None else ""
        tps = f"{self.tps:,.0f} TPS vs {self.baseline_tps:,.0f}" if self.tps is not None and self.baseline_tps else ""
        if objective == "p99" and self.p99_ms is not None and self.baseline_p99_ms is not None:
            tps = f"p99 {self.p99_ms:.2f} ms vs {self.baseline_p99_ms:.2f}"
        early = f", ended early: {self.ended_early}" if self.ended_early else ""
        return f"trial {self.n}: {what}: {ratio}{ci}, {tps}{early}"


def _numeric(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


@dataclass(slots=True)
class TuneResult:
    """The search's outcome: the trials, the best, its ABBA BAAB confirmation and the verdict in words."""

    spec: dict[str, Any]
    originals: dict[str, str | None]
    trials: list[Trial] = field(default_factory=list)
    best: int | None = None  # the best trial's n
    confirm: dict[str, Any] | None = None  # ratio, ci_low, ci_high, tps_a, tps_b, seconds, windows
    calibration: dict[str, Any] | None = None  # `--calibrate`: the A/A blocks before the search (floor_pct, ...)
    verdict: str = "no clear improvement"
    text: str = ""
    stopped: bool = False
    started_at: float | None = None
    ended_at: float | None = None

    @property
    def improved(self) -> bool:
        return self.verdict == "improvement"

    def best_trial(self) -> Trial | None:
        return next((t for t in self.trials if t.n == self.best), None)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["trials"] = [t.to_dict() for t in self.trials]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TuneResult:
        names = set(cls.__dataclass_fields__)
        kw = {k: v for k, v in d.items() if k in names}
        kw["trials"] = [Trial.from_dict(t) for t in d.get("trials") or ()]
        return cls(**kw)

    def table_rows(self) -> list[list[str]]:
        """The trials table (the CLI, the Markdown report): one row per trial."""
        rows = []
        for t in self.trials:
            ratio = f"{t.objective:.2f}" if t.objective is not None else "-"
            ci = f"{t.ci_low:.2f}-{t.ci_high:.2f}" if t.ci_low is not None else "-"
            tps = f"{t.tps:,.0f}" if t.tps is not None else "-"
            base = f"{t.baseline_tps:,.0f}" if t.baseline_tps is not None else "-"
            p99 = f"{t.p99_ms:.2f}" if t.p99_ms is not None else "-"
            note = (t.error and f"refused: {t.error}") or (t.ended_early and f"ended early: {t.ended_early}") or ""
            best = "best" if t.n == self.best else ""
            rows.append([str(t.n), t.values_text(), tps, base, p99, ratio, ci, f"{t.seconds}",
                         ", ".join(x for x in (best, note) if x)])
        return rows


TABLE_HEADER = ["trial", "values", "TPS", "baseline TPS", "p99 ms", "ratio", "95 % CI", "seconds", ""]


def result_text(r: TuneResult) -> str:
    """The search's conclusion in one line."""
    best = r.best_trial()
    c = r.confirm
    if best is None:
        why = "no trial beat its baseline" if r.trials else "no trial ran"
        return f"no clear improvement: {why}; the knobs stay at {_values(r.originals)}"
    ci = confirm_text(c) if c else ""
    if r.improved and c:
        return f"improvement: {best.values_text()} gives {ci} the baseline's {_objective_word(r)} in an ABBA BAAB " \
               f"confirmation; the knobs are back at {_values(r.originals)}"
    if c:
        if c.get("ci_low") is None or c.get("ci_high") is None:
            why = "not judged: too few pairs of blocks with seconds on both sides"
        else:
            small = c["ci_low"] > 1 and c["ratio"] < 1 + MIN_GAIN
            floor = c.get("floor_pct")
            noise = floor is not None and c["ci_low"] > 1 and (c["ratio"] - 1) * 100 < floor
            why = f"within this machine's noise (±{floor:.0f} %, `tunebench calibrate`)" if noise else \
                f"under the {MIN_GAIN:.0%} worth a change" if small else "the interval holds 1" \
                if c["ci_low"] <= 1 <= c["ci_high"] else "worse than the baseline"
        return f"no clear improvement: the best trial ({best.values_text()}) confirmed at {ci}: {why}; the knobs " \
               f"stay at {_values(r.originals)}"
    return f"no clear improvement: the confirmation of {best.values_text()} did not finish; the knobs stay at " \
           f"{_values(r.originals)}"


def confirm_text(c: Mapping[str, Any], digits: int = 2) -> str:
    """A confirmation's ratio and interval: "1.31x (95 % CI 1.12-1.53)", or "1.31x (no interval: ...)"."""
    busy = f", {c['busy_left_out']} busy s left out" if c.get("busy_left_out") else ""
    if c.get("ci_low") is None or c.get("ci_high") is None or c.get("ratio") is None or c["ratio"] != c["ratio"]:
        ratio = f"{c['ratio']:.{digits}f}x " if c.get("ratio") is not None and c["ratio"] == c["ratio"] else ""
        return f"{ratio}(no interval: fewer than 3 pairs of blocks with quiet seconds on both sides{busy})"
    return f"{c['ratio']:.{digits}f}x (95 % CI {c['ci_low']:.{digits}f}-{c['ci_high']:.{digits}f}{busy})"


def _objective_word(r: TuneResult) -> str:
    return "TPS" if r.spec.get("objective", "tps") == "tps" else "p99 (baseline's over the best's)"


def _values(values: Mapping[str, str | None]) -> str:
    return ", ".join(f"{k}={size_text(float(v)) if v is not None and _numeric(v) else v}" for k, v in values.items())


