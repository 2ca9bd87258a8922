"""prepare and cleanup of the sysbench tables, confined to one schema and to tables we created.

Tunebench records every table it creates in `<schema>.tunebench_tables`; cleanup drops only those,
and prepare refuses to overwrite an sbtestN it did not create.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from tunebench.core.errors import ConfigError, TargetError
from tunebench.core.target import ConnParams
from tunebench.load.oltp import C_TEMPLATE, PAD_TEMPLATE, create_table_sql, secondary_index_sql
from tunebench.load.randgen import draw, template_strings
from tunebench.mysql.connect import open_connection, query_all

REGISTRY = "tunebench_tables"
ROWS_PER_INSERT = 1000
ROWS_PER_CHUNK = 20000
# Options that change what the tables hold; a difference means re-preparing.
SHAPE_KEYS = ("table_size", "auto_inc", "secondary", "create_secondary", "mysql_storage_engine")

Progress = Callable[[str], None]


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
                options: Mapping[str, Any], seed: int) -> None:
    rng = np.random.default_rng([seed, table, first])
    conn = open_connection(params, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute(f"USE `{schema}`")
        for start in range(first, last + 1, ROWS_PER_INSERT):
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
        cur.close()
    finally:
        conn.close()


def prepare(params: ConnParams, schema: str, options: Mapping[str, Any], rows: int, threads: int = 4,
            progress: Progress | None = None) -> dict[str, Any]:
    """Create sbtest1..N with `rows` rows each (multi-row INSERTs in parallel), then the k index."""
    check_schema_name(schema)
    params = _server(params)
    say = progress or (lambda _msg: None)
    started = time.monotonic()
    conn = open_connection(params)
    try:
        _ensure_registry(conn, schema)
        tables, registered = _existing(conn, schema)
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

    def finish_table(t: int) -> None:
        c = open_connection(params)
        try:
            cur = c.cursor()
            if options["create_secondary"]:
                say(f"Creating a secondary index on 'sbtest{t}'...")
                cur.execute(f"USE `{schema}`")
                cur.execute(secondary_index_sql(t))
            cur.execute(f"INSERT INTO `{schema}`.{REGISTRY} VALUES (%s, %s, %s)",
                        (f"sbtest{t}", json.dumps(want), time.time()))
            cur.close()
        finally:
            c.close()

    def work(chunk: tuple[int, int, int]) -> None:
        t, a, b = chunk
        _load_chunk(params, schema, t, a, b, options, seed)
        with lock:
            remaining[t] -= 1
            done = remaining[t] == 0
        if done:
            finish_table(t)

    if todo:
        say(f"Inserting {rows} records into {len(todo)} table(s) with {threads} connections")
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        list(pool.map(work, chunks))
        for t in todo:
            if rows == 0:
                finish_table(t)
    return {"schema": schema, "tables_created": len(todo), "rows_per_table": rows,
            "seconds": round(time.monotonic() - started, 2)}


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
        cur = conn.cursor()
        dropped = []
        for name in sorted(registered):
            cur.execute(f"DROP TABLE IF EXISTS `{schema}`.`{name}`")
            cur.execute(f"DELETE FROM `{schema}`.{REGISTRY} WHERE table_name=%s", (name,))
            dropped.append(name)
        foreign = sorted(t for t in tables if t not in registered and t != REGISTRY)
        if REGISTRY in tables:  # every registered table is gone: so is the registry
            cur.execute(f"DROP TABLE `{schema}`.{REGISTRY}")
        cur.close()
    finally:
        conn.close()
    return {"schema": schema, "dropped": dropped, "left_alone": foreign}
