"""prepare and cleanup of the sysbench tables, confined to one schema and to tables we created.

Tunebench records every table it creates in `<schema>.tunebench_tables`; cleanup drops only those,
and prepare refuses to overwrite an sbtestN it did not create.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tunebench.core.errors import ConfigError, TargetError
from tunebench.core.target import ConnParams
from tunebench.load.oltp import C_TEMPLATE, PAD_TEMPLATE, create_table_sql, secondary_index_sql
from tunebench.load.randgen import draw, template_strings
from tunebench.mysql.connect import open_connection, query_all
from tunebench.store.owner import owner_alive, proc_start

REGISTRY = "tunebench_tables"
ROWS_PER_INSERT = 1000
ROWS_PER_CHUNK = 20000
# Options that change what the tables hold; a difference means re-preparing.
SHAPE_KEYS = ("table_size", "auto_inc", "secondary", "create_secondary", "mysql_storage_engine")

Progress = Callable[[str], None]
PROGRESS_EVERY = 0.25  # seconds between two rows-progress reports


@dataclass(frozen=True, slots=True)
class RowsProgress:
    """How far a load is: rows inserted of the total, and since when."""

    done: int
    total: int
    seconds: float

    @property
    def rate(self) -> float:
        """Rows per second so far."""
        return self.done / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the rate so far (None before the first rows)."""
        return (self.total - self.done) / self.rate if self.rate > 0 else None

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0

    def line(self) -> str:
        eta = self.eta
        left = "" if eta is None else f", {clock(eta)} left"
        return (f"{self.done:,} of {self.total:,} rows ({100 * self.fraction:.0f} %), "
                f"{self.rate:,.0f} rows/s{left}")


def clock(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


SYSTEM_SCHEMAS = ("mysql", "sys", "information_schema", "performance_schema")


def check_schema_name(schema: str, allow_system: bool = False) -> str:
    """A schema Tunebench may create tables in. `allow_system`: only cleanup, which removes what an
    older Tunebench left in a system schema and refuses there otherwise."""
    if not re.fullmatch(r"[A-Za-z0-9_]{1,64}", schema):
        raise ConfigError(f"invalid schema name {schema!r}: letters, digits and _ only")
    # information_schema and performance_schema cannot even hold a table of ours: refused always
    if schema.lower() in SYSTEM_SCHEMAS and not (allow_system and schema.lower() in ("mysql", "sys")):
        raise ConfigError(f"{schema} is a system schema; Tunebench keeps its tables out of "
                          f"{', '.join(SYSTEM_SCHEMAS)} (use e.g. --schema tunebench)")
    return schema


def default_schemas(params: ConnParams) -> list[str]:
    """The families' default schemas that exist on the server (tunebench, tunebench_tpcc, tunebench_lua_…)."""
    conn = open_connection(params)
    try:
        rows = query_all(conn, "SELECT schema_name FROM information_schema.schemata WHERE schema_name = 'tunebench' "
                               "OR schema_name LIKE 'tunebench\\_%' ORDER BY 1")
    finally:
        conn.close()
    return [r[0].decode() if isinstance(r[0], (bytes, bytearray)) else str(r[0]) for r in rows]


def loading_marker() -> dict[str, Any]:
    """What the registry holds for a table while it is loaded (before any row): which prepare loads it. A table
    left so by a prepare that died (kill -9) is Tunebench's: the next prepare or cleanup drops it."""
    pid = os.getpid()
    return {"loading": {"pid": pid, "start": proc_start(pid), "host": socket.gethostname(), "since": time.time()}}


def mark_loading(cur: Any, schema: str, names: Iterable[str]) -> None:
    marker = json.dumps(loading_marker())
    for name in names:
        cur.execute(f"REPLACE INTO `{schema}`.{REGISTRY} VALUES (%s, %s, %s)", (name, marker, time.time()))


def settle_loading(conn: Any, schema: str, registered: dict[str, Any]) -> list[str]:
    """Tables a prepare was loading (the registry's `loading` marker): a live prepare's are refused (TargetError
    naming it); a dead one's statements still running on the server are KILLed (the server goes on with an
    INSERT ... SELECT after its client died) and the tables dropped and forgotten. Returns those dropped."""
    loading = {n: s["loading"] for n, s in registered.items() if isinstance(s, dict) and "loading" in s}
    if not loading:
        return []
    here = socket.gethostname()
    for name, who in loading.items():
        if who.get("host") != here:
            raise TargetError(f"{schema}.{name} is being loaded by a prepare on {who.get('host')} (pid "
                              f"{who.get('pid')}); wait for it, or if it is gone: tunebench cleanup --schema {schema}")
        if owner_alive(who.get("pid"), who.get("start")) and who.get("pid") != os.getpid():
            raise TargetError(f"{schema}.{name} is being loaded by another prepare (pid {who.get('pid')}); wait for "
                              "it to end")
    cur = conn.cursor()
    mine = query_all(conn, "SELECT CONNECTION_ID()")[0][0]
    for pid, info in query_all(conn, "SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE DB = %s AND "
                                     "INFO IS NOT NULL", (schema,)):
        text = info.decode(errors="replace") if isinstance(info, (bytes, bytearray)) else str(info)
        if pid != mine and any(re.search(rf"\b{re.escape(n)}\b", text) for n in loading):
            with contextlib.suppress(Exception):  # gone meanwhile
                cur.execute(f"KILL {int(pid)}")
    cur.execute("SET SESSION foreign_key_checks = 0")
    for name in loading:
        cur.execute(f"DROP TABLE IF EXISTS `{schema}`.`{name}`")
        cur.execute(f"DELETE FROM `{schema}`.{REGISTRY} WHERE table_name=%s", (name,))
        registered.pop(name, None)
    cur.close()
    return sorted(loading)


def _shape(options: Mapping[str, Any], rows: int) -> dict[str, Any]:
    shape = {k: options[k] for k in SHAPE_KEYS}
    shape["rows"] = rows
    return shape


def _ensure_registry(conn: Any, schema: str) -> None:
    cur = conn.cursor()
    cur.execute(f"CREATE DATABASE IF NOT EXISTS `{schema}`")
    cur.execute(
        f"CREATE TABLE IF NOT EXISTS `{schema}`.{REGISTRY} (table_name VARCHAR(64) PRIMARY KEY, "
        "shape TEXT NOT NULL, created_at DOUBLE NOT NULL)"
    )
    cur.close()


def _existing(conn: Any, schema: str) -> tuple[set[str], dict[str, dict[str, Any]]]:
    tables = {r[0] if isinstance(r[0], str) else r[0].decode() for r in query_all(
        conn, "SELECT table_name FROM information_schema.tables WHERE table_schema=%s", (schema,))}
    registered = {}
    if REGISTRY in tables:
        for name, shape in query_all(conn, f"SELECT table_name, shape FROM `{schema}`.{REGISTRY}"):
            registered[name] = json.loads(shape)
    return tables, registered


def _server(params: ConnParams) -> ConnParams:
    # The schema may not exist yet: connect without a default database and qualify every name.
    return replace(params, database=None)


def tables_ready(params: ConnParams, schema: str, options: Mapping[str, Any], rows: int) -> bool:
    params = _server(params)
    conn = open_connection(params)
    try:
        tables, registered = _existing(conn, schema)
    finally:
        conn.close()
    want = _shape(options, rows)
    return all(
        f"sbtest{i}" in tables and registered.get(f"sbtest{i}") == want for i in range(1, options["tables"] + 1)
    )


def _load_chunk(params: ConnParams, schema: str, table: int, first: int, last: int,
                options: Mapping[str, Any], seed: int, halt: threading.Event | None = None,
                added: Callable[[int], None] | None = None) -> bool:
    """Rows first..last of sbtest`table`; False when `halt` was set before the chunk was whole."""
    rng = np.random.default_rng([seed, table, first])
    conn = open_connection(params, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute(f"USE `{schema}`")
        for start in range(first, last + 1, ROWS_PER_INSERT):
            if halt is not None and halt.is_set():
                return False
            stop = min(last, start + ROWS_PER_INSERT - 1)
            n = stop - start + 1
            ks = draw(rng, options["rand_type"], 1, options["table_size"], n, options).tolist()
            cs = template_strings(rng, C_TEMPLATE, n)
            pads = template_strings(rng, PAD_TEMPLATE, n)
            # Explicit ids 1..N give the same rows sysbench's auto-increment load gives, in parallel chunks.
            values = b",".join(
                b"(%d,%d,'%s','%s')" % (start + j, ks[j], cs[j], pads[j]) for j in range(n)
            )
            cur.execute(f"INSERT INTO sbtest{table}(id, k, c, pad) VALUES ".encode() + values)
            if added is not None:
                added(n)
        cur.close()
    finally:
        conn.close()
    return True


def prepare(params: ConnParams, schema: str, options: Mapping[str, Any], rows: int, threads: int = 4,
            progress: Progress | None = None, on_rows: Callable[[RowsProgress], None] | None = None,
            cancel: threading.Event | None = None) -> dict[str, Any]:
    """Create sbtest1..N with `rows` rows each (multi-row INSERTs in parallel), then the k index.

    `on_rows` hears how far the load is (every PROGRESS_EVERY s, and at the end). `cancel`, checked between two
    INSERTs, stops it: the tables already whole are kept (and registered), the others dropped, and the result
    says `cancelled`. A failed chunk or Ctrl-C leaves the same: no half-loaded table stays behind (a next
    prepare would take it for somebody else's).
    """
    check_schema_name(schema)
    params = _server(params)
    say = progress or (lambda _msg: None)
    started = time.monotonic()
    conn = open_connection(params)
    try:
        _ensure_registry(conn, schema)
        tables, registered = _existing(conn, schema)
        for name in settle_loading(conn, schema, registered):
            tables.discard(name)
            say(f"dropped {name}: a prepare that died left it half-loaded")
        want = _shape(options, rows)
        todo = []
        for i in range(1, options["tables"] + 1):
            name = f"sbtest{i}"
            if name in tables and name not in registered:
                raise TargetError(
                    f"{schema}.{name} exists and was not created by Tunebench; refusing to touch it "
                    f"(use another --schema)"
                )
            if registered.get(name) == want and name in tables:
                continue
            todo.append(i)
        cur = conn.cursor()
        for i in todo:
            cur.execute(f"DROP TABLE IF EXISTS `{schema}`.sbtest{i}")
            cur.execute(f"DELETE FROM `{schema}`.{REGISTRY} WHERE table_name=%s", (f"sbtest{i}",))
            mark_loading(cur, schema, [f"sbtest{i}"])  # before the table: a kill -9 from here leaves it ours
            cur.execute(f"USE `{schema}`")
            cur.execute(create_table_sql(i, options))
            say(f"Creating table 'sbtest{i}'...")
        cur.close()
    finally:
        conn.close()
    seed = int(options.get("rand_seed") or time.time_ns() & 0xFFFFFFFF)
    chunks = [(t, a, min(rows, a + ROWS_PER_CHUNK - 1)) for t in todo for a in range(1, rows + 1, ROWS_PER_CHUNK)]
    lock = threading.Lock()
    remaining = {t: sum(1 for c in chunks if c[0] == t) for t in todo}
    finished: set[int] = set()
    stop = threading.Event()  # set by `cancel`, Ctrl-C or a failed chunk: the other chunks end at their next INSERT
    loaded = [0, time.monotonic(), 0.0]  # rows so far, when loading began, when last reported
    total = rows * len(todo)

    def report(force: bool = False) -> None:
        if on_rows is None:
            return
        now = time.monotonic()
        with lock:
            if not force and now - loaded[2] < PROGRESS_EVERY:
                return
            loaded[2] = now
            p = RowsProgress(int(loaded[0]), total, now - loaded[1])
        on_rows(p)

    def added(n: int) -> None:
        with lock:
            loaded[0] += n
        if cancel is not None and cancel.is_set():
            stop.set()
        report()

    def finish_table(t: int) -> None:
        c = open_connection(params)
        try:
            cur = c.cursor()
            if options["create_secondary"]:
                say(f"Creating a secondary index on 'sbtest{t}'...")
                cur.execute(f"USE `{schema}`")
                cur.execute(secondary_index_sql(t))
            cur.execute(f"REPLACE INTO `{schema}`.{REGISTRY} VALUES (%s, %s, %s)",
                        (f"sbtest{t}", json.dumps(want), time.time()))
            cur.close()
        finally:
            c.close()
        with lock:
            finished.add(t)

    def work(chunk: tuple[int, int, int]) -> None:
        t, a, b = chunk
        if stop.is_set() or (cancel is not None and cancel.is_set()):
            stop.set()
            return
        if not _load_chunk(params, schema, t, a, b, options, seed, stop, added):
            return
        with lock:
            remaining[t] -= 1
            done = remaining[t] == 0
        if done and not stop.is_set():
            finish_table(t)

    if todo:
        say(f"Inserting {rows} records into {len(todo)} table(s) with {threads} connections")
    pool = ThreadPoolExecutor(max_workers=max(1, threads))
    try:
        futures = [pool.submit(work, c) for c in chunks]
        for f in futures:
            f.result()
        if rows == 0:
            for t in todo:
                finish_table(t)
    except BaseException:  # a failed chunk, Ctrl-C: the others stop, the half-loaded tables go
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        with contextlib.suppress(Exception):  # (a server gone: the first error is the one to tell)
            _drop_unfinished(params, schema, [t for t in todo if t not in finished])
        raise
    pool.shutdown(wait=True)
    report(force=True)
    cancelled = stop.is_set()
    dropped = _drop_unfinished(params, schema, [t for t in todo if t not in finished]) if cancelled else []
    return {"schema": schema, "tables_created": len(finished) if cancelled else len(todo), "rows_per_table": rows,
            "seconds": round(time.monotonic() - started, 2), "cancelled": cancelled, "dropped": dropped,
            "kept": not todo}


def _drop_unfinished(params: ConnParams, schema: str, tables: list[int]) -> list[str]:
    """Drop tables a stopped load left half-filled (never registered: a next prepare makes them again)."""
    if not tables:
        return []
    conn = open_connection(params)
    try:
        cur = conn.cursor()
        for t in tables:
            cur.execute(f"DROP TABLE IF EXISTS `{schema}`.sbtest{t}")
            cur.execute(f"DELETE FROM `{schema}`.{REGISTRY} WHERE table_name=%s", (f"sbtest{t}",))
        cur.close()
    finally:
        conn.close()
    return [f"sbtest{t}" for t in tables]


def cleanup(params: ConnParams, schema: str) -> dict[str, Any]:
    """Drop the tables Tunebench created in `schema`; leave anything else (and say so). Its own
    bookkeeping table goes with the last of them."""
    check_schema_name(schema, allow_system=True)
    params = _server(params)
    conn = open_connection(params)
    try:
        tables, registered = _existing(conn, schema)
        if schema.lower() in SYSTEM_SCHEMAS and REGISTRY not in tables:
            check_schema_name(schema)  # nothing of ours there: refused like prepare
        settled = settle_loading(conn, schema, registered)
        cur = conn.cursor()
        cur.execute("SET SESSION foreign_key_checks = 0")  # a family's foreign keys (TPC-C) between its tables
        dropped = []
        for name in sorted(registered):
            cur.execute(f"DROP TABLE IF EXISTS `{schema}`.`{name}`")
            cur.execute(f"DELETE FROM `{schema}`.{REGISTRY} WHERE table_name=%s", (name,))
            dropped.append(name)
        dropped = sorted([*dropped, *settled])
        foreign = sorted(t for t in tables if t not in registered and t not in settled and t != REGISTRY)
        if REGISTRY in tables:  # every registered table is gone: so is the registry
            cur.execute(f"DROP TABLE `{schema}`.{REGISTRY}")
        cur.close()
    finally:
        conn.close()
    return {"schema": schema, "dropped": dropped, "left_alone": foreign}


def schema_tables(params: ConnParams, schema: str, create: bool = False) -> set[str]:
    """The tables in `schema` now (none when it does not exist); `create`: make the schema (and Tunebench's
    registry in it) first."""
    check_schema_name(schema)
    conn = open_connection(_server(params))
    try:
        if create:
            _ensure_registry(conn, schema)
        return _existing(conn, schema)[0] - {REGISTRY}
    finally:
        conn.close()


def register_new_tables(params: ConnParams, schema: str, before: set[str], shape: Mapping[str, Any]) -> list[str]:
    """Register the tables that appeared in `schema` since `before` (a Lua script's prepare made them): cleanup
    then drops them like Tunebench's own. Returns their names."""
    conn = open_connection(_server(params))
    try:
        _ensure_registry(conn, schema)
        new = sorted(_existing(conn, schema)[0] - before - {REGISTRY})
        cur = conn.cursor()
        for name in new:
            cur.execute(f"REPLACE INTO `{schema}`.{REGISTRY} VALUES (%s, %s, %s)",
                        (name, json.dumps(shape), time.time()))
        cur.close()
    finally:
        conn.close()
    return new


def forget_tables(params: ConnParams, schema: str, names: list[str]) -> None:
    """Unregister tables that are gone (a Lua script's cleanup dropped them)."""
    if not names:
        return
    conn = open_connection(_server(params))
    try:
        if REGISTRY in _existing(conn, schema)[0]:
            cur = conn.cursor()
            for name in names:
                cur.execute(f"DELETE FROM `{schema}`.{REGISTRY} WHERE table_name=%s", (name,))
            cur.close()
    finally:
        conn.close()
