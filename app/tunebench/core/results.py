"""Sweep results the way the seeds present them: the TPS-vs-concurrency curve of each configuration
and its best point, a best-to-best table across configurations, and a ratio table against a baseline.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from tunebench.core.confdiff import compare, session_sides
from tunebench.core.display import local_time
from tunebench.core.efficiency import LABELS, OPTIONAL, efficiency_rows, fmt
from tunebench.core.error_codes import codes_text
from tunebench.core.schedule import served
from tunebench.core.sessions import servers_text
from tunebench.core.step_context import StepKnobs, note_lines, step_notes
from tunebench.core.sweep import Plan
from tunebench.core.tune import TABLE_HEADER, TuneResult, confirm_text
from tunebench.core.verdict import MIN_QUIET_SECONDS, event_verdict, pair_verdict, repeats_verdict, short_wait


def sweep_tables(plan: Plan, steps: Sequence[Mapping[str, Any]], applied: Mapping[int, Mapping[str, str | None]],
                 per_second: Mapping[int, Sequence[float]] | None = None,
                 floor: Callable[[int], float | None] | None = None) -> dict[str, Any]:
    """`steps` as Experiment._steps_json(); the main (first) client group drives best/ratio tables.
    Only configurations that ran (and the baseline) are listed. With `per_second` (step number -> the main
    group's per-second TPS of that step, as stored), each ratio to the baseline at the same threads carries
    its A/B verdict (core.verdict.pair_verdict: settled seconds, a 95 % CI on the ratio); `per_second` holds a
    step's quiet seconds only (busy ones left out), and a configuration's repeats are judged on their means.
    `floor(threads)`: this machine's calibrated noise floor for the load at those threads, in % (None: unknown),
    carried by a single run's verdicts (a ratio inside it is no clear difference)."""
    per_second = per_second or {}
    main = plan.spec.groups[0].name if plan.spec.groups else "main"
    configs: list[dict[str, Any]] = []
    for c in plan.configs:
        mine = [s for s in steps if s.get("config") == c.idx and s["group"] == main]
        if not mine and c.idx != plan.baseline:
            continue  # not run (an aborted sweep): the plan is in the session's config, not here
        best = max(mine, key=lambda s: s["tps"], default=None)
        configs.append({
            "idx": c.idx, "label": c.label(), "knobs": dict(c.knobs), "transport": c.transport, "engine": c.engine,
            "cpus": c.cpus, "repeat": c.repeat, "applied": dict(applied.get(c.idx, {})),
            **({"server": c.server} if c.server else {}),
            "steps": [{"step": s.get("step"), "threads": s["threads"], "tps": s["tps"], "qps": s["qps"],
                       "lat_p95_ms": s["lat_p95_ms"],
                       "lat_p99_ms": s["lat_p99_ms"], "cv": s["cv"], "tps_median": s["tps_median"],
                       "qps_median": s.get("qps_median"), "seconds": s.get("seconds"),
                       "steady_skipped": s.get("steady_skipped", 0), "errors": s.get("errors", 0),
                       **({"error_codes": s["error_codes"]} if s.get("error_codes") else {}),
                       # a knob flipped live during the step: its figures mix two values
                       **({"flipped": len(s["segments"]) - 1} if s.get("segments") else {}),
                       **({"rate": s["rate"], "service_p99_ms": s.get("service_p99_ms")}
                          if s.get("rate") is not None else {}),
                       **({"headline": s["headline"], "headline_label": s["headline_label"]}
                          if s.get("headline_label") else {})} for s in mine],
            "best": None if best is None else {"threads": best["threads"], "tps": best["tps"], "qps": best["qps"],
                                               "lat_p95_ms": best["lat_p95_ms"]},
        })
    base = next((c for c in configs if c["idx"] == plan.baseline), None)
    best_to_best = []
    for cd in sorted(configs, key=lambda c: -(c["best"] or {}).get("tps", 0)):
        if cd["best"] is None:
            continue
        ratio = None
        if base and base["best"] and base["best"]["tps"]:
            ratio = round(cd["best"]["tps"] / base["best"]["tps"], 3)
        best_to_best.append({"config": cd["idx"], "label": cd["label"], **cd["best"], "ratio": ratio})
    ratios = []
    if base:
        base_tps = {s["threads"]: s["tps"] for s in base["steps"]}
        base_step = {s["threads"]: s["step"] for s in base["steps"]}

        def key(c: Mapping[str, Any]) -> tuple[Any, ...]:  # a configuration less its repeat
            return (tuple(sorted(c["knobs"].items())), c["transport"], c["engine"], c["cpus"], c.get("server"))

        # (configuration less its repeat, threads) -> repeat -> TPS: the repeats' verdict pairs each repeat of a
        # configuration with the same repeat of the baseline (issue 42: judged from the repeats' spread)
        tps_of: dict[tuple[Any, ...], dict[int, float]] = {}
        for cfg in configs:
            for st in cfg["steps"]:
                # the step's mean over its seconds less the busy ones, when known; a step left with fewer than
                # MIN_QUIET_SECONDS is no measurement of its configuration: its repeat is left out of the verdict
                quiet = per_second.get(st["step"])
                tps = float(st["tps"]) if quiet is None else \
                    float(np.mean(quiet)) if len(quiet) >= MIN_QUIET_SECONDS else math.nan
                tps_of.setdefault((key(cfg), st["threads"]), {})[cfg["repeat"] or 0] = tps
        for cd in configs:
            row: dict[str, Any] = {"config": cd["idx"], "label": cd["label"], "steps": []}
            for s in cd["steps"]:
                b = base_tps.get(s["threads"])
                cell = {"threads": s["threads"], "tps": s["tps"], "ratio": round(s["tps"] / b, 3) if b else None}
                if key(cd) != key(base):
                    own: dict[int, float] = tps_of.get((key(cd), s["threads"]), {})
                    theirs: dict[int, float] = tps_of.get((key(base), s["threads"]), {})
                    v = repeats_verdict([(theirs[r], own[r]) for r in sorted(own) if r in theirs])
                    before, after = per_second.get(base_step.get(s["threads"], -1)), per_second.get(s["step"])
                    if v is not None:
                        cell["verdict"] = v.to_dict()
                    elif before is not None and after is not None:  # one run: its seconds against the baseline's
                        pv = pair_verdict(before, after)
                        noise = floor(s["threads"]) if floor is not None and pv is not None else None
                        if pv is not None and noise is not None:
                            pv = replace(pv, floor_pct=noise)
                        cell["verdict"] = pv.to_dict() if pv else None
                row["steps"].append(cell)
            ratios.append(row)
    out = {"configs": configs, "baseline": plan.baseline, "best_to_best": best_to_best, "ratios": ratios,
           "restarts_planned": plan.restarts}
    if any(st.get("rate") is not None for c in configs for st in c["steps"]):
        out["knee"] = knees(configs, plan.spec.slo_p99_ms)
    return out


def knees(configs: Sequence[Mapping[str, Any]], slo_p99_ms: float | None) -> dict[str, Any]:
    """Latency against rate: per configuration, its open-loop steps as (rate asked, achieved, p99 from the
    intended start), and with an SLO the highest rate served whose p99 meets it (None: none does)."""
    out: dict[str, Any] = {"slo_p99_ms": slo_p99_ms, "configs": []}
    for c in configs:
        points = sorted(({"rate": st["rate"], "tps": st["tps"], "lat_p99_ms": st["lat_p99_ms"],
                          "served": served(st["rate"], st["tps"], st.get("seconds") or 1)}
                         for st in c["steps"] if st.get("rate") is not None), key=lambda p: p["rate"])
        ok = [p for p in points if slo_p99_ms is not None and p["served"] and p["lat_p99_ms"] is not None
              and p["lat_p99_ms"] <= slo_p99_ms]
        out["configs"].append({"idx": c["idx"], "label": c["label"], "points": points,
                               "knee": max((p["rate"] for p in ok), default=None)})
    return out


def _float(v: Any) -> float | None:
    return None if v is None else float(v)


def knee_lines(summary: Mapping[str, Any]) -> list[str]:
    """The report's latency-against-rate table (a sweep over rates), with the knee under an SLO."""
    k = summary.get("knee")
    if not k:
        return []
    rates = sorted({p["rate"] for c in k["configs"] for p in c["points"]})
    slo = k.get("slo_p99_ms")
    lines = ["", "## Latency against rate", "",
             "p99 ms from each transaction's intended start at each rate asked (achieved TPS in brackets; *: the "
             "rate was not served)" + (f"; knee: the highest rate served with p99 <= {slo:g} ms." if slo else "."), "",
             "| configuration | " + " | ".join(f"{r:,.0f}/s" for r in rates) + (" | knee |" if slo else " |"),
             "|---|" + "---:|" * (len(rates) + (1 if slo else 0))]
    for c in k["configs"]:
        by = {p["rate"]: p for p in c["points"]}
        cells = [f"{_f(_float(by[r]['lat_p99_ms']), 2)} ({_f(float(by[r]['tps']), 0)})"
                 f"{'' if by[r]['served'] else '*'}" if r in by else "-" for r in rates]
        knee = (f" | {_f(float(c['knee']), 0)}/s" if c["knee"] is not None else " | none meets it") if slo else ""
        lines.append(f"| {c['label']} | " + " | ".join(cells) + knee + " |")
    return lines


def ci_text(v: Any, sweep: bool = False) -> str:
    """A ratio's 95 % CI as the report writes it after the ratio, and whether the difference is clear ("" for
    no verdict). The window's sweep tables use it too, so the two read the same."""
    if v is None:
        return ""
    if not v.judged:
        return (f" (not judged: {v.repeats} repeats)" if v.repeats
                else " (not judged: too few independent seconds)")
    # a sweep's cell says whether its interval is over repeats or one run's seconds (issue 42)
    over = f" over {v.repeats} repeats" if v.repeats else ", single run" if sweep else ""
    # a single run's ratio inside this machine's calibrated noise floor is no clear difference either (issue 42)
    noise = f", within this machine's noise (±{v.floor_pct:.0f} %)" if v.clear and v.within_floor() else ""
    return f" ({v.ci_low:.2f}-{v.ci_high:.2f}{over}{'' if v.clear else ', no clear difference'}{noise})"


def _ci(verdict: Mapping[str, Any] | None) -> str:
    return ci_text(event_verdict({"verdict": verdict}), sweep=True)


def number(v: Any, digits: int = 1) -> str:
    """A number as the report writes it ("-" for none)."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(v)


_f = number


def error_code_lines(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """The steps' errors by server error code, a line per step that had any (the count is the errors column's)."""
    rows = []
    for s in steps:
        text = codes_text(s.get("error_codes"))
        if text:
            rows.append(f"- step {s.get('step')} {s.get('group')}: {_f(s.get('errors'), 0)} = {text}")
        elif _float(s.get("errors")):
            rows.append(f"- step {s.get('step')} {s.get('group')}: {_f(s.get('errors'), 0)} (no codes recorded: "
                        "sysbench, and sessions older than the codes, count errors only)")
    return ["", "Errors by server error code:", "", *rows] if rows else []


def trx_lines(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per transaction type of the steps of multi-type families (TPC-C): rate, share of the mix, latency,
    the profile's own rollbacks and the deadlock retries."""
    rows = [s for s in steps if s.get("trx")]
    if not rows:
        return []
    lines = ["", "## Per transaction type", "",
             "| step | group | type | TPS | share | p95 ms | p99 ms | rollbacks | retries | errors |",
             "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in rows:
        for name, t in s["trx"].items():
            share = "-" if t.get("share") is None else f"{100 * t['share']:.1f} %"
            lines.append(f"| {s['step']} | {s['group']} | {name} | {_f(t['tps'])} | {share} | "
                         f"{_f(t.get('lat_p95_ms'), 3)} | {_f(t.get('lat_p99_ms'), 3)} | {_f(t.get('rollbacks'), 0)} | "
                         f"{_f(t.get('retries'), 0)} | {_f(t.get('errors'), 0)} |")
    return lines


def tls_text(tls: Mapping[str, Any] | None) -> str:
    """How the run's connections travelled: 'TLSv1.3 (TLS_AES_128_GCM_SHA256), ssl-mode PREFERRED'."""
    if not tls:
        return ""
    if tls.get("mode") == "socket":
        return "UNIX socket (no TLS)"
    load = f"; {tls['load']}" if tls.get("load") else ""
    if tls.get("tls"):
        return f"{tls.get('version') or 'TLS'} ({tls.get('cipher')}), ssl-mode {tls.get('mode')}{load}"
    return f"plain TCP, no TLS (ssl-mode {tls.get('mode')}){load}"


def tls_lines(tls: Mapping[str, Any] | None) -> list[str]:
    text = tls_text(tls)
    return [f"- Tunebench's connections: {text}"] if text else []


def markdown(session: Mapping[str, Any]) -> str:
    """A session's results as Markdown: steps (or the sweep's curves), best-to-best and ratio tables."""
    summary = session.get("summary") or {}
    servers = list(dict.fromkeys(c["server"] for c in summary.get("configs") or () if c.get("server")))
    where = (f"{len(servers)} servers ({', '.join(servers)})" if servers else
             f"{session['target']} ({session.get('flavor') or ''} {session.get('version') or ''})")
    lines = [f"# Session {session['id']}: {session['workload']} on {where}", "",
             f"- engine: {session['engine']}, transport: {session['transport']}, status: {session['status']}",
             *tls_lines((session.get("config") or {}).get("tls")), "", *differed_lines(session)]
    configs = summary.get("configs")
    lines += tune_lines(summary.get("tune"))
    if summary.get("phases"):  # a phase plan (the insert benchmark's l.i0, l.x, ...): its table says it all
        steps = summary.get("steps", [])
        return "\n".join(lines + phase_lines(summary["phases"], steps) + open_loop_report(steps)
                         + trx_lines(steps) + error_code_lines(steps) + efficiency_lines(session)
                         + drift_lines(session) + busy_lines(session) + verdict_lines(session)) + "\n"
    if not configs:
        steps = summary.get("steps", [])
        label = next((s["headline_label"] for s in steps if s.get("headline_label")), "")
        notes = step_notes(session)
        lines += ["| step | ran with | group | threads | TPS | QPS | " + (f"{label} | " if label else "")
                  + "p95 ms | p99 ms | CV | errors | seconds used |",
                  "|---:|---|---|---:|---:|---:|" + ("---:|" if label else "") + "---:|---:|---:|---:|---|"]
        for s in steps:
            ran, used = notes.get((s["step"], s["group"]), (StepKnobs(), None))
            seconds = used.text() if used is not None else f"{s.get('seconds', '-')} s"
            lines.append(f"| {s['step']} | {ran.text()} | {s['group']} | {s['threads']} | {_f(s['tps'])} | "
                         f"{_f(s['qps'])} | " + (f"{_f(s.get('headline'), 0)} | " if label else "")
                         + f"{_f(s['lat_p95_ms'], 3)} | {_f(s['lat_p99_ms'], 3)} | {_f(s['cv'], 3)} | "
                         f"{_f(s.get('errors'), 0)} | {seconds} |")
        return "\n".join(lines + open_loop_report(steps) + trx_lines(steps) + error_code_lines(steps)
                         + efficiency_lines(session) + drift_lines(session) + busy_lines(session)
                         + verdict_lines(session)) + "\n"
    if summary.get("knee") and any(len({st.get("rate") for st in c["steps"]}) > 1 for c in configs):
        # a sweep over rates: TPS follows the rate asked, so a best TPS (or a ratio of two) says nothing; the
        # latency against rate, each configuration's knee and the open-loop steps are its results
        return "\n".join(lines + knee_lines(summary) + open_loop_report(summary.get("steps", []))
                         + trx_lines(summary.get("steps", [])) + error_code_lines(summary.get("steps", []))
                         + efficiency_lines(session) + drift_lines(session)
                         + busy_lines(session) + verdict_lines(session)) + "\n"
    threads = sorted({st["threads"] for c in configs for st in c["steps"]})
    lines += ["## TPS by configuration and concurrency", "",
              "| configuration | " + " | ".join(f"{t} thr" for t in threads) + " | best |",
              "|---|" + "---:|" * (len(threads) + 1)]
    for c in configs:
        tps = {st["threads"]: st["tps"] for st in c["steps"]}
        best = c["best"]
        lines.append(f"| {c['label']} | " + " | ".join(_f(tps.get(t)) for t in threads)
                     + f" | {_f(best['tps']) + ' @' + str(best['threads']) if best else '-'} |")
    label = next((st["headline_label"] for c in configs for st in c["steps"] if st.get("headline_label")), "")
    if label:
        lines += ["", f"## {label} by configuration and concurrency", "",
                  "| configuration | " + " | ".join(f"{t} thr" for t in threads) + " |",
                  "|---|" + "---:|" * len(threads)]
        for c in configs:
            head = {st["threads"]: st.get("headline") for st in c["steps"]}
            lines.append(f"| {c['label']} | " + " | ".join(_f(head.get(t), 0) for t in threads) + " |")
    lines += ["", "## Best-to-best", "", "| rank | configuration | best TPS | at threads | QPS | p95 ms | ratio |",
              "|---:|---|---:|---:|---:|---:|---:|"]
    for i, b in enumerate(summary.get("best_to_best", []), 1):
        lines.append(f"| {i} | {b['label']} | {_f(b['tps'])} | {b['threads']} | {_f(b['qps'])} | "
                     f"{_f(b['lat_p95_ms'], 3)} | {_f(b['ratio'], 3)} |")
    base = next((c for c in configs if c["idx"] == summary.get("baseline")), None)
    if summary.get("ratios") and base:
        lines += ["", f"## Ratio to baseline ({base['label']})", "",
                  "At the same threads; in brackets the 95 % confidence interval of the ratio from the steps' "
                  "settled per-second TPS (Welch's t, the seconds' dependence counted; over the repeats' pairs "
                  "when the sweep repeats).", "",
                  "| configuration | " + " | ".join(f"{t} thr TPS | ratio" for t in threads) + " |",
                  "|---|" + "---:|---:|" * len(threads)]
        for r in summary["ratios"]:
            by = {st["threads"]: st for st in r["steps"]}
            cells = []
            for t in threads:
                st = by.get(t)
                cells.append(f"{_f(st['tps'])} | {_f(st['ratio'], 3)}{_ci(st.get('verdict'))}" if st else "- | -")
            lines.append(f"| {r['label']} | " + " | ".join(cells) + " |")
    worded = note_lines(step_notes(session))
    if worded:
        lines += ["", "## Steps that need a word", "",
                  "Knobs set or flipped live, and seconds left out of a step's figures:", "",
                  *(f"- {n}" for n in worded)]
    return "\n".join(lines + knee_lines(summary) + open_loop_report(summary.get("steps", []))
                     + trx_lines(summary.get("steps", [])) + error_code_lines(summary.get("steps", []))
                     + efficiency_lines(session) + drift_lines(session) + busy_lines(session)
                     + verdict_lines(session)) + "\n"


def differed_lines(session: Mapping[str, Any]) -> list[str]:
    """A session over several servers (a server axis): what else differed between their configurations, the
    unfair differences first (core/confdiff.py); nothing for one server."""
    sides = session_sides(session)
    if len(sides) < 2:
        return []
    return ["## What else differed between the servers", "", compare(sides).markdown(), ""]


def tune_lines(tune: Mapping[str, Any] | None) -> list[str]:
    """A knob search's section (`tunebench tune`): what it searched, its conclusion, the A/B/A/B confirmation and
    the trials table."""
    if not tune:
        return []
    r = TuneResult.from_dict(tune)
    spec = r.spec
    lines = ["## Tune", "", f"**{r.text}**", "",
             f"- searched: {', '.join(spec.get('knobs') or ())}; objective {spec.get('objective', 'tps')}; seed "
             f"{spec.get('seed')}; {spec.get('budget_seconds')} s budget, trials of {spec.get('trial_seconds')} s "
             f"after {spec.get('settle_seconds')} s to settle, a {spec.get('baseline_seconds')} s baseline after "
             "each (a trial's ratio is against the baselines just before and after it)",
             f"- originals: {', '.join(f'{k}={v}' for k, v in r.originals.items())} (put back after every trial and "
             "at the end)"]
    c = r.confirm
    if c:
        a, b = c.get("seconds") or (0, 0)
        how = (f"{c['pairs']} pairs of {c.get('order', 'ABBA BAAB')} blocks" if "pairs" in c
               else "A/B/A/B, block bootstrap (before issue 42)")
        busy = f"; {c['busy_left_out']} busy s left out" if c.get("busy_left_out") else ""
        lines.append(f"- confirmation: {confirm_text(c, 3)} ({how}{busy}), baseline {_f(c['tps_a'])} TPS over {a} s, "
                     f"best {_f(c['tps_b'])} TPS over {b} s")
    lines += ["", "| " + " | ".join(h or "note" for h in TABLE_HEADER) + " |",
              "|---:|---|---:|---:|---:|---:|---|---:|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in r.table_rows()]
    return [*lines, ""]


def phase_rows(phases: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The per-phase table: each phase's groups (rows/s for an insert group, queries/s for a query group, p99,
    seconds measured), an action phase with how long it took."""
    out: list[dict[str, Any]] = []
    for p in phases:
        action = p.get("action")
        if action:
            out.append({"phase": p["phase"], "step": p["step"], "group": action.get("action", ""),
                        "seconds": action.get("seconds"), "what": action.get("what", ""),
                        "incomplete": bool(p.get("incomplete"))})
            continue
        for s in steps:
            if s["step"] != p["step"]:
                continue
            inserts = s.get("headline_label") == "rows/s"
            rows, seconds = s.get("headline") if inserts else None, s.get("seconds")
            done = s.get("finished")
            if done and done.get("seconds"):
                # a step ended by max_rows: its work over its time (the first second's ramp counted), not the
                # mean of its whole seconds (a load of 2 s has one)
                seconds = done["seconds"]
                if inserts and done.get("headline") is not None:
                    rows = done["headline"] / seconds
            out.append({"phase": p["phase"], "step": p["step"], "group": s["group"], "threads": s["threads"],
                        "rows_per_s": rows, "queries_per_s": s["tps"] if not inserts else None,
                        "lat_p99_ms": s["lat_p99_ms"], "seconds": seconds, "rate": s.get("rate"),
                        "finished": bool(done), "incomplete": bool(s.get("incomplete"))})
    return out


PHASE_HEADER = ["phase", "group", "threads", "rows/s", "queries/s", "p99 ms", "seconds"]


def phase_cells(r: Mapping[str, Any]) -> list[str]:
    """One row of the per-phase table (phase_rows) as text: the Markdown report's and the window's."""
    flag = " (incomplete)" if r["incomplete"] else ""
    if "what" in r:
        return [r["phase"], r["group"], "-", "-", "-", "-", f"{_f(r['seconds'], 1)} s: {r['what']}{flag}"]
    rate = f" @ {_f(r['rate'], 0)}/s asked" if r.get("rate") is not None else ""
    seconds = f"{_f(r['seconds'], 1)} s (max_rows reached)" if r["finished"] else f"{_f(r['seconds'], 0)} s"
    return [r["phase"], r["group"], f"{r['threads']}{rate}", _f(r["rows_per_s"], 0), _f(r["queries_per_s"]),
            _f(r["lat_p99_ms"], 3), f"{seconds}{flag}"]


def phase_lines(phases: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["## Phases", "", "| " + " | ".join(PHASE_HEADER) + " |", "|---|---|---:|---:|---:|---:|---|"]
    lines += ["| " + " | ".join(phase_cells(r)) + " |" for r in phase_rows(phases, steps)]
    return [*lines, ""]


def efficiency_lines(session: Mapping[str, Any]) -> list[str]:
    """Per step and client group, what one transaction or query cost the server (core/efficiency.py); n/a where
    a probe did not record what it needs (sessions before it was recorded have no table)."""
    rows = efficiency_rows(session.get("steps") or [])
    if not rows:
        return []
    configs = {st["idx"] + 1: (st.get("config") or {}).get("config") for st in session.get("steps") or []}
    keys = [k for k in LABELS if k not in OPTIONAL or any(eff.get(k) is not None for _s, _g, eff in rows)]
    lines = ["", "## Per-operation efficiency", "",
             "Over each step's measured seconds, the server's totals over the step's transactions or queries "
             "(CPU: the server process; context switches and disk: the host).", "",
             "| step | config | group | " + " | ".join(LABELS[k] for k in keys) + " |",
             "|---:|---:|---|" + "---:|" * len(keys)]
    for step, group, eff in rows:
        config = configs.get(step)
        lines.append(f"| {step} | {'-' if config is None else config + 1} | {group} | "
                     + " | ".join(fmt(eff.get(k)) for k in keys) + " |")
    return lines


def open_loop_report(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """The open-loop steps (a rate asked): rate asked and achieved, latency from the intended start beside the
    service time, late and skipped."""
    rated = [s for s in steps if s.get("rate") is not None]
    if not rated:
        return []
    lines = ["", "## Open loop", "",
             "Latency from each transaction's intended start (its queue wait included); service time from its actual "
             "start. Not served: short of the rate by more than 3 % and more than the arrivals' own Poisson noise.", "",
             "| step | group | rate | achieved | p50 ms | p95 ms | p99 ms | max ms | service p50 | service p95 | "
             "service p99 | late | skipped |", "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in rated:
        unserved = "" if served(s["rate"], s["tps"], s.get("seconds") or 1) else " (not served)"
        lines.append(f"| {s['step']} | {s['group']} | {_f(s['rate'], 0)} | {_f(s['tps'], 0)}{unserved} | "
                     f"{_f(s.get('lat_p50_ms'), 2)} | {_f(s.get('lat_p95_ms'), 2)} | {_f(s.get('lat_p99_ms'), 2)} | "
                     f"{_f(s.get('lat_max_ms'), 2)} | {_f(s.get('service_p50_ms'), 2)} | "
                     f"{_f(s.get('service_p95_ms'), 2)} | {_f(s.get('service_p99_ms'), 2)} | "
                     f"{_f(s.get('late'), 0)} | {_f(s.get('skipped'), 0)} |")
    return lines


def busy_lines(session: Mapping[str, Any]) -> list[str]:
    """The steps whose measured seconds other processes took the machine in (core/busy.py): said beside the
    figures, which say as much about them as about the server."""
    rows = [(st["idx"] + 1, b) for st in session.get("steps", [])
            if (b := (st.get("summary") or {}).get("_busy")) and b.get("seconds")]
    if not rows:
        return []
    lines = ["", "## Busy seconds", "",
             f"Seconds in which other processes used more than {rows[0][1].get('threshold_pct', 10):g} % of the "
             "machine's CPU (`proc.<host>.other.cpu`): a live change's verdict leaves them out.", "",
             "| step | busy seconds | other processes' CPU then | host |", "|---:|---:|---:|---|"]
    lines += [f"| {n} | {b['seconds']} of {b['of']} | {b['other_pct']:.0f} % | {b.get('host', 'local')} |"
              for n, b in rows]
    return lines


def drift_lines(session: Mapping[str, Any]) -> list[str]:
    """Server variables that changed outside Tunebench while it ran ("drift" events): the steps they touch
    measured another server than the session's settings say."""
    events = [e for e in session.get("events", []) if e["kind"] == "drift"]
    if not events:
        return []
    lines = ["", "## Warning: server variables changed outside Tunebench", "",
             "| when | variable | from | to |", "|---|---|---|---|"]
    for e in events:
        d = e.get("data") or {}
        for c in d.get("drift") or ():
            lines.append(f"| {d.get('when', '')} | {c['name']} | {c['from']} | {c['to']} |")
    return lines


# ---- what an export says about its session: one title line, the settings it changed, its series ------------

def _applied_by_sweep(ev: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> bool:
    """A knob event that is a sweep configuration being applied (its "config" event follows within 2 s and
    names the knob), not a flip of its own."""
    name = (ev.get("data") or {}).get("name")
    return any(c["kind"] == "config" and 0 <= c["t"] - ev["t"] <= 2 and name in ((c.get("data") or {}).get("knobs")
                                                                             or {}) for c in events)


def live_flips(session: Mapping[str, Any]) -> list[str]:
    """Knobs flipped during the session (not a sweep's configurations), as "name from → to", in order."""
    events = session.get("events") or []
    return [f"{ev['data']['name']} {ev['data'].get('from', '?')} → {ev['data'].get('to', '?')}"
            for ev in events if ev["kind"] == "knob" and (ev.get("data") or {}).get("name")
            and not _applied_by_sweep(ev, events)]


def settings_changed(session: Mapping[str, Any]) -> list[str]:
    """The knobs a session changed: a sweep's configurations, "configuration N: k=v, ..." (1-based as its Events
    number them), then every live flip, "name from → to"."""
    out = []
    for c in (session.get("summary") or {}).get("configs") or []:
        if c.get("knobs"):
            out.append(f"configuration {c['idx'] + 1}: " + ", ".join(f"{k}={v}" for k, v in c["knobs"].items()))
    return out + live_flips(session)


def title_line(session: Mapping[str, Any]) -> str:
    """Session, date, target, server, workload, knobs changed: what a picture of the session carries on top."""
    server = servers_text(session) or "server ?"  # every server of a server axis
    several = " + " in server
    parts = [f"Session {session['id']}" + (f" ({session['name']})" if session.get("name") else ""),
             local_time(session["started_at"], "%Y-%m-%d %H:%M"),
             *([] if several else [str(session["target"])]), server, str(session["workload"])]
    configs = (session.get("summary") or {}).get("configs") or []
    axes = sorted({k for c in configs for k in c.get("knobs") or {}} | ({"server"} if several else set()))
    knobs = ([f"sweep of {', '.join(axes)} over {len(configs)} configurations"] if axes else []) + live_flips(session)
    parts.append("knobs: " + "; ".join(knobs) if knobs else "no knob changed")
    return " · ".join(parts)


def range_line(lo: float, hi: float, whole: bool) -> str:
    """Which part of the session an export holds, in the words the file carries."""
    span = f"{lo:.0f}-{hi:.0f} s from the start"
    return f"whole session ({span})" if whole else f"visible range only: {span}"


def series_rows(series: Mapping[str, tuple[np.ndarray, np.ndarray]], lo: float, hi: float
                ) -> list[tuple[str, float, float, float, int]]:
    """(name, min, mean, max, samples) of each series over [lo, hi] seconds (t: seconds from the start)."""
    rows = []
    for name in sorted(series):
        t, v = series[name]
        v = v[(t >= lo) & (t <= hi)]
        v = v[np.isfinite(v)]
        if len(v):
            rows.append((name, float(v.min()), float(v.mean()), float(v.max()), len(v)))
    return rows


def verdict_lines(session: Mapping[str, Any]) -> list[str]:
    """The live changes' A/B verdicts, as the run recorded them ("verdict" events)."""
    events = [e for e in session.get("events", []) if e["kind"] == "verdict"]
    if not events:
        return []
    t0 = float(session.get("started_at") or events[0]["t"])
    lines = ["", "## A/B verdicts of live changes", "",
             "Settled per-second values before and after each change (3 s after it skipped, and seconds below the "
             "steady level); the 95 % confidence interval of the ratio after / before by Welch's t with the seconds' "
             "dependence counted: of the TPS in closed loop, of the p95 latency at the asked rate in open loop (TPS "
             "there is the rate's).", "",
             "| at | change | group | TPS before | TPS after | ratio (95 % CI) | p95 ms | p99 ms | top waits (ms/s) |",
             "|---:|---|---|---:|---:|---|---|---|---|"]
    for e in events:
        d = e["data"]
        v = event_verdict(d)
        change = f"{d.get('name')} {d.get('from')} → {d.get('to')}" + \
            (" (new connections only)" if d.get("new_sessions_only") else "")
        # the step's measured seconds, as its row says; a session recorded before: from the session's start
        at = (f"{float(d.get('at', e['t'])) - float(d['measured_from']):.0f} s of the step's measured"
              if d.get("measured_from") is not None else f"+{float(d.get('at', e['t'])) - t0:.0f} s")
        if v is None:
            lines.append(f"| {at} | {change} | {d.get('group')} | - | - | too few settled seconds | - | - | - |")
            continue
        # open loop: the p95 at the asked rate is the verdict (TPS follows the rate: the check columns)
        ratio = (f"p95 {v.lat_ratio:.2f}x" + (f" ({v.lat_low:.2f}-{v.lat_high:.2f}"
                                               f"{'' if v.lat_clear else ', no clear difference'})"
                                               if v.lat_judged else " (not judged)") + f" {v.rate_text()}"
                 if v.open_loop and v.lat_ratio is not None else f"{v.ratio:.2f}x" + ci_text(v))
        lat = [f"{_f(b, 2)} → {_f(a, 2)}" if b is not None and a is not None else "-"
               for b, a in ((v.p95_before, v.p95_after), (v.p99_before, v.p99_after))]
        waits = "; ".join(f"{short_wait(w.name)} {w.before:.1f} → {w.after:.1f}" for w in v.waits) or "-"
        lines.append(f"| {at} | {change} | {d.get('group')} | {_f(v.tps_before)} | {_f(v.tps_after)} | {ratio} | "
                     f"{lat[0]} | {lat[1]} | {waits} |")
    return lines
