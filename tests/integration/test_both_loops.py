"""Every builtin family on both loops: the compiled loop (load/_hotloop.c: the OLTP program, or the family's
statement program, load/program.py) and the Python loop (the reference implementation) send the same statements
in the same mix. Checked on the server: the same statement digests (performance_schema), and the server's Com_*
per ended transaction equal within 2 %. The runs are long enough that the mix's own randomness stays well under
that (TPC-C's per-transaction select count varies most: ~20,000 transactions per loop keep its standard error
near 0.5 %)."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import global_status, open_connection
from tunebench.run.tasks import check_data, data_request, prepare_data

# TPC-C alone, after the rest of `make test` (Makefile: marker `solo`): the mix's randomness needs the transaction
# count a quiet machine gives. TPC-C draws each transaction's type, and new_order sends 12 inserts where payment
# sends 1: over n transactions Com_insert per transaction varies by ~1.03/sqrt(n), so two loops differ by
# ~1.5/sqrt(n) (one s.d.). Beside the suite's other workers a loop got ~4,000 transactions (2.3 %: 3.7 % apart was
# seen, and 2.5 % the other way under three CPU hogs); alone it gets ~20,000 (1.0 %). The other families run with
# the rest: OLTP's and iiBench's transactions all send the same statements (no draw), and dbSTRESS's counters are
# each counted per transaction of the types that send them (below), whose statements are fixed.
pytestmark = pytest.mark.integration
SOLO = ("tpcc-spec",)
MOST_PER_TRX = 32  # the most statements of one class a transaction sends (TPC-C's NewOrder: 2 + 2 x 15 selects)
COM = ("Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_rollback", "Com_begin")
# (workload, options, schema, seconds per loop, threads, anchor, {counter: the transaction types it is counted per})
# The anchor is the server's count of transactions: Com_commit + Com_rollback (every transaction of the family
# ends with one), or ("Com_commit", types) where only those types commit (dbSTRESS's reads are autocommit).
# A counter only some types send is counted per transaction of those types: TPC-C's deletes per Delivery, not
# per transaction of the mix, where 1 in 23 makes them vary by ~4 %. The server's counts of a type come from the
# anchor and the client's exact share of that type: every transaction the engine's connections ended, by type,
# the steps' edge seconds included (BuiltinEngine.ended_by_type; the Intervals leave the edges out, and a share
# estimated from them varied by up to 2.15 % for deletes per Delivery).
ALL = ("Com_commit", "Com_rollback")
# The seconds per loop: what a case's counts allow. OLTP's and iiBench-query's counts are exact (every transaction
# sends the same statements; a query is its own anchor): 14.0/1.0/2.0/1.0 and 1.0 per transaction on both loops,
# from ~400 transactions a second of the Python loop beside other work, so they run 2 s and 1 s (issue 41: 4 and 2
# cost ~4 CPU s more each). dbSTRESS keeps 6: its Com_select per read came out 1.011 on the Python loop and 0.997 on
# the compiled one (6 s at load 10: 1.4 % apart where 2 % fails), a difference the server's counts and the client's
# disagree by, not the mix's draw, which fewer transactions would weigh more. iibench-insert keeps 3: each connection's
# bounds SELECT, against ~60-130 INSERTs a loop, must stay under the 0.05 per transaction that leaves it out.
CASES = {
    "oltp_read_write": ("oltp_read_write", {"table_size": "10000", "tables": "2"}, "tb_loops_oltp", 2, 4,
                        (ALL, ()), {}),
    "tpcc-spec": ("tpcc", {"scale": "2"}, "tb_loops_tpcc", 25, 8, (ALL, ()), {"Com_delete": ("delivery",)}),
    "dbstress_rw1": ("dbstress_rw1", {"objects": "20000"}, "tb_loops_dbs", 6, 4, (("Com_commit",), ("write",)),
                     {"Com_select": ("sel1", "sel2"), "Com_insert": ("write",), "Com_update": ("write",),
                      "Com_delete": ("write",)}),
    # autocommit: one INSERT (and its DELETE) per insert, one SELECT per query
    "iibench-insert": ("iibench", {"initial_rows": "20000", "rows_per_commit": "100", "delete_per_insert": "on"},
                       "tb_loops_ii", 3, 2, (("Com_insert",), ()), {}),
    "iibench-query": ("iibench_query", {"initial_rows": "20000"}, "tb_loops_ii", 1, 2, (("Com_select",), ()), {}),
    "iibench-query-pk": ("iibench_query", {"initial_rows": "20000", "query_pk_only": "on"}, "tb_loops_ii", 1, 2,
                         (("Com_select",), ()), {}),
}


def _status(params) -> dict[str, int]:
    conn = open_connection(params)
    try:
        return global_status(conn, COM)
    finally:
        conn.close()


def _digests(params, schema: str) -> set[str]:
    conn = open_connection(params)
    try:
        cur = conn.cursor()
        cur.execute("SELECT DIGEST_TEXT FROM performance_schema.events_statements_summary_by_digest "
                    "WHERE SCHEMA_NAME = %s AND COUNT_STAR > 0", (schema,))
        # not the test's own statements, nor the ROLLBACK a deadlock's error path sends when one happens
        return {str(r[0]) for r in cur.fetchall()
                if r[0] and "performance_schema" not in r[0] and str(r[0]).strip() != "ROLLBACK"}
    finally:
        conn.close()


def _run(params, schema: str, workload: str, options: dict[str, str], seconds: int, threads: int,
         hot: bool, anchor: tuple[tuple[str, ...], tuple[str, ...]], per: dict[str, tuple[str, ...]],
         monkeypatch) -> tuple[dict[str, float], set[str], int]:
    monkeypatch.setenv("TUNEBENCH_HOT_LOOP", "1" if hot else "0")
    wl = load_workload(workload)
    opts = wl.options(options)
    p = dataclasses.replace(params, database=schema)
    conn = open_connection(p)
    conn.cursor().execute("TRUNCATE performance_schema.events_statements_summary_by_digest")
    conn.close()
    engine = BuiltinEngine(p, [ClientGroup("main", wl, opts, (threads,))], workers=2)
    intervals: list = []
    before = _status(p)
    engine.open()
    try:
        engine.run_step({"main": threads}, seconds, intervals.append, threading.Event())
        # the connections stop: the transactions they end meanwhile are in this second's figures too
        engine.run_step({"main": 0}, 1, intervals.append, threading.Event())
    finally:
        engine.close()
    after = _status(p)
    d = {k: after[k] - before[k] for k in COM}
    # the client's own count of every transaction of each type, the steps' edge seconds included (exact)
    by_type = dict(zip([t.name for t in wl.family.transactions(opts)], engine.ended_by_type.get("main", []),
                       strict=False))
    client_total = sum(by_type.values())
    assert client_total > 0 or not (anchor[1] or per), engine.ended_by_type

    def share(types: tuple[str, ...]) -> float:
        return sum(by_type[t] for t in types) / client_total if types else 1.0

    counters, anchor_types = anchor
    ended = sum(d[k] for k in counters) / share(anchor_types)  # the server's transactions of every type
    assert ended > 0
    out = {k: d[k] / ended for k in COM}
    for counter, types in per.items():
        out[counter] = d[counter] / (ended * share(types))
    out["retries"] = sum(iv.errors for iv in intervals) / ended  # errors retried, per transaction ended
    return out, _digests(p, schema), ended


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.solo) if c in SOLO else c for c in CASES])
def test_the_compiled_and_the_python_loop_send_the_same_statements_in_the_same_mix(sandbox, sandbox_params, case,
                                                                                     monkeypatch):
    workload, options, schema, seconds, threads, anchor, per = CASES[case]
    # prepared and checked in this process, as `tunebench prepare`/`check` do it (tasks.prepare_data, check_data):
    # the loops are what is tested, not the commands (each a process: ~1.5 CPU s, issue 41)
    request = data_request(workload, options, schema=schema)
    prepare_data(sandbox.target(), request)
    # the compiled loop first and last: the data grows (TPC-C), so the Python run sits between two of it
    hot1, hot_digests, n1 = _run(sandbox_params, schema, workload, options, seconds // 2 or 1, threads, True,
                                 anchor, per, monkeypatch)
    py, py_digests, n2 = _run(sandbox_params, schema, workload, options, seconds, threads, False, anchor, per,
                              monkeypatch)
    hot2, hot_digests2, n3 = _run(sandbox_params, schema, workload, options, seconds // 2 or 1, threads, True,
                                  anchor, per, monkeypatch)
    assert hot_digests | hot_digests2 == py_digests, (hot_digests ^ py_digests)
    hot = {k: (hot1[k] * n1 + hot2[k] * n3) / (n1 + n3) for k in (*COM, "retries")}
    # and the data still meets the family's own conditions (dbSTRESS: 20 history records per object, which a
    # WRITE whose DELETE missed its row breaks; TPC-C's consistency conditions)
    if workload in ("tpcc", "dbstress_rw1"):  # the families with a check
        checked = check_data(sandbox.target(), request, transport="socket")
        assert checked["ok"], checked["summary"]
    for k in ("Com_select", "Com_insert", "Com_update", "Com_delete"):
        if py[k] < 0.05 and hot[k] < 0.05:  # none, or a connection's setup (iiBench's bounds), not per transaction
            continue
        # A retried transaction (a deadlock) sent its statements up to the error again, counted by the server and not
        # as another transaction: the loop with more retries (the faster one, on a busy machine) sends more per
        # transaction ended, up to MOST_PER_TRX of a class per retry (a clean clone at load 14: TPC-C's inserts 5.72
        # against 5.54 per transaction). 2 % beyond what the retries can explain.
        allowed = 0.02 * py[k] + abs(hot["retries"] - py["retries"]) * MOST_PER_TRX
        assert abs(hot[k] - py[k]) <= allowed, (k, hot, py, n1 + n3, n2)
