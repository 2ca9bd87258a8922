"""Per-operation efficiency of a step, the insert benchmark's way: what one transaction or query cost the server
(CPU, context switches, disk, rows read, fsyncs, redo), from the per-second series over the step's measured
seconds. Side by side across configurations, this is what explains a knob's effect (fsyncs per commit fall
from ~1 to ~0 with innodb_flush_log_at_trx_commit=2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tunebench.core.verdict import SeriesMap, window

# name -> (numerator series (a suffix for the host/process ones), denominator, scale, what it is)
METRICS: dict[str, tuple[str, str, float, str]] = {
    "cpu_us_per_trx": (".server.cpu", "tps", 1e4, "server CPU µs per transaction"),
    "cpu_us_per_query": (".server.cpu", "qps", 1e4, "server CPU µs per query"),
    "cs_per_trx": (".ctxt", "tps", 1.0, "context switches (host) per transaction"),
    "kb_read_per_trx": (".disk.read_mb", "tps", 1024.0, "KB read (host disks) per transaction"),
    "kb_written_per_trx": (".disk.write_mb", "tps", 1024.0, "KB written (host disks) per transaction"),
    "rows_read_per_query": ("server.rows_read", "server.questions", 1.0, "rows read per query"),
    # InnoDB's own (Innodb_data_fsyncs): the binary log's syncs (sync_binlog) are not among them, and the label says so
    "fsyncs_per_commit": ("server.innodb_data_fsyncs", "commits", 1.0,
                          "InnoDB fsyncs per commit (the binary log's syncs are not counted)"),
    "redo_bytes_per_commit": ("server.innodb_os_log_written", "commits", 1.0, "redo bytes per commit"),
    # the insert benchmark's own: per row inserted, and per query
    "cpu_us_per_insert": (".server.cpu", "inserts", 1e4, "server CPU µs per row inserted"),
    "kb_written_per_insert": (".disk.write_mb", "inserts", 1024.0, "KB written (host disks) per row inserted"),
    "kb_read_per_query": (".disk.read_mb", "qps", 1024.0, "KB read (host disks) per query"),
}
# Shown only where some step has a value (a read-only run inserts nothing: no column of n/a).
OPTIONAL = ("cpu_us_per_insert", "kb_written_per_insert", "kb_read_per_query")
LABELS = {"cpu_us_per_trx": "CPU µs/trx", "cpu_us_per_query": "CPU µs/q", "cs_per_trx": "cs/trx",
          "kb_read_per_trx": "KB rd/trx", "kb_written_per_trx": "KB wr/trx", "rows_read_per_query": "rows/q",
          "fsyncs_per_commit": "InnoDB fsync/commit", "redo_bytes_per_commit": "redo B/commit",
          "cpu_us_per_insert": "CPU µs/insert", "kb_written_per_insert": "KB wr/insert", "kb_read_per_query": "KB rd/q"}
# rows inserted: InnoDB's counter (MySQL), else the handler's (MariaDB 10.6+ dropped Innodb_rows_*)
INSERTED = ("server.innodb_rows_inserted", "server.handler_write")


def series_needed(names: Sequence[str], group: str) -> list[str]:
    """The series of `names` (a session's) that the efficiency of `group` reads."""
    own = {f"client.{group}.tps", f"client.{group}.qps", "server.com_commit", "server.questions", "server.rows_read",
           "server.innodb_data_fsyncs", "server.innodb_os_log_written", *INSERTED}
    suffixes = tuple(num for num, *_ in METRICS.values() if num.startswith("."))
    return [n for n in names if n in own or (n.endswith(suffixes) and n.startswith(("proc.", "host.")))]


def _total(series: SeriesMap, names: list[str], lo: float, hi: float) -> float | None:
    """Sum over the window of the per-second values of `names` (several: one per host or disk, added)."""
    total, seen = 0.0, False
    for n in names:
        t, v = series[n]
        w = window(np.asarray(t, dtype=np.float64), np.asarray(v, dtype=np.float64), lo, hi)
        w = w[np.isfinite(w)]
        if len(w):
            total += float(w.sum())
            seen = True
    return total if seen else None


def _last(series: SeriesMap, name: str, lo: float, hi: float) -> float:
    """The end of the last second of `name` inside [lo, hi] (hi when it has none: it then adds nothing)."""
    t = np.asarray(series[name][0], dtype=np.float64)
    inside = t[(t - 1.0 >= lo) & (t <= hi)]
    return float(inside.max()) if len(inside) else hi


def step_efficiency(series: SeriesMap, group: str, lo: float, hi: float) -> dict[str, float | None]:
    """Each metric over the step's measured seconds [lo, hi]: the sum of its numerator's per-second values over
    the sum of its denominator's (a ratio of totals, not a mean of ratios); None where a series is missing
    (never a made-up number). The server's own process CPU only: the `proc.<host>.server.cpu` series (%)."""
    out: dict[str, float | None] = {}
    client = f"client.{group}.qps"
    if client in series and not _total(series, [client], lo, hi):
        # no client query in the step: the server's own counters then count Tunebench's probes, not the load
        return dict.fromkeys(METRICS)
    denominators = {"tps": [f"client.{group}.tps"], "qps": [f"client.{group}.qps"],
                    "server.questions": ["server.questions"],
                    # sysbench's "other" counts BEGIN/COMMIT; the server's own Com_commit is what fsyncs follow
                    "commits": ["server.com_commit"],
                    "inserts": [next((n for n in INSERTED if n in series), INSERTED[0])]}
    for key, (num, den, scale, _what) in METRICS.items():
        nums = [n for n in series if n == num] or [n for n in series if num.startswith(".") and n.endswith(num)
                                                   and n.startswith(("proc.", "host."))]
        dens = [n for n in denominators[den] if n in series]
        # both over the same seconds: up to the last one every series has (a probe's last read may land late)
        end = min([_last(series, n, lo, hi) for n in nums + dens] + [hi])
        a = _total(series, nums, lo, end) if nums else None
        b = _total(series, dens, lo, end) if dens else None
        if den == "commits" and not b and f"client.{group}.tps" in series:
            # autocommit statements (oltp_update_index) count no Com_commit: each transaction is a commit
            b = _total(series, [f"client.{group}.tps"], lo, end)
        out[key] = a * scale / b if a is not None and b else None
    return out


def efficiency_rows(steps: Sequence[Mapping[str, Any]]) -> list[tuple[int, str, dict[str, Any]]]:
    """(step number, group, metrics) of every recorded step summary that has them."""
    rows = []
    for st in steps:
        summary = st.get("summary") or {}
        for group, eff in (summary.get("_efficiency") or {}).items():
            rows.append((st["idx"] + 1, group, eff))
    return rows


def fmt(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
