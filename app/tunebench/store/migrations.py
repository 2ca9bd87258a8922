"""Schema migrations of the session store: one step per version, columns added where an older store lacks them."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session as OrmSession

from tunebench.store.models import (
    SCHEMA_VERSION,
    Meta,
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
    s.get(Meta, "schema_version").value = str(SCHEMA_VERSION)  # type: ignore[union-attr]
    s.commit()


def _add_column(s: OrmSession, table: str, column: str, sql_type: str) -> None:
    have = {row[1] for row in s.execute(text(f"PRAGMA table_info({table})"))}
    if column not in have:
        s.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}"))
