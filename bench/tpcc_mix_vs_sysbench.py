"""Does the builtin TPC-C-like family issue sysbench-tpcc's statement mix? Measured on the server's counters.

Both run on the same data (loaded by Tunebench's loader, the same table and column names as sysbench-tpcc's),
one after the other, at the same scale and threads: sysbench-tpcc's own tpcc.lua (fetched by the user, used
unchanged) through sysbench, then the builtin engine. For each, the deltas of Com_select/update/insert/delete
per transaction ended (Com_commit + Com_rollback) are printed side by side with their ratio; the goal is every
ratio within 5 %.

    .venv/bin/python bench/tpcc_mix_vs_sysbench.py --tpcc-dir ~/src/sysbench-tpcc [--scale 2] [--threads 4]
        [--seconds 30]

(Get sysbench-tpcc with `git clone https://github.com/Percona-Lab/sysbench-tpcc`.) The run's data grows: the
schema tb_tpcc_mix is dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench_sandbox import point_select_sandbox

from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import global_status, open_connection
from tunebench.mysql.target import conn_params

SCHEMA = "tb_tpcc_mix"
COM = ("Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_rollback")


def status(params) -> dict[str, int]:
    conn = open_connection(params)
    try:
        return global_status(conn, COM)
    finally:
        conn.close()


def per_trx(before: dict[str, int], after: dict[str, int]) -> dict[str, float]:
    d = {k: after[k] - before[k] for k in COM}
    ended = d["Com_commit"] + d["Com_rollback"]
    out = {k: d[k] / ended for k in ("Com_select", "Com_update", "Com_insert", "Com_delete")}
    out["rollback share"] = d["Com_rollback"] / ended
    out["transactions"] = ended
    return out


def run_sysbench_tpcc(tpcc_dir: Path, params, scale: int, threads: int, seconds: int) -> dict[str, float]:
    argv = ["sysbench", str(tpcc_dir / "tpcc.lua"), "--db-driver=mysql", f"--mysql-user={params.user}",
            f"--mysql-socket={params.socket}", f"--mysql-db={SCHEMA}", f"--scale={scale}", "--tables=1",
            f"--threads={threads}", f"--time={seconds}", "--report-interval=10", "run"]
    env = dict(os.environ, MYSQL_PWD=params.password or "")
    before = status(params)
    out = subprocess.run(argv, cwd=tpcc_dir, env=env, capture_output=True, text=True, timeout=seconds + 120)
    after = status(params)
    if out.returncode != 0:
        sys.exit(f"sysbench-tpcc failed ({out.returncode}): {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
    return per_trx(before, after)


def run_builtin(params, options, threads: int, seconds: int) -> dict[str, float]:
    wl = load_workload("tpcc")
    engine = BuiltinEngine(params, [ClientGroup("main", wl, options, (threads,))], workers=min(threads, 4))
    before = status(params)
    engine.open()
    try:
        engine.run_step({"main": threads}, seconds, lambda _iv: None, threading.Event())
    finally:
        engine.close()
    return per_trx(before, status(params))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tpcc-dir", type=Path, required=True, help="a checkout of Percona-Lab/sysbench-tpcc")
    ap.add_argument("--scale", type=int, default=2)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=30)
    args = ap.parse_args()
    if not (args.tpcc_dir / "tpcc.lua").is_file():
        sys.exit(f"{args.tpcc_dir}/tpcc.lua not found")
    bs = point_select_sandbox(1000)
    from tunebench.run.tasks import data_request, prepare_data

    request = data_request("tpcc", {"scale": args.scale}, schema=SCHEMA, threads=4)
    t0 = time.monotonic()
    done = prepare_data(bs.target, request)
    print(f"loaded: {done.summary} ({done.rows / max(done.seconds, 1e-9):,.0f} rows/s; {time.monotonic() - t0:.1f} s)")
    params = conn_params(bs.target, "socket", database=SCHEMA, password=bs.admin.password)
    try:
        theirs = run_sysbench_tpcc(args.tpcc_dir, params, args.scale, args.threads, args.seconds)
        ours = run_builtin(params, request.options, args.threads, args.seconds)
    finally:
        prepare_data(bs.target, data_request(None, cleanup=True, schema=SCHEMA))
        conn = open_connection(bs.admin)
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
        conn.close()
    print(f"\nscale {args.scale}, {args.threads} threads, {args.seconds} s each; per transaction ended "
          "(Com_commit + Com_rollback):")
    print(f"{'':16} {'sysbench-tpcc':>14} {'builtin':>10} {'ratio':>7}")
    worst = 0.0
    for k in ("Com_select", "Com_update", "Com_insert", "Com_delete", "rollback share", "transactions"):
        ratio = ours[k] / theirs[k] if theirs[k] else float("nan")
        if k.startswith("Com_"):
            worst = max(worst, abs(ratio - 1))
        print(f"{k:16} {theirs[k]:>14.3f} {ours[k]:>10.3f} {ratio:>7.3f}")
    print(f"\nlargest difference of a statement class: {100 * worst:.1f} % (goal: within 5 %)")
    return 0 if worst <= 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
