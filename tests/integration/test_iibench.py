"""The insert benchmark on the real sandbox: tables prepared with initial rows made by the server, inserts
(1 INSERT of rows_per_commit rows per transaction, as the server counts them) beside query clients running
the reference's three index shapes, and the tables' size recorded per second by the `tables` probe."""

from __future__ import annotations

import json
import threading

import pytest
from tests.conftest import run_cli

from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import global_status, open_connection, query_all
from tunebench.mysql.target import conn_params
from tunebench.run.tasks import data_request, prepare_data

pytestmark = pytest.mark.integration
SCHEMA = "tb_iibench"


@pytest.fixture(scope="module")
def iib(sandbox):
    target = sandbox.target()
    request = data_request("iibench", {"tables": 2, "initial_rows": 20000, "rows_per_commit": 100}, schema=SCHEMA,
                           threads=2)
    done = prepare_data(target, request)
    yield target, request, done
    prepare_data(target, data_request(None, cleanup=True, schema=SCHEMA))
    conn = open_connection(conn_params(target, None))
    try:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
    finally:
        conn.close()


def test_prepare_makes_the_tables_and_their_rows(iib):
    target, _request, done = iib
    assert done.summary.startswith("prepared 2 purchases_index table(s) x 20,000 rows in tb_iibench")
    assert done.rows == 40000
    conn = open_connection(conn_params(target, None, database=SCHEMA))
    try:
        assert query_all(conn, "SELECT COUNT(*), MAX(price) < 500, MAX(cashregisterid) < 1000 "
                               "FROM purchases_index2")[0] == (20000, 1, 1)
        indexes = {r[0] for r in query_all(conn, "SELECT DISTINCT index_name FROM information_schema.statistics "
                                                 "WHERE table_schema = %s AND table_name = 'purchases_index1'",
                                           (SCHEMA,))}
    finally:
        conn.close()
    assert indexes == {"PRIMARY", "purchases_index1_marketsegment", "purchases_index1_registersegment",
                       "purchases_index1_pdc"}


def test_inserts_and_queries_as_the_server_counts_them(iib):
    target, request, _done = iib
    params = conn_params(target, "socket", database=SCHEMA)
    ins, q = load_workload("iibench"), load_workload("iibench_query")
    groups = [ClientGroup("ins", ins, request.options, (2,)),
              ClientGroup("q", q, q.options({"tables": 2}), (1,))]
    engine = BuiltinEngine(params, groups, workers=2, seed=3)
    ivs = []
    conn = open_connection(params)
    keys = ("Com_insert", "Com_select", "Handler_write")
    before = global_status(conn, keys)
    rows_before = query_all(conn, "SELECT (SELECT COUNT(*) FROM purchases_index1) + "
                                  "(SELECT COUNT(*) FROM purchases_index2)")[0][0]
    engine.open()
    try:
        engine.run_step({"ins": 2, "q": 1}, 4, ivs.append, threading.Event())
    finally:
        engine.close()
    after = global_status(conn, keys)
    rows_after = query_all(conn, "SELECT (SELECT COUNT(*) FROM purchases_index1) + "
                                 "(SELECT COUNT(*) FROM purchases_index2)")[0][0]
    conn.close()
    inserts = (after["Com_insert"] - before["Com_insert"])
    assert inserts > 10
    assert rows_after - rows_before == 100 * inserts  # every transaction: one INSERT of rows_per_commit rows
    mine = [iv for iv in ivs if iv.group == "ins"]
    assert sum(iv.writes for iv in mine) == sum(iv.tps for iv in mine) > 10  # one statement per transaction
    qs = [iv for iv in ivs if iv.group == "q"]
    assert sum(iv.reads for iv in qs) > 10 and not any(iv.trx for iv in ivs if iv.group == "ins")
    per_type = {name for iv in qs for name in iv.trx}
    assert per_type == {"marketsegment", "registersegment", "pdc"}


def test_a_run_records_the_tables_growing(iib):
    r = run_cli("run", "--workload", "iibench", "-o", "tables=2", "-o", "initial_rows=20000", "-o",
                "rows_per_commit=100", "--schema", SCHEMA, "--threads", "2", "--step-seconds", "4",
                "--probes", "status,tables", "--json")
    assert r.returncode == 0, r.stderr
    sid = json.loads(r.stdout)["session_id"]
    shown = json.loads(run_cli("sessions", "show", str(sid), "--json").stdout)
    series = shown["series"]
    assert {"table.purchases_index1.mb", "table.purchases_index2.mb", "table.total.mb",
            "server.innodb_buffer_pool_pages_data", "server.innodb_buffer_pool_pages_free"} <= set(series)
    assert series["table.total.mb"]["max"] > 5
    assert any("probe tables: information_schema.INNODB_SYS_TABLESPACES" in e["label"] for e in shown["events"])


def test_a_cancelled_load_leaves_no_half_made_table(sandbox):
    """Cancelled while loading: the tables not whole are dropped (never registered), so a next prepare makes
    them again and cleanup has nothing unknown to it."""
    target = sandbox.target()
    cancel = threading.Event()
    request = data_request("iibench", {"tables": 2, "initial_rows": 400_000}, schema="tb_iib_cancel", threads=2)
    seen = []

    def on_rows(p):
        seen.append(p)
        cancel.set()  # at the first progress report

    done = prepare_data(target, request, on_rows=on_rows, cancel=cancel)
    try:
        assert done.cancelled and seen and done.summary.startswith("prepare cancelled after")
        conn = open_connection(conn_params(target, None))
        try:
            left = query_all(conn, "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                                   "'tb_iib_cancel'")
        finally:
            conn.close()
        assert [r[0] for r in left] == ["tunebench_tables"]
    finally:
        prepare_data(target, data_request(None, cleanup=True, schema="tb_iib_cancel"))
        conn = open_connection(conn_params(target, None))
        conn.cursor().execute("DROP DATABASE IF EXISTS tb_iib_cancel")
        conn.close()
