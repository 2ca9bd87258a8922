"""Sweeps: a spec (TOML) and the plan it expands to. Pure: the server's facts come in as KnobInfo.

A sweep runs every configuration (the cartesian product of its axes) over the same concurrency steps.
Axes are server variables, plus three that are not: `transport` (socket/tcp), `engine`
(builtin/sysbench) and `cpus` (CPU binding of the sandbox server, a taskset list), and workload options as
`option.NAME`. Configurations that
need a restart (static variables, CPU binding) are grouped so the server restarts as little as possible.
Reading a sweep file by path or recipe name is load/recipes.py (it needs the install's paths).
"""

from tunebench.core.sweep.plan import (
    PLAN_HEAD,
    PLAN_TAIL,
    RESTART_SECONDS,
    ConfigPlan,
    Plan,
    duration_text,
    human,
    make_plan,
    plan_headline,
    plan_text,
)
from tunebench.core.sweep.spec import (
    CPUS_RE,
    ENGINES,
    MAX_CONFIGS,
    MAX_REPEATS,
    MAX_SECONDS,
    MAX_THREADS,
    OPTION_AXIS,
    SPECIAL_AXES,
    TOP_KEYS,
    TRANSPORTS,
    GroupSpec,
    PhaseSpec,
    SweepSpec,
    config_count,
    is_option_axis,
    parse_spec,
)
from tunebench.core.sweep.toml_writer import toml_key, toml_value, write_spec

__all__ = [
    "CPUS_RE",
    "ENGINES",
    "MAX_CONFIGS",
    "MAX_REPEATS",
    "MAX_SECONDS",
    "MAX_THREADS",
    "OPTION_AXIS",
    "PLAN_HEAD",
    "PLAN_TAIL",
    "RESTART_SECONDS",
    "SPECIAL_AXES",
    "TOP_KEYS",
    "TRANSPORTS",
    "ConfigPlan",
    "GroupSpec",
    "PhaseSpec",
    "Plan",
    "SweepSpec",
    "config_count",
    "duration_text",
    "human",
    "is_option_axis",
    "make_plan",
    "parse_spec",
    "plan_headline",
    "plan_text",
    "toml_key",
    "toml_value",
    "write_spec",
]
