"""Builtin engine vs bare sysbench on oltp_point_select, side by side in one run on the sandbox.

Prints QPS and client CPU per query (microseconds of user+system CPU of the load generator's own
processes, read from /proc/<pid>/stat over the same interval window) and the ratio builtin/sysbench.
Goal (issue 2): ratio >= 0.6 on a 2-core machine.

    .venv/bin/python bench/engine_vs_sysbench.py [--seconds 10] [--threads 1,4,16] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import threading

from tunebench.hosts.sandbox import SandboxServer
from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup
from tunebench.load.prepare import prepare
from tunebench.load.sysbench import SysbenchEngine
from tunebench.load.workload import load_workload
from tunebench.mysql.target import conn_params

TICKS = os.sysconf("SC_CLK_TCK")


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


def measure(engine, threads: int, seconds: int) -> dict[str, float]:
    marks: list[tuple[float, float]] = []
    queries = [0.0]

    def sink(iv):
        marks.append((iv.t, cpu_seconds(engine.client_pids())))
        if len(marks) > 1:  # queries between the first and the last mark
            queries[0] += iv.qps

    engine.run_step({"main": threads}, seconds, sink, threading.Event())
    (t0, c0), (t1, c1) = marks[0], marks[-1]
    return {"qps": queries[0] / (t1 - t0), "cpu_us_per_query": (c1 - c0) / queries[0] * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--threads", default="1,4,16")
    ap.add_argument("--table-size", type=int, default=100000)
    ap.add_argument("--workers", type=int)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    steps = [int(x) for x in args.threads.split(",")]
    sb = SandboxServer()
    sb.start()
    wl = load_workload("oltp_point_select")
    opts = wl.options({"table_size": args.table_size})
    params = conn_params(sb.target(), "socket", database="tunebench")
    prepare(params, "tunebench", opts, args.table_size)
    group = ClientGroup("main", wl, opts, tuple(steps))
    results = []
    for threads in steps:
        row: dict[str, float | int] = {"threads": threads}
        for name, factory in (("builtin", lambda: BuiltinEngine(params, [group], workers=args.workers)),
                              ("sysbench", lambda: SysbenchEngine(params, [group]))):
            engine = factory()
            engine.open()
            try:
                m = measure(engine, threads, args.seconds)
            finally:
                engine.close()
            row[f"{name}_qps"] = round(m["qps"], 1)
            row[f"{name}_cpu_us_per_q"] = round(m["cpu_us_per_query"], 2)
        row["ratio"] = round(row["builtin_qps"] / row["sysbench_qps"], 3)
        results.append(row)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"oltp_point_select, {args.seconds} s per step, socket, {os.cpu_count()} CPUs, "
          f"server {sb.status().flavor} {sb.status().version}")
    print(f"{'threads':>7} {'builtin qps':>12} {'cpu us/q':>9} {'sysbench qps':>13} {'cpu us/q':>9} {'ratio':>6}")
    for r in results:
        print(f"{r['threads']:>7} {r['builtin_qps']:>12.0f} {r['builtin_cpu_us_per_q']:>9.2f} "
              f"{r['sysbench_qps']:>13.0f} {r['sysbench_cpu_us_per_q']:>9.2f} {r['ratio']:>6.3f}")


if __name__ == "__main__":
    main()
