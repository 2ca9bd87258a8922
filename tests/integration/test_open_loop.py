"""Issue 31: open-loop load on the real sandbox. A rate is kept, by the client's count and by the server's own
Com_select, on both engines and both of the builtin engine's loops; a 2-second freeze of the server shows in the
latency from the intended start (not in the service time), in the backlog, and in late and skipped transactions
with a latency limit."""

import os
import signal
import threading
import time

import mysql.connector
import numpy as np
import pytest

from server_clock import ServerCounters
from tunebench.core.schedule import OpenLoop
from tunebench.core.stats import summarize
from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup
from tunebench.load.prepare import prepare
from tunebench.load.sysbench import SysbenchEngine
from tunebench.load.workload import load_workload

pytestmark = pytest.mark.integration

RATE = 2000.0


@pytest.fixture(scope="module")
def point_select(sandbox_params):
    wl = load_workload("oltp_point_select")
    opts = wl.options({"table_size": 10000})
    prepare(sandbox_params, "tunebench", opts, 10000)
    return wl, opts


@pytest.mark.parametrize("engine", ["builtin-compiled", "builtin-python", "sysbench"])
def test_a_rate_is_kept_by_the_client_and_the_server(sandbox_params, point_select, engine, monkeypatch):
    """`--rate 2000` with 8 connections: 2,000 TPS within 3 % by the client and by the server's Com_select."""
    wl, opts = point_select
    if engine == "builtin-python":
        monkeypatch.setenv("TUNEBENCH_HOT_LOOP", "0")
    group = ClientGroup("main", wl, opts, (8,), rates=(RATE,))
    eng = (SysbenchEngine(sandbox_params, [group]) if engine == "sysbench"
           else BuiltinEngine(sandbox_params, [group], workers=2))
    eng.open()
    try:
        # Com_select at the engine's own second edges (tests/server_clock.py), not when each second arrives
        with ServerCounters(sandbox_params, ("Com_select",), engine=None if engine == "sysbench" else eng) as clock:
            eng.run_step({"main": 8}, 7, clock.sink, threading.Event(), rates={"main": OpenLoop(RATE)})
    finally:
        eng.close()
    ivs = clock.intervals[1:]  # the seconds this test always compared: all but the step's first
    assert len(ivs) >= 5
    client = sum(iv.tps for iv in ivs) / len(ivs)  # the transactions the engine says it ended, per second
    # the server's rate against the engine's over the same seconds, edge to edge: those whose edges the server's
    # readings bracket most tightly (tests/server_clock.py, ServerCounters.window)
    first, last = clock.window()
    server = clock.over(first, last, "Com_select") / clock.seconds(first, last)
    ended = clock.client(first, last) / clock.seconds(first, last)
    # The rate kept is the transactions that came due: those ended, and those due but not started yet (the
    # backlog, sysbench's queue) -- on a machine short of CPU the server serves them late (sysbench ended 1,931/s
    # of 2,000 beside CPU hogs), which is the latency's business, not the rate's. The server counts what ended.
    due = client + (ivs[-1].backlog - clock.intervals[0].backlog) / len(ivs)
    assert abs(due - RATE) / RATE < 0.03, (engine, due, client, [iv.backlog for iv in clock.intervals])
    assert abs(server - ended) / ended < 0.03, (engine, first, last, server, ended, clock.describe())
    assert all(iv.rate == RATE for iv in clock.intervals)
    if engine != "sysbench":  # the builtin engine measures the service time apart, and the backlog
        assert all(iv.svc_lat_ms.get("p50") is not None and iv.backlog is not None for iv in ivs)


def _freeze(pid: int, after: float, seconds: float, done: threading.Event) -> threading.Thread:
    def run():
        time.sleep(after)
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(pid, signal.SIGCONT)
            done.set()

    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_a_frozen_server_shows_in_latency_from_the_intended_start(sandbox, sandbox_params, point_select, loop,
                                                                 monkeypatch):
    """At 1,000/s with 8 connections, the server stopped (SIGSTOP) for 2 s mid-step: closed loop would record 8
    slow transactions; here the ~2,000 that were due meanwhile count their wait, so the step's p99 from the
    intended start is at least 1,000 ms while the service time's p99 stays far lower, and the backlog shows.
    Then with a 300 ms latency limit: what was already later than it is skipped and counted, and the
    transactions in flight during the freeze are late."""
    wl, opts = point_select
    if loop == "python":
        monkeypatch.setenv("TUNEBENCH_HOT_LOOP", "0")
    group = ClientGroup("main", wl, opts, (8,), rates=(1000.0,))
    eng = BuiltinEngine(sandbox_params, [group], workers=2)
    pid = sandbox.status().pid
    eng.open()
    try:
        # the latency limit's skipping is the schedule's, the same in both loops: checked once (compiled)
        for limit in (None, 300.0) if loop == "compiled" else (None,):
            load = OpenLoop(1000.0, "poisson", limit)
            ivs: list = []
            done = threading.Event()
            th = _freeze(pid, 3.0, 2.0, done)
            hists = eng.run_step({"main": 8}, 9, ivs.append, threading.Event(), rates={"main": load})
            th.join(10)
            assert done.is_set()
            s = summarize("main", 8, ivs, hists["main"].summary_ms(), service=eng.service_hists["main"].summary_ms())
            if limit is None:
                assert s.lat_p99_ms >= 1000.0, s
                assert s.service_p99_ms is not None and s.service_p99_ms < 100.0, s
                # sampled at the seconds' ends: a second ending in the freeze sees at least the part of it before
                # (the backlog is served within a fraction of a second after it)
                assert max(iv.backlog for iv in ivs) >= 500, [iv.backlog for iv in ivs]
                assert max(iv.lag_ms for iv in ivs) >= 500, [iv.lag_ms for iv in ivs]
                assert s.skipped == 0 and s.late == 0  # no limit: nothing is late or skipped
                # the rate over the step is kept: what came due is what ended plus what still waits (the backlog
                # at the step's end; served after the freeze where the machine has the CPU, queued where it has
                # not: 884/s ended beside the suite's workers with the rest waiting)
                due = (sum(iv.tps for iv in ivs) + ivs[-1].backlog) / len(ivs)
                assert due == pytest.approx(1000.0, rel=0.1), (due, [(iv.tps, iv.backlog) for iv in ivs])
            else:
                assert s.skipped >= 1000, s  # most of the 2,000 due in the freeze: already too late
                assert s.late >= 1, s
                # what is served is never older than the limit when it starts: only the <= 8 transactions in
                # flight through the freeze take 2 s, fewer than 1 % of the ~7,000 served, so p99 stays < 1 s
                # (without the limit it is >= 1 s: above)
                assert s.lat_p99_ms < 1000.0, s
    finally:
        os.kill(pid, signal.SIGCONT)
        eng.close()


def test_a_rate_changed_live_goes_on_from_then_and_is_marked(sandbox, point_select):
    """The stage's rate keys: the run's rate changed mid-step; the seconds after it say and do the new rate, a
    "rate" event marks it; the sysbench engine refuses (its --rate is fixed for its run)."""
    from tests.conftest import wait_until
    from tests.integration.test_sweep import store_for

    from tunebench.core.errors import ConfigError
    from tunebench.run.experiment import Experiment
    from tunebench.run.spec import RunSpec

    wl, opts = point_select
    group = ClientGroup("main", wl, opts, (8,), rates=(500.0,))
    store = store_for(sandbox)
    seconds: list = []
    exp = Experiment(store, sandbox.target(), RunSpec(groups=(group,), step_seconds=10, warmup_seconds=0, probes=()),
                     on_interval=seconds.append)
    changes = []

    def change():
        wait_until(lambda: len(seconds) >= 4, 120, "4 s of load")
        changes.append(exp.change_rate("main", 1500.0))

    th = threading.Thread(target=change)
    th.start()
    result = exp.run().to_dict()
    th.join()
    assert result["status"] == "completed" and changes == [{"group": "main", "from": 500.0, "to": 1500.0}]
    rates = [iv.rate for iv in seconds]
    assert rates[0] == 500.0 and rates[-1] == 1500.0
    after = [iv.tps for iv in seconds if iv.rate == 1500.0][1:]  # the second of the change is a mix
    assert after and np.mean(after) == pytest.approx(1500.0, rel=0.1)
    session = store.get_session(result["session_id"])
    assert [e["label"] for e in session["events"] if e["kind"] == "rate"] == ["rate main 500 → 1,500/s"]
    with pytest.raises(ConfigError, match="does not run open loop now"):
        exp.change_rate("main", 10.0)  # the run is over
    store.close()


@pytest.mark.parametrize(("planned", "second"), [((300.0,), 600.0), ((300.0, 900.0), 900.0)])
def test_a_live_rate_holds_into_the_next_step_unless_the_plan_asks_another(sandbox, point_select, planned, second):
    """Issue 45 item 3: a rate raised with PgUp fell back to the configured rate at the next step. It holds while
    the steps ask the rate it replaced; a step that asks another (a sweep over rates) has its own."""
    from tests.conftest import wait_until
    from tests.integration.test_sweep import store_for

    from tunebench.run.experiment import Experiment
    from tunebench.run.spec import RunSpec

    wl, opts = point_select
    group = ClientGroup("main", wl, opts, (4, 4), rates=planned)
    store = store_for(sandbox)
    seconds: list = []
    notes: list = []
    exp = Experiment(store, sandbox.target(), RunSpec(groups=(group,), step_seconds=4, warmup_seconds=0, probes=()),
                     on_interval=seconds.append, on_note=notes.append)

    def change():
        wait_until(lambda: len(seconds) >= 2, 120, "2 s of load")
        exp.change_rate("main", 600.0)

    th = threading.Thread(target=change)
    th.start()
    result = exp.run().to_dict()
    th.join()
    assert result["status"] == "completed"
    assert [s["rate"] for s in result["steps"]][1] == second
    assert any(("stays at 600/s" if second == 600.0 else "the live 600/s ends") in n for n in notes), notes
    store.close()


def _kill_load_connections(params, n: int) -> int:
    """KILL `n` of the load's connections (on the tunebench schema, not this one)."""
    from tunebench.mysql.connect import open_connection

    conn = open_connection(params)
    try:
        cur = conn.cursor()
        killed, done = 0, set()
        deadline = time.monotonic() + 10  # a load slow to open its connections (a clean clone at load 15 had one
        while killed < n and time.monotonic() < deadline:  # open at 4 s): killed as they come
            cur.execute("SELECT id FROM information_schema.processlist WHERE id <> CONNECTION_ID() "
                        "AND db = 'tunebench' AND command <> 'Daemon'")
            for (i,) in cur.fetchall():  # one that ended meanwhile ("Unknown thread id", 1094): the next one
                if killed == n or i in done:
                    continue
                done.add(i)
                try:
                    cur.execute(f"KILL CONNECTION {i}")
                    killed += 1
                except mysql.connector.Error as exc:
                    if exc.errno != 1094:
                        raise
            if killed < n:
                time.sleep(0.1)
        return killed
    finally:
        conn.close()


@pytest.mark.parametrize("engine", ["builtin", "sysbench"])
def test_what_a_lost_connection_does_to_the_rate(sandbox_params, point_select, engine):
    """README's word on it, tested: the builtin engine's connection reconnects and the group's schedule goes on,
    so the rate is kept over the step (the seconds the reconnect took count in the latency from the intended
    start); sysbench's --rate run ends on a lost connection (akopytov/sysbench#224: its rate cannot survive a
    reconnect), which the engine reports in one line."""
    from tunebench.core.errors import EngineError

    wl, opts = point_select
    group = ClientGroup("main", wl, opts, (4,), rates=(500.0,))
    eng = (SysbenchEngine(sandbox_params, [group]) if engine == "sysbench"
           else BuiltinEngine(sandbox_params, [group], workers=1))
    eng.open()
    ivs: list = []
    killed: list[int] = []

    def kill():
        time.sleep(4)
        killed.append(_kill_load_connections(sandbox_params, 2))

    th = threading.Thread(target=kill, daemon=True)
    th.start()
    try:
        if engine == "sysbench":
            with pytest.raises(EngineError, match=r"sysbench \(main\) exited with .*(gone away|Lost connection)"):
                eng.run_step({"main": 4}, 9, ivs.append, threading.Event(), rates={"main": OpenLoop(500.0)})
        else:
            eng.run_step({"main": 4}, 9, ivs.append, threading.Event(), rates={"main": OpenLoop(500.0)})
    finally:
        th.join(10)
        eng.close()
    assert killed == [2]
    if engine == "builtin":
        assert sum(iv.reconnects for iv in ivs) >= 2
        # the schedule went on: what came due over the step is the rate -- those ended, and those due but not
        # started yet at its end (a worker short of CPU serves them late: 357/s ended of 500 at load 17, the
        # latency's business as in the test above; the backlog starts the step empty)
        due = np.mean([iv.tps for iv in ivs]) + ivs[-1].backlog / len(ivs)
        assert due == pytest.approx(500.0, rel=0.05), (due, [(iv.tps, iv.backlog) for iv in ivs])


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_only_the_backlog_before_the_measured_seconds_is_dropped(sandbox_params, point_select, loop, monkeypatch):
    """The backlog is dropped when the warm-up ends (here: the part second before the first measured one). The
    engine tells the workers once it has merged the first measured second, a second later: they dropped what was due
    by then, the first measured second's arrivals too (20,000/s on one connection, the Python loop: 23,862 dropped
    where at most the part second's 20,000 were due; 0-2,643 now: what was due by the edge and was still not started
    when the word came). 100,000/s: the compiled loop served 23,000/s on one connection."""
    if loop == "python":
        monkeypatch.setenv("TUNEBENCH_HOT_LOOP", "0")
    wl, opts = point_select
    rate = 100_000.0
    group = ClientGroup("main", wl, opts, (1,), rates=(rate,))
    eng = BuiltinEngine(sandbox_params, [group], workers=1)
    eng.open()
    ivs: list = []
    try:
        eng.run_step({"main": 1}, 3, ivs.append, threading.Event(), rates={"main": OpenLoop(rate, "fixed")})
    finally:
        eng.close()
    dropped = sum(iv.dropped for iv in ivs)
    assert dropped <= rate, ([iv.dropped for iv in ivs], [iv.backlog for iv in ivs])
    assert ivs[0].backlog > 0.5 * rate * 0.5, [iv.backlog for iv in ivs]  # the server did not keep up
