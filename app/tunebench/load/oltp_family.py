"""The sysbench OLTP family on the workload seam: the oltp_*.lua scripts' options, sbtest tables and events.

Statements and per-event programs are in load/oltp.py, the option catalog in load/options.py, prepare and
cleanup in load/prepare.py; this module puts them behind load/family.py's protocol and builds one
connection's event (the builtin engine's hot loop is a loop over the closures built here).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from tunebench.core.errors import ConfigError
from tunebench.core.target import ConnParams
from tunebench.load.driver import DriverError
from tunebench.load.family import CheckResult, ConnectionContext, Counts, Progress, Transaction, TrxType
from tunebench.load.hotloop import HotProgram, hot_program
from tunebench.load.oltp import C_TEMPLATE, INSERT_TEXT, PAD_TEMPLATE, STATEMENTS, EventProgram
from tunebench.load.options import OPTIONS, OptionSpec, resolve_options
from tunebench.load.prepare import cleanup, prepare, tables_ready
from tunebench.load.randgen import UniqueIds, id_stream, string_stream

EVENT = (TrxType("event", 1, "one sysbench event: the workload's statement list"),)
ER_DUP_ENTRY = 1062
DUPLICATE_TRIES = 20  # ids tried per oltp_insert event (auto_inc=off) before its duplicate key error ends it


class OltpFamily:
    name = "oltp"
    description = "sysbench OLTP (oltp_*.lua): sbtest tables, point/range selects, updates, delete+insert"
    engines = ("builtin", "sysbench")
    form_options = ("tables", "table_size", "range_size", "point_selects", "skip_trx", "rand_type")
    data_options = ("tables", "table_size", "secondary", "auto_inc")  # what groups sharing the tables agree on
    headline: tuple[str, float, str] | None = None

    def headline_of(self, options: Mapping[str, Any]) -> tuple[str, float, str] | None:
        return self.headline

    def option_specs(self) -> Mapping[str, OptionSpec]:
        return OPTIONS

    def resolve(self, defaults: Mapping[str, Any], fixed: Mapping[str, Any], given: Mapping[str, Any],
                where: str = "") -> dict[str, Any]:
        return resolve_options(defaults, fixed, given, where)

    def transactions(self, options: Mapping[str, Any]) -> tuple[TrxType, ...]:
        return EVENT

    def plan(self, workload: Any, options: Mapping[str, Any]) -> EventProgram:
        return workload.program(options)

    def shape(self, options: Mapping[str, Any]) -> str:
        return f"{options['tables']} table(s) x {options['table_size']:,} rows"

    def data_key(self, options: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(options[k] for k in self.data_options)

    def missing_data(self, params: ConnParams, schema: str, workload: Any,
                     options: Mapping[str, Any]) -> str | None:
        rows = workload.prepare_rows(options)
        if tables_ready(params, schema, options, rows):
            return None
        return f"sbtest1..{options['tables']} with {rows:,} rows each are not prepared in {schema}"

    def data_bytes(self, workload: Any, options: Mapping[str, Any]) -> int | None:
        # an sbtest row on InnoDB: ~215 bytes in the clustered index (id, k, c, pad, row header, page fill), ~25
        # more in the k index (sysbench's 10M-row table takes ~2.4 GB)
        per_row = 215 + (25 if options["create_secondary"] else 0)
        return int(workload.prepare_rows(options)) * int(options["tables"]) * per_row

    def prepare(self, params: ConnParams, schema: str, workload: Any, options: Mapping[str, Any], threads: int,
                progress: Progress | None = None, on_rows: Callable[[Any], None] | None = None,
                cancel: threading.Event | None = None) -> dict[str, Any]:
        rows = workload.prepare_rows(options)
        r = prepare(params, schema, options, rows, threads=threads, progress=progress, on_rows=on_rows,
                    cancel=cancel)
        r["rows"] = rows * r["tables_created"]
        r["what"] = f"{r['tables_created']} table(s) x {rows} rows"
        return r

    def cleanup(self, params: ConnParams, schema: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return cleanup(params, schema)

    actions: Mapping[str, str] = {}

    def run_action(self, name: str, params: ConnParams, schema: str, options: Mapping[str, Any],
                   cancel: threading.Event | None = None) -> dict[str, Any]:
        raise ConfigError(f"the OLTP family has no action {name!r}")

    def check(self, params: ConnParams, schema: str, options: Mapping[str, Any]) -> list[CheckResult]:
        return []

    def connection_work(self, ctx: ConnectionContext) -> Transaction:
        return OltpEvent(ctx).work()

    def hot_program(self, plan: EventProgram, options: Mapping[str, Any] | None = None) -> HotProgram | None:
        """The event in the compiled loop's form (load/hotloop.py), or None: the Python loop runs it."""
        return hot_program(plan)

    def sysbench_args(self, workload: Any, options: Mapping[str, Any]) -> tuple[str, list[str]]:
        """The workload's oltp_*.lua script and its flags: the table shape always (it must match the prepared
        data) and sysbench's core --rand-* options; the other options where they differ from the defaults."""
        flags = []
        for name, value in options.items():
            spec = OPTIONS[name]
            if name == "rand_seed" and not value:
                continue
            if spec.sysbench_global or name in ("tables", "table_size") or value != spec.default:
                flags.append(f"--{name.replace('_', '-')}={_flag_value(value)}")
        return workload.sysbench_script, flags


def _flag_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


class OltpEvent:
    """One connection's sysbench event, compiled into a list of closures over prepared statements."""

    def __init__(self, ctx: ConnectionContext):
        self.ctx = ctx
        self.program: EventProgram = ctx.plan
        self.counts: Counts = ctx.counts
        session, opts = ctx.session, self.program.options
        self.stmts = [{k: session.prepare(STATEMENTS[k][0] % t) for k in self.program.prepared_keys()}
                      for t in range(1, opts["tables"] + 1)]
        if self.program.has_trx:
            self.begin = session.prepare("BEGIN")
            self.commit = session.prepare("COMMIT")

    def work(self) -> Transaction:
        opts = self.program.options
        rng = self.ctx.rng
        rand_opts = {k: opts[k] for k in opts if k.startswith("rand_")}
        ids = id_stream(rng, opts["rand_type"], 1, opts["table_size"], rand_opts).__next__
        ntables = opts["tables"]
        tnum = (lambda: 0) if ntables == 1 else id_stream(rng, "uniform", 0, ntables - 1, {}).__next__
        cvals = string_stream(rng, C_TEMPLATE).__next__
        pads = string_stream(rng, PAD_TEMPLATE).__next__
        rsize = opts["range_size"] - 1
        execute = self.ctx.session.execute
        steps: list[Callable[[], None]] = []
        for block in self.program.blocks:
            kind, count = block.kind, block.count
            if kind in ("begin", "commit"):
                steps.append(self._other(execute, kind))
            elif kind in ("point_selects", "index_updates"):
                steps.append(self._point(execute, kind, count, tnum, ids))
            elif kind in ("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges"):
                steps.append(self._range(execute, kind, count, tnum, ids, rsize))
            elif kind == "non_index_updates":
                steps.append(self._non_index(execute, count, tnum, ids, cvals))
            elif kind == "delete_inserts":
                steps.append(self._delete_insert(execute, count, tnum, ids, cvals, pads))
            elif kind == "delete":
                steps.append(self._point(execute, "deletes", 1, tnum, ids))
            elif kind == "insert":
                steps.append(self._insert_text(tnum, ids, cvals, pads, opts["auto_inc"]))
        if len(steps) == 1:  # one statement block (oltp_point_select): no wrapper call on the hot path
            return steps[0]  # type: ignore[return-value]  # its None is fine: a one-type family's index is unused

        def event() -> None:
            for step in steps:
                step()
        return event  # type: ignore[return-value]

    def _other(self, execute: Any, kind: str) -> Callable[[], None]:
        stmt, counts = (self.begin if kind == "begin" else self.commit), self.counts

        def run() -> None:
            execute(stmt)
            counts.other += 1
        return run

    def _point(self, execute: Any, key: str, count: int, tnum: Any, ids: Any) -> Callable[[], None]:
        is_read = STATEMENTS[key][1] == "read"
        stmts, counts = self.stmts, self.counts

        def run() -> None:
            stmt = stmts[tnum()][key]
            for _ in range(count):
                execute(stmt, ids())
                if is_read:
                    counts.reads += 1
                else:
                    counts.writes += 1
        return run

    def _range(self, execute: Any, key: str, count: int, tnum: Any, ids: Any, rsize: int) -> Callable[[], None]:
        stmts, counts = self.stmts, self.counts

        def run() -> None:
            stmt = stmts[tnum()][key]
            for _ in range(count):
                i = ids()
                execute(stmt, i, i + rsize)
                counts.reads += 1
        return run

    def _non_index(self, execute: Any, count: int, tnum: Any, ids: Any, cvals: Any) -> Callable[[], None]:
        stmts, counts = self.stmts, self.counts

        def run() -> None:
            stmt = stmts[tnum()]["non_index_updates"]
            for _ in range(count):
                execute(stmt, cvals(), ids())
                counts.writes += 1
        return run

    def _delete_insert(self, execute: Any, count: int, tnum: Any, ids: Any, cvals: Any,
                       pads: Any) -> Callable[[], None]:
        stmts, counts = self.stmts, self.counts

        def run() -> None:
            s = stmts[tnum()]
            for _ in range(count):
                i, k = ids(), ids()
                execute(s["deletes"], i)
                counts.writes += 1
                execute(s["inserts"], i, k, cvals(), pads())
                counts.writes += 1
        return run

    def _insert_text(self, tnum: Any, ids: Any, cvals: Any, pads: Any, auto_inc: bool) -> Callable[[], None]:
        query, counts, ctx = self.ctx.session.query, self.counts, self.ctx
        # oltp_insert.lua: id 0 lets AUTO_INCREMENT assign it; otherwise sysbench.rand.unique() as an INT.
        unique = None if auto_inc else UniqueIds(ctx.run_nonce, ctx.slot, ctx.slots, ctx.kept,
                                                 int(self.program.options["table_size"]))

        def run() -> None:
            t, k, c, pad = tnum() + 1, ids(), cvals().decode(), pads().decode()
            for attempt in range(DUPLICATE_TRIES):
                i = 0 if unique is None else unique()
                try:
                    query((INSERT_TEXT % (t, i, k, c, pad)).encode())
                    break
                except DriverError as exc:
                    # an id an earlier run inserted (their stretches of the sequence met): another one, the
                    # clash counted as an error the family retried
                    if unique is None or exc.errno != ER_DUP_ENTRY or attempt == DUPLICATE_TRIES - 1:
                        raise
                    unique.clash()
                    counts.retry(exc.errno)
            counts.writes += 1
        return run
