"""The sysbench OLTP option catalog (oltp_common.lua plus sysbench's --rand-* globals)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tunebench.core.errors import ConfigError


@dataclass(frozen=True, slots=True)
class OptionSpec:
    name: str
    kind: type
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    sysbench_global: bool = False  # a sysbench core option (--rand-type), not a Lua script option
    free_text: bool = False  # a Lua script's STRING option: any one line of text (it goes to argv, never a shell)

    def coerce(self, value: Any, where: str = "") -> Any:
        label = f"{where}option {self.name}"
        if self.kind is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("on", "true", "1", "yes", "off", "false", "0", "no"):
                return value.lower() in ("on", "true", "1", "yes")
            raise ConfigError(f"{label}: expected on/off, got {value!r}")
        if self.kind is int:
            try:
                if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                    raise ValueError
                out: Any = int(value)
            except (TypeError, ValueError):
                raise ConfigError(f"{label}: expected an integer, got {value!r}") from None
        elif self.kind is float:
            try:
                out = float(value)
                if not math.isfinite(out):
                    raise ValueError
            except (TypeError, ValueError):
                raise ConfigError(f"{label}: expected a number, got {value!r}") from None
        else:
            out = str(value)
            if self.choices and out not in self.choices:
                raise ConfigError(f"{label}: {out!r} is not one of {', '.join(self.choices)}")
            if self.free_text:
                if any(ord(ch) < 32 for ch in out):
                    raise ConfigError(f"{label}: {out!r} must be one line of text")
            elif not self.choices and not re.fullmatch(r"[A-Za-z0-9_]+", out):
                raise ConfigError(f"{label}: {out!r} must be a plain identifier")
        if self.minimum is not None and out < self.minimum:
            raise ConfigError(f"{label}: {out} is below the minimum {self.minimum:g}")
        if self.maximum is not None and out > self.maximum:
            raise ConfigError(f"{label}: {out} is above the maximum {self.maximum:g}")
        return out


_SPECS = [
    OptionSpec("tables", int, 1, "Number of tables", 1, 100000),
    OptionSpec("table_size", int, 10000, "Number of rows per table", 0, 2**31 - 1),
    OptionSpec("range_size", int, 100, "Range size for range SELECT queries", 1, 2**31 - 1),
    OptionSpec("point_selects", int, 10, "Number of point SELECT queries per transaction", 0, 10**6),
    OptionSpec("simple_ranges", int, 1, "Number of simple range SELECT queries per transaction", 0, 10**6),
    OptionSpec("sum_ranges", int, 1, "Number of SELECT SUM() queries per transaction", 0, 10**6),
    OptionSpec("order_ranges", int, 1, "Number of SELECT ORDER BY queries per transaction", 0, 10**6),
    OptionSpec("distinct_ranges", int, 1, "Number of SELECT DISTINCT queries per transaction", 0, 10**6),
    OptionSpec("index_updates", int, 1, "Number of UPDATE index queries per transaction", 0, 10**6),
    OptionSpec("non_index_updates", int, 1, "Number of UPDATE non-index queries per transaction", 0, 10**6),
    OptionSpec("delete_inserts", int, 1, "Number of DELETE/INSERT combinations per transaction", 0, 10**6),
    OptionSpec("range_selects", bool, True, "Enable/disable all range SELECT queries"),
    OptionSpec("auto_inc", bool, True, "Use AUTO_INCREMENT column as Primary Key"),
    OptionSpec("skip_trx", bool, False, "Don't start explicit transactions; run all queries in AUTOCOMMIT mode"),
    OptionSpec("secondary", bool, False, "Use a secondary index in place of the PRIMARY KEY"),
    OptionSpec("create_secondary", bool, True, "Create a secondary index in addition to the PRIMARY KEY"),
    OptionSpec("mysql_storage_engine", str, "innodb", "Storage engine"),
    OptionSpec("rand_type", str, "special", "Random numbers distribution", choices=(
        "uniform", "gaussian", "special", "pareto"), sysbench_global=True),
    OptionSpec("rand_spec_iter", int, 12, "Iterations for the special/gaussian distributions", 1, 1000,
               sysbench_global=True),
    OptionSpec("rand_spec_pct", int, 1, "Percentage of values treated as 'special'", 1, 100, sysbench_global=True),
    OptionSpec("rand_spec_res", int, 75, "Percentage of 'special' values to use", 0, 99, sysbench_global=True),
    OptionSpec("rand_pareto_h", float, 0.2, "Parameter h for the pareto distribution", 0.001, 0.999,
               sysbench_global=True),
    OptionSpec("rand_seed", int, 0, "Seed for the random number generator (0: time based)", 0, 2**32 - 1,
               sysbench_global=True),
]
OPTIONS: dict[str, OptionSpec] = {s.name: s for s in _SPECS}


def resolve_options(
    defaults: Mapping[str, Any], fixed: Mapping[str, Any], given: Mapping[str, Any], where: str = "",
    catalog: Mapping[str, OptionSpec] | None = None, of: str = "",
) -> dict[str, Any]:
    """Catalog defaults <- workload defaults <- user values; `fixed` ones cannot be changed. `catalog`: the
    family's options (default: the OLTP ones); `of` names whose they are in the unknown-option message."""
    specs = OPTIONS if catalog is None else catalog
    out = {name: spec.default for name, spec in specs.items()}
    for layer in (defaults, given, fixed):
        for name, value in layer.items():
            key = name if name in specs else name.replace("-", "_")
            spec = specs.get(key)
            if spec is None:
                raise ConfigError(f"{where}unknown option {name!r}{of}; known: {', '.join(sorted(specs)) or 'none'}")
            out[key] = spec.coerce(value, where)
    return out
