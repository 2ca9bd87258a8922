"""What the commands print: --json or text, the live interval line, the steps table; and a run's exit status."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from tunebench.core.busy import busy_text
from tunebench.core.display import inert_text
from tunebench.core.error_codes import codes_text
from tunebench.core.interval import Interval
from tunebench.core.kinds import RunStatus
from tunebench.core.schedule import served

# How a run ended -> exit status (a failed run raises, and exits 2 with its one line). "stopped" is the window's
# Stop button; the CLI's own runs end "aborted" on Ctrl-C or SIGTERM. Both exit as an interrupted command does.
EXIT_CODES: dict[RunStatus, int] = {"completed": 0, "incomplete": 1, "stopped": 130, "aborted": 130}


def exit_code(status: RunStatus) -> int:
    return EXIT_CODES.get(status, 130)


def finite(data: Any) -> Any:
    """`data` with every NaN or infinity as null: JSON has no such numbers (json.dumps writes a bare NaN, which no
    JSON reader takes; issue 43 item 17)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


def json_text(data: Any) -> str:
    """Valid JSON, whatever a session holds."""
    return json.dumps(finite(data), indent=2, default=str, allow_nan=False)


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """--json (which escapes every control character), or `text` with its control characters made visible: names
    and notes come from files and servers, and an ESC in one must not drive the terminal."""
    if getattr(args, "json", False):
        print(json_text(data))
    else:
        print(inert_text(text))


def live_line(iv: Interval, t0: float, probed: dict[str, float] | None = None) -> str:
    p95 = iv.lat_ms.get("p95")
    line = (f"[ {iv.t - t0:4.0f}s ] {iv.group} thds: {iv.threads} tps: {iv.tps:.2f} qps: {iv.qps:.2f} "
            f"(r/w/o: {iv.reads:.2f}/{iv.writes:.2f}/{iv.other:.2f}) lat (ms,95%): "
            f"{'-' if p95 is None else f'{p95:.3f}'} err/s: {iv.errors:.2f} reconn/s: {iv.reconnects:.2f}")
    if probed:
        parts = []
        for label, name, fmt in (("srv qps", "server.questions", "{:.0f}"), ("running", "server.threads_running",
                                 "{:.0f}"), ("cpu", "host.local.cpu.busy", "{:.0f}%"),
                                 ("server cpu", "proc.local.server.cpu", "{:.0f}%"),
                                 ("client cpu", "proc.local.client.cpu", "{:.0f}%")):
            if name in probed:
                parts.append(f"{label}: {fmt.format(probed[name])}")
        if parts:
            line += " | " + " ".join(parts)
    return line


def steps_table(steps: list[dict[str, Any]]) -> str:
    """The steps as a table; a family's headline figure (TPC-C: NOPM) as a column when a group has one, and
    each multi-type group's transaction mix under it."""
    label = next((s["headline_label"] for s in steps if s.get("headline_label")), "")
    head = f"{'step':>4} {'group':10} {'threads':>7} {'tps':>11} {'qps':>11} " + (f"{label:>10} " if label else "") \
        + f"{'p95 ms':>8} {'p99 ms':>8} {'cv':>6} {'errors':>7} {'seconds':>7}"
    rows = [head, "-" * len(head)]
    done_early = []
    for s in steps:
        p95 = "-" if s["lat_p95_ms"] is None else f"{s['lat_p95_ms']:.3f}"
        p99 = "-" if s["lat_p99_ms"] is None else f"{s['lat_p99_ms']:.3f}"
        cv = "-" if s["cv"] is None else f"{s['cv']:.3f}"
        tps, qps = f"{s['tps']:>11.2f}", f"{s['qps']:>11.2f}"
        headline = s.get("headline")
        # seconds left out of the figures (ramp-up, no server): "23/30*", the reasons in the notes under the table
        seconds = f"{s['seconds']}/{s['seconds_window']}*" if "left out" in s.get("seconds_text", "") \
            else str(s["seconds"])
        done = s.get("finished") or {}
        if not s["seconds"] and done.get("seconds"):
            # its work (max_rows) was done before a whole second was measured: the connections' own counts over
            # the time they took, not 0 TPS
            took = float(done["seconds"])
            tps, qps = f"{done.get('transactions', 0) / took:>11.2f}", f"{'-':>11}"
            headline = done["headline"] / took if done.get("headline") is not None else None
            seconds = f"{took:.1f}†"
            done_early.append(f"† step {s['step']} {s['group']}: every connection reached its max_rows after "
                              f"{took:.1f} s, before a whole second was measured: tps"
                              + (f" and {label}" if label and headline is not None else "")
                              + " from the connections' own counts over that time")
        extra = ""
        if label:
            extra = f"{headline:>10.0f} " if headline is not None else f"{'-':>10} "
        # a step whose connections did not all open ran with fewer: "2/4"
        ran = s.get("threads_running")
        threads = f"{ran:g}/{s['threads']}" if ran is not None else str(s["threads"])
        rows.append(f"{s['step']:>4} {s['group']:10} {threads:>7} {tps} {qps} "
                    f"{extra}{p95:>8} {p99:>8} {cv:>6} {s['errors']:>7.0f} {seconds:>7}"
                    + ("  INCOMPLETE" if s.get("incomplete") else ""))
    rows += done_early
    # the seconds in which other processes took the machine's CPU: the figures say as much about them
    rows += [f"step {s['step']}: {busy_text(s['busy'])} (over {s['busy']['threshold_pct']:g} % of the machine)"
             for s in steps if (s.get("busy") or {}).get("seconds") and s["group"] == steps[0]["group"]]
    rows += open_loop_lines(steps)
    rows += [f"step {s['step']} {s['group']}: errors {s['errors']:,.0f} = {text}"
             for s in steps if (text := codes_text(s.get("error_codes")))]
    mixes = [s for s in steps if s.get("trx")]
    if mixes:
        rows += ["", "per transaction type: tps (share) p95 ms, rollbacks/retries over the step"]
        for s in mixes:
            parts = [f"{name} {t['tps']:.1f} ({100 * (t['share'] or 0):.1f} %) "
                     f"{'-' if t['lat_p95_ms'] is None else format(t['lat_p95_ms'], '.1f')}"
                     + (f" rb {t['rollbacks']:.0f}" if t["rollbacks"] else "")
                     + (f" retry {t['retries']:.0f}" if t["retries"] else "")
                     for name, t in s["trx"].items()]
            rows.append(f"{s['step']:>4} {s['group']:10} " + " | ".join(parts))
    return "\n".join(rows)


def open_loop_lines(steps: list[dict[str, Any]]) -> list[str]:
    """The open-loop steps' own figures: the rate asked and achieved, latency from the intended start (queue wait
    included) beside the service time, late and skipped transactions."""
    rated = [s for s in steps if s.get("rate") is not None]
    if not rated:
        return []

    def ms(v: Any) -> str:
        return "-" if v is None else f"{v:.2f}"

    head = (f"{'step':>4} {'group':10} {'rate':>9} {'achieved':>9} {'p50':>8} {'p95':>8} {'p99':>8} {'max':>8} "
            f"{'svc p50':>8} {'svc p95':>8} {'svc p99':>8} {'late':>7} {'skipped':>8}")
    out = ["", "open loop: latency (ms) from each transaction's intended start, queue wait included; svc: from its "
           "actual start", head, "-" * len(head)]
    for s in rated:
        out.append(f"{s['step']:>4} {s['group']:10} {s['rate']:>9,.0f} {s['tps']:>9,.0f} {ms(s.get('lat_p50_ms')):>8} "
                   f"{ms(s.get('lat_p95_ms')):>8} {ms(s.get('lat_p99_ms')):>8} {ms(s.get('lat_max_ms')):>8} "
                   f"{ms(s.get('service_p50_ms')):>8} {ms(s.get('service_p95_ms')):>8} "
                   f"{ms(s.get('service_p99_ms')):>8} {s.get('late', 0):>7,.0f} {s.get('skipped', 0):>8,.0f}"
                   + ("" if served(s["rate"], s["tps"], s.get("seconds") or 1) else "  RATE NOT SERVED"))
    return out


def probe_lines(probes: dict[str, Any]) -> list[str]:
    """doctor's probe section."""
    if "available" not in probes:
        return [f"probes      {probes.get('error') or probes.get('skipped')}"]
    lines = [f"tls         {probes['tls']['text']}"] if (probes.get("tls") or {}).get("text") else []
    lines.append(f"probes      on {probes['target']} ({probes['server']}):")
    for name, st in probes["available"].items():
        lines.append(f"  {name:9} {'ok' if st['ok'] else 'UNAVAILABLE'}: {st['detail']}")
    return lines
