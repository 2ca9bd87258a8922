"""Aligned versions (issue 44 item 2): a server axis with `align = true` runs every server with the first one's
durability and logging settings, where the variable exists in that flavor; what cannot be aligned is listed.

The first server of the axis is the reference (its settings as it runs). Each later server gets, for its
configurations, the reference's value of each aligned variable it has and does not already match: the static ones
in the sandbox's option overlay (a restart), the dynamic ones by SET GLOBAL, all journaled and put back when that
server's part of the sweep ends, like any knob."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tunebench.core.confdiff import ALIASES, KEY, REDO, normalised, same_value
from tunebench.core.sweep import ConfigPlan

# what is aligned, in the reference's values: the binary log and its sync, redo and flushing, doublewrite, the
# buffer pool, performance_schema, isolation and character set. Not the flush method (the flavors take different
# values), nor GTID (MySQL's alone).
ALIGNED = ("log_bin", "sync_binlog", "binlog_format", "innodb_flush_log_at_trx_commit", "innodb_doublewrite",
           "innodb_buffer_pool_size", REDO, "performance_schema", "transaction_isolation", "character_set_server")


@dataclass(slots=True)
class Alignment:
    """What one server gets to match the reference (`knobs`: its own variable names), and what it cannot."""

    server: str
    reference: str
    knobs: dict[str, Any] = field(default_factory=dict)
    cannot: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "reference": self.reference, "set": dict(self.knobs),
                "not_aligned": list(self.cannot)}

    def text(self) -> str:
        done = (", ".join(f"{k}={v}" for k, v in self.knobs.items()) if self.knobs
                else "nothing to change (already the same)")
        return (f"aligned {self.server} with {self.reference}: {done}"
                + (f"; not aligned: {', '.join(self.cannot)}" if self.cannot else ""))


def _own_name(name: str, variables: Mapping[str, Any]) -> str | None:
    """`name` (after ALIASES) as this server calls it, or None when it has no such variable."""
    if name in variables:
        return name
    return next((alias for alias, canon in ALIASES.items() if canon == name and alias in variables), None)


def alignment(server: str, variables: Mapping[str, Any], reference: str, ref_variables: Mapping[str, Any]
              ) -> Alignment:
    """What `server` (its global variables) needs to run with the reference's settings."""
    out = Alignment(server, reference)
    ref, mine = normalised(ref_variables), normalised(variables)
    lower = {str(k).lower(): v for k, v in variables.items()}
    for name in ALIGNED:
        if name not in ref:
            continue
        if name == REDO:
            own = "innodb_redo_log_capacity" if "innodb_redo_log_capacity" in lower else \
                "innodb_log_file_size" if "innodb_log_file_size" in lower else None
            if own is None:
                out.cannot.append("the redo log's size (no variable sets it here)")
            elif not same_value(mine.get(REDO), ref[REDO]):
                files = float(lower.get("innodb_log_files_in_group") or 1) if own == "innodb_log_file_size" else 1.0
                out.knobs[own] = str(int(float(ref[REDO]) / max(files, 1.0)))
            continue
        own_name = _own_name(name, lower)
        if own_name is None:
            out.cannot.append(f"{name}={ref[name]} (no such variable on {server})")
            continue
        if name in ("sync_binlog", "binlog_format") and not same_value(ref.get("log_bin"), "ON"):
            continue  # no binary log on the reference: its settings change nothing
        if not same_value(mine.get(name), ref[name]):
            out.knobs[own_name] = ref[name]
    for name in sorted(KEY - set(ALIGNED)):  # the unfair ones alignment leaves as they are
        if name in ref and name in mine and not same_value(ref[name], mine[name]):
            out.cannot.append(f"{name} ({mine[name]} here, {ref[name]} on {reference})")
        elif name in ref and name not in mine and same_value(ref[name], "ON"):
            out.cannot.append(f"{name}={ref[name]} (no such variable on {server})")
    return out


def aligned_configs(configs: tuple[ConfigPlan, ...], align: Alignment, static: set[str]) -> tuple[ConfigPlan, ...]:
    """The server's configurations with the aligned settings added (a configuration's own knobs win); `static`: the
    aligned variables that need a restart on this server."""
    if not align.knobs:
        return configs
    out = []
    for c in configs:
        extra = {k: v for k, v in align.knobs.items() if k not in c.knobs}
        out.append(replace(c, knobs={**extra, **c.knobs},
                           static={**{k: v for k, v in extra.items() if k in static}, **c.static}))
    return tuple(out)
