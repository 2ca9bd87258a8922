"""The builtin TPC-C family against sysbench-tpcc itself, side by side on one private server (issue 32).

One data set (Tunebench's loader, the table and column names sysbench-tpcc's), prepared once; then at each
thread count, runs of sysbench-tpcc's own tpcc.lua (a clone given with --tpcc-dir, unchanged, through sysbench)
and of the builtin engine with `-o mode=sysbench-tpcc` (its statements), alternating which goes first from run to
run (the machine drifts). Per run and as medians: transactions/s and NOPM (from the server: transactions ended,
Com_commit + Com_rollback, and committed NewOrders, the districts' d_next_o_id), client CPU per transaction
(user + system time of the client's processes: sysbench's, or the engine's worker processes and this one), the
server's Com_select/update/insert/delete per transaction ended, and the ratios builtin / sysbench-tpcc.

Goal: the builtin at >= 1.0x sysbench-tpcc's transactions/s and <= 1.0x its client CPU per transaction at every
thread count (medians); the exit status is 1 when missed. The data grows as it runs (both the same); the schema is
dropped at the end, and the private server stopped and removed.

    .venv/bin/python bench/tpcc_vs_sysbench.py [--seconds 60] [--runs 3] [--threads 8,32] [--scale 4]
        [--python-loop] [--mode sysbench-tpcc] [--json FILE] --tpcc-dir DIR

(DIR: `git clone https://github.com/Percona-Lab/sysbench-tpcc`; it is not shipped with Tunebench.)

`--python-loop` (or TUNEBENCH_HOT_LOOP=0) runs the builtin engine's Python loop; `--mode spec` compares the
specification's statements instead (then the Com_* differ: see the README's TPC-C section).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from engine_vs_sysbench import cpu_seconds  # user + system seconds of processes, from /proc/PID/stat

from tunebench.hosts.sandbox import SandboxServer
from tunebench.load.builtin import BuiltinEngine, runs_compiled
from tunebench.load.engine import ClientGroup
from tunebench.load.hotloop import hot_enabled
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import global_status, open_connection, query_all
from tunebench.mysql.target import conn_params
from tunebench.run.tasks import data_request, prepare_data

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "tb_tpcc_vs"
COM = ("Com_select", "Com_update", "Com_insert", "Com_delete", "Com_commit", "Com_rollback")


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Server:
    """The server's counters around a run, through one admin connection."""

    def __init__(self, admin: Any):
        self.admin = admin

    def snapshot(self) -> tuple[dict[str, int], int]:
        new_orders = query_all(self.admin, f"SELECT SUM(d_next_o_id) FROM {SCHEMA}.district1")[0][0]
        return global_status(self.admin, COM), int(new_orders)

    def result(self, before: tuple[dict[str, int], int], after: tuple[dict[str, int], int], wall: float,
               cpu: float) -> dict[str, float]:
        d = {k: after[0][k] - before[0][k] for k in COM}
        ended = d["Com_commit"] + d["Com_rollback"]
        out = {"seconds": wall, "transactions": ended, "tps": ended / wall,
               "nopm": (after[1] - before[1]) / wall * 60, "cpu_ms_per_trx": cpu / ended * 1000 if ended else 0.0}
        out.update({f"{k}_per_trx": d[k] / ended if ended else 0.0 for k in COM[:4]})
        return out


def run_sysbench(server: Server, tpcc_dir: Path, params: Any, scale: int, threads: int, seconds: int) -> dict:
    argv = ["sysbench", "tpcc.lua", "--db-driver=mysql", f"--mysql-user={params.user}",
            f"--mysql-socket={params.socket}", f"--mysql-db={SCHEMA}", f"--scale={scale}", "--tables=1",
            f"--threads={threads}", f"--time={seconds}", "run"]
    env = dict(os.environ, MYSQL_PWD=params.password or "")
    before, t0 = server.snapshot(), time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, cwd=tpcc_dir, env=env, stdout=out, stderr=subprocess.STDOUT)
        _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            out.seek(0)
            tail = out.read().decode(errors="replace").strip().splitlines()[-3:]
            sys.exit(f"sysbench-tpcc failed ({proc.returncode}): {' / '.join(tail)}")
    return server.result(before, server.snapshot(), wall, usage.ru_utime + usage.ru_stime)


def run_builtin(server: Server, params: Any, group: ClientGroup, threads: int, seconds: int) -> dict:
    group = ClientGroup(group.name, group.workload, group.options, (threads,))  # its worker processes for `threads`
    engine = BuiltinEngine(params, [group])
    engine.open()
    try:
        pids = engine.client_pids()
        cpu0, before, t0 = cpu_seconds(pids) + self_cpu(), server.snapshot(), time.monotonic()
        # from its connections' opening (as sysbench's run starts with its own) to the step's end
        engine.run_step({"main": threads}, seconds, lambda _iv: None, threading.Event())
        wall, after = time.monotonic() - t0, server.snapshot()
        cpu = cpu_seconds(pids) + self_cpu() - cpu0
    finally:
        engine.close()
    return server.result(before, after, wall, cpu)


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default="8,32")
    ap.add_argument("--scale", type=int, default=4)
    ap.add_argument("--mode", default="sysbench-tpcc", choices=("sysbench-tpcc", "spec"))
    ap.add_argument("--python-loop", action="store_true", help="the builtin engine's Python loop "
                    "(TUNEBENCH_HOT_LOOP=0), to compare with the compiled one")
    ap.add_argument("--json", type=Path, help="write the runs, medians and ratios to this file")
    ap.add_argument("--tpcc-dir", type=Path, required=True,
                    help="a clone of Percona-Lab/sysbench-tpcc (its tpcc.lua and modules, unchanged)")
    args = ap.parse_args()
    if not (args.tpcc_dir / "tpcc.lua").is_file():
        print(f"no tpcc.lua in {args.tpcc_dir}: give a clone of Percona-Lab/sysbench-tpcc with --tpcc-dir",
              file=sys.stderr)
        return 2
    try:
        steps = [int(t) for t in args.threads.split(",")]
    except ValueError:
        ap.error(f"--threads: a comma-separated list of integers, not {args.threads!r}")
    if not all(1 <= t <= 1000 for t in steps) or args.seconds < 5 or args.runs < 1 or not 1 <= args.scale <= 100:
        ap.error("--threads 1..1000 each, --seconds >= 5, --runs >= 1, --scale 1..100")
    if not (args.tpcc_dir / "tpcc.lua").is_file():
        ap.error(f"{args.tpcc_dir}/tpcc.lua not found")
    if args.python_loop:
        os.environ["TUNEBENCH_HOT_LOOP"] = "0"

    base = Path(tempfile.mkdtemp(prefix="tb-tpcc-vs-"))
    sb = SandboxServer(base / "sandbox")  # private: nothing else runs on it, and no other test sees its knobs
    sb.start()
    try:
        return compare(args, steps, sb)
    finally:
        sb.stop()
        shutil.rmtree(base, ignore_errors=True)


def compare(args: argparse.Namespace, steps: list[int], sb: SandboxServer) -> int:
    target = sb.target()
    request = data_request("tpcc", {"scale": args.scale, "mode": args.mode}, schema=SCHEMA, threads=4)
    t0 = time.monotonic()
    done = prepare_data(target, request)
    print(f"{done.summary} ({time.monotonic() - t0:.0f} s)", flush=True)
    params = conn_params(target, "socket", database=SCHEMA)
    wl = load_workload("tpcc")
    group = ClientGroup("main", wl, request.options, tuple(steps))
    loop = "compiled" if hot_enabled() and runs_compiled([group]) else "python"
    admin = open_connection(conn_params(target, "socket"))
    server = Server(admin)
    st = sb.status()
    report: dict[str, Any] = {"server": f"{st.flavor} {st.version}", "cpus": os.cpu_count(), "scale": args.scale,
                              "seconds": args.seconds, "mode": args.mode, "builtin_loop": loop, "threads": {}}
    print(f"{report['server']}, {os.cpu_count()} CPUs shared by server and client; scale {args.scale}, "
          f"{args.seconds} s runs, builtin: mode={args.mode}, {loop} loop")
    failed = []
    try:
        for ti, threads in enumerate(steps):
            runs: dict[str, list[dict]] = {"sysbench-tpcc": [], "builtin": []}
            for r in range(args.runs):
                order = ["sysbench-tpcc", "builtin"] if (r + ti) % 2 == 0 else ["builtin", "sysbench-tpcc"]
                for name in order:
                    if name == "builtin":
                        res = run_builtin(server, params, group, threads, args.seconds)
                    else:
                        res = run_sysbench(server, args.tpcc_dir, params, args.scale, threads, args.seconds)
                    runs[name].append(res)
                    print(f"  {threads:>3} threads, run {r + 1}, {name:13}: {res['tps']:8.1f} trx/s "
                          f"{res['nopm']:9.0f} NOPM  {res['cpu_ms_per_trx']:.3f} ms CPU/trx  "
                          f"sel {res['Com_select_per_trx']:.2f} upd {res['Com_update_per_trx']:.2f} "
                          f"ins {res['Com_insert_per_trx']:.2f} del {res['Com_delete_per_trx']:.3f}", flush=True)
            keys = [k for k in runs["builtin"][0] if k not in ("seconds", "transactions")]
            med = {name: {k: median(rs, k) for k in keys} for name, rs in runs.items()}
            ratio = {k: med["builtin"][k] / med["sysbench-tpcc"][k] if med["sysbench-tpcc"][k] else None
                     for k in keys}
            report["threads"][str(threads)] = {"runs": runs, "median": med, "ratio": ratio}
            if ratio["tps"] is None or ratio["tps"] < 1.0:
                failed.append(f"{threads} threads: transactions/s {ratio['tps']:.2f}x sysbench-tpcc's (goal >= 1.0)")
            if ratio["cpu_ms_per_trx"] is None or ratio["cpu_ms_per_trx"] > 1.0:
                failed.append(f"{threads} threads: client CPU per transaction {ratio['cpu_ms_per_trx']:.2f}x "
                              "sysbench-tpcc's (goal <= 1.0)")
    finally:
        admin.close()
        conn = open_connection(conn_params(target, "socket"))
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
        conn.close()
    print_table(report)
    report["goals_missed"] = failed
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    for line in failed:
        print(f"goal missed: {line}")
    return 1 if failed else 0


def print_table(report: dict[str, Any]) -> None:
    rows = (("transactions/s", "tps", "{:,.1f}"), ("NOPM", "nopm", "{:,.0f}"),
            ("client CPU ms/trx", "cpu_ms_per_trx", "{:.3f}"), ("Com_select/trx", "Com_select_per_trx", "{:.2f}"),
            ("Com_update/trx", "Com_update_per_trx", "{:.2f}"), ("Com_insert/trx", "Com_insert_per_trx", "{:.2f}"),
            ("Com_delete/trx", "Com_delete_per_trx", "{:.3f}"))
    for threads, t in report["threads"].items():
        print(f"\n{threads} threads, medians of {len(t['runs']['builtin'])} run(s):")
        print(f"| {'':18} | {'sysbench-tpcc':>13} | {'builtin':>10} | {'ratio':>6} |")
        for label, key, fmt in rows:
            r = t["ratio"][key]
            print(f"| {label:18} | {fmt.format(t['median']['sysbench-tpcc'][key]):>13} | "
                  f"{fmt.format(t['median']['builtin'][key]):>10} | {'-' if r is None else f'{r:.3f}':>6} |")


if __name__ == "__main__":
    sys.exit(main())
