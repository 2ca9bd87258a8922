"""The compiled hot loop (load/_hotloop.c) on the sandbox: its ids follow sysbench's distributions as
load/randgen.py draws them; a server error comes back as the Python loop's DriverError, with the statements done
before it counted; a connection killed under it is an error to reconnect after, not a crash. What Python hands it
is checked before it indexes anything, a program() that fails leaves the previous one, and a call from another
thread while the GIL is released is refused. `make sanitized-hotloop` runs this file under ASan and UBSan."""

import dataclasses
import json
import math
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import run_cli, wait_until

import tunebench
from tunebench.load import _hotloop
from tunebench.load.driver import DriverError
from tunebench.load.hotloop import (
    OP_DELETE_INSERT,
    OP_NON_INDEX,
    OP_POINT,
    OP_RANGE,
    HotSession,
    HotTotals,
    hot_program,
    open_conn,
)
from tunebench.load.oltp import C_TEMPLATE, PAD_TEMPLATE
from tunebench.load.prepare import prepare
from tunebench.load.randgen import draw
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import open_connection
from tunebench.paths import resources_dir, workloads_dir

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
        (events, reads, writes, other, _late, _skipped, _errors), lat, _svc, _typed, _codes = totals.take()
        assert events > 0 and len(lat) == 8 * events and reads == 14 * events and writes == 4 * events
        cur = admin.cursor()
        cur.execute("RENAME TABLE tunebench.sbtest1 TO tunebench.sbtest1_away")
        try:
            with pytest.raises(DriverError) as err:
                session.run(0.3)
            assert err.value.errno == 1146  # table doesn't exist: the Python loop ends the connection on it
            (events2, reads2, _w, other2, *_open), lat2, _svc2, _typed2, _codes2 = totals.take()
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
    (events3, *_rest), _lat3, _svc3, _typed3, _codes3 = totals.take()
    assert events3 >= events  # the closed connection's counts stay with the Slot's totals


def test_a_take_as_of_an_edge_leaves_later_events_for_the_next_take(table):
    """grid(t0) and take(until): the state as of a second's edge, whenever the take comes; the events that ended
    after it (their counts and latencies together) stay for the next take, and nothing is lost (issue 41)."""
    wl = load_workload("oltp_read_write")
    program = hot_program(wl.program(wl.options({"table_size": 10000})))
    start = time.monotonic_ns()
    grid0 = start - 700_000_000  # edges 0.3 s and 1.3 s from now
    totals = HotTotals(grid0)
    session = HotSession(table, program, 1, totals)
    try:
        while time.monotonic_ns() < grid0 + 2_100_000_000:  # past both edges (a busy machine may stall a run)
            session.run(0.2)
        edge1, edge2 = grid0 + 1_000_000_000, grid0 + 2_000_000_000
        (e1, r1, *_c1), lat1, _s1, _t1, _k1 = totals.take(edge1)
        (e2, r2, *_c2), lat2, _s2, _t2, _k2 = totals.take(edge2)
        (e3, r3, *_c3), lat3, _s3, _t3, _k3 = totals.take()
        assert 0 < e1 < e2 < e3, (e1, e2, e3)
        # each take's latencies are its events' (8 bytes each), its reads 14 an event
        assert (len(lat1), len(lat2), len(lat3)) == (8 * e1, 8 * (e2 - e1), 8 * (e3 - e2))
        assert (r1, r2, r3) == (14 * e1, 14 * e2, 14 * e3)
        (e4, *_c4), lat4, _s4, _t4, _k4 = totals.take(grid0 + 3_000_000_000)  # an edge no event has crossed
        assert e4 == e3 and lat4 == b""
    finally:
        session.close()


def test_an_interrupt_stops_one_run_at_once(table):
    """A deactivated connection stops within an event, not at the end of its run() (1 s); an interrupt that came
    between two runs stops the next one only (no lost stop, no spinning)."""
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
        (before, *_r), _lat, _svc, _t, _k = session.totals.take()
        session.run(0.2)  # consumed: this one runs its 0.2 s
        (after, *_r), _lat, _svc, _t, _k = session.totals.take()
        assert after > before
    finally:
        session.close()


def _hot(name, **options):
    wl = load_workload(name)
    return hot_program(wl.program(wl.options({"table_size": 10000, **options})))


def _program(conn, hot, ops=None, **changed):
    """conn.program() with `hot`'s arguments, its ops or `ops`, any of them `changed`."""
    args = {"ops": list(hot.ops if ops is None else ops), "ntables": hot.ntables, "range_extra": hot.range_extra,
            "dist": hot.dist, "c_template": C_TEMPLATE.encode(), "pad_template": PAD_TEMPLATE.encode(), **changed}
    conn.program(*args.values())


def _per_event(conn, seconds=0.1):
    """(reads, writes, other) per event over one run(seconds): which program ran."""
    e0, r0, w0, o0, *_taken = conn.take()
    conn.run(seconds)
    e, r, w, o, *_taken = conn.take()
    assert e > e0
    return ((r - r0) / (e - e0), (w - w0) / (e - e0), (o - o0) / (e - e0))


def _conn_args(params, tls=0):
    """_hotloop.Conn's arguments, as open_conn gives them."""
    return (params.host if not params.socket else None, int(params.port or 0), params.socket or None, params.user,
            params.password, params.database, 10, 1, tls, None, None, None)


@pytest.fixture
def read_only(table):
    """A connection with oltp_read_only's statements prepared, running its point selects only (1 read an event):
    what a refused program() must leave in place."""
    hot = _hot("oltp_read_only")
    conn = open_conn(table, hot, seed=11)
    point = next(op for op in hot.ops if op[0] == OP_POINT)
    _program(conn, hot, [(OP_POINT, 1, 0, point[3], None)])
    assert _per_event(conn) == (1, 0, 0)
    yield conn, hot, point[3][0]
    conn.close()


@pytest.mark.parametrize("name", ["oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only",
                                  "oltp_update_index", "oltp_update_non_index", "oltp_delete"])
def test_every_program_the_loop_takes_passes_its_checks_and_runs_its_mix(table, name):
    wl = load_workload(name)
    program = wl.program(wl.options({"table_size": 10000}))
    conn = open_conn(table, hot_program(program), seed=2)
    try:
        mix = program.statement_mix()
        assert _per_event(conn, 0.05) == (mix["read"], mix["write"], mix["other"])
    finally:
        conn.close()


# what a bad op is, next to the good (OP_POINT, 1, read, (point select,), None); 7 statements are prepared
BAD_OPS = {
    "kind 5": lambda p: [(5, 1, 0, (p,), None)],
    "kind -1": lambda p: [(-1, 1, 0, (p,), None)],
    "counts as 3": lambda p: [(OP_POINT, 1, 3, (p,), None)],
    "counts as -1": lambda p: [(OP_POINT, 1, -1, (p,), None)],
    "count -1": lambda p: [(OP_POINT, -1, 0, (p,), None)],
    "statement 7": lambda p: [(OP_POINT, 1, 0, (7,), None)],
    "statement -1": lambda p: [(OP_POINT, 1, 0, (-1,), None)],
    "statement 2**40": lambda p: [(OP_POINT, 1, 0, (2**40,), None)],
    "two statements for one table": lambda p: [(OP_POINT, 1, 0, (p, p), None)],
    "second statements on a point op": lambda p: [(OP_POINT, 1, 0, (p,), (p,))],
    "delete_inserts without inserts": lambda p: [(OP_DELETE_INSERT, 1, 1, (p,), None)],
    "a range op on a one-value statement": lambda p: [(OP_RANGE, 1, 0, (p,), None)],
    "a statement bound two ways": lambda p: [(OP_RANGE, 1, 0, (p + 1,), None), (OP_NON_INDEX, 1, 1, (p + 1,), None)],
    "a good op, then a bad one": lambda p: [(OP_POINT, 1, 0, (p,), None), (OP_POINT, 1, 9, (p,), None)],
}


@pytest.mark.parametrize("bad", list(BAD_OPS))
def test_a_bad_op_is_refused_and_the_previous_program_stays(read_only, bad):
    """An op's kind and class index the loop's arrays and switch (a counts_as of 3 wrote past the event's three
    counters); they, the statement indexes and what each statement takes are checked first. A refused program
    used to leave no program at all, or a half-bound one."""
    conn, hot, point = read_only
    assert hot.statements[point + 1].startswith("SELECT c FROM sbtest1 WHERE id BETWEEN")  # BAD_OPS' p + 1
    with pytest.raises(ValueError):
        _program(conn, hot, BAD_OPS[bad](point))
    assert _per_event(conn) == (1, 0, 0)


BAD_OPTIONS = {
    "no tables": {"ntables": 0},
    "range_extra -1": {"range_extra": -1},
    "distribution 4": {"dist": (4, 1, 10000, 12, 1.0, 1, 75)},
    "distribution -1": {"dist": (-1, 1, 10000, 12, 1.0, 1, 75)},
    "ids below 0": {"dist": (0, -5, 10000, 12, 1.0, 1, 75)},
    "ids past 2**55": {"dist": (0, 1, 2**60, 12, 1.0, 1, 75)},
    "0 iterations": {"dist": (1, 1, 10000, 0, 1.0, 1, 75)},
    "pareto power nan": {"dist": (2, 1, 10000, 12, math.nan, 1, 75)},
    "pareto power -1": {"dist": (2, 1, 10000, 12, -1.0, 1, 75)},
    "special pct 101": {"dist": (3, 1, 10000, 12, 1.0, 101, 75)},
    "special res 100": {"dist": (0, 1, 10000, 12, 1.0, 1, 100)},
    "c template of 300": {"c_template": b"#" * 300},
    "pad template of 255": {"pad_template": b"#" * 255},
}


@pytest.mark.parametrize("bad", list(BAD_OPTIONS))
def test_bad_program_options_are_refused_and_the_previous_program_stays(read_only, bad):
    """The distribution's kind picks sysbench's formula, its numbers go into int64 arithmetic (kept from
    overflowing) and a double-to-int cast; a template is copied into a 256-byte buffer. A template refused after
    the ops were taken used to leave oltp_read_only's ops installed without templates: the next run() ran them."""
    conn, hot, _point = read_only
    with pytest.raises(ValueError):
        _program(conn, hot, **BAD_OPTIONS[bad])
    assert _per_event(conn) == (1, 0, 0)


def _calls(hot):
    return {
        "close": lambda conn: conn.close(),
        "program": lambda conn: _program(conn, hot),
        "prepare": lambda conn: conn.prepare(b"SELECT 1"),
        "query": lambda conn: conn.query(b"SELECT 1"),
        "draw": lambda conn: conn.draw(10),
        "run": lambda conn: conn.run(0.1),
    }


@pytest.mark.parametrize("call", ["close", "program", "prepare", "query", "draw", "run"])
def test_a_call_from_another_thread_while_run_holds_no_gil_is_refused(table, call):
    """run() releases the GIL for up to 30 s. close() then returned having done nothing (the Slot thought its
    connection closed); program() freed the ops the loop was reading and prepare() moved its statement arrays
    (use after free); query(), a second run() and draw() shared the connection or its generator with the loop.
    Each now raises RuntimeError and the loop runs on unharmed; take() and stop() are the calls that may come."""
    hot = _hot("oltp_read_write")
    conn = open_conn(table, hot, seed=5)
    failed = []

    def run():
        try:
            conn.run(30.0)
        except BaseException as exc:
            failed.append(exc)

    loop = threading.Thread(target=run)
    try:
        loop.start()
        wait_until(lambda: conn.take()[0] > 0, 10, "events from the running loop")
        with pytest.raises(RuntimeError, match="in use by another thread"):
            _calls(hot)[call](conn)
        done = conn.take()[0]
        wait_until(lambda: conn.take()[0] > done, 10, "more events after the refused call")
    finally:
        conn.stop()
        loop.join(10)
    assert not loop.is_alive() and failed == []
    assert _per_event(conn, 0.05) == (14, 4, 2)  # the connection and its program are whole
    conn.close()


def test_bad_numbers_at_the_boundary_are_refused(table):
    """run()'s seconds become an int64 deadline (NaN or inf: undefined); draw(-1) reached PyList_New; a TLS mode
    out of range was taken as ENFORCE; a second __init__ leaked the first connection and replaced it."""
    conn = open_conn(table, _hot("oltp_point_select"), seed=3)
    try:
        for seconds in (math.nan, math.inf, -1.0, 1e300):
            with pytest.raises(ValueError):
                conn.run(seconds)
        with pytest.raises(ValueError):
            conn.draw(-1)
        with pytest.raises(RuntimeError, match="already open"):
            conn.__init__(*_conn_args(table))
        assert _per_event(conn) == (1, 0, 0)
    finally:
        conn.close()
    for tls in (-1, 5):
        with pytest.raises(ValueError, match="TLS mode"):
            _hotloop.Conn(*_conn_args(table, tls))


def test_a_run_without_the_compiled_loop_runs_the_python_loop_and_records_so(sandbox, tmp_path):
    """A build without the loop (setup.py builds it as optional: no compiler, no libmariadb-dev) runs: the workers,
    which import the package anew (spawned), take the Python loop, and the session's config says which loop ran
    and why."""
    shutil.copytree(Path(tunebench.__file__).parent, tmp_path / "tunebench",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    env = {"PYTHONPATH": str(tmp_path), "TUNEBENCH_RESOURCES": str(resources_dir()),
           "TUNEBENCH_WORKLOADS": str(workloads_dir())}
    run = run_cli("run", "--workload", "oltp_point_select", "--threads", "1", "--step-seconds", "2", "--probes",
                  "none", "--json", env=env)
    assert run.returncode == 0, run.stderr
    show = run_cli("sessions", "show", str(json.loads(run.stdout)["session_id"]), "--json", env=env)
    session = json.loads(show.stdout)
    assert session["config"]["engine_loop"].startswith("Python loop: the compiled loop is not built"), session["config"]
    assert session["summary"]["steps"][0]["tps"] > 0


def test_open_loop_in_c_claims_due_times_and_counts_from_them(table):
    """Issue 31's compiled loop: a DueQueue fed 200 due times 5 ms apart; run() claims them in order, starts each
    at its time, and its latency counts from the due time (service from the start). With a 1 ms latency limit,
    times already too late when the connection is free are skipped and counted. Bad pushes are refused."""
    import time

    import numpy as np

    from tunebench.load import _hotloop

    program = _hot("oltp_point_select")
    conn = open_conn(table, program, 1)
    try:
        q = _hotloop.DueQueue(0)
        start = time.monotonic_ns() + 50_000_000
        due = np.arange(start, start + 200 * 5_000_000, 5_000_000, dtype=np.int64)
        q.push(due.tobytes())
        assert q.pending() == 200 and q.backlog(start - 1) == (0, 0)
        # until every due time is claimed (1.05 s of them; under ASan on a busy machine a fixed 1.2 s left some)
        deadline = time.monotonic() + 20
        while (q.pending() or time.monotonic_ns() < int(due[-1])) and time.monotonic() < deadline:
            conn.run(0.3, q)
        conn.run(0.05, q)  # the last one's end
        e, _r, _w, _o, lat, svc, late, skipped, _errors, _typed, _codes = conn.take()
        lat_ns, svc_ns = np.frombuffer(lat, dtype=np.int64), np.frombuffer(svc, dtype=np.int64)
        assert e == 200 and len(lat_ns) == len(svc_ns) == 200 and (late, skipped) == (0, 0)
        assert np.all(lat_ns >= svc_ns) and np.all(svc_ns > 0)
        assert q.pending() == 0
        # 100 times already 100-600 ms late, a 1 ms limit: all but the last are skipped
        late_q = _hotloop.DueQueue(1_000_000)
        now = time.monotonic_ns()
        late_q.push(np.arange(now - 600_000_000, now - 100_000_000, 5_000_000, dtype=np.int64).tobytes())
        assert late_q.backlog(now)[0] == 100 and late_q.backlog(now)[1] >= 500_000_000
        conn.run(0.05, late_q)
        *_counts, late2, skipped2, _errors2, _typed2, _codes2 = conn.take()
        assert skipped2 == 100 and late2 == 0  # every one was later than the limit when the connection was free
        assert late_q.drop(time.monotonic_ns()) == 0
        for bad in (np.array([3, 2], dtype=np.int64).tobytes(), b"123"):
            with pytest.raises(ValueError):
                late_q.push(bad)
        with pytest.raises(TypeError):
            conn.run(0.01, "not a queue")
    finally:
        conn.close()


# ---- the statement-program VM (load/program.py) ------------------------------------------------------------------

def _vm_conn(params, program, registers=()):
    return open_conn(params, program, seed=11, registers=list(registers))


def test_a_statement_program_computes_sends_and_reads_back_what_the_python_code_would(table):
    """Arithmetic as Python's (floored // and %, doubles from DECIMAL text), SQL literals quoted and escaped, rows
    read back by index, constants picked, printf-style formats, and the per-type counts."""
    from tunebench.load.program import Asm

    a = Asm(types=2)
    x, y, q, r, s, n, rows, got, fmt, pick, zero = a.regs(11)
    cols = a.regs(2)
    k = a.param("k")
    a.init()
    a.exec("none", "SET @tb_vm = 1")
    a.end()
    a.event()
    a.type(1)
    a.mov(x, -7)
    a.idiv(q, x, 2)
    a.mod(r, x, 2)
    a.mov(s, "it's a \\ test")
    a.exec("read", "SELECT ?, ? + 0.25, %d", s, k, k, rows=rows, into=cols)
    a.add(y, cols[1], 1)  # '42.25' + 1
    a.exec("read", "SELECT id FROM sbtest1 WHERE id <= 3 ORDER BY id", rows=n)
    a.row([got], 2)
    a.pick(pick, ["BAR", "OUGHT", "ABLE"], 1)
    a.format(fmt, "|%4d|%-5s|%7.2f|%05d", k, pick, y, k)
    a.mov(zero, fmt)
    a.substr(fmt, fmt, 17)
    a.end()
    prog = a.program()
    conn = _vm_conn(table, prog, [(k.n, 42)])
    try:
        conn.stop()  # the next run() returns at once: nothing ran
        conn.run(5.0)
        assert conn.take()[0] == 0
        # one event: run for a moment and stop after the first
        t = threading.Thread(target=conn.run, args=(30.0,))
        t.start()
        wait_until(lambda: conn.take()[0] >= 1, 10, "an event")
        conn.stop()
        t.join(10)
        assert conn.reg(q.n) == -4 and conn.reg(r.n) == 1
        assert conn.reg(cols[0].n) == b"it's a \\ test"  # sent quoted and escaped, came back whole
        assert conn.reg(y.n) == pytest.approx(43.25)
        assert conn.reg(rows.n) == 1 and conn.reg(n.n) == 3 and conn.reg(got.n) == b"3"
        assert conn.reg(fmt.n) == b"|  42|OUGHT|  43."
        assert conn.reg(zero.n).endswith(b"|00042")  # zero-padded (%05d): dbSTRESS's object refs
        _e, reads, _w, _o, lat, _svc, _late, _sk, errors, typed, _codes = conn.take()
        assert typed[1][0] >= 1 and typed[0] == (0, 0, 0, 0) and reads == 2 * typed[1][0] and errors == 0
        assert set((np.frombuffer(lat, dtype=np.int64) >> 56).tolist()) <= {1}  # tagged with their type
    finally:
        conn.close()


@pytest.mark.parametrize("bad, what", [
    ([(1, 99, -1)], "register out of range"),     # MOV to a register the program does not have
    ([(1, 0, -99)], "operand out of range"),      # a constant it does not have
    ([(22, 5)], "jump out of the program"),
    ([(32, 7)], "no such transaction type"),
    ([(30, 0, 0, 5, -1)], "picked constants out of range"),
    ([(99,)], "no such instruction"),
])
def test_a_statement_program_that_indexes_out_of_its_arrays_is_refused_and_the_previous_stays(table, bad, what):
    from tunebench.load.program import Asm

    a = Asm(types=1)
    v = a.reg()
    a.event()
    a.mov(v, 5)
    a.end()
    good = a.program()
    conn = _vm_conn(table, good)
    try:
        args = list(good.as_args())
        args[2] = [*bad, (0,)]
        with pytest.raises(ValueError, match=what):
            conn.vm(tuple(args), [])
        t = threading.Thread(target=conn.run, args=(30.0,))
        t.start()
        wait_until(lambda: conn.take()[0] >= 1, 10, "events of the previous program")
        conn.stop()
        t.join(10)
        assert conn.reg(v.n) == 5
    finally:
        conn.close()


def test_a_statement_sent_ahead_overlaps_the_programs_own_work_and_counts_when_read(table):
    """send() then recv(): the program goes on while the server runs the statement (iiBench builds its next
    INSERT meanwhile), its rows and its count come with recv(); a statement sent while another's result is unread,
    or a recv() with none sent, is a clear error and the connection stays usable."""
    from tunebench.load.program import Asm

    a = Asm(types=1)
    n, x, got = a.regs(3)
    a.event()
    a.send("read", "SELECT SLEEP(0.2), %d", 5)
    a.mov(x, 0)
    busy = a.label()
    a.here(busy)  # the client's work while the server sleeps
    a.add(x, x, 1)
    a.lt(n, x, 1000)
    a.jnz(n, busy)
    a.recv()
    a.nrows(n)
    a.row([got], 0)
    a.end()
    conn = _vm_conn(table, a.program())
    try:
        t = threading.Thread(target=conn.run, args=(30.0,))
        t0 = time.monotonic()
        t.start()
        wait_until(lambda: conn.take()[0] >= 1, 10, "an event")
        conn.stop()
        t.join(10)
        assert time.monotonic() - t0 >= 0.2
        assert conn.reg(x.n) == 1000 and conn.reg(n.n) == 1 and conn.reg(got.n) == b"0"
        for bad, says in ((lambda b: (b.send("read", "SELECT 1"), b.exec("read", "SELECT 2")), "not read"),
                          (lambda b: (b.send("read", "SELECT 1"), b.send("read", "SELECT 2")), "not read"),
                          (lambda b: b.recv(), "no statement sent")):
            b = Asm(types=1)
            b.event()
            bad(b)
            b.end()
            conn.vm(b.program().as_args(), [])
            with pytest.raises(ValueError, match=says):
                conn.run(5.0)
            # an event that failed with a statement in flight: its result is read and dropped at the next one
            conn.query(b"SELECT 1")
    finally:
        conn.close()


def test_a_statement_program_error_at_run_time_is_a_clear_error_not_a_crash(table):
    """An index computed at run time out of its table, a runaway loop: ValueError, the connection usable."""
    from tunebench.load.program import Asm

    a = Asm(types=1)
    i, v = a.regs(2)
    a.event()
    a.mov(i, 7)
    a.pick(v, [1, 2, 3], i)
    a.end()
    conn = _vm_conn(table, a.program())
    try:
        with pytest.raises(ValueError, match="picked index out of its range"):
            conn.run(5.0)
        b = Asm(types=1)
        b.event()
        loop = b.label()
        b.here(loop)
        b.jmp(loop)
        conn.vm(b.program().as_args(), [])
        with pytest.raises(ValueError, match="50,000,000 steps"):
            conn.run(5.0)
        conn.query(b"SELECT 1")
    finally:
        conn.close()


def test_a_statement_program_retries_a_deadlock_from_its_retry_point_and_counts_it(table, sandbox_params):
    """Two programs that lock two rows in opposite orders: the server's deadlocks are rolled back and run again
    (counted as retries, and as errors), and every event ends."""
    from tunebench.load.program import Asm

    conn0 = open_connection(sandbox_params)
    cur = conn0.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS tb_vm")  # its own schema: dropped at the end, nothing left in tunebench
    cur.execute("CREATE TABLE IF NOT EXISTS tb_vm.locks (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
    cur.execute("REPLACE INTO tb_vm.locks VALUES (1, 0), (2, 0)")

    def program(first: int, second: int):
        a = Asm(types=1)
        a.event()
        a.retry()
        a.exec("other", "BEGIN")
        a.exec("write", "UPDATE tb_vm.locks SET v = v + 1 WHERE id = %d", first)
        a.exec("none", "DO SLEEP(0.01)")
        a.exec("write", "UPDATE tb_vm.locks SET v = v + 1 WHERE id = %d", second)
        a.exec("other", "COMMIT")
        a.end()
        return a.program()

    conns = [_vm_conn(table, program(1, 2)), _vm_conn(table, program(2, 1))]
    threads = [threading.Thread(target=c.run, args=(3.0,)) for c in conns]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        taken = [c.take() for c in conns]
        retries = sum(t[9][0][3] for t in taken)
        assert retries >= 1, "no deadlock in 3 s of opposite lock orders"
        assert sum(t[8] for t in taken) == retries
        # each retry by its error code (issue 44 item 4): InnoDB's deadlock, 1213, every one of them
        assert [dict(t[10]) for t in taken if t[10]] and sum(n for t in taken for n in t[10].values()) == retries
        assert {c for t in taken for c in t[10]} == {1213}, [t[10] for t in taken]
        events = sum(t[0] for t in taken)
        cur.execute("SELECT SUM(v) FROM tb_vm.locks")
        assert int(cur.fetchall()[0][0]) == 2 * events  # every event's two updates committed once
    finally:
        for c in conns:
            c.close()
        cur.execute("DROP DATABASE tb_vm")
        conn0.close()


@pytest.mark.parametrize("op, a_val, b_val", [("mul", 2**62, 4), ("add", 2**63 - 1, 1), ("sub", -(2**63), 1),
                                              ("idiv", -(2**63), -1), ("mod", -(2**63), -1)])
def test_integer_overflow_in_a_statement_program_is_its_error_not_undefined_behaviour(table, op, a_val, b_val):
    """Issue 43 item 20: the VM's int64 arithmetic had undefined behaviour (INT64_MIN // -1 raised SIGFPE and
    killed the worker; + and * wrapped to a number sent to the server). Each is now the program's error."""
    from tunebench.load.program import Asm

    a = Asm(types=1)
    x, y, r = a.regs(3)
    a.event()
    a.mov(x, a_val)
    a.mov(y, b_val)
    getattr(a, op)(r, x, y)
    a.end()
    conn = _vm_conn(table, a.program())
    try:
        with pytest.raises(ValueError, match="the program failed: integer overflow"):
            conn.run(5.0)
    finally:
        conn.close()


def test_a_format_wider_than_400_characters_is_sent_whole(table):
    """Issue 43 item 20: buf_printf cut a field at 399 characters without a word, where widths up to 4,000 are
    allowed: the statement carried a shorter value than the program asked for."""
    from tunebench.load.program import Asm

    a = Asm(types=1)
    v, n, got = a.regs(3)
    a.event()
    a.mov(v, 7)
    a.exec("read", "SELECT LENGTH('%3000d')", v, rows=n, into=[got])
    a.end()
    conn = _vm_conn(table, a.program())
    try:
        t = threading.Thread(target=conn.run, args=(30.0,))
        t.start()
        wait_until(lambda: conn.take()[0] >= 1, 10, "an event")
        conn.stop()
        t.join(10)
        assert conn.reg(got.n) == b"3000"
    finally:
        conn.close()
