"""Sweep specs (TOML) and the plan they expand to. Pure: the server's facts come in as KnobInfo.

A sweep runs every configuration (the cartesian product of its axes) over the same concurrency steps.
Axes are server variables, plus three that are not: `transport` (socket/tcp), `engine`
(builtin/sysbench) and `cpus` (CPU binding of the sandbox server, a taskset list). Configurations that
need a restart (static variables, CPU binding) are grouped so the server restarts as little as possible.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunebench.core.errors import ConfigError
from tunebench.core.knobs import KnobInfo, check_name

SPECIAL_AXES = ("transport", "engine", "cpus")
TRANSPORTS = ("socket", "tcp")
ENGINES = ("builtin", "sysbench")
CPUS_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
TOP_KEYS = {"name", "description", "workload", "threads", "step_seconds", "warmup_seconds", "cooldown_seconds",
            "repeats", "order", "seed", "reset_data", "engine", "transport", "baseline", "options", "axes", "group",
            "schema", "optional_axes"}
RESTART_SECONDS = 3.0  # estimate of one sandbox restart, for the plan's time estimate


@dataclass(frozen=True, slots=True)
class GroupSpec:
    name: str
    workload: str
    threads: tuple[int, ...]
    options: Mapping[str, Any] = field(default_factory=dict)


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
    schema: str = "tunebench"
    source: str = ""
    optional: tuple[str, ...] = ()  # axes dropped (with a note) on a server that lacks the variable

    @property
    def knob_axes(self) -> dict[str, tuple[Any, ...]]:
        return {k: v for k, v in self.axes.items() if k not in SPECIAL_AXES}

    @property
    def steps(self) -> int:
        return max(len(g.threads) for g in self.groups)

    def fingerprint(self) -> str:
        """Identity of what the sweep measures, so --resume refuses a different spec."""
        body = {"groups": [[g.name, g.workload, list(g.threads), dict(g.options)] for g in self.groups],
                "axes": {k: list(v) for k, v in self.axes.items()}, "repeats": self.repeats, "order": self.order,
                "seed": self.seed, "engine": self.engine, "transport": self.transport}
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
        src = self.source or "<sweep>"
        for key, low in (("step_seconds", 1), ("warmup_seconds", 0), ("cooldown_seconds", 0)):
            value = getattr(self, key)
            if not _is_int(value) or not low <= value <= MAX_SECONDS:
                raise ConfigError(f"{src}: {key} must be from {low} to {MAX_SECONDS}, got {value!r}")
        if not _is_int(self.repeats) or not 1 <= self.repeats <= MAX_REPEATS:
            raise ConfigError(f"{src}: repeats must be from 1 to {MAX_REPEATS}, got {self.repeats!r}")
        n = self.config_count
        if n > MAX_CONFIGS:
            sizes = " x ".join(str(len(v)) for v in self.axes.values())
            raise ConfigError(f"{src}: the axes expand to {n:,} configurations ({sizes}"
                              f"{f' x {self.repeats} repeats' if self.repeats > 1 else ''}); "
                              f"the limit is {MAX_CONFIGS:,}: use fewer values")

    def to_toml(self) -> str:
        """The spec as a sweep file: every field, so `parse_spec(spec.to_toml(), spec.source) == spec` (the
        window saves and runs exactly what the CLI would)."""
        return _write_spec(self)

    def to_dict(self) -> dict[str, Any]:
        """The spec as written (what a session keeps instead of the expanded plan)."""
        return {"name": self.name, "description": self.description, "source": self.source,
                "groups": [{"name": g.name, "workload": g.workload, "threads": list(g.threads),
                            "options": dict(g.options)} for g in self.groups],
                "axes": {k: list(v) for k, v in self.axes.items()}, "step_seconds": self.step_seconds,
                "warmup_seconds": self.warmup_seconds, "cooldown_seconds": self.cooldown_seconds,
                "repeats": self.repeats, "order": self.order, "seed": self.seed, "reset_data": self.reset_data,
                "engine": self.engine, "transport": self.transport, "baseline": dict(self.baseline),
                "schema": self.schema, "optional_axes": list(self.optional), "configurations": self.config_count}


def _toml_str(text: str) -> str:
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(value: Any) -> str:
    """One TOML value: the types a sweep file holds (scalars, arrays, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }" if value \
            else "{}"
    raise ConfigError(f"cannot write {value!r} ({type(value).__name__}) to a sweep file")


def toml_key(key: str) -> str:
    return key if key and re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_str(key)


def _write_spec(spec: SweepSpec) -> str:
    """Every field of the spec, so parse_spec(text) gives the same spec back (source aside)."""
    first = spec.groups[0]
    # One main group (and groups that only add options to its own) reads like the recipes: workload and
    # threads on top, [options]; otherwise every group is a [[group]] table with its options in full.
    top = first.name == "main" and all(set(first.options) <= set(g.options) for g in spec.groups[1:])
    lines = [f"name = {toml_value(spec.name)}"]
    if spec.description:
        lines.append(f"description = {toml_value(spec.description)}")
    if top:
        lines += [f"workload = {toml_value(first.workload)}", f"threads = {toml_value(list(first.threads))}"]
    lines += [f"step_seconds = {spec.step_seconds}", f"warmup_seconds = {spec.warmup_seconds}",
              f"cooldown_seconds = {spec.cooldown_seconds}", f"repeats = {spec.repeats}",
              f"order = {toml_value(spec.order)}", f"seed = {spec.seed}",
              f"reset_data = {toml_value(spec.reset_data)}", f"engine = {toml_value(spec.engine)}"]
    if spec.transport is not None:
        lines.append(f"transport = {toml_value(spec.transport)}")
    lines.append(f"schema = {toml_value(spec.schema)}")
    if spec.optional:
        lines.append(f"optional_axes = {toml_value(list(spec.optional))}")
    if spec.baseline:
        lines.append(f"baseline = {toml_value(dict(spec.baseline))}")
    top_options = dict(first.options) if top else {}
    if top_options:
        lines += ["", "[options]"] + [f"{toml_key(k)} = {toml_value(v)}" for k, v in top_options.items()]
    lines += ["", "[axes]"]
    for name, values in spec.axes.items():
        shown = ["all" if v is None else v for v in values]  # cpus: None is the whole machine
        lines.append(f"{toml_key(name)} = {toml_value(shown)}")
    for g in spec.groups[1:] if top else spec.groups:
        lines += ["", "[[group]]", f"name = {toml_value(g.name)}", f"workload = {toml_value(g.workload)}",
                  f"threads = {toml_value(list(g.threads))}"]
        own = {k: v for k, v in g.options.items() if k not in top_options or top_options[k] != v}
        if own:
            lines.append(f"options = {toml_value(own)}")
    return "\n".join(lines) + "\n"


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
    if any(x < 1 or x > MAX_THREADS for x in out):
        raise ConfigError(f"{what} must be integers from 1 to {MAX_THREADS}, got {value!r}")
    return out


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


def parse_spec(text: str, source: str = "<sweep>") -> SweepSpec:
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
        unknown_g = set(g) - {"name", "workload", "threads", "options"}
        if unknown_g:
            raise ConfigError(f"{source}: [[group]] has an unknown key {sorted(unknown_g)[0]!r}; "
                              "known: name, workload, threads, options")
        gname = _str(g, "name", _str(g, "workload", None, f"{source}: [[group]]"), f"{source}: [[group]]")
        groups.append(GroupSpec(gname, g["workload"],
                                _int_list(g.get("threads", data.get("threads", 1)), f"{source}: group threads"),
                                {**options, **_table(g, "options", source, "[group.options]")}))
    if "workload" in data:
        groups.insert(0, GroupSpec("main", _str(data, "workload", None, source),
                                   _int_list(data.get("threads", 1), f"{source}: threads"), options))
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
        else:
            try:
                name = check_name(key)
            except ConfigError as exc:
                raise ConfigError(f"{source}: {exc}") from None
            for v in vals:
                if isinstance(v, (dict, list)) or any(c in str(v) for c in "\n\r\0;"):
                    raise ConfigError(f"{source}: axis {name}: invalid value {v!r}")
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
    optional = data.get("optional_axes", [])
    if not isinstance(optional, list) or not all(isinstance(x, str) for x in optional):
        raise ConfigError(f"{source}: optional_axes must be a list of variable names, got {optional!r}")
    try:
        optional_names = tuple(check_name(x) for x in optional)
    except ConfigError as exc:
        raise ConfigError(f"{source}: optional_axes: {exc}") from None
    spec = SweepSpec(
        name=_str(data, "name", Path(source).stem, source), groups=tuple(groups), axes=axes,
        step_seconds=_int(data, "step_seconds", 30, 1, MAX_SECONDS, source),
        warmup_seconds=_int(data, "warmup_seconds", 5, 0, MAX_SECONDS, source),
        cooldown_seconds=_int(data, "cooldown_seconds", 0, 0, MAX_SECONDS, source),
        repeats=_int(data, "repeats", 1, 1, MAX_REPEATS, source), order=order,
        seed=_int(data, "seed", 1, 0, 2**32 - 1, source), reset_data=reset_data, engine=engine,
        transport=transport, baseline=baseline, description=_str(data, "description", "", source),
        schema=_str(data, "schema", "tunebench", source), source=source, optional=optional_names)
    spec.check()
    return spec


def load_spec(path: str | Path) -> SweepSpec:
    p = Path(path)
    if not p.is_file():
        from tunebench.paths import workloads_dir

        alt = workloads_dir() / "recipes" / f"{path}.toml"
        if p.is_dir():
            raise ConfigError(f"sweep file {path} is a directory")
        if alt.is_file():
            p = alt
        else:
            raise ConfigError(f"sweep file {path} not found")
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read sweep file {p}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"sweep file {p} is not UTF-8 text (byte {exc.start})") from None
    return parse_spec(text, str(p))


def _special(axis: str, value: Any, source: str) -> Any:
    text = str(value).strip()
    if axis == "transport" and text not in TRANSPORTS:
        raise ConfigError(f"{source}: transport axis values are socket or tcp, got {value!r}")
    if axis == "engine" and text not in ENGINES:
        raise ConfigError(f"{source}: engine axis values are builtin or sysbench, got {value!r}")
    if axis == "cpus" and text not in ("", "all") and not CPUS_RE.match(text):
        raise ConfigError(f"{source}: cpus axis values are taskset lists like 0 or 0-1 or 0,2, got {value!r}")
    return None if axis == "cpus" and text in ("", "all") else text


def human(value: Any) -> str:
    """Sizes the way people write them in my.cnf: 536870912 -> 512M."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1024**2:
        for unit, mult in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2)):
            if value % mult == 0:
                return f"{value // mult}{unit}"
    return str(value)


@dataclass(frozen=True, slots=True)
class ConfigPlan:
    idx: int
    knobs: Mapping[str, Any]  # normalised values
    static: Mapping[str, Any]  # the subset that needs a restart
    transport: str | None
    engine: str
    cpus: str | None
    repeat: int = 0
    restart: bool = False  # the server restarts before this configuration

    def label(self) -> str:
        parts = [f"{k}={human(v)}" for k, v in self.knobs.items()]
        if self.transport:
            parts.append(f"transport={self.transport}")
        if self.engine != "builtin":
            parts.append(f"engine={self.engine}")
        if self.cpus:
            parts.append(f"cpus={self.cpus}")
        if self.repeat:
            parts.append(f"repeat={self.repeat + 1}")
        return ", ".join(parts) or "as configured"

    def key(self) -> dict[str, Any]:
        return {**self.knobs, **({"transport": self.transport} if self.transport else {}), "engine": self.engine,
                **({"cpus": self.cpus} if self.cpus else {})}


@dataclass(frozen=True, slots=True)
class Plan:
    spec: SweepSpec
    configs: tuple[ConfigPlan, ...]
    restarts: int
    seconds: float
    baseline: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.spec.name, "configs": [{"idx": c.idx, "knobs": dict(c.knobs), "transport": c.transport,
                                                      "engine": c.engine, "cpus": c.cpus, "repeat": c.repeat,
                                                      "restart": c.restart, "label": c.label()}
                                                     for c in self.configs],
                "steps_per_config": self.spec.steps, "threads": {g.name: list(g.threads) for g in self.spec.groups},
                "restarts": self.restarts, "estimated_seconds": round(self.seconds), "baseline": self.baseline}


def make_plan(spec: SweepSpec, knobs: Mapping[str, KnobInfo], current: Mapping[str, str] | None = None,
              current_cpus: str | None = None) -> Plan:
    """Expand and order the configurations; `knobs` are the server's facts for every knob axis,
    `current` the server's present values (so an unchanged static knob needs no restart)."""
    current = current or {}
    names = list(spec.axes)
    normalized: dict[str, tuple[Any, ...]] = {}
    for name in names:
        if name in SPECIAL_AXES:
            normalized[name] = spec.axes[name]
        else:
            info = knobs[name]
            normalized[name] = tuple(info.normalize(v) for v in spec.axes[name])
    combos = list(itertools.product(*(normalized[n] for n in names))) or [()]
    raw = []
    for rep in range(spec.repeats):
        for combo in combos:
            values = dict(zip(names, combo, strict=True))
            kn = {k: v for k, v in values.items() if k not in SPECIAL_AXES}
            static = {k: v for k, v in kn.items() if not knobs[k].dynamic}
            raw.append((kn, static, values.get("transport", spec.transport), values.get("engine", spec.engine),
                        values.get("cpus"), rep))
    if spec.order == "random":
        random.Random(spec.seed).shuffle(raw)
    # A static knob already at the server's value needs no restart: only the difference counts.
    def effective(static: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in static.items() if not knobs[k].same(v, current.get(k, ""))}

    def restart_key(item: tuple[Any, ...]) -> str:
        cpus = item[4] if item[4] is not None else current_cpus
        return json.dumps({"static": effective(item[1]), "cpus": cpus}, sort_keys=True, default=str)

    # Group configurations that need the same restart state, keeping the first-seen order of groups.
    first_seen: dict[str, int] = {}
    for i, item in enumerate(raw):
        first_seen.setdefault(restart_key(item), i)
    raw.sort(key=lambda item: first_seen[restart_key(item)])
    original_key = json.dumps({"static": {}, "cpus": current_cpus}, sort_keys=True, default=str)
    configs = []
    restarts = 0
    prev_key = original_key
    for idx, (kn, static, transport, engine, cpus, rep) in enumerate(raw):
        key = restart_key((kn, static, transport, engine, cpus, rep))
        restart = key != prev_key
        prev_key = key
        restarts += restart
        configs.append(ConfigPlan(idx, kn, static, transport, engine, cpus, rep, restart))
    if prev_key != original_key:
        restarts += 1  # back to the original settings at the end
    per_step = spec.warmup_seconds + spec.step_seconds
    seconds = len(configs) * (spec.steps * per_step + spec.cooldown_seconds) + restarts * RESTART_SECONDS
    baseline = 0
    if spec.baseline:
        want = {k: (knobs[k].normalize(v) if k in knobs else str(v)) for k, v in spec.baseline.items()}
        for c in configs:
            ckey = c.key()
            if all(str(ckey.get(k, "")).lower() == str(v).lower() for k, v in want.items()):
                baseline = c.idx
                break
        else:
            raise ConfigError(f"{spec.source}: the baseline {dict(spec.baseline)} matches no configuration")
    return Plan(spec, tuple(configs), restarts, seconds, baseline)


PLAN_HEAD, PLAN_TAIL = 20, 5  # a long plan prints its first and last configurations


def duration_text(seconds: float) -> str:
    seconds = round(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    return (f"{days} d {hours} h" if days else f"{hours} h {rest // 60} min" if hours
            else f"{rest // 60} min {rest % 60} s")


def plan_headline(plan: Plan) -> str:
    d = plan.to_dict()
    return (f"sweep {d['name']}: {len(d['configs'])} configuration(s) x {d['steps_per_config']} step(s) "
            f"(threads {', '.join(f'{g}: {t}' for g, t in d['threads'].items())}), {d['restarts']} restart(s), "
            f"about {duration_text(d['estimated_seconds'])}")


def plan_text(plan: Plan) -> str:
    """What `tunebench sweep --plan` prints and the window's sweep panel shows."""
    d = plan.to_dict()
    n = len(d["configs"])
    lines = [plan_headline(plan)]

    def line(c: dict[str, Any]) -> str:
        return (f"  {c['idx'] + 1:>3}. {'[restart] ' if c['restart'] else ''}{c['label']}"
                + ("   (baseline)" if c["idx"] == d["baseline"] else ""))

    if n <= PLAN_HEAD + PLAN_TAIL + 1:
        lines += [line(c) for c in d["configs"]]
    else:
        lines += [line(c) for c in d["configs"][:PLAN_HEAD]]
        lines.append(f"  ... {n - PLAN_HEAD - PLAN_TAIL} more configuration(s) (--plan --json lists them all) ...")
        lines += [line(c) for c in d["configs"][-PLAN_TAIL:]]
    return "\n".join(lines)
