"""The TPC-C-like family on the workload seam (load/family.py): options, data, check, transactions."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from tunebench.core.target import ConnParams
from tunebench.load.family import CheckResult, ConnectionContext, Progress, Transaction, TrxType
from tunebench.load.hotloop import hot_enabled
from tunebench.load.options import OptionSpec
from tunebench.load.prepare import _server
from tunebench.load.program import VmProgram
from tunebench.load.registered import RegisteredFamily
from tunebench.load.tpcc import check as tpcc_check
from tunebench.load.tpcc import program as tpcc_program
from tunebench.load.tpcc.loader import Loader, shape
from tunebench.load.tpcc.schema import TABLES
from tunebench.load.tpcc.sysbench_mode import SysbenchTpccConnection
from tunebench.load.tpcc.trx import ISOLATION, TRX_NAMES, TpccConnection

MB = 1024 * 1024
# the statements a connection sends; both run on the same data
MODES = {"spec": TpccConnection, "sysbench-tpcc": SysbenchTpccConnection}
_SPECS = (
    OptionSpec("scale", int, 2, "Warehouses per table set (sysbench-tpcc's default is 100)", 1, 100_000),
    OptionSpec("tables", int, 1, "Table sets: 10 sets x 100 warehouses spread the hot rows of 1 set x 1000",
               1, 1000),
    OptionSpec("use_fk", bool, True, "Create the foreign keys between the tables"),
    OptionSpec("trx_level", str, "RR", "Transaction isolation level (RR, RC or SER)", choices=tuple(ISOLATION)),
    OptionSpec("mysql_storage_engine", str, "innodb", "Storage engine"),
    OptionSpec("mode", str, "spec", "spec: the TPC-C specification's statements; sysbench-tpcc: exactly "
               "sysbench-tpcc's, its simplifications and bugs included (same data)", choices=tuple(MODES)),
)
OPTIONS = {s.name: s for s in _SPECS}
# sysbench-tpcc's draw of 1..23: NewOrder 10, Payment 10, OrderStatus 1, Delivery 1, StockLevel 1
TRANSACTIONS = (
    TrxType("new_order", 10, "enter an order of 5-15 lines (1 % roll back on an unused item)"),
    TrxType("payment", 10, "a customer pays: warehouse, district and customer balances, a history row"),
    TrxType("order_status", 1, "read a customer's last order and its lines"),
    TrxType("delivery", 1, "deliver the oldest new order of each of the warehouse's 10 districts"),
    TrxType("stock_level", 1, "count recently sold items under a stock threshold"),
)
assert tuple(t.name for t in TRANSACTIONS) == TRX_NAMES


class TpccFamily(RegisteredFamily):
    name = "tpcc"
    description = ("TPC-C-like: 9 tables per set, NewOrder/Payment/OrderStatus/Delivery/StockLevel 10:10:1:1:1 "
                   "(sysbench-tpcc's mix), growing data; mode=spec: the specification's statements, deadlocks "
                   "retried; mode=sysbench-tpcc: exactly sysbench-tpcc's statements, simplifications and bugs "
                   "included")
    OPTIONS = OPTIONS
    form_options = ("scale", "tables", "use_fk", "trx_level", "mode")
    data_options = ("scale", "tables", "use_fk", "mysql_storage_engine")  # what groups sharing the tables agree on
    headline: tuple[str, float, str] | None = ("new_order", 60.0, "NOPM")
    missing_phrase = "the TPC-C tables of {shape} are"

    def transactions(self, options: Mapping[str, Any]) -> tuple[TrxType, ...]:
        return TRANSACTIONS

    def shape(self, options: Mapping[str, Any]) -> str:
        return f"{options['scale']} warehouse(s) x {options['tables']} table set(s)"

    def tables(self, options: Mapping[str, Any]) -> list[str]:
        return [f"{t}{n}" for n in range(1, options["tables"] + 1) for t in TABLES]

    def registered_shape(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return shape(options)

    def data_bytes(self, workload: Any, options: Mapping[str, Any]) -> int | None:
        # InnoDB, per warehouse: stock 100,000 rows (~330 B), customer 30,000 (~700 B), order_line ~300,000 (~80 B)
        # and the rest: ~100 MB, as sysbench-tpcc's and tpcc-mysql's data sets take; ITEM once per set (~10 MB)
        return (int(options["scale"]) * 100 + 10) * MB * int(options["tables"])

    def prepare(self, params: ConnParams, schema: str, workload: Any, options: Mapping[str, Any], threads: int,
                progress: Progress | None = None, on_rows: Callable[[Any], None] | None = None,
                cancel: threading.Event | None = None) -> dict[str, Any]:
        return Loader(params, schema, options, threads, progress, on_rows, cancel).load()

    def check(self, params: ConnParams, schema: str, options: Mapping[str, Any]) -> list[CheckResult]:
        return tpcc_check.check(_server(params), schema, int(options["tables"]))

    def connection_work(self, ctx: ConnectionContext) -> Transaction:
        return MODES[ctx.options.get("mode", "spec")](ctx).work

    def hot_program(self, plan: Any, options: Mapping[str, Any]) -> VmProgram | None:
        """The transactions as a statement program for the compiled loop (load/tpcc/program.py), in the options'
        mode; None: the Python loop (not built, or TUNEBENCH_HOT_LOOP=0)."""
        if not hot_enabled():
            return None
        return tpcc_program.program(options)
