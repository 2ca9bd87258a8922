"""Schema migrations of the session store: one step per version, columns added where an older store lacks them
(on SQLite and on the server databases alike; a server store begins at schema 10, the first one they had)."""

from __future__ import annotations

import sqlite3

from sqlalchemy import Table, inspect, text
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.schema import CreateTable

from tunebench.store.models import (
    SCHEMA_VERSION,
    Meta,
    SessionRow,
)


def migrate(s: OrmSession, version: int) -> None:
    """Bring a store of schema `version` up to SCHEMA_VERSION (the tables it lacks are made by create_all)."""
    # One step per version. 1 -> 2 added knob_journal, which create_all has just made.
    if version < 3:  # 2 -> 3: chunks say how they are encoded; the old ones stay raw float64 (NULL)
        _add_column(s, "sample_chunks", "codec", "VARCHAR(8)")
    if version < 4:  # 3 -> 4: a target's database host over SSH
        _add_column(s, "targets", "db_host", "TEXT")
    if version < 5:  # 4 -> 5: and how to restart its server there
        for column in ("ssh_key", "option_file", "restart_command"):
            _add_column(s, "targets", column, "TEXT")
    if version < 6:  # 5 -> 6: who writes a running session
        _add_column(s, "sessions", "owner_pid", "INTEGER")
        _add_column(s, "sessions", "owner_start", "VARCHAR(32)")
    if version < 7:  # 6 -> 7: a target's TLS settings
        for column in ("ssl_mode", "ssl_ca", "ssl_cert", "ssl_key"):
            _add_column(s, "targets", column, "TEXT")
    if version < 8:  # 7 -> 8: caching_sha2_password through the server's RSA key
        _add_column(s, "targets", "get_server_public_key", "INTEGER")
    if version < 9 and s.get_bind().dialect.name == "sqlite":  # 8 -> 9: session IDs never given twice
        s.commit()  # (a server's sequence or AUTO_INCREMENT never gives one twice)
        _autoincrement(s, SessionRow.__table__)  # type: ignore[arg-type]
    if version < 10:  # 9 -> 10: the machine a session ran on, and the one whose process owns a journal row
        _add_column(s, "sessions", "host", "VARCHAR(255)")
        _add_column(s, "knob_journal", "host", "VARCHAR(255)")
    if version < 11:  # 10 -> 11: that machine by its made-once id (two machines may share a hostname)
        _add_column(s, "sessions", "machine", "VARCHAR(64)")
        _add_column(s, "knob_journal", "machine", "VARCHAR(64)")
    s.get(Meta, "schema_version").value = str(SCHEMA_VERSION)  # type: ignore[union-attr]
    s.commit()


def _add_column(s: OrmSession, table: str, column: str, sql_type: str) -> None:
    """`table` gains `column` unless it has it (made by create_all just now, or added before the version was
    written). The names are ours, never a user's."""
    conn = s.connection()
    have = {c["name"] for c in inspect(conn).get_columns(table)}
    if column not in have:
        s.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}"))


def _autoincrement(s: OrmSession, table: Table) -> None:
    """`table` made again as the model has it now (AUTOINCREMENT), its rows copied: SQLite cannot add
    AUTOINCREMENT to a table. The rebuild of SQLite's "ALTER TABLE" page (section 7): foreign keys off, or
    dropping the old table would delete every row that refers to it (steps, samples: ON DELETE CASCADE)."""
    name = table.name
    db = s.connection().connection.driver_connection
    assert isinstance(db, sqlite3.Connection)
    ddl = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
    if ddl is None or "AUTOINCREMENT" in ddl[0].upper():
        return  # made by create_all just now, or rebuilt before the version was written
    new = f"{name}_v{SCHEMA_VERSION}"
    create = str(CreateTable(table).compile(dialect=s.get_bind().dialect)).strip()
    create = create.replace(f"CREATE TABLE {name} ", f"CREATE TABLE {new} ", 1)
    have = {row[1] for row in db.execute(f"PRAGMA table_info({name})")}
    cols = ", ".join(c.name for c in table.columns if c.name in have)
    level = db.isolation_level
    db.isolation_level = None  # our own BEGIN and COMMIT: the pragma is ignored inside a transaction
    try:
        db.execute("PRAGMA foreign_keys=OFF")
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(create)
            db.execute(f"INSERT INTO {new} ({cols}) SELECT {cols} FROM {name}")  # sets sqlite_sequence to max(id)
            db.execute(f"DROP TABLE {name}")
            db.execute(f"ALTER TABLE {new} RENAME TO {name}")  # the rows referring to it refer to this one
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    finally:
        db.execute("PRAGMA foreign_keys=ON")
        db.isolation_level = level
