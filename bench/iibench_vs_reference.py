"""The builtin iiBench family against the reference insert benchmark (mdcallag/mytools bench/ibench/iibench.py,
unchanged, given with --iibench), side by side on one private server (issue 32: "iiBench stays ahead").

Each run inserts --rows rows into a fresh purchases_index table with its three secondary indexes, 1,000 rows per
INSERT, one inserting connection; the tools alternate which goes first. Both are timed the same way, by the
server: the first and last change of Com_insert, polled every 20 ms (so neither tool's start-up nor its reporting
counts), and rows/s is the rows of the INSERTs ended after the first over that time. Client CPU per row: the
reference's processes in their own cgroup (cpuacct: its multiprocessing children included), the builtin engine's
worker processes and this one. Medians of --runs, ratios builtin / reference; goal: the builtin at >= 1.0x the
reference's rows/s at <= 1.0x its client CPU per row (exit 1 when missed). The reference needs a Python with
MySQLdb (`pip install mysqlclient`):

    .venv/bin/python bench/iibench_vs_reference.py --iibench ~/mytools/bench/ibench/iibench.py \
        --python ~/venv-mysqlclient/bin/python [--rows 500000] [--runs 3] [--json FILE] [--python-loop]
"""

from __future__ import annotations

import argparse
import json
import os
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
from tpcc_vs_sysbench import self_cpu

from tunebench.hosts.sandbox import SandboxServer
from tunebench.load.builtin import BuiltinEngine, runs_compiled
from tunebench.load.engine import ClientGroup
from tunebench.load.hotloop import hot_enabled
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import global_status, open_connection
from tunebench.mysql.target import conn_params
from tunebench.run.tasks import data_request, prepare_data

REF_SCHEMA, TB_SCHEMA, REF_USER = "tb_ii_ref", "tb_ii_tb", "tb_iiref"
CGROUP = Path("/sys/fs/cgroup/cpuacct")


class InsertClock:
    """The server's Com_insert polled every 20 ms on its own connection: when the INSERTs started and stopped
    ending."""

    def __init__(self, params: Any):
        self.conn = open_connection(params)
        self.first = self.last = 0.0
        self.rows0 = self.rows = self._rows()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _rows(self) -> int:
        return global_status(self.conn, ("Com_insert",))["Com_insert"]

    def _poll(self) -> None:
        while not self.stop.wait(0.02):
            rows, now = self._rows(), time.monotonic()
            if rows != self.rows:
                self.first = self.first or now
                self.last, self.rows = now, rows

    def done(self, rows_per_insert: int = 1000) -> tuple[int, float]:
        """(rows of the INSERTs that ended after the first one's end, the seconds between the two)."""
        self.stop.set()
        self.thread.join()
        self.conn.close()
        return (self.rows - self.rows0 - 1) * rows_per_insert, max(self.last - self.first, 1e-3)


def cgroup_cpu(name: str) -> tuple[Path, Any]:
    group = CGROUP / name
    group.mkdir(exist_ok=True)
    return group, lambda: int((group / "cpuacct.usage").read_text()) / 1e9


def run_reference(args: argparse.Namespace, socket: str) -> dict[str, float]:
    group, usage = cgroup_cpu(f"tb-iibench-ref-{os.getpid()}")
    # --secondary_at_start: its three secondary indexes from the start, as the builtin's table has them (without
    # it the reference's table has none)
    argv = [args.python, str(args.iibench), "--dbms=mysql", "--setup", "--secondary_at_start",
            f"--max_rows={args.rows}", "--rows_per_commit=1000", f"--db_socket={socket}", f"--db_user={REF_USER}",
            # its main process sleeps a whole report interval before it looks whether the inserts are done: at
            # 600 s each run took 10 minutes (the rows/s are timed by the server either way)
            f"--db_name={REF_SCHEMA}", "--secs_per_report=1"]
    admin = conn_params(args.target, "socket")
    clock = InsertClock(admin)
    cpu0 = usage()
    with tempfile.TemporaryFile() as out:
        # the shell joins the cgroup, then becomes the reference (whose children inherit it)
        join = f'echo $$ > {group / "tasks"} && exec "$@"'
        proc = subprocess.Popen(["sh", "-c", join, "sh", *argv], stdout=out, stderr=subprocess.STDOUT)
        proc.wait(timeout=3600)
        if proc.returncode != 0:
            out.seek(0)
            tail = out.read().decode(errors="replace").strip().splitlines()[-3:]
            sys.exit(f"the reference iibench.py failed ({proc.returncode}): {' / '.join(tail)}")
    cpu = usage() - cpu0
    rows, seconds = clock.done()
    group.rmdir()
    return {"rows": rows, "seconds": seconds, "rows_per_s": rows / seconds, "cpu_us_per_row": cpu / rows * 1e6}


def run_builtin(args: argparse.Namespace) -> dict[str, float]:
    target = args.target
    conn = open_connection(conn_params(target, "socket"))
    conn.cursor().execute(f"DROP DATABASE IF EXISTS {TB_SCHEMA}")
    conn.close()
    options = {"max_rows": args.rows, "rows_per_commit": 1000, "tables": 1}
    request = data_request("iibench", options, schema=TB_SCHEMA, threads=1)
    prepare_data(target, request)
    group = ClientGroup("main", load_workload("iibench"), request.options, (1,))
    engine = BuiltinEngine(conn_params(target, "socket", database=TB_SCHEMA), [group])
    engine.open()
    try:
        pids = engine.client_pids()
        clock = InsertClock(conn_params(target, "socket"))
        cpu0 = cpu_seconds(pids) + self_cpu()
        engine.run_step({"main": 1}, 3600, lambda _iv: None, threading.Event())  # ends at max_rows
        cpu = cpu_seconds(pids) + self_cpu() - cpu0
        rows, seconds = clock.done()
    finally:
        engine.close()
    return {"rows": rows, "seconds": seconds, "rows_per_s": rows / seconds, "cpu_us_per_row": cpu / rows * 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iibench", type=Path, required=True, help="the reference's iibench.py, unchanged")
    ap.add_argument("--python", default=sys.executable, help="a Python with MySQLdb (mysqlclient) for it")
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--python-loop", action="store_true", help="the builtin engine's Python loop")
    args = ap.parse_args()
    if not args.iibench.is_file():
        print(f"no {args.iibench}: give the reference's iibench.py with --iibench", file=sys.stderr)
        return 2
    if not (CGROUP / "tasks").exists():
        print(f"no cpuacct cgroup at {CGROUP}: the reference's CPU cannot be measured here", file=sys.stderr)
        return 2
    if args.rows < 10_000 or args.runs < 1:
        ap.error("--rows >= 10000, --runs >= 1")
    if args.python_loop:
        os.environ["TUNEBENCH_HOT_LOOP"] = "0"
    base = Path(tempfile.mkdtemp(prefix="tb-iibench-vs-"))
    sb = SandboxServer(base / "sandbox")  # private: nothing else runs on it
    sb.start()
    try:
        args.target = sb.target()
        admin = open_connection(conn_params(args.target, "socket"))
        cur = admin.cursor()
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {REF_SCHEMA}")
        cur.execute(f"CREATE USER IF NOT EXISTS '{REF_USER}'@'localhost' IDENTIFIED BY ''")  # a private server
        cur.execute(f"GRANT ALL ON {REF_SCHEMA}.* TO '{REF_USER}'@'localhost'")
        admin.close()
        socket = conn_params(args.target, "socket").socket
        wl = load_workload("iibench")
        group = ClientGroup("main", wl, wl.options({"max_rows": args.rows}), (1,))
        loop = "compiled" if hot_enabled() and runs_compiled([group]) else "python"
        st = sb.status()
        print(f"{st.flavor} {st.version}, {os.cpu_count()} CPUs shared by server and client; {args.rows:,} rows "
              f"per run, 1,000 per INSERT, 3 secondary indexes, 1 connection; builtin: {loop} loop", flush=True)
        runs: dict[str, list[dict[str, float]]] = {"reference": [], "builtin": []}
        for r in range(args.runs):
            for name in (("reference", "builtin") if r % 2 == 0 else ("builtin", "reference")):
                res = run_reference(args, socket) if name == "reference" else run_builtin(args)
                runs[name].append(res)
                print(f"  run {r + 1}, {name:9}: {res['rows_per_s']:9,.0f} rows/s  {res['cpu_us_per_row']:.2f} µs "
                      f"client CPU/row  ({res['rows']:,} rows in {res['seconds']:.2f} s)", flush=True)
        med = {n: {k: statistics.median(x[k] for x in rs) for k in ("rows_per_s", "cpu_us_per_row")}
               for n, rs in runs.items()}
        ratio = {k: med["builtin"][k] / med["reference"][k] for k in ("rows_per_s", "cpu_us_per_row")}
        print(f"\nmedians of {args.runs}:\n| | reference | builtin | ratio |\n|---|---:|---:|---:|\n"
              f"| rows/s | {med['reference']['rows_per_s']:,.0f} | {med['builtin']['rows_per_s']:,.0f} | "
              f"{ratio['rows_per_s']:.2f} |\n| client CPU µs/row | {med['reference']['cpu_us_per_row']:.2f} | "
              f"{med['builtin']['cpu_us_per_row']:.2f} | {ratio['cpu_us_per_row']:.2f} |")
        failed = [line for ok, line in ((ratio["rows_per_s"] >= 1.0, "rows/s below the reference's"),
                                        (ratio["cpu_us_per_row"] <= 1.0, "client CPU per row above the reference's"))
                  if not ok]
        if args.json:
            args.json.write_text(json.dumps({"server": f"{st.flavor} {st.version}", "rows": args.rows,
                                             "builtin_loop": loop, "runs": runs, "median": med, "ratio": ratio,
                                             "goals_missed": failed}, indent=2))
        for line in failed:
            print(f"goal missed: {line}")
        return 1 if failed else 0
    finally:
        sb.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
