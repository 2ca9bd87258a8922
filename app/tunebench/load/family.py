"""The workload family seam: what a family of workloads declares, and what the engines and the run need of it.

A *family* is a kind of benchmark with its own schema and transactions: the sysbench OLTP family (the
oltp_*.lua scripts), TPC-C-like, dbSTRESS-like, iiBench, or one sysbench Lua script given by path. A
*workload* (workloads/NAME.toml) is a named preset of one family: its family, option defaults and fixed
values (and, for OLTP, its event list).

Everything family-specific lives behind this protocol; the engines, the run spec, the CLI, the window and
sweeps only use what it declares. The shapes here are the contract between the engines and the families;
change them with every family at once.

Builtin engine: the parent computes `plan = family.plan(workload, options)` once (picklable; it goes to the
worker processes), then per connection (worker Slot):
    work = family.connection_work(ctx)      # after each (re)connect: prepares statements, per-connection init
    while active:
        t0 = now(); kind = work()           # one transaction; returns its index in family.transactions
        latency[kind].append(now() - t0); events[kind] += 1
A DriverError raised out of work() is handled by the worker as today (retryable errors: ROLLBACK, counted as
an error of `ctx.counts.current` -- the transaction type the family set before its first statement;
connection errors: reconnect; anything else ends the connection). A family that retries internally (TPC-C
deadlocks) counts each retry with `ctx.counts.retry()` and its own rollbacks with `ctx.counts.rollback()`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from tunebench.core.target import ConnParams
from tunebench.load.options import OptionSpec

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class TrxType:
    """One transaction type of a family: `weight` of the mix (relative; a single-type family has one)."""

    name: str  # an identifier: it becomes a series name client.<group>.trx.<name>.tps
    weight: int = 1
    help: str = ""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One consistency condition (TPC-C 3.3.2.x) and whether the data meets it."""

    name: str
    ok: bool
    detail: str = ""


class Counts(Protocol):
    """The statement counters of one connection, as sysbench's reads/writes/other count them."""

    reads: int
    writes: int
    other: int
    current: int  # index of the transaction type under way (errors are charged to it)
    idle_until: float  # time.monotonic() before which the connection waits (a paced family); not latency
    # the family has no more work for this connection (iiBench's max_rows reached): it stops for the rest of the
    # run, and a step whose every connection has stopped ends
    finished: bool

    def retry(self, code: int | None = None) -> None: ...  # a deadlock/lock-wait the family retried (its code)

    def rollback(self) -> None: ...  # a rollback the transaction profile asks for (TPC-C's 1 % NewOrders)


@dataclass(frozen=True, slots=True)
class ConnectionContext:
    """What a family gets to build one connection's work."""

    session: Any  # load.driver RawSession | PureSession: prepare(sql), execute(stmt, *args), query(bytes)
    counts: Counts
    rng: np.random.Generator
    options: Mapping[str, Any]  # resolved and validated
    slot: int  # 0-based number of this connection in its group
    slots: int  # connections the group may open (the schedule's maximum): for per-thread ranges
    plan: Any = None  # what family.plan() made of the workload and its options
    # differs in every run, whatever the seed: for values that must not repeat an earlier run's (oltp_insert's ids)
    run_nonce: int = 0
    kept: dict[str, Any] = field(default_factory=dict)  # the connection's own, kept across its reconnects


Transaction = Callable[[], int]  # runs one transaction, returns its TrxType index (unused, and may be None, for
# a family of one type: the OLTP family returns its statement block itself, saving a call per event)


class Family(Protocol):
    name: str  # "oltp", "tpcc", "dbstress", "iibench", "lua"
    description: str
    form_options: tuple[str, ...]  # the options the window's workload form shows (the rest: its -o field)
    data_options: tuple[str, ...]  # the options that fix the data set (data_key's values)
    headline: tuple[str, float, str] | None  # (trx type, factor, label): ("new_order", 60, "NOPM") or None
    engines: tuple[str, ...]  # which engines can run it: ("builtin", "sysbench"), ("builtin",), ("sysbench",)
    # steps that run no load but change the data (iiBench's create_indexes, the l.x phase): name -> what it does
    actions: Mapping[str, str]

    def option_specs(self) -> Mapping[str, OptionSpec]:
        """Every option, with type, default, help and range; the CLI's -o, the window's form and sweeps use
        these and nothing else."""
        ...

    def resolve(self, defaults: Mapping[str, Any], fixed: Mapping[str, Any], given: Mapping[str, Any],
                where: str = "") -> dict[str, Any]:
        """Catalog defaults <- a workload's defaults <- given; `fixed` ones win. Unknown names and bad values
        raise ConfigError naming the known options."""
        ...

    def transactions(self, options: Mapping[str, Any]) -> tuple[TrxType, ...]: ...

    def headline_of(self, options: Mapping[str, Any]) -> tuple[str, float, str] | None:
        """The group's headline figure with these options: (trx type, factor, label), e.g. TPC-C's
        ("new_order", 60, "NOPM"), iiBench inserts' ("insert", rows_per_commit, "rows/s"); None: TPS is it."""
        ...

    def plan(self, workload: Any, options: Mapping[str, Any]) -> Any:
        """What every connection of a group needs to build its work (picklable: it goes to the workers)."""
        ...

    def shape(self, options: Mapping[str, Any]) -> str:
        """The data set in a few words, for messages: `2 table(s) x 10,000 rows`, `2 warehouse(s) x 1 set`."""
        ...

    def data_key(self, options: Mapping[str, Any]) -> tuple[Any, ...]:
        """What groups of this family sharing one schema must agree on (the data set's shape)."""
        ...

    def missing_data(self, params: ConnParams, schema: str, workload: Any,
                     options: Mapping[str, Any]) -> str | None:
        """None when the prepared data matches `options`; otherwise one line saying what is missing."""
        ...

    def data_bytes(self, workload: Any, options: Mapping[str, Any]) -> int | None:
        """About how much disk a prepare of `options` takes on the server (InnoDB, indexes included), to refuse a
        data set that cannot fit before loading it; None when the family cannot tell (a Lua script's data)."""
        ...

    def prepare(self, params: ConnParams, schema: str, workload: Any, options: Mapping[str, Any], threads: int,
                progress: Progress | None = None, on_rows: Callable[[Any], None] | None = None,
                cancel: threading.Event | None = None) -> dict[str, Any]:
        """Create and load the tables in parallel, registering each in the schema's tunebench_tables once it is
        whole (cleanup drops only registered tables; a cancelled load leaves none half-made). Returns
        {schema, tables_created, rows, rows_per_table, seconds, cancelled, dropped, what} where `what` names the
        data set (`2 table(s) x 30 rows`); `on_rows` hears a load.prepare.RowsProgress every 0.25 s."""
        ...

    def cleanup(self, params: ConnParams, schema: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Drop what the family created in `schema` ({schema, dropped, left_alone}); `options` given: the data set
        those options describe, where the family knows it (a Lua script's own cleanup)."""
        ...

    def check(self, params: ConnParams, schema: str, options: Mapping[str, Any]) -> list[CheckResult]:
        """Consistency conditions; [] when the family has none."""
        ...

    def run_action(self, name: str, params: ConnParams, schema: str, options: Mapping[str, Any],
                   cancel: threading.Event | None = None) -> dict[str, Any]:
        """One of `actions`, run as a step of its own: {action, seconds, done, what, ...} (`what` in one line)."""
        ...

    def connection_work(self, ctx: ConnectionContext) -> Transaction:
        """Builtin engine: prepare this connection's statements and return its transaction function."""
        ...

    def sysbench_args(self, workload: Any, options: Mapping[str, Any]) -> tuple[str, list[str]]:
        """sysbench engine: (script name or path, its --option flags)."""
        ...
