"""A run's session in the store: what it records as its configuration, how a sweep session is resumed, and
the steps' JSON lines (the CLI's output and the session summary) with the before/after segments of live
knob changes."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from tunebench.core.busy import BUSY_PCT, busy_mask, other_series, step_busy
from tunebench.core.diff import Side
from tunebench.core.efficiency import series_needed, step_efficiency
from tunebench.core.errors import ConfigError
from tunebench.core.interval import Event, Interval
from tunebench.core.statements import texts_of
from tunebench.core.stats import StepSummary, summarize
from tunebench.core.sweep import Plan
from tunebench.core.verdict import MIN_SECONDS, SETTLE_SECONDS, outages, series_names, step_window, verdict_event
from tunebench.load.driver import driver_mode
from tunebench.load.hotloop import loop_mode
from tunebench.mysql.connect import ServerInfo
from tunebench.mysql.target import Target
from tunebench.run.records import StepResult
from tunebench.run.spec import RunSpec
from tunebench.store.repo import SessionWriter, Store


def session_config(spec: RunSpec, plan: Plan | None) -> dict[str, Any]:
    return {
        "groups": [{"name": g.name, "workload": g.workload.name, "options": dict(g.options),
                    "schedule": list(g.schedule), "lua_script": g.lua_script,
                    **({"headline": list(h)} if (h := g.headline) else {}),
                    **({"rates": list(g.rates), "arrival": g.arrival, "latency_limit_ms": g.latency_limit_ms}
                       if g.rates else {})} for g in spec.groups],
        "step_seconds": spec.step_seconds, "warmup_seconds": spec.warmup_seconds, "schema": spec.schema,
        "driver": driver_mode(), "engine_loop": loop_mode() if spec.engine == "builtin" else None,
        "workers": spec.workers, "seed": spec.seed,
        "probes": list(spec.probes) if spec.probes is not None else "all",
        "probe_interval": spec.probe_interval,
        **({"tune": spec.extra["tune"]} if "tune" in spec.extra else {}),  # a knob search's settings (run/tune.py)
        # the spec as written, not its expansion (a big product made this a 482 MB blob); the configurations
        # that ran are in the steps and in the summary's sweep tables
        **({"sweep": {**plan.spec.to_dict(), "restarts_planned": plan.restarts,
                      "estimated_seconds": round(plan.seconds), "baseline_config": plan.baseline},
            "sweep_fingerprint": plan.spec.fingerprint()} if plan else {}),
    }


def open_session(store: Store, target: Target, spec: RunSpec, plan: Plan | None, info: ServerInfo,
                 resume: int | None, tls: dict[str, Any] | None = None
                 ) -> tuple[SessionWriter, set[tuple[int, int]], list[StepResult]]:
    """A new session, or `resume`'s: its writer, the (config, step) pairs already done, and their results.
    `tls`: what the run's connections use (mode, version, cipher), kept in the session's config."""
    if resume is None:
        writer = store.new_session(
            target=target.name, transport=spec.transport or target.default_transport(), engine=spec.engine,
            workload="+".join(g.workload.name for g in spec.groups),
            config={**session_config(spec, plan), **({"tls": tls} if tls else {})},
            flavor=info.flavor, version=info.version)
        writer.snapshot_variables(info.variables)
        return writer, set(), []
    old = store.get_session(resume)
    want = plan.spec.fingerprint() if plan else None
    if old["config"].get("sweep_fingerprint") != want:
        raise ConfigError(f"session {resume} was not recorded from this sweep spec; cannot resume it")
    done: set[tuple[int, int]] = set()
    results: list[StepResult] = []
    for st in old["steps"]:
        if st["summary"] is not None and st["ended_at"] is not None:
            cfg, step = st["config"].get("config", 0), st["config"].get("step", st["idx"])
            done.add((cfg, step))
            results.append(StepResult(st["idx"], tuple(StepSummary.from_dict(v) for k, v in st["summary"].items()
                                                       if not k.startswith("_")), cfg))
    writer = store.resume_session(resume)
    writer.add_event(Event(time.time(), "note", f"resumed: {len(done)} step(s) were already done"))
    return writer, done, results


def live_segments(marks: Sequence[tuple[float, dict[str, Any]]], collected: dict[str, list[Interval]],
                  threads: dict[str, int]) -> tuple[dict[str, Any], ...]:
    """Before/after statistics around the live knob changes (`marks`: time, change) made during a step."""
    if not marks:
        return ()
    cuts = [t for t, _ in marks]
    out = []
    bounds = [float("-inf"), *cuts, float("inf")]
    for i in range(len(bounds) - 1):
        seg: dict[str, Any] = {"from": None if i == 0 else bounds[i], "to": None if i == len(cuts) else bounds[i + 1],
                               "after": None if i == 0 else marks[i - 1][1], "groups": {}}
        for g, ivs in collected.items():
            # an interval is stamped at its end: it belongs to the segment where it started
            part = [iv for iv in ivs if bounds[i] <= iv.t - 1 < bounds[i + 1]]
            if part:
                seg["groups"][g] = summarize(g, threads[g], part).to_dict()
        out.append(seg)
    return tuple(out)


def verdict_outlook(now: float, measured_since: float | None, step_ends: float | None,
                    earlier: Sequence[float]) -> dict[str, Any]:
    """What a live change made at `now` can expect of its A/B verdict, said when it is made (not 30 s later at
    the step's end): when the verdict comes, or why there will be none — too few measured seconds before it in
    this step (a change during the warm-up, or within seconds of the step's start or of the last change), or too
    few left after it (the settle time, then MIN_SECONDS). {"outlook": text, "verdict_in": seconds or None}."""
    if measured_since is None or step_ends is None or now < measured_since:
        return {"outlook": "no A/B verdict for this change: it came before the step's measured seconds began (the "
                           "step measures the new value only)", "verdict_in": None}
    last = max([t for t in earlier if t >= measured_since], default=None)
    before = now - (measured_since if last is None else last + SETTLE_SECONDS)
    left = step_ends - now
    if before < MIN_SECONDS:
        return {"outlook": f"no A/B verdict for this change: {max(0.0, before):.0f} s of steady load before it in "
                           f"this step, it needs {MIN_SECONDS} (change knobs at least {MIN_SECONDS} s into a step's "
                           "measured seconds or after the last change's settling)", "verdict_in": None}
    if left - SETTLE_SECONDS < MIN_SECONDS:
        return {"outlook": f"no A/B verdict for this change: the step ends in {max(0.0, left):.0f} s, and it needs "
                           f"{SETTLE_SECONDS} s to settle and {MIN_SECONDS} s measured after it", "verdict_in": None}
    return {"outlook": f"the A/B verdict comes at the step's end, in about {left:.0f} s", "verdict_in": round(left)}


def flip_verdicts(store: Store, session_id: int, marks: Sequence[tuple[float, dict[str, Any]]],
                  collected: dict[str, list[Interval]], ended: float, busy_pct: float | None = BUSY_PCT,
                  floors: Mapping[str, float] | None = None, measured_from: float | None = None) -> list[Event]:
    """One "verdict" event per live change of the step and client group, computed from the series as the store
    holds them (so a replay, the report and a recomputation get the same numbers): before = from the step's
    first measured second (or the previous change) to the change, after = to the next change (or the step's
    end). The event is stamped at the step's end, when it is known; `data["at"]` is the change's time."""
    if not marks:
        return []
    known = list(store.series_names(session_id))
    down = outages(store.get_session(session_id)["events"], ended)
    out = []
    for g, ivs in collected.items():
        if not ivs:
            continue
        names = series_names(g, known)
        series = {n: (d.t, d.v) for n, d in store.series(session_id, names).items()}
        # half a second before the first measured second began: clear of the warm-up's last second, and of
        # the microsecond rounding of stored times
        start = ivs[0].t - 1.5
        cuts = [t for t, _ in marks]
        for i, (at, change) in enumerate(marks):
            if change.get("cut"):  # a confirmation's start or end: it ends a window, it is no change of its own
                continue
            out.append(verdict_event(series, g, change, cuts[i - 1] if i else start, at,
                                     cuts[i + 1] if i + 1 < len(cuts) else ended,
                                     SETTLE_SECONDS if i else 0, ended, len(collected) > 1, excluded=down,
                                     busy_pct=busy_pct, floor_pct=(floors or {}).get(g),
                                     # the step's own measure_from: its row tells a flip on that clock
                                     measured_from=measured_from if measured_from is not None else ivs[0].t - 1.0))
    return out


def phases_json(results: Sequence[StepResult]) -> list[dict[str, Any]]:
    """A phase plan's steps in order, by name; an action step with its result (how long the index build took)."""
    return [{"step": r.idx + 1, "phase": r.phase, **({"action": r.action} if r.action else {}),
             **({"incomplete": True} if r.incomplete else {})}
            for r in sorted(results, key=lambda r: r.idx) if r.phase]


def efficiency_of(store: Store, session_id: int, groups: Sequence[str], lo: float, hi: float
                  ) -> dict[str, dict[str, float | None]]:
    """Each client group's per-operation efficiency over a step's measured seconds, from the series as stored."""
    known = list(store.series_names(session_id))
    out = {}
    for g in groups:
        series = {n: (d.t, d.v) for n, d in store.series(session_id, series_needed(known, g)).items()}
        out[g] = {k: None if v is None else round(v, 3) for k, v in step_efficiency(series, g, lo, hi).items()}
    return out


def busy_of(store: Store, session_id: int, lo: float, hi: float, group: str = "main") -> dict[str, Any] | None:
    """A step's busy seconds (core/busy.py) among its measured seconds, from the series as stored."""
    names = other_series(store.series_names(session_id))
    if not names:
        return None
    data = store.series(session_id, [*names, f"client.{group}.tps"])
    return step_busy({n: (d.t, d.v) for n, d in data.items()}, lo, hi, group)


def diff_side(store: Store, session_id: int, step: int | None = None) -> Side:
    """One side of a `sessions diff`: step `step` (1-based) of the session, or its best step by the main client
    group's TPS; its measured seconds, every series, and the step's efficiency."""
    session = store.get_session(session_id)
    ended = [st for st in session["steps"] if st["ended_at"] is not None and st.get("summary")]
    if not ended:
        raise ConfigError(f"session {session_id} has no finished step to compare")
    groups = [g["name"] for g in (session.get("config") or {}).get("groups", [])] or ["main"]
    group = groups[0]
    if step is None:
        pick = max(ended, key=lambda st: (st["summary"].get(group) or {}).get("tps") or 0.0)
    else:
        pick = next((st for st in ended if st["idx"] + 1 == step), None)
        if pick is None:
            numbers = ", ".join(str(st["idx"] + 1) for st in ended)
            raise ConfigError(f"session {session_id} has no finished step {step} (it has {numbers})")
    data = store.series(session_id)
    threads = (pick["summary"].get(group) or {}).get("threads")
    return Side(f"session {session_id} step {pick['idx'] + 1} ({session['workload']}, {group}={threads})",
                {n: (d.t, d.v) for n, d in data.items()}, {n: d.kind for n, d in data.items()},
                float(pick["measure_from"]), float(pick["ended_at"]), group,
                (pick["summary"].get("_efficiency") or {}).get(group) or {}, texts_of(session["events"]))


def steps_per_second(store: Store, session_id: int, group: str, busy_pct: float | None = BUSY_PCT
                     ) -> dict[int, Any]:
    """Step number (as in steps_json) -> the group's per-second TPS of that finished step, as stored, less its busy
    seconds (another process over `busy_pct` % of the machine's CPU, core/busy.py; None: every second)."""
    name = f"client.{group}.tps"
    others = other_series(store.series_names(session_id)) if busy_pct is not None else []
    data = store.series(session_id, [name, *others])
    if name not in data:
        return {}
    t, v = data[name].t, data[name].v
    if others and busy_pct is not None:
        quiet = ~busy_mask({n: (data[n].t, data[n].v) for n in others if n in data}, t, busy_pct)
        t, v = t[quiet], v[quiet]
    return {st["idx"] + 1: step_window(t, v, st) for st in store.get_session(session_id)["steps"]
            if st["ended_at"] is not None}


def steps_json(results: Sequence[StepResult]) -> list[dict[str, Any]]:
    """One line per step and client group, in step order."""
    out = []
    for r in sorted(results, key=lambda r: r.idx):
        for s in r.summaries:
            out.append({"step": r.idx + 1, "config": r.config, **({"phase": r.phase} if r.phase else {}),
                        "group": s.group, "threads": s.threads,
                        "tps": round(s.tps, 2), "qps": round(s.qps, 2), "lat_p95_ms": s.lat_p95_ms,
                        "lat_p99_ms": s.lat_p99_ms, "errors": s.errors, "reconnects": s.reconnects, "cv": s.cv,
                        "tps_median": round(s.tps_median, 2), "qps_median": round(s.qps_median, 2),
                        "seconds": s.seconds,
                        "steady_skipped": s.steady_skipped,
                        **({"rate": s.rate, "lat_p50_ms": s.lat_p50_ms, "lat_max_ms": s.lat_max_ms,
                            "service_p50_ms": s.service_p50_ms, "service_p95_ms": s.service_p95_ms,
                            "service_p99_ms": s.service_p99_ms, "late": s.late, "skipped": s.skipped}
                           if s.rate is not None else {}),
                        **({"threads_running": s.threads_running}
                           if s.threads_running is not None and s.threads_running < s.threads else {}),
                        **({"headline": s.headline, "headline_label": s.headline_label}
                           if s.headline_label else {}),
                        **({"trx": {k: dict(v) for k, v in s.trx.items()}} if s.trx else {}),
                        **({"error_codes": dict(s.error_codes)} if s.error_codes else {}),
                        **({"segments": list(r.segments)} if r.segments else {}),
                        **({"incomplete": True} if r.incomplete else {}),
                        **({"busy": dict(r.busy)} if r.busy else {}),
                        **({"finished": {"transactions": r.finished["transactions"].get(s.group, 0),
                                         "headline": r.finished["headline"].get(s.group),
                                         "seconds": r.finished["seconds"].get(s.group)}} if r.finished else {})})
    return out
