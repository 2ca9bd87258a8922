"""The workload family seam without a server: the registry, presets naming their family, options checked by the
family, groups sharing data checked per family, the TPC-C pieces (names, NURand, literals, loader SQL), the
per-type interval series and step summaries, and `tunebench workloads`."""

from __future__ import annotations

import json
from decimal import Decimal
from types import SimpleNamespace

import numpy as np
import pytest
from tests.conftest import run_cli

from tunebench.core.errors import ConfigError, WorkloadError
from tunebench.core.interval import Interval
from tunebench.core.stats import summarize
from tunebench.load.engine import ClientGroup
from tunebench.load.families import FAMILY_NAMES, get_family
from tunebench.load.family import ConnectionContext
from tunebench.load.tpcc import loader as tpcc_loader
from tunebench.load.tpcc import trx as tpcc_trx
from tunebench.load.workload import load_workload
from tunebench.run.spec import RunSpec
from tunebench.run.tasks import build_run_spec, workload_catalog


def test_families_and_an_unknown_one():
    assert [get_family(n).name for n in FAMILY_NAMES] == ["oltp", "tpcc", "iibench", "dbstress"]
    with pytest.raises(WorkloadError, match=r"unknown workload family 'nope'; known: oltp, tpcc, iibench, dbstress"):
        get_family("nope")


def test_a_workload_file_names_its_family(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('family = "tpcc"\n[defaults]\nscale = 3\n')
    wl = load_workload(str(f))
    assert wl.family.name == "tpcc" and wl.options()["scale"] == 3
    f.write_text('family = "dbstress2"\n')
    with pytest.raises(WorkloadError, match=r"mine.toml: unknown workload family 'dbstress2'; known: oltp, tpcc"):
        load_workload(str(f))
    f.write_text('family = "tpcc"\n[defaults]\ntable_size = 3\n')
    with pytest.raises(WorkloadError, match=r"\[defaults\] unknown option 'table_size'"):
        load_workload(str(f))
    f.write_text('family = "tpcc"\nevent = ["begin"]\n')
    with pytest.raises(WorkloadError, match="'event' is for the oltp family"):
        load_workload(str(f))


@pytest.mark.parametrize(("given", "message"), [
    ({"scale": 0}, "option scale: 0 is below the minimum 1"),
    ({"scale": 100_001}, "option scale: 100001 is above the maximum 100000"),
    ({"tables": 1001}, "option tables: 1001 is above the maximum 1000"),
    ({"trx_level": "RU"}, "option trx_level: 'RU' is not one of RR, RC, SER"),
    ({"table_size": 10}, "unknown option 'table_size'; known: mode, mysql_storage_engine, scale, tables, trx_level, "
                         "use_fk"),
])
def test_tpcc_options_are_checked_by_the_family(given, message):
    with pytest.raises(ConfigError, match=message):
        load_workload("tpcc").options(given)


def test_groups_of_several_families_share_only_their_own_data():
    spec = build_run_spec("tpcc", {"scale": 3}, "4", groups=["ro=oltp_read_only:2"])
    assert [g.family.name for g in spec.groups] == ["tpcc", "oltp"]
    assert spec.groups[0].options["scale"] == 3 and spec.groups[1].options["tables"] == 1
    wl = load_workload("tpcc")
    two = RunSpec(groups=(ClientGroup("main", wl, wl.options({"scale": 3}), (4,)),
                          ClientGroup("b", wl, wl.options(), (2,))))
    with pytest.raises(ConfigError, match=r"client groups of the tpcc family share its tables: main has 3 "
                                          r"warehouse\(s\) x 1 table set\(s\), b has 2 warehouse"):
        two.validate()
    with pytest.raises(ConfigError, match="the tpcc family runs on the builtin engine, not sysbench"):
        build_run_spec("tpcc", {}, "4", engine="sysbench")
    with pytest.raises(ConfigError, match="unknown option 'range_size'"):
        build_run_spec("tpcc", {"range_size": 5}, "4")


def test_the_window_second_workload_takes_the_data_set_of_its_own_family_only():
    spec = build_run_spec("tpcc", {"scale": 3}, "4", groups=["b=tpcc:2", "c=oltp_point_select:2"],
                          group_options="shape")
    assert spec.groups[1].options["scale"] == 3
    assert spec.groups[2].options["table_size"] == 10000


def test_lastname_and_nurand_follow_the_specification():
    assert tpcc_trx.lastname(0) == "BARBARBAR" and tpcc_trx.lastname(371) == "PRICALLYOUGHT"
    assert tpcc_trx.lastname(999) == "EINGEINGEING"
    ctx = ConnectionContext(_Session(), SimpleNamespace(), np.random.default_rng(1),
                            {"scale": 5, "tables": 1, "trx_level": "RC"}, 0, 1)
    t = tpcc_trx.TpccConnection(ctx)
    draws = [t.nurand(1023, 1, 3000, tpcc_trx.C_ID) for _ in range(20000)]
    assert min(draws) >= 1 and max(draws) <= 3000
    # non-uniform: the most drawn tenth of the range holds far more than a tenth of the draws
    counts = np.bincount(draws, minlength=3001)[1:]
    assert np.sort(counts)[-300:].sum() > 0.2 * len(draws)
    assert all(t.other_warehouse(3) != 3 for _ in range(200))
    assert ctx.session.sent == [b"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"]
    inputs = [t.inputs(tpcc_trx.NEW_ORDER) for _ in range(3000)]
    assert all(5 <= len(i["lines"]) <= 15 for i in inputs)
    unused = sum(i["lines"][-1][0] > 100_000 for i in inputs)
    assert 10 < unused < 60  # 1 %


class _Session:
    def __init__(self):
        self.sent = []

    def query(self, sql):
        self.sent.append(sql)


def test_values_become_sql_literals():
    assert tpcc_trx.literal(5) == "5" and tpcc_trx.literal(Decimal("1.50")) == "1.50"
    assert tpcc_trx.literal("it's \\") == "'it''s \\\\'"
    assert tpcc_trx.literal(None) == "NULL"
    assert tpcc_trx.num(b"12.30") == Decimal("12.30") and tpcc_trx.text(b"BC") == "BC"


def test_the_loader_sql_generates_numbers_on_the_server():
    seq = tpcc_loader.seq(3000, "c")
    assert seq.count("UNION ALL") == 4 * 9 and "< 3000) c" in seq
    stmts = tpcc_loader.warehouse_statements(2, 7)
    assert stmts[0].startswith("INSERT INTO warehouse2 SELECT 7, ")
    assert "CRC32" in stmts[2] and "'BARBARBAR'" not in stmts[2] and "ELT(1 + " in stmts[2]
    assert all("@" not in s for s in stmts)  # no user variable: copied at each use, 5x slower
    assert tpcc_loader.shape({"scale": 2, "use_fk": True, "mysql_storage_engine": "innodb"}) == {
        "family": "tpcc", "scale": 2, "use_fk": True, "engine": "innodb"}


def test_per_type_series_and_step_summary():
    def iv(t, new, pay):
        return Interval(t, "main", 4, new + pay, 10.0 * (new + pay), 5.0, 5.0, 0.0, {"p95": 3.0},
                        trx={"new_order": {"tps": new, "rollbacks": 1.0, "retries": 0.0, "errors": 0.0,
                                           "lat.p95": 4.0},
                             "payment": {"tps": pay, "rollbacks": 0.0, "retries": 2.0, "errors": 2.0,
                                         "lat.p95": None}})
    ivs = [iv(1.0, 10, 10), iv(2.0, 12, 8)]
    series = ivs[0].series()
    assert series["client.main.trx.new_order.tps"] == 10 and series["client.main.trx.payment.retries"] == 2
    assert "client.main.trx.payment.lat.p95" not in series
    s = summarize("main", 4, ivs, headline=("new_order", 60.0, "NOPM"))
    assert s.headline == 660.0 and s.headline_label == "NOPM"
    assert s.trx["new_order"] == {"tps": 11.0, "share": 0.55, "errors": 0.0, "rollbacks": 2.0, "retries": 0.0,
                                  "lat_p95_ms": 4.0, "lat_p99_ms": None}
    assert summarize("main", 4, ivs).headline is None
    plain = summarize("main", 4, [Interval(1.0, "main", 1, 5, 5, 5, 0, 0)])
    assert plain.trx == {} and plain.headline is None


def test_workload_catalog_and_cli(tmp_path):
    cat = workload_catalog()
    assert [f["name"] for f in cat["families"]] == ["oltp", "tpcc", "iibench", "dbstress"]
    tpcc = cat["families"][1]
    assert [(t["name"], t["weight"]) for t in tpcc["transactions"]] == [
        ("new_order", 10), ("payment", 10), ("order_status", 1), ("delivery", 1), ("stock_level", 1)]
    assert {"name": "tpcc", "family": "tpcc"}.items() <= next(
        w for w in cat["workloads"] if w["name"] == "tpcc").items()
    r = run_cli("workloads", "--family", "tpcc", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["families"][0]["headline"] == "NOPM"
    r = run_cli("workloads")
    assert "family tpcc:" in r.stdout and "point_selects" in r.stdout and "trx_level" in r.stdout
    r = run_cli("workloads", "--family", "nope")
    assert r.returncode == 2 and r.stderr.strip().startswith("tunebench: error: unknown workload family 'nope'")
    assert "Traceback" not in r.stderr


class _Terminal:
    """A session answering a TPC-C terminal's statements with fixed rows, keeping what was sent."""

    def __init__(self):
        self.sent: list[str] = []

    def query(self, sql):
        self.sent.append(sql.decode())

    def query_rows(self, sql):
        sql = sql.decode()
        self.sent.append(sql)
        if "c_discount" in sql:
            return [(b"0.1000", b"BARBARBAR", b"GC", b"0.0500")]
        if "d_next_o_id, d_tax" in sql:
            return [(3001, b"0.0700")]
        if "FROM item" in sql:
            return [] if "i_id = -1" in sql else [(b"10.00", b"an item", b"its data")]
        if "FROM stock" in sql:
            return [(50, b"stock data", b"DIST-INFO")]
        return [(1, 2, 3, 4, 5, 6)]


def test_sysbench_tpcc_mode_sends_sysbench_tpccs_statements():
    """mode=sysbench-tpcc: the connection's settings, no remote warehouse but orders marked not all-local, the
    unused item on the second-to-last line, one s_dist column read, OrderStatus's lines of order = district."""
    from tunebench.load.tpcc.sysbench_mode import SysbenchTpccConnection

    opts = load_workload("tpcc").options({"scale": 5, "mode": "sysbench-tpcc"})
    session = _Terminal()
    ctx = ConnectionContext(session, SimpleNamespace(reads=0, writes=0, other=0, current=0,
                                                     rollback=lambda: None), np.random.default_rng(3), opts, 0, 1)
    t = SysbenchTpccConnection(ctx)
    assert get_family("tpcc").connection_work(ctx).__self__.__class__ is SysbenchTpccConnection
    assert session.sent[-2:] == ["SET FOREIGN_KEY_CHECKS=0", "SET autocommit=0"]
    orders = [t.inputs(tpcc_trx.NEW_ORDER) for _ in range(3000)]
    assert all(sup == o["w"] for o in orders for _i, sup, _q in o["lines"])
    assert 0.05 < sum(o["all_local"] == 0 for o in orders) / len(orders) < 0.15  # 1 - 0.99^10: ~10 %
    unused = [o for o in orders if any(i == -1 for i, _s, _q in o["lines"])]
    assert 10 < len(unused) < 60 and all(o["lines"][-2][0] == -1 for o in unused)
    session.sent.clear()
    order = {**unused[0], "d": 7}
    t.new_order({"s": t._set(1), **order})
    stock = [s for s in session.sent if "FROM stock1" in s]
    assert len(stock) == len(order["lines"]) - 2 and session.sent[-1] == "ROLLBACK"
    assert all(s.startswith("SELECT s_quantity, s_data, s_dist_07 s_dist FROM stock1") for s in stock)
    (item, _supply, qty), w = order["lines"][0], order["w"]
    # s_quantity 50 is over the quantity: 50 - qty; the amount qty x 10.00 x (1 + 0.05 + 0.07) x (1 - 0.1) truncated
    assert f"UPDATE stock1 SET s_quantity = {50 - qty} WHERE s_i_id = {item} AND s_w_id = {w}" in session.sent
    assert (f"INSERT INTO order_line1 (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, "
            f"ol_amount, ol_dist_info) VALUES (3001, 7, {w}, 1, {item}, {w}, {qty}, {int(qty * 10.08)}, 'DIST-INFO')"
            in session.sent)
    session.sent.clear()
    t.order_status({"s": t._set(1), "w": 2, "d": 7, "c": 9, "by_name": False, "last": "BARBARBAR"})
    assert session.sent[-3:] == [
        "SELECT o_id, o_carrier_id, o_entry_d FROM orders1 WHERE o_w_id = 2 AND o_d_id = 7 AND o_c_id = 9 "
        "ORDER BY o_id DESC",
        "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line1 "
        "WHERE ol_w_id = 2 AND ol_d_id = 7 AND ol_o_id = 7", "COMMIT"]
    with pytest.raises(ConfigError, match="option mode: 'tpc-c' is not one of spec, sysbench-tpcc"):
        load_workload("tpcc").options({"mode": "tpc-c"})
