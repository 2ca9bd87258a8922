"""The store's SQLite file: what an existing file holds (read without writing to it), how the store's
connections are set up, and SQLite's errors in the user's words."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from typing import Any

from tunebench.core.errors import StoreError

# A run's writes wait this long for a store another process keeps locked (samples stay in memory meanwhile).
LOCK_PATIENCE = 60.0
SQLITE_MAGIC = b"SQLite format 3\x00"


class StoreLocked(StoreError):
    """Another process holds the store's write lock (for longer than SQLite's busy timeout)."""


def _plain(exc: BaseException | None, path: Path | None = None) -> str:
    """SQLite's words, with what they mean for the user where it is not obvious."""
    text = str(exc)
    if "disk is full" in text:
        return f"{text} (no space left on the store's file system)"
    if "readonly" in text or "read-only" in text:
        return f"{text} (the store's file or file system is read-only)"
    if "disk I/O error" in text and path is not None and _turned_read_only(path):
        return f"{text} (the store's file system has turned read-only)"
    return text


def _turned_read_only(path: Path) -> bool:
    """A file system turned read-only under an open store (ext4's errors=remount-ro after a disk error) fails
    SQLite's next write with EROFS, which SQLite reports as a bare I/O error: ask the file system (an open
    for writing, which writes nothing)."""
    try:
        os.close(os.open(path, os.O_RDWR))
    except OSError as exc:
        return exc.errno == errno.EROFS
    return False


def _readonly_uri(path: Path) -> str:
    """Opens without writing a byte: no journal, no -wal/-shm beside the file (immutable). A file with a
    -wal beside it is in use (or not checkpointed): read-only then, which takes the locks and reads
    the -wal (immutable would read pages a writer is changing)."""
    in_use = Path(str(path) + "-wal").exists()
    return f"{path.resolve().as_uri()}?{'mode=ro' if in_use else 'mode=ro&immutable=1'}"


def sqlite_tables(path: Path, in_use_ok: bool = False) -> tuple[set[str], int | None] | None:
    """The tables of an existing SQLite file and, when it has Tunebench's `meta`, its schema version,
    read without changing it; None: not a SQLite file.

    An idle file (no -wal beside it) is read immutable: not a byte, not a lock file. A file in use is
    read read-only with locks. `in_use_ok` (the store about to be opened anyway, maybe live in this
    process) reads it through an ordinary connection: a read there writes nothing to a rollback-mode
    file, and a WAL-mode one is locked and recovered as SQLite always does."""
    try:
        if path.stat().st_size == 0:
            return set(), None
        if not in_use_ok:
            # Never for a store this process may have open: closing any descriptor of the file drops the
            # process's POSIX locks on it, SQLite's included (another process then checkpoints under us).
            with open(path, "rb") as f:
                if f.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                    return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    error: sqlite3.DatabaseError | None = None
    for attempt in range(2):  # again if a writer appeared between the look at -wal and the read
        in_use = Path(str(path) + "-wal").exists()
        if in_use_ok:
            # an ordinary connection (no pragma, only a read): it locks like every other one. Immutable
            # here broke a live store: closing its descriptor drops this process's POSIX locks on the file.
            target, uri = str(path), False
        else:
            target, uri = _readonly_uri(path), True
        try:
            conn = sqlite3.connect(target, uri=uri, timeout=5)
            try:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                version = None
                if "meta" in tables:
                    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                    # -1: Tunebench's meta without a version that can be one (missing, not a number, 0)
                    version = int(row[0]) if row and str(row[0]).isdigit() and int(row[0]) >= 1 else -1
                return tables, version
            finally:
                conn.close()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc):
                raise StoreError(f"session store {path} is locked by another process; try again") from None
            error = exc
            if attempt or in_use or not Path(str(path) + "-wal").exists():
                break
        except sqlite3.DatabaseError as exc:
            if in_use_ok and "not a database" in str(exc):
                return None
            error = exc
            if attempt or in_use or not Path(str(path) + "-wal").exists():
                break  # damaged, not busy: reading it with locks would only add -wal/-shm beside it
    if _read_only(path):
        # a WAL-mode file on a read-only file system cannot even be opened for reading (no -shm beside it):
        # SQLite says "unable to open database file", which is not a damaged file
        raise StoreError(f"cannot open {path}: the store's file or file system is read-only ({error})") from None
    raise StoreError(f"{path} is a damaged SQLite file ({error})") from None


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY) or not os.access(path.parent, os.W_OK)
    except OSError:
        return False


def _sqlite_pragmas(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
