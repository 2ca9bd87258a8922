"""The insert benchmark (iiBench) as a workload family, written from its published description and the
behaviour of the reference script (mdcallag/mytools bench/ibench/iibench.py), not its code.

One table per `tables` number, purchases_index1..N: an auto-increment PK and up to three secondary indexes,
    marketsegment (productid, customerid, price), registersegment (cashregisterid, customerid, price),
    pdc (price, dateandtime, customerid).
Connection k of a group works on table (k mod tables) + 1: `tables` = threads gives the seeds' "x16 iiBench
processes, each its own table".

role=insert: one transaction = one multi-row INSERT of `rows_per_commit` rows (autocommit), values drawn as
the reference draws them (1,000 registers, 10K products, 100K customers, price < 500, data: a run of 'a'
then a random slice of a 4 MiB base64 pool); with `delete_per_insert`, the oldest `rows_per_commit` rows are
deleted after each insert (the l.i1 phase: the table stays the same size); `inserts_per_second` paces each
connection; `max_rows` ends a connection's inserts once its share of the table's rows is in (the l.i0 load).
Tables as the reference makes them: `engine_options` appended to CREATE TABLE, `partitions` by range of the
PK; `secondary_at_end` creates them without the secondary indexes, built later by the `create_indexes`
action (the l.x phase, a step of its own: see workloads/recipes/iibench-phases.toml).
role=query: one of the reference's query shapes per transaction, uniformly: LIMIT `rows_per_query` range
scans forced onto each secondary index that exists, or (query_pk_only) a PK IN-list over the ids present.
"""

from __future__ import annotations

import base64
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tunebench.core.errors import ConfigError
from tunebench.core.target import ConnParams
from tunebench.load.family import ConnectionContext, Progress, Transaction, TrxType
from tunebench.load.hotloop import hot_enabled
from tunebench.load.options import OptionSpec
from tunebench.load.prepare import (
    RowsProgress,
    _server,
    check_schema_name,
)
from tunebench.load.program import Asm, VmProgram
from tunebench.load.registered import RegisteredFamily, ServerLoad, claim_sets, register_tables
from tunebench.mysql.connect import open_connection

TABLE = "purchases_index"
INDEXES = (("marketsegment", "productid, customerid, price"),
           ("registersegment", "cashregisterid, customerid, price"),
           ("pdc", "price, dateandtime, customerid"))
QUERIES = {  # index -> the reference's query on it
    "marketsegment": ("SELECT productid, customerid, price FROM {t} FORCE INDEX ({t}_marketsegment) "
                      "WHERE (productid >= {v}) ORDER BY productid, customerid, price LIMIT {n}", "products"),
    "registersegment": ("SELECT cashregisterid, customerid, price FROM {t} FORCE INDEX ({t}_registersegment) "
                        "WHERE (cashregisterid > {v}) ORDER BY cashregisterid, customerid, price LIMIT {n}",
                        "cashregisters"),
    "pdc": ("SELECT price, dateandtime, customerid FROM {t} FORCE INDEX ({t}_pdc) WHERE (price >= {v}) "
            "ORDER BY price, dateandtime, customerid LIMIT {n}", "max_price"),
}
LOAD_CHUNK = 100_000
POOL_BYTES = 4 * 1024 * 1024  # the reference's random buffer: 4 MiB, base64 (5.6 M characters)
POOL_SEED = 3221223452  # the reference's default --seed: the pool is the same in every process and run
# the reference's --engine_options: table options (ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8, COMMENT='...'),
# names and plain values only, never a second statement
TABLE_OPTION = r"[A-Za-z_]+(\s+[A-Za-z_]+)?(\s*=\s*|\s+)([A-Za-z0-9_.]+|'[^'\\\n]*')"
ENGINE_OPTIONS_RE = re.compile(rf"\s*({TABLE_OPTION}(\s*,?\s*{TABLE_OPTION})*)?\s*")

_SPECS = (
    OptionSpec("role", str, "insert", "insert: multi-row INSERTs; query: the reference's queries",
               choices=("insert", "query")),
    OptionSpec("tables", int, 1, "Tables purchases_index1..N; connection k uses table (k mod N) + 1", 1, 1024),
    OptionSpec("secondary_indexes", int, 3, "Secondary indexes per table (0 to 3)", 0, 3),
    OptionSpec("rows_per_commit", int, 1000, "Rows per INSERT (one transaction)", 1, 100_000),
    OptionSpec("initial_rows", int, 0, "Rows per table loaded by prepare", 0, 10**9),
    OptionSpec("inserts_per_second", int, 0, "Rows per second per insert connection (0: as fast as it goes)",
               0, 10**7),
    OptionSpec("delete_per_insert", bool, False, "Delete the oldest rows_per_commit rows after each insert"),
    OptionSpec("rows_per_query", int, 10, "LIMIT of the range queries, ids of the PK query", 1, 10_000),
    OptionSpec("query_pk_only", bool, False, "Queries: only the PK IN-list"),
    OptionSpec("cashregisters", int, 1000, "Distinct cashregisterid values", 1, 10**9),
    OptionSpec("products", int, 10_000, "Distinct productid values", 1, 10**9),
    OptionSpec("customers", int, 100_000, "Distinct customerid values", 1, 10**9),
    OptionSpec("max_price", int, 500, "price is below this", 1, 10**9),
    OptionSpec("data_length_min", int, 10, "Shortest data column value", 1, 4000),
    OptionSpec("data_length_max", int, 10, "Longest data column value", 1, 4000),
    OptionSpec("data_random_pct", int, 50, "Percentage of the data value that is random", 0, 100),
    OptionSpec("mysql_storage_engine", str, "innodb", "Storage engine"),
    OptionSpec("engine_options", str, "", "Table options appended to CREATE TABLE (ROW_FORMAT=COMPRESSED "
               "KEY_BLOCK_SIZE=8)", free_text=True),
    OptionSpec("partitions", int, 0, "Range partitions on transactionid (0: none)", 0, 8192),
    OptionSpec("rows_per_partition", int, 0, "Rows per partition (0: max_rows / partitions)", 0, 10**12),
    OptionSpec("max_rows", int, 0, "Rows per table the inserts stop at, shared by its connections (0: no limit)",
               0, 10**12),
    OptionSpec("secondary_at_end", bool, False, "Create the tables without their secondary indexes (the "
               "create_indexes action builds them: the l.x phase)"),
)
OPTIONS = {s.name: s for s in _SPECS}


def table_name(n: int) -> str:
    return f"{TABLE}{n}"


def rows_per_partition(options: Mapping[str, Any]) -> int:
    """The range of transactionid each partition holds (the reference's max_rows / num_partitions)."""
    if not options["partitions"]:
        return 0
    return options["rows_per_partition"] or max(1, options["max_rows"] // options["partitions"])


def partition_sql(options: Mapping[str, Any]) -> str:
    """The reference's PARTITION BY RANGE on the PK: p0..p(N-2) by rows_per_partition, the last to MAXVALUE."""
    n = options["partitions"]
    if not n:
        return ""
    size = rows_per_partition(options)
    parts = [f"PARTITION p{i} VALUES LESS THAN ({(i + 1) * size})" for i in range(n - 1)]
    parts.append(f"PARTITION p{n - 1} VALUES LESS THAN (MAXVALUE)")
    return f" PARTITION BY RANGE (transactionid) ({', '.join(parts)})"


def create_sql(n: int, options: Mapping[str, Any]) -> list[str]:
    t = table_name(n)
    extra = f" {options['engine_options'].strip()}" if options["engine_options"].strip() else ""
    out = [f"CREATE TABLE {t} (transactionid BIGINT NOT NULL AUTO_INCREMENT, dateandtime DATETIME, "
           "cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, "
           f"data VARCHAR(4000), PRIMARY KEY (transactionid)) ENGINE = {options['mysql_storage_engine']}{extra}"
           f"{partition_sql(options)}"]
    if not options["secondary_at_end"]:
        out += [f"CREATE INDEX {t}_{name} ON {t} ({cols})" for name, cols in INDEXES[:options["secondary_indexes"]]]
    return out


def index_sql(n: int, options: Mapping[str, Any]) -> str | None:
    """The l.x phase's statement: every secondary index in one ALTER TABLE (one scan), as the reference does it."""
    t = table_name(n)
    adds = [f"ADD INDEX {t}_{name} ({cols})" for name, cols in INDEXES[:options["secondary_indexes"]]]
    return f"ALTER TABLE {t} {', '.join(adds)}" if adds else None


def shape(options: Mapping[str, Any]) -> dict[str, Any]:
    out = {"family": "iibench", "secondary_indexes": options["secondary_indexes"],
           "engine": options["mysql_storage_engine"]}
    # only what differs from the plain tables, so tables registered before these options existed still match
    if options["engine_options"].strip():
        out["engine_options"] = options["engine_options"].strip()
    if options["partitions"]:
        out["partitions"] = [options["partitions"], rows_per_partition(options)]
    if options["secondary_at_end"] and options["secondary_indexes"]:
        out["secondary_at_end"] = True  # not built yet; built, the tables are registered as the plain shape
    return out


_POOL: dict[int, str] = {}  # per process: every connection of a worker slices the one pool


def data_pool(seed: int = POOL_SEED) -> str:
    """The random characters a data value's random part is sliced from: base64 of 4 MiB of random bytes, as the
    reference's (a small pool repeats: 16 KB gave 12,100 distinct values in 200,000 rows, this about 138K)."""
    pool = _POOL.get(seed)
    if pool is None:
        raw = np.random.default_rng(seed).integers(0, 256, POOL_BYTES, dtype=np.uint8).tobytes()
        pool = _POOL[seed] = base64.b64encode(raw).decode()
    return pool


class RowMaker:
    """The reference's row values, a statement's worth at a time (numpy for the numbers).

    As a statement program: five uniform integers per row, and data = 'a' x (length - r) followed by the pool's
    r characters at a uniform offset, r = int(length * 0.75 * data_random_pct / 100) (the reference's base64
    allowance). With the defaults (length 10, 50 %) r is 3: 64^3 values, ~138K distinct in 200,000 rows."""

    def __init__(self, rng: np.random.Generator, options: Mapping[str, Any]):
        self.rng, self.o = rng, options
        self.pool = data_pool()
        self.share = options["data_random_pct"] / 100 * 0.75
        self.top = max(options["data_length_min"], options["data_length_max"])

    def values(self, n: int) -> str:
        o, rng, pool = self.o, self.rng, self.pool
        regs = rng.integers(0, o["cashregisters"], n).tolist()
        prods = rng.integers(0, o["products"], n).tolist()
        custs = rng.integers(0, o["customers"], n).tolist()
        prices = rng.integers(0, o["max_price"], n).tolist()
        offsets = rng.integers(0, len(pool) - int(self.top * self.share), n).tolist()
        if o["data_length_min"] == self.top:  # one length (the default): its 'a' run made once
            r = int(self.top * self.share)
            head = "a" * (self.top - r)
            return ",".join([f"(NOW(),{regs[i]},{custs[i]},{prods[i]},{prices[i]},'{head}{pool[off:off + r]}')"
                             for i, off in enumerate(offsets)])
        lengths = rng.integers(o["data_length_min"], self.top + 1, n).tolist()
        rows = []
        for i in range(n):
            r = int(lengths[i] * self.share)
            data = "a" * (lengths[i] - r) + pool[offsets[i]:offsets[i] + r]
            rows.append(f"(NOW(),{regs[i]},{custs[i]},{prods[i]},{prices[i]},'{data}')")
        return ",".join(rows)


class IibenchConnection:
    """One connection's work: inserts (and matching deletes), or queries."""

    def __init__(self, ctx: ConnectionContext):
        self.ctx, self.session, self.counts, self.o = ctx, ctx.session, ctx.counts, ctx.options
        self.table = table_name(ctx.slot % self.o["tables"] + 1)
        self.rng = ctx.rng
        self.rows = RowMaker(ctx.rng, self.o)
        self.next_at = time.monotonic()
        self.min_id, self.max_id, self.loops = 0, 0, 0
        # max_rows: the table's rows shared by the group's connections on it (connection k is on table k mod N)
        peers = len(range(ctx.slot % self.o["tables"], max(ctx.slots, ctx.slot + 1), self.o["tables"]))
        self.quota = math.ceil(self.o["max_rows"] / peers) if self.o["max_rows"] else 0
        self.kept = ctx.kept  # rows inserted, kept across reconnects
        if self.o["delete_per_insert"] or self.o["query_pk_only"]:
            self._bounds()
        names = [name for name, _ in INDEXES[:self.o["secondary_indexes"]]]
        self.shapes = [] if self.o["query_pk_only"] else names

    def _bounds(self) -> None:
        row = self.session.query_rows(f"SELECT MIN(transactionid), MAX(transactionid) FROM {self.table}".encode())
        self.counts.reads += 1
        lo, hi = row[0] if row else (None, None)
        self.min_id, self.max_id = int(lo or 0), int(hi or 0)

    def insert(self) -> int:
        n = self.o["rows_per_commit"]
        if self.quota:  # the last INSERT may go past it by less than rows_per_commit, as the reference's does
            self.kept["inserted"] = self.kept.get("inserted", 0) + n
        self.session.query(f"INSERT INTO {self.table} (dateandtime, cashregisterid, customerid, productid, price, "
                           f"data) VALUES {self.rows.values(n)}".encode())
        self.counts.writes += 1
        if self.o["delete_per_insert"]:  # as many of the oldest rows go: the table keeps its size
            self.session.query(f"DELETE FROM {self.table} WHERE transactionid >= {self.min_id} "
                               f"ORDER BY transactionid ASC LIMIT {n}".encode())
            self.counts.writes += 1
            self.min_id += n
        if self.quota and self.kept["inserted"] >= self.quota:
            self.counts.finished = True  # this connection's share is in: it stops (the step ends with the last)
        rate = self.o["inserts_per_second"]
        if rate:  # the next insert is due when this one's rows are paid for; the wait is not latency
            self.next_at = max(self.next_at + n / rate, time.monotonic() - 1.0)
            self.counts.idle_until = self.next_at
        return 0

    def query(self) -> int:
        self.loops += 1
        t, limit = self.table, self.o["rows_per_query"]
        if not self.shapes:
            if self.loops % 100 == 1:
                self._bounds()
            hi = max(self.max_id, self.min_id + 1)
            ids = ",".join(str(v) for v in self.rng.integers(self.min_id, hi, limit).tolist())
            self.counts.current = 0
            self.session.query_rows(f"SELECT transactionid, productid, data FROM {t} WHERE transactionid IN "
                                    f"({ids})".encode())
            self.counts.reads += 1
            return 0
        k = int(self.rng.integers(0, len(self.shapes)))
        self.counts.current = k
        sql, bound = QUERIES[self.shapes[k]]
        value = int(self.rng.integers(0, self.o[bound]))
        self.session.query_rows(sql.format(t=t, v=value, n=limit).encode())
        self.counts.reads += 1
        return k


class IibenchFamily(RegisteredFamily):
    name = "iibench"
    description = ("the insert benchmark (iiBench): purchases_index tables, multi-row INSERTs with up to three "
                   "secondary indexes, optional query clients (role=query) and matching deletes")
    OPTIONS = OPTIONS
    form_options = ("role", "tables", "rows_per_commit", "secondary_indexes", "inserts_per_second",
                    "delete_per_insert", "max_rows")
    data_options = ("tables", "secondary_indexes", "mysql_storage_engine", "engine_options", "partitions",
                    "rows_per_partition", "secondary_at_end")
    actions = {"create_indexes": "build the secondary indexes the tables were created without (secondary_at_end): "
                                 "one ALTER TABLE per table, timed"}

    def resolve(self, defaults: Mapping[str, Any], fixed: Mapping[str, Any], given: Mapping[str, Any],
                where: str = "") -> dict[str, Any]:
        out = super().resolve(defaults, fixed, given, where)
        if out["data_length_max"] < out["data_length_min"]:
            raise ConfigError(f"{where}option data_length_max: {out['data_length_max']} is below data_length_min "
                              f"{out['data_length_min']}")
        if not ENGINE_OPTIONS_RE.fullmatch(out["engine_options"]):
            raise ConfigError(f"{where}option engine_options: {out['engine_options']!r} is not a list of table "
                              "options (NAME=VALUE ..., e.g. ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8)")
        if out["partitions"] and not (out["rows_per_partition"] or out["max_rows"] >= out["partitions"]):
            raise ConfigError(f"{where}option partitions: the partitions' ranges come from rows_per_partition, or "
                              "max_rows / partitions as the reference's: give one of them")
        if out["role"] == "query" and not out["query_pk_only"] and out["secondary_indexes"] == 0:
            raise ConfigError(f"{where}role=query without secondary indexes has nothing to query: "
                              "give query_pk_only=on or secondary_indexes >= 1")
        return out

    def data_key(self, options: Mapping[str, Any]) -> tuple[Any, ...]:
        # the partitions' ranges as the tables get them (from max_rows when rows_per_partition is 0)
        return (*(options[k] for k in self.data_options), rows_per_partition(options))

    def transactions(self, options: Mapping[str, Any]) -> tuple[TrxType, ...]:
        if options["role"] == "insert":
            rows = options["rows_per_commit"]
            return (TrxType("insert", 1, f"one INSERT of {rows} rows"
                            + (f", then a DELETE of the oldest {rows}" if options["delete_per_insert"] else "")),)
        if options["query_pk_only"]:
            return (TrxType("pk", 1, "SELECT by a PK IN-list"),)
        return tuple(TrxType(name, 1, f"LIMIT range scan on the {name} index")
                     for name, _ in INDEXES[:options["secondary_indexes"]])

    def headline_of(self, options: Mapping[str, Any]) -> tuple[str, float, str] | None:
        """Rows inserted per second, the insert benchmark's own figure (an insert is `rows_per_commit` rows);
        a query group's figure is its queries per second, its TPS."""
        if options["role"] == "insert":
            return ("insert", float(options["rows_per_commit"]), "rows/s")
        return None

    def data_bytes(self, workload: Any, options: Mapping[str, Any]) -> int | None:
        # a purchases_index row: ~40 B of columns, the data column's average length, ~30 B per secondary index
        per_row = 60 + (int(options["data_length_min"]) + int(options["data_length_max"])) // 2 \
            + 30 * int(options["secondary_indexes"])
        return int(options["initial_rows"]) * per_row * int(options["tables"])

    def shape(self, options: Mapping[str, Any]) -> str:
        rows = f" x {options['initial_rows']:,} rows" if options["initial_rows"] else ""
        parts = f", {options['partitions']} partitions" if options["partitions"] else ""
        later = " (built later)" if options["secondary_at_end"] and options["secondary_indexes"] else ""
        return (f"{options['tables']} purchases_index table(s){rows}, {options['secondary_indexes']} secondary "
                f"index(es){later}{parts}")

    def tables(self, options: Mapping[str, Any]) -> list[str]:
        return [table_name(n) for n in range(1, options["tables"] + 1)]

    def registered_shape(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return shape(options)

    def prepare(self, params: ConnParams, schema: str, workload: Any, options: Mapping[str, Any], threads: int,
                progress: Progress | None = None, on_rows: Callable[[Any], None] | None = None,
                cancel: threading.Event | None = None) -> dict[str, Any]:
        return _prepare(_server(params), check_schema_name(schema), options, threads, progress, on_rows, cancel)

    def run_action(self, name: str, params: ConnParams, schema: str, options: Mapping[str, Any],
                   cancel: threading.Event | None = None) -> dict[str, Any]:
        """The l.x phase: the secondary indexes built on every table (one ALTER TABLE each, as the reference's
        --secondary_at_end), timed; the tables are then registered as of the plain shape (indexes present)."""
        if name not in self.actions:
            raise ConfigError(f"the iibench family has no action {name!r}; it has {', '.join(self.actions)}")
        return create_indexes(params, check_schema_name(schema), options, cancel)

    def connection_work(self, ctx: ConnectionContext) -> Transaction:
        c = IibenchConnection(ctx)
        return c.insert if ctx.options["role"] == "insert" else c.query

    def hot_program(self, plan: Any, options: Mapping[str, Any]) -> VmProgram | None:
        """IibenchConnection's inserts or queries as a statement program for the compiled loop; None: the Python
        loop (not built, or TUNEBENCH_HOT_LOOP=0)."""
        return hot_program(options) if hot_enabled() else None


def _conn_values(options: Mapping[str, Any], *, slot: int, slots: int, run_nonce: int) -> dict[str, Any]:
    """A connection's table and its share of max_rows, as IibenchConnection works them out."""
    tables = int(options["tables"])
    peers = len(range(slot % tables, max(slots, slot + 1), tables))
    return {"table": slot % tables + 1,
            "quota": math.ceil(options["max_rows"] / peers) if options["max_rows"] else 0}


def hot_program(options: Mapping[str, Any]) -> VmProgram:
    """IibenchConnection as a statement program: the same INSERT of rows_per_commit rows (values drawn as
    RowMaker draws them, data sliced from the same pool), the matching DELETE, max_rows and pacing; or the same
    queries."""
    o = options
    a = Asm(types=len(IibenchFamily().transactions(o)))
    table, quota = a.param("table"), a.param("quota")
    inserted = a.keep("inserted")
    min_id, max_id, loops, t, i = a.regs(5)

    def bounds() -> None:
        a.exec("read", f"SELECT MIN(transactionid), MAX(transactionid) FROM {TABLE}%d", table,
               into=[min_id, max_id])
        a.coalesce(min_id, min_id, 0)
        a.coalesce(max_id, max_id, 0)
        a.trunc(min_id, min_id)
        a.trunc(max_id, max_id)

    built = a.reg()  # the next event's INSERT rows are built (while the server runs this one's)
    a.init()
    a.mov(min_id, 0)
    a.mov(max_id, 0)
    a.mov(loops, 0)
    a.mov(built, 0)
    if o["delete_per_insert"] or o["query_pk_only"]:
        bounds()
    a.end()
    a.event()
    if o["role"] == "insert":
        n = int(o["rows_per_commit"])
        share = o["data_random_pct"] / 100 * 0.75
        top, low = max(o["data_length_min"], o["data_length_max"]), o["data_length_min"]
        pool = data_pool().encode()
        rows, reg, prod, cust, price, head, tail, length, r = a.regs(9)
        a.type(0)
        if o["max_rows"]:
            a.add(inserted, inserted, n)

        def row(template: str) -> None:
            a.unif(reg, 0, o["cashregisters"] - 1)
            a.unif(prod, 0, o["products"] - 1)
            a.unif(cust, 0, o["customers"] - 1)
            a.unif(price, 0, o["max_price"] - 1)
            if low == top:  # one length (the default)
                a.mov(head, "a" * (top - int(top * share)))
                a.rstr(tail, pool, int(top * share))
            else:
                a.unif(length, low, top)
                a.mul(r, length, share)
                a.trunc(r, r)
                a.sub(t, length, r)
                a.rstr(head, b"a" * 4000, t)
                a.rstr(tail, pool, r)
            (a.format if template.startswith("(") else a.append)(rows, template, reg, cust, prod, price, head, tail)

        def build() -> None:  # the INSERT's rows, into `rows`
            row("(NOW(),%d,%d,%d,%d,'%s%s')")
            if n > 1:
                more = a.label()
                a.mov(i, 1)
                a.here(more)
                row(",(NOW(),%d,%d,%d,%d,'%s%s')")
                a.add(i, i, 1)
                a.lt(t, i, n)
                a.jnz(t, more)

        # The rows are built one event ahead: this event's INSERT is sent, the next one's rows are built while
        # the server runs it, then its result is read. The server receives the same statements; the client's
        # time to build them (~1 ms per 1,000 rows) overlaps the server's instead of adding to it, as the
        # reference's separate statement-making process does. The first event (and the first after a reconnect)
        # builds its own.
        ready = a.label()
        a.jnz(built, ready)
        build()
        a.mov(built, 1)
        a.here(ready)
        a.send("write", f"INSERT INTO {TABLE}%d (dateandtime, cashregisterid, customerid, productid, price, data) "
               "VALUES %s", table, rows)
        build()
        a.recv()
        if o["delete_per_insert"]:
            a.exec("write", f"DELETE FROM {TABLE}%d WHERE transactionid >= %d ORDER BY transactionid ASC LIMIT {n}",
                   table, min_id)
            a.add(min_id, min_id, n)
        if o["max_rows"]:
            going = a.label()
            a.lt(t, inserted, quota)
            a.jnz(t, going)
            a.finish()
            a.here(going)
        if o["inserts_per_second"]:
            a.pace(n, int(o["inserts_per_second"]))
        a.end()
        return a.program(_conn_values, (dict(o),))
    limit = int(o["rows_per_query"])
    a.add(loops, loops, 1)
    if o["query_pk_only"]:
        fresh, ids, v, hi = a.label(), a.reg(), a.reg(), a.reg()
        a.mod(t, loops, 100)
        a.ne(t, t, 1)
        a.jnz(t, fresh)
        bounds()
        a.here(fresh)
        a.add(hi, min_id, 1)
        a.max(hi, hi, max_id)
        a.sub(hi, hi, 1)
        a.unif(v, min_id, hi)
        a.format(ids, "%d", v)
        for _ in range(limit - 1):
            a.unif(v, min_id, hi)
            a.append(ids, ",%d", v)
        a.type(0)
        a.exec("read", f"SELECT transactionid, productid, data FROM {TABLE}%d WHERE transactionid IN (%s)", table, ids)
        a.end()
        return a.program(_conn_values, (dict(o),))
    shapes = [name for name, _ in INDEXES[:o["secondary_indexes"]]]
    k, value = a.regs(2)
    a.unif(k, 0, len(shapes) - 1)
    labels = [a.label() for _ in shapes]
    for j, label in enumerate(labels):
        a.eq(t, k, j)
        a.jnz(t, label)
    for j, (label, name) in enumerate(zip(labels, shapes, strict=True)):
        a.here(label)
        a.type(j)
        sql, bound = QUERIES[name]
        a.unif(value, 0, o[bound] - 1)
        marks = re.findall(r"\{[tv]\}", sql)
        template = sql.replace("{t}", f"{TABLE}%d").replace("{v}", "%d").replace("{n}", str(limit))
        a.exec("read", template, *[table if m == "{t}" else value for m in marks])
        a.end()
    return a.program(_conn_values, (dict(o),))


def create_indexes(params: ConnParams, schema: str, options: Mapping[str, Any],
                   cancel: threading.Event | None = None) -> dict[str, Any]:
    """Build the secondary indexes on each table in turn; how long each took and in all."""
    server = _server(params)
    built = dict(options, secondary_at_end=False)
    tables: list[dict[str, Any]] = []
    t0 = time.monotonic()
    conn = open_connection(server)
    try:
        cur = conn.cursor()
        for n in range(1, options["tables"] + 1):
            if cancel is not None and cancel.is_set():
                break
            sql = index_sql(n, options)
            if sql is None:
                break
            started = time.monotonic()
            cur.execute(f"USE `{schema}`")
            cur.execute(sql)
            tables.append({"table": table_name(n), "seconds": round(time.monotonic() - started, 3)})
            register_tables(params, schema, [table_name(n)], shape(built))
        cur.close()
    finally:
        conn.close()
    seconds = time.monotonic() - t0
    names = [name for name, _ in INDEXES[:options["secondary_indexes"]]]
    return {"action": "create_indexes", "seconds": round(seconds, 3), "tables": tables,
            "indexes": names, "done": len(tables) == options["tables"] and bool(names),
            "what": f"{len(names)} secondary index(es) on {len(tables)} table(s) in {seconds:.1f} s"}


def _prepare(params: ConnParams, schema: str, options: Mapping[str, Any], threads: int, progress: Progress | None,
             on_rows: Callable[[RowsProgress], None] | None, cancel: threading.Event | None) -> dict[str, Any]:
    """Create the tables (registered once whole) and load `initial_rows` into each, made by the server."""
    from tunebench.load.tpcc.loader import rs, seq

    say = progress or (lambda _m: None)
    want = shape(options)

    def create(cur: Any, n: int) -> None:
        for sql in create_sql(n, options):
            cur.execute(sql)

    todo = claim_sets(params, schema, {n: [table_name(n)] for n in range(1, options["tables"] + 1)}, want, create,
                      say)
    rows = options["initial_rows"]
    load = ServerLoad(params, schema, rows * len(todo), threads, on_rows, cancel)

    def batch(n: int) -> list[str]:
        return [f"INSERT INTO {table_name(n)} (dateandtime, cashregisterid, customerid, productid, price, data) "
                f"SELECT NOW(), FLOOR(RAND() * {options['cashregisters']}), FLOOR(RAND() * {options['customers']}), "
                f"FLOOR(RAND() * {options['products']}), FLOOR(RAND() * {options['max_price']}), "
                f"{rs(options['data_length_min'], options['data_length_max'])} "
                f"FROM {seq(min(LOAD_CHUNK, rows - first), 'r')}" for first in range(0, rows, LOAD_CHUNK)]

    if todo and rows:
        say(f"Inserting {rows} rows into {len(todo)} table(s) with {threads} connections")
    # all the tables at once (one set): whole together, or dropped together (a cancel, a failure)
    done, dropped = load.load_sets([0] if todo else [], lambda _n: [batch(n) for n in todo],
                                   lambda _n: register_tables(params, schema, [table_name(n) for n in todo], want),
                                   lambda _n: [table_name(n) for n in todo])
    whole = todo if done else []
    seconds = load.finish()
    return {"schema": schema, "tables_created": len(whole), "rows": load.rows, "rows_per_table": rows,
            "seconds": round(seconds, 2), "cancelled": len(whole) < len(todo), "dropped": dropped,
            "kept": not todo, "what": f"{len(whole)} purchases_index table(s) x {rows:,} rows"}
