"""Numbers must be right: statement mix and TPS checked against the server's own counters."""

import os
import subprocess
import sys
import threading

import pytest

from server_clock import ServerCounters
from tunebench.core.schedule import OpenLoop
from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup
from tunebench.load.prepare import cleanup, prepare
from tunebench.load.sysbench import SysbenchEngine
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import global_status, open_connection

pytestmark = pytest.mark.integration
COM = ("Com_select", "Com_insert", "Com_update", "Com_delete", "Com_begin", "Com_commit", "Com_rollback")


_PREPARED: set[str] = set()


@pytest.fixture
def rw(each_server):
    """sbtest1 of 10,000 rows on this server (prepared once per server)."""
    server = each_server
    wl = load_workload("oltp_read_write")
    opts = wl.options({"table_size": 10000})
    if server.name not in _PREPARED:
        prepare(server.params(), "tunebench", opts, 10000)
        _PREPARED.add(server.name)
    return wl, opts


def _status(params):
    conn = open_connection(params)
    try:
        return global_status(conn, COM)
    finally:
        conn.close()


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_builtin_read_write_statement_mix_matches_com_counters(each_server, rw, loop, monkeypatch):
    """Both of the builtin engine's loops (load/hotloop.py's compiled one, the Python one) send exactly sysbench's
    oltp_read_write mix, and count what they sent: the client's reads/writes/other are the server's Com_*. On
    MySQL, BEGIN and COMMIT cannot be prepared (1295): both loops send them as text, as sysbench does."""
    server = each_server
    sandbox_params = server.params()
    if loop == "python":
        monkeypatch.setenv("TUNEBENCH_HOT_LOOP", "0")  # the worker processes inherit it
    wl, opts = rw
    engine = BuiltinEngine(sandbox_params, [ClientGroup("main", wl, opts, (1,))], workers=1)
    intervals = []
    before = _status(sandbox_params)
    engine.open()
    try:
        engine.run_step({"main": 1}, 3, intervals.append, threading.Event())
    finally:
        engine.close()  # a worker finishes its current transaction before it stops
    after = _status(sandbox_params)
    d = {k: after[k] - before[k] for k in COM}
    trx = d["Com_commit"]
    assert trx > 100
    assert d["Com_rollback"] == 0
    assert d["Com_begin"] == trx
    # 14 reads: 10 point + simple + sum + order + distinct; our own status queries are SHOW, not SELECT
    assert d["Com_select"] == 14 * trx
    assert d["Com_update"] == 2 * trx  # index + non-index update
    assert d["Com_delete"] == trx and d["Com_insert"] == trx
    # what the engine counted in the step's seconds: 14 reads, 4 writes and 2 others an event (give or take the
    # event in flight at a second's end)
    events = round(sum(iv.tps for iv in intervals))
    sent = {k: round(sum(getattr(iv, k) for iv in intervals)) for k in ("reads", "writes", "other")}
    assert 0 < events <= trx
    for kind, per_event in (("reads", 14), ("writes", 4), ("other", 2)):
        assert abs(sent[kind] - per_event * events) <= per_event, (kind, sent, events)


@pytest.mark.parametrize("engine_cls", [BuiltinEngine, SysbenchEngine])
def test_tps_agrees_with_com_commit_within_2_percent(each_server, rw, engine_cls):
    """The client's TPS over a step's seconds is the server's Com_commit over the same seconds: the server read at
    the engine's own second edges (tests/server_clock.py), so a busy machine delays nothing that is compared."""
    server = each_server
    params = server.params()
    ro = load_workload("oltp_read_only")
    group = ClientGroup("main", ro, ro.options({"table_size": 10000}), (2, 4))
    engine = engine_cls(params, [group])
    engine.open()
    try:
        for threads in (2, 4):
            with ServerCounters(params, engine=engine if engine_cls is BuiltinEngine else None) as clock:
                engine.run_step({"main": threads}, 10, clock.sink, threading.Event())
            # the step's seconds but its first, between the two edges the server's readings bracket most tightly for
            # their length (tests/server_clock.py, ServerCounters.window). At least 6 s: an edge is off by the events
            # in flight and those whose reply a starved client read late, and over 3 s that was all of the 2 %
            # (386 vs 394 at 130 TPS, load 12 on 2 CPUs: 2 threads in flight and 30 ms of delay at each edge)
            first, last = clock.window(min_intervals=6)
            server = clock.over(first, last)
            client = clock.client(first, last)
            assert len(clock.intervals) >= 4 and server > 0, (threads, len(clock.intervals), server)
            assert client > 0
            assert abs(client - server) / server < 0.02, (threads, first, last, client, server, clock.describe())
    finally:
        engine.close()


LATE_RATE = 200.0


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_a_late_reporter_counts_what_the_server_counts(rw_sandbox, loop, monkeypatch):
    """A worker whose reporter thread wakes late after a second's edge while its connections keep running (what a
    busy machine does: here the reporter starved on a CPU it shares with a nice -20 hog) still ends its seconds at
    the edges: each connection keeps its counts as of an edge when its first event ends after it, so the late
    reporter counts that second's events only. Before, the counters were read when the reporter woke, the
    engine's edge was the workers' waking instants averaged, and the client's count over the step was off the
    server's Com_commit (beside CPU hogs: 2,097 vs 1,978, with seconds of 209 and 838 TPS)."""
    params = rw_sandbox
    if loop == "python":
        monkeypatch.setenv("TUNEBENCH_HOT_LOOP", "0")  # the worker processes inherit it
    ro = load_workload("oltp_read_only")
    group = ClientGroup("main", ro, ro.options({"table_size": 10000}), (2,), rates=(LATE_RATE,))
    engine = BuiltinEngine(params, [group], workers=2)
    engine.open()
    hog = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    os.sched_setaffinity(hog.pid, {1})
    os.setpriority(os.PRIO_PROCESS, hog.pid, -20)  # root (the suite's machine)
    starved = threading.Event()

    def starve(iv) -> None:
        clock.sink(iv)
        if not starved.is_set():  # the step's slots run: only the reporter (the main thread) is moved
            pid = engine.client_pids()[0]
            os.sched_setaffinity(pid, {1})
            os.setpriority(os.PRIO_PROCESS, pid, 19)
            starved.set()

    try:
        # An open loop at 200/s (issue 41): what is tested is where a starved reporter's seconds end, not the
        # throughput. The old error (counters read when the reporter woke) is its lateness over the window's 6+ s,
        # whatever the rate, and the 2 events in flight at an edge are 0.2 % of 1,200. At full speed the load took
        # the other core beside the hog's for the whole step (26.7 and 19.8 CPU s a loop in a clean clone's run)
        with ServerCounters(params, engine=engine) as clock:
            engine.run_step({"main": 2}, 10, starve, threading.Event(), rates={"main": OpenLoop(LATE_RATE)})
        first, last = clock.window(min_intervals=6)  # long enough for an edge's events in flight (above)
        server, client = clock.over(first, last), clock.client(first, last)
        assert abs(client - server) / server < 0.02, (first, last, client, server, clock.describe())
    finally:
        hog.kill()
        hog.wait()
        engine.close()


@pytest.fixture
def rw_sandbox(sandbox_params):
    """sbtest1 of 10,000 rows on the session's sandbox (its own schema)."""
    from dataclasses import replace

    params = replace(sandbox_params, database="tb_late")
    if "sandbox:tb_late" not in _PREPARED:
        wl = load_workload("oltp_read_only")
        prepare(params, "tb_late", wl.options({"table_size": 10000}), 10000)
        _PREPARED.add("sandbox:tb_late")
    return params


def test_cleanup_only_drops_what_tunebench_created(sandbox_params):
    params = conn_params_for(sandbox_params, "foreign_s")
    conn = open_connection(sandbox_params)
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS foreign_s")
    cur.execute("CREATE TABLE IF NOT EXISTS foreign_s.sbtest1 (id INT PRIMARY KEY)")
    cur.execute("CREATE TABLE IF NOT EXISTS foreign_s.customers (id INT PRIMARY KEY)")
    conn.close()
    wl = load_workload("oltp_point_select")
    from tunebench.core.errors import TargetError

    with pytest.raises(TargetError, match="not created by Tunebench"):
        prepare(params, "foreign_s", wl.options({"table_size": 100}), 100)
    result = cleanup(params, "foreign_s")
    assert result["dropped"] == []
    assert set(result["left_alone"]) >= {"sbtest1", "customers"}


def conn_params_for(params, schema):
    from dataclasses import replace

    return replace(params, database=None) if schema else params


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_every_second_says_its_errors_by_server_error_code(each_server, rw, loop, monkeypatch):
    """Issue 44 item 4: the error count is one number everywhere, with the codes and a count per code. Rows 1-4
    held FOR UPDATE by another session and a lock wait timeout of 1 s: every write of eight connections on those
    rows ends in 1205 -- each second's errors by code sum to its errors, in both loops, and the code is the
    server's (not 0, "no code known")."""
    if loop == "python":
        monkeypatch.setenv("TUNEBENCH_HOT_LOOP", "0")
    wl, _opts = rw
    opts = wl.options({"table_size": 4})  # ids 1-4 of the prepared table
    params = each_server.params()
    locker = open_connection(params)
    cur = locker.cursor()
    cur.execute("SELECT @@GLOBAL.innodb_lock_wait_timeout")
    was = int(cur.fetchall()[0][0])
    intervals = []
    try:
        cur.execute("SET GLOBAL innodb_lock_wait_timeout = 1")  # the load's sessions, opened after it, take it
        cur.execute("BEGIN")
        cur.execute("SELECT id FROM tunebench.sbtest1 WHERE id BETWEEN 1 AND 4 FOR UPDATE")
        cur.fetchall()
        engine = BuiltinEngine(params, [ClientGroup("main", wl, opts, (8,))], workers=2)
        engine.open()
        try:
            engine.run_step({"main": 8}, 4, intervals.append, threading.Event())
        finally:
            engine.close()
    finally:
        cur.execute("ROLLBACK")
        cur.execute(f"SET GLOBAL innodb_lock_wait_timeout = {was}")
        locker.close()
    assert sum(iv.errors for iv in intervals) >= 8, intervals
    for iv in intervals:
        assert sum(iv.error_codes.values()) == iv.errors, (iv.errors, iv.error_codes)
        assert set(iv.error_codes) <= {1205}, iv.error_codes
        assert all(iv.series()[f"client.main.errcode.{c}"] == n for c, n in iv.error_codes.items())
