"""A sweep spec written back as a sweep file (TOML): what the window saves is what the CLI runs."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tunebench.core.busy import BUSY_PCT
from tunebench.core.errors import ConfigError

if TYPE_CHECKING:
    from tunebench.core.sweep.spec import SweepSpec


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


def write_spec(spec: SweepSpec) -> str:
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
        if first.rates:
            lines.append(f"rates = {toml_value(list(first.rates))}")
    if any(g.rates for g in spec.groups):
        lines.append(f"arrival = {toml_value(spec.arrival)}")
    for key in ("latency_limit_ms", "slo_p99_ms"):
        if getattr(spec, key) is not None:
            lines.append(f"{key} = {toml_value(getattr(spec, key))}")
    lines += [f"step_seconds = {spec.step_seconds}", f"warmup_seconds = {spec.warmup_seconds}",
              f"cooldown_seconds = {spec.cooldown_seconds}", f"repeats = {spec.repeats}",
              f"order = {toml_value(spec.order)}", f"seed = {spec.seed}",
              f"reset_data = {toml_value(spec.reset_data)}", f"engine = {toml_value(spec.engine)}",
              *([f"align = {toml_value(spec.align)}"] if spec.align else [])]
    if spec.transport is not None:
        lines.append(f"transport = {toml_value(spec.transport)}")
    if spec.busy_pct != BUSY_PCT:
        lines.append(f"busy_threshold = {toml_value('off' if spec.busy_pct is None else spec.busy_pct)}")
    if spec.schema is not None:  # none: the first group's family's own schema
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
        if g.rates:
            lines.append(f"rates = {toml_value(list(g.rates))}")
        own = {k: v for k, v in g.options.items() if k not in top_options or top_options[k] != v}
        if own:
            lines.append(f"options = {toml_value(own)}")
    for p in spec.phases:
        lines += ["", "[[phase]]", f"name = {toml_value(p.name)}"]
        if p.action:
            lines.append(f"action = {toml_value(p.action)}")
    return "\n".join(lines) + "\n"
