"""The builtin engine vs bare sysbench, side by side in one run on the sandbox (issue 19).

For each concurrency step, each engine runs the same workload for the same seconds, in alternating order from
round to round (this machine is shared and drifts). Printed per step: QPS and client CPU per query (user+system
CPU of the load generator's own processes, from /proc/<pid>/stat over the same window), their ratios, the
client's memory (RSS of its processes at the step's end, and per connection), and how many connections really
ran statements (performance_schema's per-thread statement counts before and after; "n/a" without it).

Goal (issue 19): QPS ratio builtin/sysbench >= 0.95 at 4, 16 and 64 threads and client CPU per query <= 1.2x
sysbench's, on oltp_point_select and oltp_read_only. `--loops compiled,python` adds the builtin engine's Python
loop (TUNEBENCH_HOT_LOOP=0) as a third column set, to see what the compiled loop buys.

    .venv/bin/python bench/engine_vs_sysbench.py [--workload oltp_point_select] [--threads 1,4,16,64]
        [--seconds 10] [--warmup 0] [--rounds 1] [--loops compiled] [--table-size 100000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
from collections import defaultdict
from typing import Any

from bench_sandbox import point_select_sandbox

from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup
from tunebench.load.prepare import prepare, tables_ready
from tunebench.load.sysbench import SysbenchEngine
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import open_connection

TICKS = os.sysconf("SC_CLK_TCK")
MAX_THREADS = 4096
# prepared statements executed per connection (both engines prepare every statement); one row per thread
ACTIVE_SQL = ("SELECT t.THREAD_ID, s.COUNT_STAR FROM performance_schema.threads t "
              "JOIN performance_schema.events_statements_summary_by_thread_by_event_name s USING (THREAD_ID) "
              "WHERE s.EVENT_NAME = 'statement/com/Execute' AND t.PROCESSLIST_DB = 'tunebench'")


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / TICKS


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
    return total / 1024


def statement_counts(admin: Any) -> dict[int, int] | None:
    try:
        cur = admin.cursor()
        cur.execute(ACTIVE_SQL)
        return {int(t): int(n) for t, n in cur.fetchall()}
    except Exception:  # no performance_schema, or without these tables: the column says n/a
        return None


def measure(engine: Any, admin: Any, threads: int, seconds: int, warmup: int = 0) -> dict[str, float | None]:
    marks: list[tuple[float, float]] = []
    queries = [0.0]
    rss = [0.0]
    seen = [0]

    def sink(iv: Any) -> None:
        seen[0] += 1
        if seen[0] <= warmup:  # connections still opening: not measured
            return
        pids = engine.client_pids()
        marks.append((iv.t, cpu_seconds(pids)))
        rss[0] = rss_mb(pids)
        if len(marks) > 1:  # queries between the first and the last mark
            queries[0] += iv.qps

    before = statement_counts(admin)
    # like sysbench, the builtin engine's step starts once its connections are open (the seconds before: ramp)
    engine.run_step({"main": threads}, seconds + warmup, sink, threading.Event(), ramp=lambda _iv: None)
    after = statement_counts(admin)
    (t0, c0), (t1, c1) = marks[0], marks[-1]
    active = (sum(1 for t, n in after.items() if n > (before or {}).get(t, 0))
              if after is not None and before is not None else None)
    return {"qps": queries[0] / (t1 - t0), "cpu_us_per_query": (c1 - c0) / queries[0] * 1e6 if queries[0] else None,
            "rss_mb": rss[0], "active": active}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="oltp_point_select")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--threads", default="1,4,16,64")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=0, help="seconds at the start of each step not measured")
    ap.add_argument("--loops", default="compiled", help="builtin engine loops to measure: compiled, python or both")
    ap.add_argument("--table-size", type=int, default=100000)
    ap.add_argument("--workers", type=int)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    steps = [int(x) for x in args.threads.split(",")]
    if not all(1 <= t <= MAX_THREADS for t in steps):
        ap.error(f"--threads: from 1 to {MAX_THREADS}")
    loops = args.loops.split(",")
    bs = point_select_sandbox(args.table_size)
    wl = load_workload(args.workload)
    opts = wl.options({"table_size": args.table_size})
    if not tables_ready(bs.params, "tunebench", opts, args.table_size):
        prepare(bs.params, "tunebench", opts, args.table_size)
    admin = open_connection(bs.admin)
    cur = admin.cursor()
    cur.execute("SELECT @@GLOBAL.max_connections")
    (max_connections,) = cur.fetchone()
    if max(steps) + 50 > int(max_connections):
        cur.execute(f"SET GLOBAL max_connections = {max(steps) + 50}")  # put back at the end
    group = ClientGroup("main", wl, opts, tuple(steps))
    engines = [*(f"builtin-{loop}" for loop in loops), "sysbench"]
    samples: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    try:
        for rnd in range(args.rounds):
            for threads in steps:
                order = engines if (rnd + steps.index(threads)) % 2 == 0 else engines[::-1]
                for name in order:
                    if name.startswith("builtin"):
                        os.environ["TUNEBENCH_HOT_LOOP"] = "0" if name.endswith("python") else "1"
                        engine: Any = BuiltinEngine(bs.params, [group], workers=args.workers)
                    else:
                        engine = SysbenchEngine(bs.params, [group])
                    engine.open()
                    try:
                        samples[threads, name].append(measure(engine, admin, threads, args.seconds, args.warmup))
                    finally:
                        engine.close()
    finally:
        cur.execute(f"SET GLOBAL max_connections = {int(max_connections)}")
        admin.close()
    results = []
    for threads in steps:
        row: dict[str, Any] = {"threads": threads}
        for name in engines:
            ms = samples[threads, name]
            for key in ("qps", "cpu_us_per_query", "rss_mb", "active"):
                vals = [m[key] for m in ms if m[key] is not None]
                row[f"{name}_{key}"] = round(statistics.median(vals), 2) if vals else None
        sb_qps, sb_cpu = row["sysbench_qps"], row["sysbench_cpu_us_per_query"]
        for name in engines[:-1]:
            row[f"{name}_ratio"] = round(row[f"{name}_qps"] / sb_qps, 3) if sb_qps else None
            row[f"{name}_cpu_ratio"] = round(row[f"{name}_cpu_us_per_query"] / sb_cpu, 3) if sb_cpu else None
        results.append(row)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    st = bs.server.status()
    print(f"{args.workload}, {args.seconds} s per step after {args.warmup} s of warm-up, {args.rounds} round(s) "
          f"(medians), socket, {os.cpu_count()} "
          f"CPUs, server {st.flavor} {st.version}")
    for name in engines[:-1]:
        print(f"\n{name} vs sysbench")
        print("| threads | builtin QPS | µs CPU/q | sysbench QPS | µs CPU/q | QPS ratio | CPU/q ratio "
              "| builtin MB | sysbench MB | active conns |")
        print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for r in results:
            t = r["threads"]

            def mem(prefix: str, r: dict[str, Any] = r) -> str:
                mb = r[f"{prefix}_rss_mb"]
                return "n/a" if mb is None else f"{mb:,.0f}"

            active = r[f"{name}_active"]
            print(f"| {t} | {r[f'{name}_qps']:,.0f} | {r[f'{name}_cpu_us_per_query']:.1f} | "
                  f"{r['sysbench_qps']:,.0f} | {r['sysbench_cpu_us_per_query']:.1f} | {r[f'{name}_ratio']:.3f} | "
                  f"{r[f'{name}_cpu_ratio']:.2f} | {mem(name)} | {mem('sysbench')} | "
                  f"{'n/a' if active is None else f'{active:.0f}/{t}'} |")
        lo, hi = results[0], results[-1]
        if hi["threads"] > lo["threads"]:
            added = hi["threads"] - lo["threads"]
            per = {n: (hi[f"{n}_rss_mb"] - lo[f"{n}_rss_mb"]) * 1024 / added for n in (name, "sysbench")
                   if hi[f"{n}_rss_mb"] is not None and lo[f"{n}_rss_mb"] is not None}
            print(f"memory per added connection ({lo['threads']} -> {hi['threads']} threads): "
                  + ", ".join(f"{n} {kb:,.0f} KB" for n, kb in per.items()))


if __name__ == "__main__":
    main()
