"""dbSTRESS-like: a workload family designed from dbSTRESS's published description (the original kit is not
public): a stock-management OLTP workload whose HISTORY table is reached through a secondary index.

Per data set n (`-o datasets=N` sets in one database, the seeds' 10M vs 10 x 1M):
    ZONE{n}(ref PK, name)                          10 zones
    SECTION{n}(ref PK, name, ref_zone)             100 sections
    STAT{n}(ref PK, name, note)                    100 states
    OBJECT{n}(ref CHAR(10) PK, name, ref_section, price, updated)      `objects` rows, ref 'O000000001'...
    HISTORY{n}(id, ref_object CHAR(10), horder, ref_stat, ref_section, hdate, note)
        `history_per_object` rows per object (the seeds: 20), horder 1..H. `history_pk`:
        none: an auto-increment id is the PK and (ref_object, horder) a secondary index (the original design);
        pk:   (ref_object, horder) is the primary key ("+HPK");
        hash: that primary key, partitioned by KEY(ref_object) into 16 partitions.
Transactions, each by one OBJECT REF drawn uniformly (or from the connection's own range, `ref_ranges=on`:
the seeds' workaround for the "Probe RW1" finding):
    SEL1  join of 3 tables by object ref: OBJECT, its SECTION and that section's ZONE;
    SEL2  join of 2 tables by object ref: OBJECT and its HISTORY records (through the history index);
    WRITE one HISTORY record of the object: DELETE it, INSERT it again with new values, UPDATE another of
          the object's records (the data set keeps its size), in one transaction.
`mix`: ro (SEL1 + SEL2), ro-sel1, ro-sel2, rw1 (reads and writes 1:1: SEL1 1, SEL2 1, WRITE 2).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from tunebench.core.target import ConnParams
from tunebench.load.family import CheckResult, ConnectionContext, Progress, Transaction, TrxType
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

TABLES = ("zone", "section", "stat", "object", "history")
ZONES, SECTIONS, STATES = 10, 100, 100
LOAD_CHUNK = 50_000  # objects per loader statement
MIXES = {"ro": {"sel1": 1, "sel2": 1}, "ro-sel1": {"sel1": 1}, "ro-sel2": {"sel2": 1},
         "rw1": {"sel1": 1, "sel2": 1, "write": 2}}
TRX_HELP = {"sel1": "join of 3 tables by object ref (OBJECT, SECTION, ZONE)",
            "sel2": "join of 2 tables by object ref (OBJECT, HISTORY through its index)",
            "write": "DELETE + INSERT + UPDATE of the object's HISTORY records, one transaction"}

_SPECS = (
    OptionSpec("mix", str, "ro", "ro (SEL1+SEL2), ro-sel1, ro-sel2 or rw1 (reads:writes 1:1)", choices=tuple(MIXES)),
    OptionSpec("objects", int, 100_000, "OBJECT rows per data set (the seeds: 10M, or 1M x 10)", 10, 10**9),
    OptionSpec("history_per_object", int, 20, "HISTORY records per object (the seeds: 20)", 1, 1000),
    OptionSpec("datasets", int, 1, "Data sets in the database (OBJECT1..N, HISTORY1..N, ...)", 1, 1000),
    OptionSpec("history_pk", str, "none", "HISTORY keys: none (secondary index on the object ref), pk "
               "(+HPK: (ref_object, horder) primary key), hash (that key, partitioned)",
               choices=("none", "pk", "hash")),
    OptionSpec("ref_ranges", bool, False, "Each connection draws object refs from its own range (shared when "
               "connections outnumber objects)"),
    OptionSpec("mysql_storage_engine", str, "innodb", "Storage engine"),
)
OPTIONS = {s.name: s for s in _SPECS}


def ref(i: int) -> str:
    return f"O{i:09d}"


def create_sql(n: int, options: Mapping[str, Any]) -> list[str]:
    engine = f"/*! ENGINE = {options['mysql_storage_engine']} */"
    pk = options["history_pk"]
    history_keys = ("id BIGINT NOT NULL AUTO_INCREMENT, ", "PRIMARY KEY (id), KEY history_ref (ref_object, horder)")
    if pk != "none":
        history_keys = ("", "PRIMARY KEY (ref_object, horder)")
    partition = " PARTITION BY KEY (ref_object) PARTITIONS 16" if pk == "hash" else ""
    return [
        f"CREATE TABLE zone{n} (ref INT NOT NULL, name VARCHAR(32), PRIMARY KEY (ref)) {engine}",
        f"CREATE TABLE section{n} (ref INT NOT NULL, name VARCHAR(32), ref_zone INT NOT NULL, PRIMARY KEY (ref)) "
        f"{engine}",
        f"CREATE TABLE stat{n} (ref INT NOT NULL, name VARCHAR(32), note VARCHAR(64), PRIMARY KEY (ref)) {engine}",
        f"CREATE TABLE object{n} (ref CHAR(10) NOT NULL, name VARCHAR(32), ref_section INT NOT NULL, "
        f"price DECIMAL(10,2), updated DATETIME, PRIMARY KEY (ref)) {engine}",
        f"CREATE TABLE history{n} ({history_keys[0]}ref_object CHAR(10) NOT NULL, horder INT NOT NULL, "
        f"ref_stat INT NOT NULL, ref_section INT NOT NULL, hdate DATETIME, note VARCHAR(64), {history_keys[1]}) "
        f"{engine}{partition}",
    ]


def shape(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"family": "dbstress", **{k: options[k] for k in ("objects", "history_per_object", "history_pk",
                                                             "mysql_storage_engine")}}


class DbstressConnection:
    """One connection's work: a transaction of the mix on one object of one data set."""

    def __init__(self, ctx: ConnectionContext, names: tuple[str, ...], weights: tuple[int, ...]):
        self.ctx, self.session, self.counts, self.o = ctx, ctx.session, ctx.counts, ctx.options
        self.rng = ctx.rng
        objects = self.o["objects"]
        if self.o["ref_ranges"]:
            # as many ranges as connections, or as objects when there are fewer (16 connections on 10 objects:
            # the last 6 share the first ones' ranges of one object); the last range takes the remainder
            ranges = max(1, min(objects, ctx.slots))
            per, k = objects // ranges, ctx.slot % ranges
            self.lo = k * per + 1
            self.hi = objects if k == ranges - 1 else self.lo + per - 1
        else:
            self.lo, self.hi = 1, objects
        self.kinds = [name for name, w in zip(names, weights, strict=True) for _ in range(w)]
        self.index = {name: i for i, name in enumerate(names)}
        self.run = {"sel1": self.sel1, "sel2": self.sel2, "write": self.write}

    def work(self) -> int:
        kind = self.kinds[int(self.rng.integers(0, len(self.kinds)))]
        self.counts.current = self.index[kind]
        n = int(self.rng.integers(1, self.o["datasets"] + 1))
        obj = ref(int(self.rng.integers(self.lo, self.hi + 1)))
        self.run[kind](n, obj)
        return self.index[kind]

    def _read(self, sql: str) -> list[tuple[Any, ...]]:
        rows = self.session.query_rows(sql.encode())
        self.counts.reads += 1
        return rows

    def _write(self, sql: str) -> None:
        self.session.query(sql.encode())
        self.counts.writes += 1

    def sel1(self, n: int, obj: str) -> None:
        self._read(f"SELECT o.ref, o.name, o.price, s.name, z.name FROM object{n} o JOIN section{n} s "
                   f"ON s.ref = o.ref_section JOIN zone{n} z ON z.ref = s.ref_zone WHERE o.ref = '{obj}'")

    def sel2(self, n: int, obj: str) -> None:
        self._read(f"SELECT o.ref, o.name, h.horder, h.ref_stat, h.hdate, h.note FROM object{n} o JOIN history{n} h "
                   f"ON h.ref_object = o.ref WHERE o.ref = '{obj}' ORDER BY h.horder")

    def write(self, n: int, obj: str) -> None:
        h = self.o["history_per_object"]
        one, other = (int(v) for v in self.rng.integers(1, h + 1, 2))
        stat, section = int(self.rng.integers(1, STATES + 1)), int(self.rng.integers(1, SECTIONS + 1))
        note = f"w{int(self.rng.integers(0, 10**9))}"
        self.session.query(b"BEGIN")
        self.counts.other += 1
        self._write(f"DELETE FROM history{n} WHERE ref_object = '{obj}' AND horder = {one}")
        self._write(f"INSERT INTO history{n} (ref_object, horder, ref_stat, ref_section, hdate, note) "
                    f"VALUES ('{obj}', {one}, {stat}, {section}, NOW(), '{note}')")
        self._write(f"UPDATE history{n} SET ref_stat = {stat}, hdate = NOW(), note = '{note}' "
                    f"WHERE ref_object = '{obj}' AND horder = {other}")
        self.session.query(b"COMMIT")
        self.counts.other += 1


class DbstressFamily(RegisteredFamily):
    name = "dbstress"
    description = ("dbSTRESS-like (from its published description): OBJECT/HISTORY/SECTION/ZONE/STAT, SEL1, SEL2 "
                   "and WRITE by object ref; RO, RO-SEL1, RO-SEL2, RW1; x N data sets; +HPK")
    OPTIONS = OPTIONS
    form_options = ("mix", "objects", "history_per_object", "datasets", "history_pk", "ref_ranges")
    data_options = ("objects", "history_per_object", "datasets", "history_pk", "mysql_storage_engine")
    missing_phrase = "the dbSTRESS-like data set of {shape} is"

    def transactions(self, options: Mapping[str, Any]) -> tuple[TrxType, ...]:
        return tuple(TrxType(name, w, TRX_HELP[name]) for name, w in MIXES[options["mix"]].items())

    def plan(self, workload: Any, options: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[int, ...]]:
        trx = self.transactions(options)
        return tuple(t.name for t in trx), tuple(t.weight for t in trx)

    def data_bytes(self, workload: Any, options: Mapping[str, Any]) -> int | None:
        # InnoDB: an OBJECT row ~100 B; a HISTORY row ~80 B and ~35 B more in its (ref_object, horder) index
        per_object = 100 + int(options["history_per_object"]) * 115
        return int(options["objects"]) * per_object * int(options["datasets"])

    def shape(self, options: Mapping[str, Any]) -> str:
        sets = f"{options['datasets']} x " if options["datasets"] > 1 else ""
        hpk = {"none": "", "pk": ", +HPK", "hash": ", +HPK partitioned"}[options["history_pk"]]
        return (f"{sets}{options['objects']:,} objects x {options['history_per_object']} history records"
                f"{hpk}")

    def tables(self, options: Mapping[str, Any]) -> list[str]:
        return [f"{t}{n}" for n in range(1, options["datasets"] + 1) for t in TABLES]

    def registered_shape(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return shape(options)

    def prepare(self, params: ConnParams, schema: str, workload: Any, options: Mapping[str, Any], threads: int,
                progress: Progress | None = None, on_rows: Callable[[Any], None] | None = None,
                cancel: threading.Event | None = None) -> dict[str, Any]:
        return _prepare(_server(params), check_schema_name(schema), options, threads, progress, on_rows, cancel)

    def check(self, params: ConnParams, schema: str, options: Mapping[str, Any]) -> list[CheckResult]:
        """The family's invariants, per data set and per object (issue 43 item 11: a total count passed history
        moved between objects): the reference tables whole, every object there, and every object with exactly
        its history_per_object records, numbered 1..H (WRITE deletes one and inserts it again under the same
        number), and no record of an object that does not exist."""
        conn = open_connection(_server(params))
        out = []
        h = int(options["history_per_object"])
        try:
            cur = conn.cursor()
            for n in range(1, options["datasets"] + 1):
                q = f"`{schema}`"
                cur.execute(f"SELECT (SELECT COUNT(*) FROM {q}.zone{n}), (SELECT COUNT(*) FROM {q}.section{n}), "
                            f"(SELECT COUNT(*) FROM {q}.stat{n}), (SELECT COUNT(*) FROM {q}.object{n})")
                zones, sections, states, objects = cur.fetchall()[0]
                ref_ok = (zones, sections, states) == (ZONES, SECTIONS, STATES)
                out.append(CheckResult(f"data set {n}: {ZONES} zones, {SECTIONS} sections, {STATES} states", ref_ok,
                                       "" if ref_ok else f"{zones} zones, {sections} sections, {states} states"))
                want = int(options["objects"])
                out.append(CheckResult(f"data set {n}: {want:,} objects", objects == want,
                                       "" if objects == want else f"{objects:,} objects"))
                # per object: its records' count, distinct numbers and their range (the (ref_object, horder)
                # index, in order); an object without any record; a record whose object is gone
                cur.execute(f"SELECT ref_object, COUNT(*), COUNT(DISTINCT horder), MIN(horder), MAX(horder) "
                            f"FROM {q}.history{n} GROUP BY ref_object "
                            f"HAVING COUNT(*) <> {h} OR COUNT(DISTINCT horder) <> {h} OR MIN(horder) <> 1 "
                            f"OR MAX(horder) <> {h} ORDER BY ref_object LIMIT 1000")
                wrong = cur.fetchall()
                cur.execute(f"SELECT COUNT(*) FROM {q}.object{n} o WHERE NOT EXISTS "
                            f"(SELECT 1 FROM {q}.history{n} x WHERE x.ref_object = o.ref)")
                bare = cur.fetchall()[0][0]
                cur.execute(f"SELECT COUNT(*) FROM {q}.history{n} x WHERE NOT EXISTS "
                            f"(SELECT 1 FROM {q}.object{n} o WHERE o.ref = x.ref_object)")
                orphans = cur.fetchall()[0][0]
                ok = not wrong and not bare and not orphans
                detail = []
                if wrong:
                    ref, count, distinct, lo, hi = wrong[0]
                    ref = ref.decode() if isinstance(ref, (bytes, bytearray)) else ref
                    detail.append(f"{len(wrong):,}{'+' if len(wrong) == 1000 else ''} object(s) whose records are not "
                                  f"1..{h} (e.g. {ref}: {count} records, {distinct} numbers, {lo}..{hi})")
                if bare:
                    detail.append(f"{bare:,} object(s) without records")
                if orphans:
                    detail.append(f"{orphans:,} record(s) of no object")
                out.append(CheckResult(f"data set {n}: every object has history records 1..{h}", ok,
                                       "; ".join(detail)))
            cur.close()
        finally:
            conn.close()
        return out

    def connection_work(self, ctx: ConnectionContext) -> Transaction:
        names, weights = ctx.plan
        return DbstressConnection(ctx, names, weights).work

    def hot_program(self, plan: Any, options: Mapping[str, Any]) -> VmProgram | None:
        """DbstressConnection's transactions as a statement program for the compiled loop; None: the Python
        loop (not built, or TUNEBENCH_HOT_LOOP=0)."""
        return hot_program(plan, options) if hot_enabled() else None


def _ranges(options: Mapping[str, Any], *, slot: int, slots: int, run_nonce: int) -> dict[str, Any]:
    """A connection's object refs, as DbstressConnection draws them: all, or its own range (ref_ranges)."""
    objects = int(options["objects"])
    if not options["ref_ranges"]:
        return {"lo": 1, "hi": objects, "datasets": int(options["datasets"])}
    ranges = max(1, min(objects, slots))
    per, k = objects // ranges, slot % ranges
    lo = k * per + 1
    return {"lo": lo, "hi": objects if k == ranges - 1 else lo + per - 1, "datasets": int(options["datasets"])}


def hot_program(plan: tuple[tuple[str, ...], tuple[int, ...]], options: Mapping[str, Any]) -> VmProgram:
    """SEL1, SEL2 and WRITE as DbstressConnection sends them, in the mix's weights."""
    names, weights = plan
    a = Asm(types=len(names))
    lo, hi, sets = a.param("lo"), a.param("hi"), a.param("datasets")
    kind, n, num, obj, t = a.regs(5)
    one, other, stat, section, note = a.regs(5)
    a.event()
    a.unif(t, 0, sum(weights) - 1)
    a.pick(kind, [i for i, w in enumerate(weights) for _ in range(w)], t)
    a.unif(n, 1, sets)
    a.unif(num, lo, hi)
    a.format(obj, "O%09d", num)
    labels = {name: a.label() for name in names}
    for i, name in enumerate(names):
        a.eq(t, kind, i)
        a.jnz(t, labels[name])
    a.end()
    for i, name in enumerate(names):
        a.here(labels[name])
        a.type(i)
        if name == "sel1":
            a.exec("read", "SELECT o.ref, o.name, o.price, s.name, z.name FROM object%d o JOIN section%d s "
                   "ON s.ref = o.ref_section JOIN zone%d z ON z.ref = s.ref_zone WHERE o.ref = ?", n, n, n, obj)
        elif name == "sel2":
            a.exec("read", "SELECT o.ref, o.name, h.horder, h.ref_stat, h.hdate, h.note FROM object%d o JOIN "
                   "history%d h ON h.ref_object = o.ref WHERE o.ref = ? ORDER BY h.horder", n, n, obj)
        else:
            h = int(options["history_per_object"])
            a.unif(one, 1, h)
            a.unif(other, 1, h)
            a.unif(stat, 1, STATES)
            a.unif(section, 1, SECTIONS)
            a.unif(t, 0, 10**9 - 1)
            a.format(note, "w%d", t)
            a.exec("other", "BEGIN")
            a.exec("write", "DELETE FROM history%d WHERE ref_object = ? AND horder = ?", n, obj, one)
            a.exec("write", "INSERT INTO history%d (ref_object, horder, ref_stat, ref_section, hdate, note) "
                   "VALUES (?, ?, ?, ?, NOW(), ?)", n, obj, one, stat, section, note)
            a.exec("write", "UPDATE history%d SET ref_stat = ?, hdate = NOW(), note = ? "
                   "WHERE ref_object = ? AND horder = ?", n, stat, note, obj, other)
            a.exec("other", "COMMIT")
        a.end()
    return a.program(_ranges, (dict(options),))


def load_statements(n: int, options: Mapping[str, Any]) -> list[list[str]]:
    """The statements that fill data set n: the dimensions, then OBJECT and HISTORY in chunks of objects."""
    from tunebench.load.tpcc.loader import rs, seq

    objects, h = options["objects"], options["history_per_object"]
    head = [f"INSERT INTO zone{n} SELECT z.n, CONCAT('zone ', z.n) FROM {seq(ZONES, 'z')}",
            f"INSERT INTO section{n} SELECT s.n, CONCAT('section ', s.n), 1 + (s.n - 1) % {ZONES} "
            f"FROM {seq(SECTIONS, 's')}",
            f"INSERT INTO stat{n} SELECT s.n, CONCAT('state ', s.n), {rs(20, 60)} FROM {seq(STATES, 's')}"]
    chunks = []
    for first in range(0, objects, LOAD_CHUNK):
        k = min(LOAD_CHUNK, objects - first)
        objs = f"(SELECT {first} + o.n AS i FROM {seq(k, 'o')}) x"
        chunks.append([
            f"INSERT INTO object{n} (ref, name, ref_section, price, updated) SELECT CONCAT('O', LPAD(x.i, 9, '0')), "
            f"{rs(10, 30)}, 1 + FLOOR(RAND() * {SECTIONS}), (100 + FLOOR(RAND() * 99901)) / 100, NOW() FROM {objs}",
            f"INSERT INTO history{n} (ref_object, horder, ref_stat, ref_section, hdate, note) "
            f"SELECT CONCAT('O', LPAD(x.i, 9, '0')), hh.n, 1 + FLOOR(RAND() * {STATES}), "
            f"1 + FLOOR(RAND() * {SECTIONS}), NOW() - INTERVAL FLOOR(RAND() * 1000) DAY, {rs(20, 60)} "
            f"FROM {objs} CROSS JOIN {seq(h, 'hh')}",
        ])
    return [head, *chunks]


def _prepare(params: ConnParams, schema: str, options: Mapping[str, Any], threads: int, progress: Progress | None,
             on_rows: Callable[[RowsProgress], None] | None, cancel: threading.Event | None) -> dict[str, Any]:
    say = progress or (lambda _m: None)
    want = shape(options)

    def create(cur: Any, n: int) -> None:
        for sql in create_sql(n, options):
            cur.execute(sql)

    todo = claim_sets(params, schema, {n: [f"{t}{n}" for t in TABLES] for n in range(1, options["datasets"] + 1)},
                      want, create, say)
    per_set = options["objects"] * (1 + options["history_per_object"]) + ZONES + SECTIONS + STATES
    load = ServerLoad(params, schema, per_set * len(todo), threads, on_rows, cancel)
    if todo:
        say(f"Loading {len(todo)} data set(s) of {options['objects']:,} objects with {threads} connections")
    names = {n: [f"{t}{n}" for t in TABLES] for n in todo}
    whole, dropped = load.load_sets(todo, lambda n: load_statements(n, options),
                                    lambda n: register_tables(params, schema, names[n], want), names.__getitem__)
    seconds = load.finish()
    return {"schema": schema, "tables_created": len(whole) * len(TABLES), "rows": load.rows, "rows_per_table": 0,
            "seconds": round(seconds, 2), "cancelled": len(whole) < len(todo), "dropped": dropped, "kept": not todo,
            "what": f"{len(whole)} dbSTRESS-like data set(s) of {options['objects']:,} objects, {load.rows:,} rows"}
