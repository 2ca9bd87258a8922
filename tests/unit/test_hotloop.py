"""The compiled hot loop's program (load/hotloop.py): every OLTP workload the loop runs becomes the statements and
ops of load/oltp.py's event, in its order; what it cannot run is left to the Python loop. The extension itself is
built here as in CI (gcc and libmariadb-dev are installed by packaging/ensure-system-deps.sh); without it the
engine runs its Python loop and says so, in one line."""

import importlib.machinery
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tunebench
from tunebench.load.hotloop import COUNTS_AS, HAVE_HOT, OP_DELETE_INSERT, OP_OTHER, hot_program, loop_mode
from tunebench.load.workload import load_workload
from tunebench.paths import resources_dir, workloads_dir

KINDS = ("read", "write", "other")


def test_the_compiled_loop_is_built():
    """setup.py builds the loop as optional (a user without a compiler gets the Python loop) and `pip -q` hides a
    failed build: `make test` sets TUNEBENCH_REQUIRE_HOTLOOP=1, and wherever libmariadb-dev is installed a loop
    that did not build or does not load fails here."""
    if os.environ.get("TUNEBENCH_REQUIRE_HOTLOOP") != "1" and shutil.which("mariadb_config") is None:
        pytest.skip("no libmariadb-dev here and TUNEBENCH_REQUIRE_HOTLOOP is not set: the Python loop runs")
    assert HAVE_HOT, loop_mode()


@pytest.mark.parametrize("name", ["oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only",
                                  "oltp_update_index", "oltp_update_non_index", "oltp_delete"])
def test_each_event_compiles_to_the_same_statements_and_mix(name):
    wl = load_workload(name)
    opts = wl.options({"tables": 3, "table_size": 1000})
    program = wl.program(opts)
    hot = hot_program(program)
    assert hot is not None and hot.ntables == 3
    mix = dict.fromkeys(KINDS, 0)
    for kind, count, counts_as, stmts, stmts2 in hot.ops:
        assert len(stmts) == 3
        if kind == OP_DELETE_INSERT:
            assert [hot.statements[i] for i in stmts] == [f"DELETE FROM sbtest{t} WHERE id=?" for t in (1, 2, 3)]
            assert hot.statements[stmts2[0]].startswith("INSERT INTO sbtest1 (id, k, c, pad)")
            mix["write"] += 2 * count
        else:
            mix[KINDS[counts_as]] += count
        if kind == OP_OTHER:
            assert hot.statements[stmts[0]] in ("BEGIN", "COMMIT")
        else:
            assert [f"sbtest{t} " in hot.statements[i] for t, i in zip((1, 2, 3), stmts, strict=True)] == [True] * 3
    assert mix == program.statement_mix()
    assert len(hot.statements) == 3 * len(program.prepared_keys()) + (2 if program.has_trx else 0)


def test_what_the_loop_cannot_run_stays_in_python(monkeypatch):
    wl = load_workload("oltp_insert")  # its INSERT is a plain-text query, as oltp_insert.lua sends it
    assert hot_program(wl.program(wl.options({"table_size": 1000}))) is None
    ps = load_workload("oltp_point_select")
    monkeypatch.setenv("TUNEBENCH_HOT_LOOP", "0")
    assert hot_program(ps.program(ps.options({"table_size": 1000}))) is None


def test_distribution_options_reach_the_loop():
    wl = load_workload("oltp_point_select")
    hot = hot_program(wl.program(wl.options({"table_size": 5000, "rand_type": "pareto", "rand_pareto_h": 0.3})))
    assert hot is not None
    kind, a, b, iters, power, _pct, _res = hot.dist
    assert (kind, a, b, iters) == (2, 1, 5000, 12) and power == math.log(0.3) / math.log(0.7)
    assert COUNTS_AS["read"] == 0


def _without_the_loop(root: Path, so: bytes | None) -> dict[str, str]:
    """The environment of a Tunebench whose package (copied under `root`) has no compiled loop, or `so` for it."""
    shutil.copytree(Path(tunebench.__file__).parent, root / "tunebench",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    if so is not None:
        (root / "tunebench" / "load" / f"_hotloop{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(so)
    env = {k: v for k, v in os.environ.items() if k != "TUNEBENCH_HOT_LOOP"}
    return {**env, "PYTHONPATH": str(root), "TUNEBENCH_RESOURCES": str(resources_dir()),
            "TUNEBENCH_WORKLOADS": str(workloads_dir())}


ENGINE = """
import json
from tunebench.load import hotloop
from tunebench.load.workload import load_workload
wl = load_workload("oltp_read_write")
program = hotloop.hot_program(wl.program(wl.options({})))
print(json.dumps({"have": hotloop.HAVE_HOT, "mode": hotloop.loop_mode(), "compiled": program is not None}))
"""


@pytest.mark.parametrize(("so", "says"), [
    (None, "the compiled loop is not built (apt-get install gcc libmariadb-dev, then make hotloop)"),
    (b"", "the compiled loop does not load ("),
], ids=["not built", "does not load"])
def test_without_the_compiled_loop_the_engine_runs_python_and_doctor_says_so_in_one_line(tmp_path, so, says):
    """A build without gcc or libmariadb-dev (no extension), or an extension that no longer loads (here: an empty
    file; in life, libmariadb removed): doctor says so once, with what to install (it said it twice, on its engine
    line and as a PROBLEM, and called a loop that does not load "not built"); the engine picks its Python loop and
    what a run records (loop_mode) says the same."""
    env = _without_the_loop(tmp_path, so)
    doctor = subprocess.run([sys.executable, "-m", "tunebench", "doctor"], capture_output=True, text=True, env=env,
                            timeout=60)
    said = [line for line in doctor.stdout.splitlines() if "compiled loop" in line]
    assert len(said) == 1, doctor.stdout
    assert said[0].startswith("engine      Python loop: " + says), said
    assert "Traceback" not in doctor.stderr, doctor.stderr
    out = subprocess.run([sys.executable, "-c", ENGINE], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"have": False, "mode": said[0].removeprefix("engine      "), "compiled": False}
    report = json.loads(subprocess.run([sys.executable, "-m", "tunebench", "doctor", "--json"], capture_output=True,
                                       text=True, env=env, timeout=60).stdout)
    assert report["engine_loop"] in report["problems"]  # doctor's exit status still counts it


def test_the_compiled_loops_queue_holds_at_most_the_backlog_limit(monkeypatch):
    """A rate far above what is served (nobody claims here): the feeder used to move every due time into the C
    queue, which grew without bound (issue 43 item 19). Now it holds at most BACKLOG_LIMIT, the schedule says
    overflow as the Python loop's does, and once claims make room the due times go on in order."""
    import numpy as np

    from tunebench.core import schedule
    from tunebench.core.schedule import Schedule
    from tunebench.load import worker
    from tunebench.load.hotloop import due_queue

    monkeypatch.setattr(schedule, "BACKLOG_LIMIT", 50_000)
    t0 = __import__("time").monotonic_ns()
    sched = Schedule(10_000_000.0, "fixed", [1], t0 - 1_000_000_000)  # 10 M/s, started 1 s ago: 10 M due
    feed = due_queue(None)
    for _ in range(5):
        worker.push_due(sched, feed)
    assert feed.pending() == 50_000 and sched.overflow
    drained = feed.drop(__import__("time").monotonic_ns())  # as if claimed
    assert drained == 50_000 and feed.pending() == 0
    worker.push_due(sched, feed)
    assert feed.pending() == 50_000  # more handed out as room was made, none lost from the schedule's order
    assert sched.taken == 100_000 and np.all(np.diff(sched._times[: sched._i]) >= 0)
