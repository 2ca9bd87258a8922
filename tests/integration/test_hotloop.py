"""The compiled hot loop (load/_hotloop.c) on the sandbox: its ids follow sysbench's distributions as
load/randgen.py draws them; a server error comes back as the Python loop's DriverError, with the statements done
before it counted; a connection killed under it is an error to reconnect after, not a crash."""

import dataclasses

import numpy as np
import pytest

from tunebench.load.driver import DriverError
from tunebench.load.hotloop import HotSession, HotTotals, hot_program, open_conn
from tunebench.load.prepare import prepare
from tunebench.load.randgen import draw
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import open_connection

pytestmark = pytest.mark.integration
N = 40000


@pytest.fixture(scope="module")
def table(sandbox, sandbox_params):
    wl = load_workload("oltp_read_write")
    opts = wl.options({"table_size": 10000})
    prepare(sandbox_params, "tunebench", opts, 10000)
    return sandbox_params


@pytest.mark.parametrize("rand_type", ["uniform", "gaussian", "special", "pareto"])
def test_ids_follow_sysbench_distributions(table, rand_type):
    wl = load_workload("oltp_point_select")
    opts = wl.options({"table_size": 10000, "rand_type": rand_type})
    conn = open_conn(table, hot_program(wl.program(opts)), seed=7)
    try:
        c = np.array(conn.draw(N))
    finally:
        conn.close()
    py = draw(np.random.default_rng(7), rand_type, 1, 10000, N, opts)
    assert c.min() >= 1 and c.max() <= 10000
    # the same distribution: quantiles within sampling error, the share of the hottest 1 % of ids alike
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        assert abs(np.quantile(c, q) - np.quantile(py, q)) < 150, (rand_type, q)
    hot_c = np.bincount(c, minlength=10001)
    hot_py = np.bincount(py, minlength=10001)
    top = np.argsort(hot_py)[-100:]
    assert abs(hot_c[top].sum() - hot_py[top].sum()) / N < 0.02, rand_type


def test_a_server_error_is_a_driver_error_and_the_done_statements_count(table):
    wl = load_workload("oltp_read_write")
    program = hot_program(wl.program(wl.options({"table_size": 10000})))
    totals = HotTotals()
    session = HotSession(table, program, 1, totals)
    admin = open_connection(dataclasses.replace(table, database=None))
    try:
        session.run(0.3)
        (events, reads, writes, other), lat = totals.take()
        assert events > 0 and len(lat) == 8 * events and reads == 14 * events and writes == 4 * events
        cur = admin.cursor()
        cur.execute("RENAME TABLE tunebench.sbtest1 TO tunebench.sbtest1_away")
        try:
            with pytest.raises(DriverError) as err:
                session.run(0.3)
            assert err.value.errno == 1146  # table doesn't exist: the Python loop ends the connection on it
            (events2, reads2, _w, other2), lat2 = totals.take()
            assert events2 == events and len(lat2) == 0  # the failed event is not an event
            assert other2 == other + 1 and reads2 == reads  # its BEGIN went out; its first SELECT failed
        finally:
            cur.execute("RENAME TABLE tunebench.sbtest1_away TO tunebench.sbtest1")
        session.query(b"ROLLBACK")
        # killed under it: an error the worker reconnects after (2013/2006), never a crash
        cur.execute("SELECT id FROM information_schema.PROCESSLIST WHERE INFO IS NULL AND DB='tunebench' "
                    "AND ID <> CONNECTION_ID()")
        for (pid,) in cur.fetchall():
            cur.execute(f"KILL {int(pid)}")
        with pytest.raises(DriverError) as err:
            session.run(0.3)
        assert err.value.errno in (2006, 2013, 1927), err.value
    finally:
        session.close()
        admin.close()
    (events3, *_rest), _lat3 = totals.take()
    assert events3 >= events  # the closed connection's counts stay with the Slot's totals


def test_an_interrupt_stops_one_run_at_once(table):
    """A deactivated connection stops within an event, not at the end of its run() (1 s); an interrupt that came
    between two runs stops the next one only (no lost stop, no spinning)."""
    import threading
    import time

    wl = load_workload("oltp_point_select")
    program = hot_program(wl.program(wl.options({"table_size": 10000})))
    session = HotSession(table, program, 3, HotTotals())
    try:
        t = threading.Thread(target=session.run, args=(30.0,))
        t0 = time.monotonic()
        t.start()
        time.sleep(0.2)
        session.interrupt()
        t.join(5)
        assert not t.is_alive() and time.monotonic() - t0 < 2.0
        session.interrupt()  # between runs: the next run() is the one it stops
        t0 = time.monotonic()
        session.run(30.0)
        assert time.monotonic() - t0 < 0.1
        (before, *_r), _lat = session.totals.take()
        session.run(0.2)  # consumed: this one runs its 0.2 s
        (after, *_r), _lat = session.totals.take()
        assert after > before
    finally:
        session.close()
