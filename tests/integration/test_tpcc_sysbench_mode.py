"""-o mode=sysbench-tpcc on both loops on the same data: the Python loop (the reference implementation, written
from sysbench-tpcc's observed behaviour) and the compiled loop's statement program send the same statements (the
server's digests) and the same statement counts per transaction (the server's Com_* counters), and sysbench-tpcc's
simplifications show in the data and the general log. The counts per transaction are also checked against
sysbench-tpcc's own, as a referee measured them with the real tool (select 12.9-13.1, update 7.34-7.44, insert
5.6-5.7, delete 0.42-0.45 per transaction at scale 4). sysbench-tpcc itself is not ours to ship (no registry CI
reaches has it): bench/tpcc_vs_sysbench.py --tpcc-dir runs it beside the builtin on a clone the user fetched."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import global_status, open_connection, query_all
from tunebench.mysql.target import conn_params
from tunebench.run.tasks import check_data, data_request, prepare_data

pytestmark = pytest.mark.integration
# sysbench-tpcc's statements per transaction at the nominal mix, measured with the real tool (the referee)
REFERENCE_PER_TRX = {"select": 13.0, "update": 7.39, "insert": 5.65, "delete": 0.435}
SCHEMA, SCALE, THREADS = "tb_tpcc_sb", 2, 8
# Transactions per tool: enough that 2 % is ~4 standard deviations of the difference of two runs' statements per
# transaction at the nominal mix (the spread of NewOrder's 5-15 lines is what is left).
TRANSACTIONS = 10_000
COM = ("Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_rollback",
       "Com_stmt_reprepare", "Aborted_clients")  # the last two: said when the counts disagree
WEIGHTS = {"new_order": 10, "payment": 10, "order_status": 1, "delivery": 1, "stock_level": 1}
# A fragment of each statement's digest text (lower case, no backquotes) -> its transaction; every statement must
# match fragments of one transaction only. The last-name count is both Payment's and OrderStatus's.
FRAGMENTS = {
    "new_order": ("c_discount , c_last , c_credit , w_tax", "d_next_o_id , d_tax", "set d_next_o_id", "into orders1",
                  "into new_orders1", "from item1", "s_dist from stock1", "update stock1", "into order_line1"),
    "payment": ("update warehouse1", "w_street_1", "d_ytd", "d_street_1", "select c_id from", "c_credit_lim",
                "select c_data", "c_ytd_payment", "into history1"),
    "order_status": ("select c_balance , c_first", "o_carrier_id , o_entry_d", "select ol_i_id"),
    "delivery": ("select no_o_id", "delete from new_orders1", "select o_c_id", "update orders1",
                 "update order_line1", "sum ( ol_amount )", "c_delivery_cnt"),
    "stock_level": ("select d_next_o_id from", "from order_line1 , stock1"),
}
# once per transaction of its type (Delivery's, once per district)
ANCHORS = {"new_order": ("c_discount , c_last , c_credit , w_tax", 1), "payment": ("update warehouse1", 1),
           "order_status": ("o_carrier_id , o_entry_d", 1), "delivery": ("select no_o_id", 10),
           "stock_level": ("from order_line1 , stock1", 1)}


@pytest.fixture(scope="module")
def tpcc_data(sandbox):
    target = sandbox.target()
    request = data_request("tpcc", {"scale": SCALE, "mode": "sysbench-tpcc"}, schema=SCHEMA, threads=3)
    prepare_data(target, request)
    admin = open_connection(conn_params(target, "socket"))
    yield target, request, admin
    admin.close()
    prepare_data(target, data_request(None, cleanup=True, schema=SCHEMA))
    conn = open_connection(conn_params(target, None))
    try:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
    finally:
        conn.close()


def digests(admin) -> Counter[str]:
    """The schema's statements so far by digest, normalised: no backquotes, lower case, a negative balance as any
    other (the unused item's i_id = -1 keeps its own)."""
    rows = query_all(admin, "SELECT DIGEST_TEXT, COUNT_STAR FROM performance_schema.events_statements_summary_by_digest"
                            " WHERE SCHEMA_NAME = %s", (SCHEMA,))
    out: Counter[str] = Counter()
    for text, count in rows:
        out[re.sub(r"c_balance = - \?", "c_balance = ?", (text or "").replace("`", "").lower())] += int(count)
    return out


def every_schemas_classes(admin) -> Counter[str]:
    """Every digest's statements by class (select, insert, ...), whatever their schema (or none)."""
    out: Counter[str] = Counter()
    for text, count in query_all(admin, "SELECT DIGEST_TEXT, COUNT_STAR FROM "
                                        "performance_schema.events_statements_summary_by_digest"):
        out[(text or "").lstrip("(").split(" ", 1)[0].lower()] += int(count)
    return out


def server_state(admin) -> tuple[dict[str, int], Counter[str], dict[tuple[int, int], int], Counter[str]]:
    next_o = {(int(w), int(d)): int(o) for w, d, o in
              query_all(admin, f"SELECT d_w_id, d_id, d_next_o_id FROM {SCHEMA}.district1")}
    everyone = every_schemas_classes(admin)
    return global_status(admin, COM), digests(admin), next_o, everyone


def quiet(admin) -> None:
    """Wait until no connection of the schema runs a statement (a closed client's sessions have ended)."""
    deadline = time.monotonic() + 20
    while query_all(admin, "SELECT COUNT(*) FROM information_schema.processlist WHERE db = %s", (SCHEMA,))[0][0]:
        assert time.monotonic() < deadline, "the clients' sessions did not end"
        time.sleep(0.1)


# How far MariaDB 10.11's digest table may fall short of the server's Com_* counters: it misses a few statements under
# concurrent load, both loops alike (0-7 a run on a quiet machine, 0.06 % beside the suite's other workers; 0.1 %
# failed a CI run at load ~20 on 2 cores). The digests feed a 2 % comparison of statements per transaction, which
# 0.5 % does not move; a loop sending statements the server does not count as this schema's still fails it.
DIGEST_SLACK = 0.005


def measure(admin, run) -> dict:
    """Run one tool to its end; what the server counted meanwhile. Both readings are taken with none of the schema's
    sessions left: a session that was still ending (the last run's, closed without waiting) was seen counted in
    neither the global counters nor the live sessions' at the first reading (Com_* 29 above the digests, CI)."""
    quiet(admin)
    lost0 = dict(query_all(admin, "SHOW GLOBAL STATUS LIKE 'Performance_schema_%lost'"))
    com0, dig0, next_o, all0 = server_state(admin)
    run()
    quiet(admin)
    com1, dig1, _, all1 = server_state(admin)
    lost1 = dict(query_all(admin, "SHOW GLOBAL STATUS LIKE 'Performance_schema_%lost'"))
    com = {k: com1[k] - com0[k] for k in COM}
    dig = Counter({k: n - dig0.get(k, 0) for k, n in dig1.items() if n > dig0.get(k, 0)})
    lost = {k: int(v) - int(lost0.get(k, 0)) for k, v in lost1.items() if int(v) != int(lost0.get(k, 0))}
    return {"com": com, "digests": dig, "next_o": next_o, "all_digests": all1 - all0, "ps_lost": lost}


def dml(dig: Counter[str]) -> Counter[str]:
    return Counter({k: n for k, n in dig.items() if k.split(" ", 1)[0] in ("select", "insert", "update", "delete")})


def per_transaction(m: dict) -> dict[str, float]:
    """Statements of each class per transaction at sysbench-tpcc's nominal mix (10:10:1:1:1): each transaction
    type's own statements per transaction of that type, from the digests, weighted. (Per transaction ended as
    run, the 1-in-23 draws of Delivery alone move Com_delete by ~7 % between two runs of this length.)"""
    dig = dml(m["digests"])
    events = {t: dig[next(k for k in dig if frag in k)] / per for t, (frag, per) in ANCHORS.items()}
    by_type: dict[str, Counter[str]] = {t: Counter() for t in WEIGHTS}
    by_name = {"payment": sum(n for k, n in dig.items() if "select c_id from" in k),
               "order_status": sum(n for k, n in dig.items() if "select c_balance , c_first , c_middle , c_id" in k)}
    for k, n in dig.items():
        if "namecnt" in k:  # one count per read by last name (give or take the digests' own misses)
            assert abs(n - sum(by_name.values())) <= max(2, sum(by_name.values()) * DIGEST_SLACK), (n, by_name)
            for t, reads in by_name.items():
                by_type[t]["select"] += reads
            continue
        owners = {t for t, frags in FRAGMENTS.items() if any(f in k for f in frags)}
        assert len(owners) == 1, (k, owners)
        by_type[owners.pop()][k.split(" ", 1)[0]] += n
    # the anchors count the transactions ended (a client closed in the middle of one: up to one per connection)
    ended = m["com"]["Com_commit"] + m["com"]["Com_rollback"]
    assert abs(sum(events.values()) - ended) <= THREADS + ended * DIGEST_SLACK, events
    return {k: sum(WEIGHTS[t] * by_type[t][k] / events[t] for t in WEIGHTS) / sum(WEIGHTS.values())
            for k in ("select", "update", "insert", "delete")}


def new_rows(admin, table: str, cols: str, next_o: dict[tuple[int, int], int], what: str) -> tuple:
    """`what` over the rows added to orders/order_line since `next_o` (order numbers from the district's next one
    on; `cols`: the table's warehouse, district and order columns); `table` may join others."""
    w_col, d_col, o_col = cols.split()
    where = " OR ".join(f"({w_col} = {w} AND {d_col} = {d} AND {o_col} >= {o})" for (w, d), o in next_o.items())
    return tuple(query_all(admin, f"SELECT {what} FROM {table} WHERE {where}")[0])


def general_log(admin, path: Path, run) -> str:
    """The statements `run` sent, from the server's general log (switched on for it alone, then put back)."""
    (was_on, output, file), = query_all(admin, "SELECT @@general_log, @@log_output, @@general_log_file")
    cur = admin.cursor()
    cur.execute("SET GLOBAL log_output = 'FILE'")
    cur.execute("SET GLOBAL general_log_file = %s", (str(path),))
    cur.execute("SET GLOBAL general_log = ON")
    try:
        run()
    finally:
        cur.execute("SET GLOBAL general_log = %s", (int(was_on),))
        cur.execute("SET GLOBAL general_log_file = %s", (file,))
        cur.execute("SET GLOBAL log_output = %s", (output,))
    return path.read_text(errors="replace")


def test_mode_sysbench_tpcc_sends_what_sysbench_tpcc_sends(tpcc_data, tmp_path, monkeypatch):
    target, request, admin = tpcc_data
    params = conn_params(target, "socket", database=SCHEMA)
    query_all(admin, "TRUNCATE performance_schema.events_statements_summary_by_digest")  # room for this test's
    lost0 = global_status(admin, ("Performance_schema_digest_lost",))["Performance_schema_digest_lost"]
    wl = load_workload("tpcc")
    order_status = [t.name for t in wl.family.transactions(request.options)].index("order_status")

    def run_builtin(transactions: int = 0, seconds: int = 2, hot: bool = False, statuses: int = 0) -> None:
        """Steps of `seconds` until the server has ended `transactions` and the engine `statuses` OrderStatus
        transactions (bounded), then the engine closed."""
        monkeypatch.setenv("TUNEBENCH_HOT_LOOP", "1" if hot else "0")
        engine = BuiltinEngine(params, [ClientGroup("main", wl, request.options, (THREADS,))], workers=2, seed=11)
        start, deadline = global_status(admin, ("Com_commit",))["Com_commit"], time.monotonic() + 150
        engine.open()
        try:
            while True:
                engine.run_step({"main": THREADS}, seconds, lambda _iv: None, threading.Event())
                ended = global_status(admin, ("Com_commit",))["Com_commit"] - start
                ended_statuses = (engine.ended_by_type.get("main") or [0] * (order_status + 1))[order_status]
                if (ended >= transactions and ended_statuses >= statuses) or time.monotonic() > deadline:
                    return
        finally:
            engine.close()

    ours = measure(admin, lambda: run_builtin(TRANSACTIONS))
    # Logged: 1-s steps until 3 OrderStatus have ended, each of which reads its order's lines once (3 reads are asked
    # below), whatever the machine's load. A fixed step's count depends on it: a 2-s one logged 2 at load 17; 4-s ones
    # 19 and 32 at load 10 and cost 3.3 CPU s each, where this logged 8-9 for 1.2-1.6 (issue 41).
    ours_log = general_log(admin, tmp_path / "builtin.log", lambda: run_builtin(seconds=1, statuses=3))
    theirs = measure(admin, lambda: run_builtin(TRANSACTIONS, hot=True))
    theirs_log = general_log(admin, tmp_path / "compiled.log", lambda: run_builtin(seconds=1, hot=True, statuses=3))
    lost = global_status(admin, ("Performance_schema_digest_lost",))["Performance_schema_digest_lost"]
    assert lost == lost0, "performance_schema's digest table is full: statements went uncounted"

    # the same statements, column for column (digests: literals and whitespace aside)
    assert set(dml(ours["digests"])) == set(dml(theirs["digests"])), (
        set(dml(ours["digests"])) ^ set(dml(theirs["digests"])))
    stock = [k for k in dml(ours["digests"]) if " from stock1 " in k]
    assert len(stock) == 10 and all(len(re.findall(r"s_dist_\d\d", k)) == 1 for k in stock), stock  # its district's
    for which, m in (("python loop", ours), ("compiled loop", theirs)):
        # the digests hold every statement the server counted: Com_* against the digests of every schema (the
        # server is the test session's, shared with its other tests: a neighbour's statements are on both sides,
        # where the schema's digests alone once came out 37 selects, 27 updates and 24 inserts short), give or take
        # the readings' own queries; and the schema's digests are this run's statements (the checks below)
        # The digests are never more than the server counted (give or take the readings' own 10), and never fewer
        # by more than DIGEST_SLACK: MariaDB 10.11's digest table itself misses a few statements under concurrent load,
        # both loops alike (measured on a quiet machine, 8 connections, 18 runs of 3-8 s: selects, inserts and
        # updates 0-7 short of Com_* a run, deletes and commits never; this test 16 short alone, 16-77 of 136,000
        # beside the suite's other workers, 0.06 %). The ±10 assumed it counts every statement: it failed twice in
        # clean-clone runs, 0.1 % once at load ~20 (see DIGEST_SLACK).
        classes = m["all_digests"]
        for cls in ("select", "insert", "update", "delete"):
            short = m["com"][f"Com_{cls}"] - classes[cls]
            assert -10 <= short <= max(10, int(m["com"][f"Com_{cls}"] * DIGEST_SLACK)), \
                f"{which}, {cls}: {m['com']} vs {dict(classes)}; performance_schema lost: {m['ps_lost']}"
        assert m["com"]["Com_commit"] + m["com"]["Com_rollback"] >= TRANSACTIONS
    # the same statement counts per transaction, as the server counted them
    mine, ref = per_transaction(ours), per_transaction(theirs)
    for cls in mine:
        assert abs(mine[cls] / ref[cls] - 1) <= 0.02, (cls, mine, ref)
        assert abs(mine[cls] / REFERENCE_PER_TRX[cls] - 1) <= 0.03, (cls, mine, REFERENCE_PER_TRX)
    assert mine["delete"] > 0.4 and ref["select"] > 12  # ten deletes per Delivery; ~13 selects

    for m in (ours, theirs):
        # every order line from the home warehouse (its other_ware() returns the home one), yet ~10 % of the
        # orders marked not all-local (a line drew "remote"); each line's dist_info is its district's s_dist
        dist = " ".join(f"WHEN {d} THEN s_dist_{d:02d}" for d in range(1, 11))
        lines_with_stock = f"{SCHEMA}.order_line1 JOIN {SCHEMA}.stock1 ON s_w_id = ol_supply_w_id AND s_i_id = ol_i_id"
        remote, other_dist, lines = new_rows(
            admin, lines_with_stock, "ol_w_id ol_d_id ol_o_id", m["next_o"],
            f"SUM(ol_supply_w_id <> ol_w_id), SUM(ol_dist_info <> CASE ol_d_id {dist} END), COUNT(*)")
        not_local, orders = new_rows(admin, f"{SCHEMA}.orders1", "o_w_id o_d_id o_id", m["next_o"],
                                     "SUM(o_all_local = 0), COUNT(*)")
        assert lines > 10_000 and remote == 0 and other_dist == 0, (remote, other_dist, lines)
        assert 0.05 < not_local / orders < 0.15, (not_local, orders)

    # OrderStatus reads the lines of order number = the district id; NewOrder's unused item is i_id = -1
    for log in (ours_log, theirs_log):
        reads = re.findall(r"FROM\s+order_line1\s+WHERE\s+ol_w_id\s*=\s*\d+\s+AND\s+ol_d_id\s*=\s*(\d+)\s+"
                           r"AND\s+ol_o_id\s*=\s*(\d+)", log)
        assert len(reads) >= 3 and all(d == o for d, o in reads), reads[:20]
    assert dml(ours["digests"])["select i_price , i_name , i_data from item1 where i_id = - ? "] > 0

    checked = check_data(target, request, transport="socket")  # TPC-C's consistency conditions 1-4 still hold
    assert checked["ok"], checked["summary"]
