"""dbSTRESS-like on the real sandbox: a data set loaded by the server, RO and RW1 groups at once with their
per-transaction-type series (SEL1, SEL2, WRITE), the WRITE statements as the server counts them, the history
kept whole (the family's check), and the +HPK shape loaded in place of the secondary index."""

from __future__ import annotations

import threading

import pytest

from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import global_status, open_connection, query_all
from tunebench.mysql.target import conn_params
from tunebench.run.tasks import check_data, data_request, prepare_data

pytestmark = pytest.mark.integration
SCHEMA = "tb_dbstress"


@pytest.fixture(scope="module")
def dbs(sandbox):
    target = sandbox.target()
    yield target
    prepare_data(target, data_request(None, cleanup=True, schema=SCHEMA))
    conn = open_connection(conn_params(target, None))
    try:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
    finally:
        conn.close()


def test_ro_and_rw1_side_by_side(dbs):
    target = dbs
    request = data_request("dbstress_ro", {"objects": 20000, "datasets": 2}, schema=SCHEMA, threads=2)
    rows: list = []
    done = prepare_data(target, request, on_rows=rows.append)
    assert done.tables == 10 and done.rows == 2 * (20000 * 21 + 210)
    assert rows and rows[-1].done == rows[-1].total  # rows/s and time left while it loaded
    params = conn_params(target, "socket", database=SCHEMA)
    ro, rw = load_workload("dbstress_ro"), load_workload("dbstress_rw1")
    groups = [ClientGroup("ro", ro, request.options, (2,)),
              ClientGroup("rw", rw, rw.options({"objects": 20000, "datasets": 2}), (2,))]
    engine = BuiltinEngine(params, groups, workers=2, seed=11)
    ivs = []
    conn = open_connection(params)
    keys = ("Com_delete", "Com_insert", "Com_update", "Com_commit", "Com_rollback")
    before = global_status(conn, keys)
    engine.open()
    try:
        engine.run_step({"ro": 2, "rw": 2}, 4, ivs.append, threading.Event())
    finally:
        engine.close()
    after = global_status(conn, keys)
    conn.close()
    d = {k: after[k] - before[k] for k in keys}
    # one of each per WRITE; a WRITE a deadlock ended after its DELETE (rolled back: the compiled loop's pace makes
    # them likelier) has sent the first of them only
    assert d["Com_commit"] > 10
    ended = d["Com_commit"] + d["Com_rollback"]
    assert d["Com_commit"] <= d["Com_update"] <= d["Com_insert"] <= d["Com_delete"] <= ended
    types = {g: {name for iv in ivs if iv.group == g for name in iv.trx} for g in ("ro", "rw")}
    assert types == {"ro": {"sel1", "sel2"}, "rw": {"sel1", "sel2", "write"}}
    rw_ivs = [iv for iv in ivs if iv.group == "rw"]
    writes = sum(iv.trx["write"]["tps"] for iv in rw_ivs)
    assert 0.35 < writes / sum(iv.tps for iv in rw_ivs) < 0.65  # RW1: reads and writes 1:1
    assert {"client.ro.trx.sel2.tps", "client.rw.trx.write.lat.p95"} <= set(rw_ivs[-1].series()) | set(
        next(iv for iv in ivs if iv.group == "ro").series())
    checked = check_data(target, request)
    assert checked["ok"] and len(checked["conditions"]) == 6, checked["summary"]  # 3 per data set


def test_the_hpk_shape_replaces_the_secondary_index(dbs):
    target = dbs
    request = data_request("dbstress_rw1", {"objects": 2000, "history_pk": "pk"}, schema=SCHEMA, threads=2)
    done = prepare_data(target, request)
    assert done.tables == 5 and "2,000 objects" in done.summary
    conn = open_connection(conn_params(target, None, database=SCHEMA))
    try:
        keys = query_all(conn, "SELECT index_name, GROUP_CONCAT(column_name ORDER BY seq_in_index) "
                               "FROM information_schema.statistics WHERE table_schema = %s AND table_name = 'history1' "
                               "GROUP BY index_name", (SCHEMA,))
    finally:
        conn.close()
    assert dict(keys) == {"PRIMARY": "ref_object,horder"}


def test_history_moved_between_objects_fails_the_check_and_prepare_says_it_kept_the_data(dbs):
    """One record moved from an object to another keeps the total count: the check used to say "consistent" (it
    compared totals) and prepare "prepared 0 data set(s)" over the damaged data. The check is per object now,
    and prepare says what it did: nothing, the data kept as it is."""
    target = dbs
    request = data_request("dbstress_rw1", {"objects": 2000, "history_pk": "pk"}, schema=SCHEMA, threads=2)
    prepare_data(target, request)
    assert check_data(target, request)["ok"]
    conn = open_connection(conn_params(target, None, database=SCHEMA))
    try:
        cur = conn.cursor()
        cur.execute("UPDATE history1 SET ref_object = 'O000000002', horder = 21 "
                    "WHERE ref_object = 'O000000001' AND horder = 1")
        cur.close()
    finally:
        conn.close()
    checked = check_data(target, request)
    assert not checked["ok"], checked["summary"]
    assert "2 object(s) whose records are not 1..20 (e.g. O000000001: 19 records" in checked["summary"], \
        checked["summary"]
    again = prepare_data(target, request)
    assert again.summary.startswith(f"nothing to prepare in {SCHEMA}: the dbstress_rw1 data of this shape is there "
                                    "already, kept as it is"), again.summary
    assert "prepared 0" not in again.summary
