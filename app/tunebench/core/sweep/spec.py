"""Sweep specs (TOML) and their checks. Pure: a spec is parsed from text; the server's facts come in later,
when the plan is made (core/sweep/plan.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunebench.core.busy import BUSY_PCT
from tunebench.core.errors import ConfigError
from tunebench.core.knobs import check_knob_name, check_name
from tunebench.core.sweep.toml_writer import write_spec

SPECIAL_AXES = ("transport", "engine", "cpus", "server", "rate")
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
OPTION_AXIS = "option."  # "option.rows_per_commit" = [100, 1000]: a workload option, not a server variable


def _not_finite(v: object) -> bool:
    """NaN or an infinity, as a number or as text ("nan", "-Infinity")."""
    if isinstance(v, bool):
        return False
    try:
        return not math.isfinite(float(v))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def is_option_axis(name: str) -> bool:
    return name.startswith(OPTION_AXIS)
TRANSPORTS = ("socket", "tcp", "tcp+tls")
ENGINES = ("builtin", "sysbench")
CPUS_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
TOP_KEYS = {"name", "description", "workload", "threads", "step_seconds", "warmup_seconds", "cooldown_seconds",
            "repeats", "order", "seed", "reset_data", "align", "engine", "transport", "baseline", "options", "axes",
            "group",
            "schema", "optional_axes", "rates", "arrival", "latency_limit_ms", "slo_p99_ms", "phase", "busy_threshold"}
PHASE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
ARRIVAL_NAMES = ("poisson", "fixed")  # core/schedule.py's
MAX_RATE = 10_000_000
MIN_RATE = 0.01  # as core/schedule.py (one transaction every 100 s)



@dataclass(frozen=True, slots=True)
class GroupSpec:
    name: str
    workload: str
    threads: tuple[int, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    # open loop (core/schedule.py): the rate of each step ((): closed loop), like threads one per step or one for all
    rates: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class PhaseSpec:
    """One step of a phase plan, named (the insert benchmark's l.i0, l.x, qr100 ...): a load step (its groups'
    thread counts at that step, 0 for a group idle in it), or an `action` of a group's family run instead of load
    (iiBench's create_indexes: the l.x phase)."""

    name: str
    action: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **({"action": self.action} if self.action else {})}


@dataclass(frozen=True, slots=True)
class SweepSpec:
    name: str
    groups: tuple[GroupSpec, ...]
    axes: Mapping[str, tuple[Any, ...]]  # in file order; server variables and SPECIAL_AXES
    step_seconds: int = 30
    warmup_seconds: int = 5
    cooldown_seconds: int = 0
    repeats: int = 1
    order: str = "listed"
    seed: int = 1
    reset_data: bool = False
    engine: str = "builtin"
    transport: str | None = None
    baseline: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    schema: str | None = None  # None: the first group's family's own (Workload.default_schema)
    source: str = ""
    optional: tuple[str, ...] = ()  # axes dropped (with a note) on a server that lacks the variable
    arrival: str = "poisson"  # open loop: the arrival process of every group with rates
    latency_limit_ms: float | None = None  # open loop: pgbench's --latency-limit
    slo_p99_ms: float | None = None  # the knee: the highest rate whose p99 (from the intended start) meets this
    phases: tuple[PhaseSpec, ...] = ()  # [[phase]]: the steps named, one per step (a phase plan)
    # busy seconds (another process over this % of the machine's CPU, core/busy.py) left out of the verdicts;
    # None ("off"): judged too
    busy_pct: float | None = BUSY_PCT
    align: bool = False  # a server axis: every server with the first one's durability and logging settings

    @property
    def knob_axes(self) -> dict[str, tuple[Any, ...]]:
        return {k: v for k, v in self.axes.items() if k not in SPECIAL_AXES and not is_option_axis(k)}

    @property
    def steps(self) -> int:
        return max(max(len(g.threads), len(g.rates)) for g in self.groups)

    def fingerprint(self) -> str:
        """Identity of what the sweep measures, so --resume refuses a different spec."""
        body: dict[str, Any] = {
            "groups": [[g.name, g.workload, list(g.threads), dict(g.options),
                        *([list(g.rates), self.arrival, self.latency_limit_ms] if g.rates else [])]
                       for g in self.groups],
                "axes": {k: list(v) for k, v in self.axes.items()}, "repeats": self.repeats, "order": self.order,
                "seed": self.seed, "engine": self.engine, "transport": self.transport}
        if self.phases:
            body["phases"] = [p.to_dict() for p in self.phases]
        return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def without_axes(self, names: set[str]) -> SweepSpec:
        return self.with_overrides(axes={k: v for k, v in self.axes.items() if k not in names},
                                   baseline={k: v for k, v in self.baseline.items() if k not in names})

    def with_overrides(self, **kw: Any) -> SweepSpec:
        data = {f: getattr(self, f) for f in self.__dataclass_fields__}
        data.update({k: v for k, v in kw.items() if v is not None})
        spec = SweepSpec(**data)
        spec.check()
        return spec

    @property
    def config_count(self) -> int:
        return config_count(self.axes, self.repeats)

    @property
    def estimated_seconds(self) -> float:
        """The load time alone (restarts are known only from the plan)."""
        return self.config_count * (self.steps * (self.warmup_seconds + self.step_seconds) + self.cooldown_seconds)

    def check(self) -> None:
        """Ranges of the numbers (also after command-line overrides) and the size of the product."""
        src = self.source or "this sweep"
        for key, low in (("step_seconds", 1), ("warmup_seconds", 0), ("cooldown_seconds", 0)):
            value = getattr(self, key)
            if not _is_int(value) or not low <= value <= MAX_SECONDS:
                raise ConfigError(f"{src}: {key} must be from {low} to {MAX_SECONDS}, got {value!r}")
        if not _is_int(self.repeats) or not 1 <= self.repeats <= MAX_REPEATS:
            raise ConfigError(f"{src}: repeats must be from 1 to {MAX_REPEATS}, got {self.repeats!r}")
        check_phases(self.phases, [(g.name, g.threads) for g in self.groups], self.steps, src)
        n = self.config_count
        if n > MAX_CONFIGS:
            sizes = " x ".join(str(len(v)) for v in self.axes.values())
            raise ConfigError(f"{src}: the axes expand to {n:,} configurations ({sizes}"
                              f"{f' x {self.repeats} repeats' if self.repeats > 1 else ''}); "
                              f"the limit is {MAX_CONFIGS:,}: use fewer values")

    def to_toml(self) -> str:
        """The spec as a sweep file: every field, so `parse_spec(spec.to_toml(), spec.source) == spec` (the
        window saves and runs exactly what the CLI would)."""
        return write_spec(self)

    def to_dict(self) -> dict[str, Any]:
        """The spec as written (what a session keeps instead of the expanded plan)."""
        return {"name": self.name, "description": self.description, "source": self.source,
                "groups": [{"name": g.name, "workload": g.workload, "threads": list(g.threads),
                            "options": dict(g.options), **({"rates": list(g.rates)} if g.rates else {})}
                           for g in self.groups],
                "arrival": self.arrival, "latency_limit_ms": self.latency_limit_ms, "slo_p99_ms": self.slo_p99_ms,
                "axes": {k: list(v) for k, v in self.axes.items()}, "step_seconds": self.step_seconds,
                "warmup_seconds": self.warmup_seconds, "cooldown_seconds": self.cooldown_seconds,
                "repeats": self.repeats, "order": self.order, "seed": self.seed, "reset_data": self.reset_data,
                **({"align": True} if self.align else {}),
                "engine": self.engine, "transport": self.transport, "baseline": dict(self.baseline),
                "schema": self.schema, "optional_axes": list(self.optional), "configurations": self.config_count,
                "busy_threshold": "off" if self.busy_pct is None else self.busy_pct,
                **({"phases": [p.to_dict() for p in self.phases]} if self.phases else {})}



MAX_SECONDS = 86_400  # a step, warm-up or cool-down longer than a day is a typo
MAX_REPEATS = 1_000
MAX_THREADS = 100_000
# Beyond this many configurations a sweep is refused outright (planning it would cost minutes and
# gigabytes, running it months); the count is known from the axes before anything is expanded.
MAX_CONFIGS = 10_000


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(_is_int(x) for x in items):
        raise ConfigError(f"{what} must be a list of integers, got {value!r}")
    out = tuple(items)
    # 0: the group is idle in that step, which only a phase plan has (check_phases)
    if any(x < 0 or x > MAX_THREADS for x in out):
        raise ConfigError(f"{what} must be integers from 1 to {MAX_THREADS}, got {value!r}")
    return out


def check_phases(phases: tuple[PhaseSpec, ...], groups: list[tuple[str, tuple[int, ...]]], steps: int,
                 source: str) -> None:
    """A phase plan: one phase per step, names unique; a load phase runs some group, an action phase none. A
    thread count of 0 (a group idle in a step) only in a phase plan."""
    def at(threads: tuple[int, ...], i: int) -> int:
        return threads[min(i, len(threads) - 1)]

    if not phases:
        for name, threads in groups:
            if 0 in threads:
                raise ConfigError(f"{source}: group {name}: thread counts must be from 1 to {MAX_THREADS} (0, a "
                                  "group idle in a step, is for [[phase]] plans)")
        return
    if len(phases) != steps:
        raise ConfigError(f"{source}: {len(phases)} [[phase]] tables for {steps} steps: give one per step (each "
                          "group's threads = [...] one count per phase)")
    names = [p.name for p in phases]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: phase names must be unique: {', '.join(names)}")
    for i, p in enumerate(phases):
        running = [name for name, threads in groups if at(threads, i) > 0]
        if p.action and running:
            raise ConfigError(f"{source}: phase {p.name} runs the action {p.action} and no load: group "
                              f"{running[0]} has threads there (give it 0)")
        if not p.action and not running:
            raise ConfigError(f"{source}: phase {p.name}: every group has 0 threads; give one threads, or the "
                              "phase an action")


def _phases(data: Mapping[str, Any], source: str) -> tuple[PhaseSpec, ...]:
    raw = data.get("phase", [])
    if not isinstance(raw, list) or not all(isinstance(p, dict) for p in raw):
        raise ConfigError(f"{source}: phase must be [[phase]] tables, got {raw!r}")
    out = []
    for p in raw:
        unknown = set(p) - {"name", "action"}
        if unknown:
            raise ConfigError(f"{source}: [[phase]] has an unknown key {sorted(unknown)[0]!r}; known: name, action")
        name, action = p.get("name"), p.get("action")
        if not isinstance(name, str) or not PHASE_NAME_RE.fullmatch(name):
            raise ConfigError(f"{source}: [[phase]] name must be up to 32 letters, digits, '.', '_' and '-', got "
                              f"{name!r}")
        if action is not None and (not isinstance(action, str) or not re.fullmatch(r"[a-z_]{1,64}", action)):
            raise ConfigError(f"{source}: phase {name}: action must be a name like create_indexes, got {action!r}")
        out.append(PhaseSpec(name, action))
    return tuple(out)


def _int(data: Mapping[str, Any], key: str, default: int, low: int, high: int, source: str) -> int:
    value = data.get(key, default)
    if not _is_int(value):
        raise ConfigError(f"{source}: {key} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{source}: {key} must be from {low} to {high}, got {value}")
    return int(value)


def _str(data: Mapping[str, Any], key: str, default: str | None, source: str) -> Any:
    value = data.get(key, default)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{source}: {key} must be a string, got {value!r}")
    return value


def _table(data: Mapping[str, Any], key: str, source: str, what: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: {what} must be a table, got {value!r}")
    return value


def config_count(axes: Mapping[str, tuple[Any, ...]], repeats: int) -> int:
    """How many configurations the axes expand to, without expanding them."""
    n = repeats
    for values in axes.values():
        n *= len(values)
    return n


def parse_spec(text: str, source: str = "this sweep") -> SweepSpec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ConfigError(f"{source}: unknown key {sorted(unknown)[0]!r}; known: {', '.join(sorted(TOP_KEYS))}")
    options = _table(data, "options", source, "[options]")
    groups: list[GroupSpec] = []
    raw_groups = data.get("group", [])
    if not isinstance(raw_groups, list):
        raise ConfigError(f"{source}: group must be [[group]] tables, got {raw_groups!r}")
    for g in raw_groups:
        if not isinstance(g, dict) or "workload" not in g:
            raise ConfigError(f"{source}: each [[group]] needs a workload")
        unknown_g = set(g) - {"name", "workload", "threads", "options", "rates"}
        if unknown_g:
            raise ConfigError(f"{source}: [[group]] has an unknown key {sorted(unknown_g)[0]!r}; "
                              "known: name, workload, threads, options, rates")
        gname = _str(g, "name", _str(g, "workload", None, f"{source}: [[group]]"), f"{source}: [[group]]")
        groups.append(GroupSpec(gname, g["workload"],
                                _int_list(g.get("threads", data.get("threads", 1)), f"{source}: group threads"),
                                {**options, **_table(g, "options", source, "[group.options]")},
                                _rate_list(g.get("rates", []), f"{source}: group rates")))
    if "workload" in data:
        groups.insert(0, GroupSpec("main", _str(data, "workload", None, source),
                                   _int_list(data.get("threads", 1), f"{source}: threads"), options,
                                   _rate_list(data.get("rates", []), f"{source}: rates")))
    if not groups:
        raise ConfigError(f"{source}: give a workload (or [[group]] tables)")
    names = [g.name for g in groups]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: client group names must be unique: {', '.join(names)}")
    axes_raw = _table(data, "axes", source, "[axes] (name = [values])")
    axes: dict[str, tuple[Any, ...]] = {}
    for key, values in axes_raw.items():
        vals = tuple(values) if isinstance(values, list) else (values,)
        if not vals:
            raise ConfigError(f"{source}: axis {key!r} has no values")
        if key in SPECIAL_AXES:
            axes[key] = tuple(_special(key, v, source) for v in vals)
            if len(set(axes[key])) != len(axes[key]):
                raise ConfigError(f"{source}: axis {key} names a value twice: {', '.join(map(str, axes[key]))}")
        elif is_option_axis(key):  # checked against the workload's family when the run is built
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key[len(OPTION_AXIS):]):
                raise ConfigError(f"{source}: axis {key!r}: an option axis is option.NAME")
            for v in vals:
                if not isinstance(v, (str, int, float, bool)) or any(c in str(v) for c in "\n\r\0"):
                    raise ConfigError(f"{source}: axis {key}: invalid value {v!r}")
            axes[key] = vals
        else:
            try:
                name = check_knob_name(key)
            except ConfigError as exc:
                raise ConfigError(f"{source}: {exc}") from None
            for v in vals:
                if isinstance(v, (dict, list)) or any(c in str(v) for c in "\n\r\0;"):
                    raise ConfigError(f"{source}: axis {name}: invalid value {v!r}")
                if _not_finite(v):  # refused before any server is asked (issue 43 item 15)
                    raise ConfigError(f"{source}: axis {name}: {v!r} is not a number a variable can take")
            if name in axes:
                raise ConfigError(f"{source}: axis {name} is given twice")
            axes[name] = vals
    order = _str(data, "order", "listed", source)
    if order not in ("listed", "random"):
        raise ConfigError(f"{source}: order must be 'listed' or 'random'")
    engine = _str(data, "engine", "builtin", source)
    if engine not in ENGINES:
        raise ConfigError(f"{source}: engine must be one of {', '.join(ENGINES)}")
    transport = _str(data, "transport", None, source)
    if transport is not None and transport not in TRANSPORTS:
        raise ConfigError(f"{source}: transport must be socket or tcp")
    baseline = _table(data, "baseline", source, "baseline (axis = value)")
    for k in baseline:
        if k not in axes:
            raise ConfigError(f"{source}: baseline names {k!r}, which is not an axis")
    reset_data = data.get("reset_data", False)
    if not isinstance(reset_data, bool):
        raise ConfigError(f"{source}: reset_data must be true or false, got {reset_data!r}")
    align = data.get("align", False)
    if not isinstance(align, bool):
        raise ConfigError(f"{source}: align must be true or false, got {align!r}")
    if align and len(axes.get("server") or ()) < 2:
        raise ConfigError(f"{source}: align = true aligns the servers of a server axis; this sweep has none "
                          "(axes: server = [\"mariadb-10.11\", \"mysql-9\"])")
    optional = data.get("optional_axes", [])
    if not isinstance(optional, list) or not all(isinstance(x, str) for x in optional):
        raise ConfigError(f"{source}: optional_axes must be a list of variable names, got {optional!r}")
    try:
        optional_names = tuple(check_name(x) for x in optional)
    except ConfigError as exc:
        raise ConfigError(f"{source}: optional_axes: {exc}") from None
    arrival = _str(data, "arrival", "poisson", source)
    if arrival not in ARRIVAL_NAMES:
        raise ConfigError(f"{source}: arrival must be one of {', '.join(ARRIVAL_NAMES)}, got {arrival!r}")
    limits = {}
    for key in ("latency_limit_ms", "slo_p99_ms"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0 < value <= MAX_SECONDS * 1000):
            raise ConfigError(f"{source}: {key} must be a number of milliseconds above 0, got {value!r}")
        limits[key] = None if value is None else float(value)
    if ("rate" in axes or limits["latency_limit_ms"] is not None) and not groups[0].rates:
        raise ConfigError(f"{source}: {'the rate axis' if 'rate' in axes else 'latency_limit_ms'} needs the "
                          "first group to run open loop: give it rates = [...]")
    busy = data.get("busy_threshold", BUSY_PCT)
    if busy != "off" and (isinstance(busy, bool) or not isinstance(busy, int | float) or not 0 < busy <= 100):
        raise ConfigError(f"{source}: busy_threshold is a % of the machine's CPU above 0 and at most 100, or "
                          f"\"off\", got {busy!r}")
    spec = SweepSpec(
        busy_pct=None if busy == "off" else float(busy),
        phases=_phases(data, source),
        name=_str(data, "name", Path(source).stem, source), groups=tuple(groups), axes=axes,
        step_seconds=_int(data, "step_seconds", 30, 1, MAX_SECONDS, source),
        warmup_seconds=_int(data, "warmup_seconds", 5, 0, MAX_SECONDS, source),
        cooldown_seconds=_int(data, "cooldown_seconds", 0, 0, MAX_SECONDS, source),
        repeats=_int(data, "repeats", 1, 1, MAX_REPEATS, source), order=order,
        seed=_int(data, "seed", 1, 0, 2**32 - 1, source), reset_data=reset_data, align=align, engine=engine,
        transport=transport, baseline=baseline, description=_str(data, "description", "", source),
        schema=_str(data, "schema", None, source), source=source, optional=optional_names, arrival=arrival,
        latency_limit_ms=limits["latency_limit_ms"], slo_p99_ms=limits["slo_p99_ms"])
    spec.check()
    return spec


def _rate_list(value: Any, where: str) -> tuple[float, ...]:
    """rates = [500, 1000, 2000]: transactions per second, one per step (or one for all); [] closed loop."""
    vals = value if isinstance(value, list) else [value]
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not MIN_RATE <= v <= MAX_RATE for v in vals):
        raise ConfigError(f"{where}: rates are numbers from {MIN_RATE:g} to {MAX_RATE:,} per second, got {value!r}")
    return tuple(float(v) for v in vals)



def _special(axis: str, value: Any, source: str) -> Any:
    text = str(value).strip()
    if axis == "transport" and text not in TRANSPORTS:
        raise ConfigError(f"{source}: transport axis values are socket or tcp, got {value!r}")
    if axis == "engine" and text not in ENGINES:
        raise ConfigError(f"{source}: engine axis values are builtin or sysbench, got {value!r}")
    if axis == "cpus" and text not in ("", "all") and not CPUS_RE.match(text):
        raise ConfigError(f"{source}: cpus axis values are taskset lists like 0 or 0-1 or 0,2, got {value!r}")
    if axis == "rate":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_RATE:
            raise ConfigError(f"{source}: rate axis values are transactions per second above 0, got {value!r}")
        return float(value)
    if axis == "server" and not SERVER_NAME_RE.match(text):
        raise ConfigError(f"{source}: server axis values are server names like mysql-9 or mariadb-11.8 "
                          f"(`tunebench servers list`), got {value!r}")
    return None if axis == "cpus" and text in ("", "all") else text
