"""What the sessions browser and the compare view compute from recorded sessions (no I/O, no Qt):
one row per session, the settings that differ between two sessions, and where to align overlays."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tunebench.core.display import seconds_between
from tunebench.core.errors import ConfigError
from tunebench.core.interval import is_trx_series
from tunebench.core.verdict import MIN_SECONDS, SETTLE_SECONDS


def best_tps(session: Mapping[str, Any]) -> float | None:
    """The highest finite TPS of the session's steps (None: none has one; a value that is no number counts not)."""
    steps = (session.get("summary") or {}).get("steps") or []
    tps = [float(s["tps"]) for s in steps if isinstance(s, Mapping) and isinstance(s.get("tps"), (int, float))
           and not isinstance(s["tps"], bool) and math.isfinite(s["tps"])]
    return max(tps, default=None)


def knobs_of(session: Mapping[str, Any]) -> list[str]:
    """The knobs a session varied: its sweep's axes and every knob flipped live, in first-seen order."""
    names: list[str] = []
    for st in session.get("steps") or []:
        for k in (st.get("config") or {}).get("knobs") or {}:
            if k not in names:
                names.append(k)
    for ev in session.get("events") or []:
        if ev["kind"] == "knob":
            k = (ev.get("data") or {}).get("name")
            if k and k not in names:
                names.append(str(k))
    return names


def servers_of(session: Mapping[str, Any]) -> list[str]:
    """Every server a session measured, as 'flavor version' (a server axis: each of them, in the order run)."""
    summary = session.get("summary") or {}
    listed = summary.get("servers") if isinstance(summary, Mapping) else None
    if isinstance(listed, list) and len(listed) > 1:
        return [f"{x.get('flavor') or ''} {x.get('version') or ''}".strip() for x in listed if isinstance(x, Mapping)]
    return [f"{session.get('flavor') or ''} {session.get('version') or ''}".strip()]


def servers_text(session: Mapping[str, Any]) -> str:
    return " + ".join(servers_of(session))


def browse_row(session: Mapping[str, Any]) -> dict[str, Any]:
    """One line of the sessions table."""
    ended = session.get("ended_at")
    return {
        "id": session["id"], "started_at": session["started_at"], "name": session.get("name") or "",
        "target": session["target"], "server": servers_text(session),
        "workload": session["workload"], "engine": session["engine"],
        "knobs": ", ".join((["server"] if len(servers_of(session)) > 1 else []) + knobs_of(session)),
        "best_tps": best_tps(session), "duration": seconds_between(session["started_at"], ended),
        "status": session["status"], "tags": session.get("tags") or "", "notes": session.get("notes") or "",
        "host": session.get("host") or "-",
    }


def matches(row: Mapping[str, Any], query: str) -> bool:
    """Every word of the query appears in some column (case-insensitive); tag:x only in the tags."""
    text = " ".join(str(v) for v in row.values() if v is not None).lower()
    for word in query.lower().split():
        if word.startswith("tag:"):
            if word[4:] not in [t.strip().lower() for t in str(row.get("tags") or "").split(",")]:
                return False
        elif word not in text:
            return False
    return True


def _flat(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for i, v in enumerate(value):
            name = v.get("name", i) if isinstance(v, Mapping) else i
            _flat(f"{prefix}[{name}]", v, out)
    else:
        out[prefix] = value if isinstance(value, str) else json.dumps(value)


def settings(session: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """A session's settings by section: server, variables, overlay (static knobs of the sandbox's my.cnf
    overlay, per configuration), workload (options, schedule, engine, transport)."""
    server = {"flavor": session.get("flavor") or "", "version": session.get("version") or "",
              "target": session["target"], "transport": session["transport"], "engine": session["engine"]}
    overlay: dict[str, str] = {}
    for st in session.get("steps") or []:
        cfg = st.get("config") or {}
        for k, v in (cfg.get("knobs") or {}).items():
            overlay[f"configuration {int(cfg.get('config', 0)) + 1}: {k}"] = str(v)  # 1-based, as the Events
    workload: dict[str, str] = {}
    config = dict(session.get("config") or {})
    config.pop("sweep", None)
    _flat("", config, workload)
    return {"server": server, "variables": dict(session.get("variables") or {}), "knobs": overlay,
            "workload": workload}


# Variables the probes themselves set while they sample (mysql/probes/settings.py: InnoDB monitors, the
# performance_schema consumers and instruments): they differ with what was probed, not with what was tuned.
PROBE_VARIABLES = ("innodb_monitor_enable", "innodb_monitor_disable", "innodb_monitor_reset",
                   "innodb_monitor_reset_all")
PROBE_VARIABLE_PREFIXES = ("performance_schema_consumer_", "performance_schema_instrument")


def probe_variable(name: str) -> bool:
    return name in PROBE_VARIABLES or name.startswith(PROBE_VARIABLE_PREFIXES)


def session_title(session: Mapping[str, Any]) -> str:
    """How the window names a session: its ID and its name, else its workload."""
    return f"#{session['id']} {session.get('name') or session['workload']}"


def diff_settings(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, str, str | None, str | None]]:
    """(section, name, value in a, value in b) for every setting that differs; None where one lacks it. The
    probes' own variables are left out."""
    sa, sb = settings(a), settings(b)
    for s in (sa, sb):
        s["variables"] = {k: v for k, v in s["variables"].items() if not probe_variable(k)}
    out: list[tuple[str, str, str | None, str | None]] = []
    for section in sa:
        xa, xb = sa[section], sb[section]
        for name in sorted(set(xa) | set(xb)):
            va, vb = xa.get(name), xb.get(name)
            if va != vb:
                out.append((section, name, va, vb))
    return out


ALIGN_MODES = ("start", "step", "marker")
ALIGN_MARKER_KINDS = ("knob", "mark")  # what "align at marker" looks at


def align_offset(session: Mapping[str, Any], mode: str, which: str = "") -> float:
    """The wall-clock time (s) a session's overlay puts at x = 0.

    start: the session start; step N: the start of step N (1-based); marker TEXT: the first knob change or
    user mark whose label contains TEXT (e.g. 'flush_log_at_trx_commit'), or of that kind ('knob', 'mark').
    Only those: a sweep's "configuration 1: innodb_flush_log_at_trx_commit=1, ..." event names every knob
    of the configuration and comes before the change itself.
    """
    if mode == "start":
        return float(session["started_at"])
    if mode == "step":
        steps = session.get("steps") or []
        try:
            n = int(which or 1)
        except ValueError:
            raise ConfigError(f"step to align at must be a number, not {which!r}") from None
        if not 1 <= n <= len(steps):
            raise ConfigError(f"session {session['id']} has {len(steps)} step(s), no step {n}")
        return float(steps[n - 1]["started_at"])
    if mode == "marker":
        for ev in session.get("events") or []:
            if ev["kind"] in ALIGN_MARKER_KINDS and (
                    not which or which == ev["kind"] or which.lower() in ev["label"].lower()):
                return float(ev["t"])
        raise ConfigError(f"session {session['id']} has no marker matching {which or 'any'!r}")
    raise ConfigError(f"align at one of {', '.join(ALIGN_MODES)}, not {mode!r}")


@dataclass(frozen=True, slots=True)
class Point:
    """One (threads, TPS) point of a configuration's curve; `settled` its seconds as an A/B verdict counts them
    (a segment after a live change loses the settle time), `short` when that is too few for a verdict."""

    threads: int
    tps: float
    settled: int | None = None  # None: a whole step
    short: bool = False


def points_by_config(session: Mapping[str, Any]) -> dict[str, list[Point]]:
    """Per configuration (label) of a session: the main group's points, for concurrency curves and bests.

    A run with live knob changes is several configurations too: a step split by a change gives one point on
    each side (its segments), and the steps after it belong to the knobs as changed — never one mean across
    a flip. Labels name the live changes in effect ("" before any)."""
    summary = session.get("summary") or {}
    if summary.get("configs"):
        return {c["label"]: [Point(s["threads"], s["tps"]) for s in c["steps"]] for c in summary["configs"]}
    steps = summary.get("steps") or []
    main = steps[0]["group"] if steps else "main"
    curves: dict[str, list[Point]] = {"": []}
    changed: dict[str, str] = {}

    def label() -> str:
        return ", ".join(f"{k}={v}" for k, v in changed.items())

    for st in steps:
        if st["group"] != main:
            continue
        segments = st.get("segments") or []
        if not segments:
            curves.setdefault(label(), []).append(Point(st["threads"], st["tps"]))
            continue
        for seg in segments:
            after = seg.get("after")
            if after and after.get("cut") == "confirm":
                # a Confirm's blocks alternate two values: no point of one configuration; after it, the knob is
                # back where it was
                if after.get("phase") == "start":
                    continue
            elif after:
                changed[str(after["name"]).removeprefix("innodb_")] = str(after["to"])
            part = (seg.get("groups") or {}).get(main)
            if part is not None:
                settled = int(part.get("seconds") or 0) - (SETTLE_SECONDS if after else 0)
                curves.setdefault(label(), []).append(Point(st["threads"], part["tps"], settled,
                                                            settled < MIN_SECONDS))
    return {k: v for k, v in curves.items() if v or k == ""}


def tps_by_threads(session: Mapping[str, Any]) -> dict[str, list[tuple[int, float]]]:
    """Per configuration (label) of a session: (threads, TPS) of the main group, for concurrency curves
    (points_by_config's points)."""
    return {k: [(p.threads, p.tps) for p in v] for k, v in points_by_config(session).items()}


def best_to_best(sessions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The best TPS of every configuration of the given sessions, best first, with its ratio to the
    first session's best (the baseline) — the seeds' best-to-best comparison across runs.

    A segment of a step too short for an A/B verdict (fewer settled seconds than it needs) is too short for a
    best: a configuration's best is over its points that have enough; one that has only short points is listed
    after the ranked ones, flagged `short`, with no ratio."""
    rows: list[dict[str, Any]] = []
    for s in sessions:
        title = s.get("name") or f"#{s['id']} {s['workload']}"
        for label, points in points_by_config(s).items():
            if points:
                enough = [p for p in points if not p.short]
                best = max(enough or points, key=lambda p: p.tps)
                rows.append({"session": s["id"], "config": label, "label": f"{title} {label}".strip(),
                             "threads": best.threads, "tps": best.tps, "short": not enough,
                             "settled": best.settled})
    base = next((r["tps"] for r in rows if not r["short"]), None)
    for r in rows:
        r["ratio"] = round(r["tps"] / base, 3) if base and not r["short"] else None
    return sorted(rows, key=lambda r: (r["short"], -r["tps"]))


METRICS = {"TPS": ".tps", "QPS": ".qps", "p95 ms": ".lat.p95", "p99 ms": ".lat.p99"}


def metric_series(names: Sequence[str], metric: str) -> str | None:
    """The series a compare overlay draws for `metric`: the clients' total when there are several groups,
    else the one group; or a series named outright (e.g. 'server.questions')."""
    if metric in names:
        return metric
    suffix = METRICS.get(metric)
    if suffix is None:
        return None
    if f"client.total{suffix}" in names:
        return f"client.total{suffix}"
    client = sorted(n for n in names if n.startswith("client.") and n.endswith(suffix) and not is_trx_series(n))
    return client[0] if client else None


def latency_by_rate(session: Mapping[str, Any], slo_p99_ms: float | None = None) -> dict[str, dict[str, Any]]:
    """Per configuration (label) of a session's open-loop steps: points (rate asked, achieved TPS, p99 ms from the
    intended start, served) in rate order, and the knee under an SLO (the sweep's own, or `slo_p99_ms`): the
    highest rate served whose p99 meets it. Empty for a closed-loop session."""
    from tunebench.core.schedule import served

    summary = session.get("summary") or {}
    slo = slo_p99_ms if slo_p99_ms is not None else (summary.get("knee") or {}).get("slo_p99_ms")
    curves: dict[str, list[dict[str, Any]]] = {}
    if summary.get("configs"):
        for c in summary["configs"]:
            for st in c["steps"]:
                if st.get("rate") is not None:
                    curves.setdefault(c["label"], []).append(st)
    else:
        steps = summary.get("steps") or []
        main = steps[0]["group"] if steps else "main"
        curves[""] = [st for st in steps if st["group"] == main and st.get("rate") is not None]
    out: dict[str, dict[str, Any]] = {}
    for label, steps in curves.items():
        points: list[dict[str, Any]] = sorted(
            ({"rate": float(st["rate"]), "tps": float(st["tps"]), "lat_p99_ms": st.get("lat_p99_ms"),
              "served": served(float(st["rate"]), float(st["tps"]), st.get("seconds") or 1)} for st in steps),
            key=lambda p: float(p["rate"]))
        if not points:
            continue
        ok: list[float] = [float(p["rate"]) for p in points if slo is not None and p["served"]
                           and p["lat_p99_ms"] is not None and p["lat_p99_ms"] <= slo]
        out[label] = {"points": points, "knee": max(ok, default=None), "slo_p99_ms": slo}
    return out
