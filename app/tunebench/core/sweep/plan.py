"""The plan a sweep spec expands to on one server: configurations ordered so the server restarts as little
as possible, the baseline, the time estimate, and the plan as text (`sweep --plan`, the window's sweep panel)."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tunebench.core.errors import ConfigError
from tunebench.core.knobs import KnobInfo
from tunebench.core.sweep.spec import OPTION_AXIS, SPECIAL_AXES, SweepSpec, is_option_axis

RATE_OPTION = "rate"  # a configuration's options key for the rate axis (run/spec.py config_groups applies it)
RESTART_SECONDS = 3.0  # estimate of one sandbox restart, for the plan's time estimate


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
    options: Mapping[str, Any] = field(default_factory=dict)  # workload options of this configuration
    server: str | None = None  # the server axis: which server's sandbox runs it (mysql-9.7.4)

    def label(self) -> str:
        parts = [f"server={self.server}"] if self.server else []
        parts += [f"{k}={human(v)}" for k, v in self.knobs.items()] + [f"{k}={v}" for k, v in self.options.items()]
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
        return {**({"server": self.server} if self.server else {}),
                **self.knobs, **({"transport": self.transport} if self.transport else {}), "engine": self.engine,
                **({"cpus": self.cpus} if self.cpus else {}),
                **{OPTION_AXIS + k: v for k, v in self.options.items()}}


@dataclass(frozen=True, slots=True)
class Plan:
    spec: SweepSpec
    configs: tuple[ConfigPlan, ...]
    restarts: int
    seconds: float
    baseline: int
    started: tuple[str, ...] = ()  # a server axis: the servers whose sandboxes planning had to start

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.spec.name, "configs": [{"idx": c.idx, "knobs": dict(c.knobs), "transport": c.transport,
                                                      "engine": c.engine, "cpus": c.cpus, "repeat": c.repeat,
                                                      "restart": c.restart, "label": c.label(),
                                                      **({"server": c.server} if c.server else {}),
                                                      **({"options": dict(c.options)} if c.options else {})}
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
        if name in SPECIAL_AXES or is_option_axis(name):
            normalized[name] = spec.axes[name]
        else:
            info = knobs[name]
            info.check_settable()
            normalized[name] = tuple(info.normalize(v) for v in spec.axes[name])
    combos = list(itertools.product(*(normalized[n] for n in names))) or [()]
    raw = []
    for rep in range(spec.repeats):
        # listed order: each other repeat the other way round (ABBA): a drift of the machine over the sweep cancels
        # between two repeats instead of favouring the configurations listed later (tests/unit/test_verdict.py)
        for combo in (combos if rep % 2 == 0 or spec.order != "listed" else combos[::-1]):
            values = dict(zip(names, combo, strict=True))
            kn = {k: v for k, v in values.items() if k not in SPECIAL_AXES and not is_option_axis(k)}
            static = {k: v for k, v in kn.items() if not knobs[k].dynamic}
            opts = {k[len(OPTION_AXIS):]: v for k, v in values.items() if is_option_axis(k)}
            if "rate" in values:  # the rate axis: the first group's rate, held through the configuration's steps
                opts[RATE_OPTION] = values["rate"]
            raw.append((kn, static, values.get("transport", spec.transport), values.get("engine", spec.engine),
                        values.get("cpus"), rep, opts))
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
    for idx, (kn, static, transport, engine, cpus, rep, opts) in enumerate(raw):
        key = restart_key((kn, static, transport, engine, cpus, rep))
        restart = key != prev_key
        prev_key = key
        restarts += restart
        configs.append(ConfigPlan(idx, kn, static, transport, engine, cpus, rep, restart, opts))
    if prev_key != original_key:
        restarts += 1  # back to the original settings at the end
    per_step = spec.warmup_seconds + spec.step_seconds
    seconds = len(configs) * (spec.steps * per_step + spec.cooldown_seconds) + restarts * RESTART_SECONDS
    baseline = find_baseline(spec, configs, knobs)
    return Plan(spec, tuple(configs), restarts, seconds, baseline)


def find_baseline(spec: SweepSpec, configs: list[ConfigPlan] | tuple[ConfigPlan, ...],
                  knobs: Mapping[str, KnobInfo]) -> int:
    """The configuration the spec's `baseline` names (its index), else the first."""
    baseline = configs[0].idx if configs else 0
    if spec.baseline:
        want = {k: (knobs[k].normalize(v) if k in knobs else v) for k, v in spec.baseline.items()}
        for c in configs:
            ckey = c.key()
            if all(str(ckey.get(k, "")).lower() == str(v).lower() for k, v in want.items()):
                baseline = c.idx
                break
        else:
            raise ConfigError(f"{spec.source}: the baseline {dict(spec.baseline)} matches no configuration")
    return baseline


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
