"""`tunebench history list|show|name`: the store's sessions as series of one experiment each, their change points
and what differed at each (run/history.py)."""

from __future__ import annotations

import argparse
from typing import Any

from tunebench.cli.output import emit
from tunebench.cli.resolve import open_store
from tunebench.core.errors import ConfigError


def cmd_history(args: argparse.Namespace) -> int:
    from tunebench.core.display import local_time
    from tunebench.core.history import number
    from tunebench.run.history import collect, find, name_series

    if args.action in ("show", "name") and not args.series:
        raise ConfigError(f"history {args.action} needs a series (tunebench history list shows them)")
    if args.action == "name" and args.name is None:
        raise ConfigError("history name needs the series and its new name ('' takes the name off)")
    store = open_store(args)
    try:
        series = collect(store)
        if args.action == "list":
            rows = [s for s in series if len(s.sessions) >= args.min_sessions]
            lines = [f"{'series':14} {'sessions':>8} {'changes':>7}  experiment"]
            lines += [f"{s.label:14} {len(s.sessions):>8} {len(s.changes):>7}  {s.describe()}" for s in rows]
            if not rows:
                lines = ["no series yet: every run adds its session to the series of its experiment"]
            emit(args, [_brief(s) for s in rows], "\n".join(lines))
            return 0
        one = find(series, args.series)
        if args.action == "name":
            name_series(store, one, args.name)
            emit(args, {"key": one.key, "name": one.name},
                 f"series {one.key} is now {one.name!r}" if one.name else f"series {one.key}'s name taken off")
            return 0
        lines = [f"series {one.label}" + (f" ({one.key})" if one.name else "") + f": {one.describe()}", ""]
        for load in dict.fromkeys(p.load for p in one.points):
            pts = [p for p in one.points if p.load == load]
            lines.append(f"{load} ({pts[0].metric}):")
            for p in pts:
                interval = f" ({number(p.low)}-{number(p.high)})" if p.low is not None and p.high is not None else ""
                busy = f"  busy {p.busy_seconds} of {p.seconds} s: not used" if p.busy else ""
                lines.append(f"  session {p.session_id:>5}  {local_time(p.started_at)}  {p.version:16} "
                             f"{number(p.value):>9}{interval}{busy}")
            lines.append("")
        if one.changes:
            lines.append("change points:")
            for cp in one.changes:
                lines.append(f"  {cp.text()}")
                lines += [f"    {line}" for line in cp.differed]
        else:
            lines.append("no change point: no shift beyond this series' own noise")
        emit(args, one.to_dict(), "\n".join(lines).rstrip())
        return 0
    finally:
        store.close()


def _brief(s: Any) -> dict[str, Any]:
    return {"key": s.key, "name": s.name, "sessions": len(s.sessions), "change_points": len(s.changes),
            "experiment": s.describe()}
