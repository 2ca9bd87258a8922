"""The session store: open (with version check), write a session incrementally, read it back."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, create_engine, delete, event, insert, select, text
from sqlalchemy.exc import DatabaseError, OperationalError
from sqlalchemy.orm import Session as OrmSession

from tunebench.core.errors import StoreError
from tunebench.core.interval import Event, Interval
from tunebench.mysql.target import Target
from tunebench.store.models import (
    SCHEMA_VERSION,
    Base,
    ChunkRow,
    EventRow,
    KnobJournalRow,
    Meta,
    SeriesRow,
    SessionRow,
    StepRow,
    TargetRow,
    VariableRow,
)
from tunebench.store.owner import me as owner_me
from tunebench.store.owner import owner_alive

COMPACT_EVERY = 60  # merge one-second chunks into one chunk per series every minute
# A run's writes wait this long for a store another process keeps locked (samples stay in memory meanwhile).
LOCK_PATIENCE = 60.0
# Rates are per second; gauges are instantaneous values.
GAUGE_SUFFIXES = (".threads", ".lat.p50", ".lat.p95", ".lat.p99", ".lat.max")
# Variables whose values are secrets, never copied into the store.
SECRET_VARIABLE_WORDS = ("password", "secret", "key_id")


def series_kind(name: str) -> str:
    return "gauge" if name.endswith(GAUGE_SUFFIXES) else "rate"


CODEC = "z1"


def _shuffle(a: np.ndarray) -> bytes:
    """Byte planes one after another: the high bytes of similar numbers then compress to almost nothing."""
    return zlib.compress(np.ascontiguousarray(a.view(np.uint8).reshape(-1, a.itemsize).T).tobytes(), 6)


def _unshuffle(blob: bytes, dtype: str, n: int) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    planes = np.frombuffer(zlib.decompress(blob), dtype=np.uint8).reshape(size, n)
    return np.ascontiguousarray(planes.T).view(dtype).reshape(n)


def encode_chunk(t: np.ndarray, v: np.ndarray) -> tuple[bytes, bytes]:
    """Times as microsecond deltas (int64), values as float32, each byte-shuffled and zlib'd."""
    us = np.round(np.asarray(t, dtype=np.float64) * 1e6).astype("<i8")
    deltas = np.diff(us, prepend=np.int64(0)).astype("<i8")
    return _shuffle(deltas), _shuffle(np.asarray(v, dtype="<f4"))


def decode_chunk(codec: str | None, n: int, ts: bytes, vs: bytes) -> tuple[np.ndarray, np.ndarray]:
    if codec is None:  # schema 2: raw float64
        return np.frombuffer(ts, dtype="<f8"), np.frombuffer(vs, dtype="<f8")
    if codec != CODEC:
        raise StoreError(f"unknown sample encoding {codec!r}: written by a newer Tunebench?")
    t = np.cumsum(_unshuffle(ts, "<i8", n)) / 1e6
    return t, _unshuffle(vs, "<f4", n).astype(np.float64)


class StoreLocked(StoreError):
    """Another process holds the store's write lock (for longer than SQLite's busy timeout)."""


def _plain(exc: BaseException) -> str:
    """SQLite's words, with what they mean for the user where it is not obvious."""
    text = str(exc)
    if "disk is full" in text:
        return f"{text} (no space left on the store's file system)"
    if "readonly" in text or "read-only" in text:
        return f"{text} (the store's file or file system is read-only)"
    return text


@dataclass(frozen=True, slots=True)
class SeriesData:
    name: str
    kind: str
    t: np.ndarray
    v: np.ndarray


SQLITE_MAGIC = b"SQLite format 3\x00"
VACUUM_SHARE = 0.25  # sessions delete shrinks the file when this share of it is free pages


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
                    version = int(row[0]) if row and str(row[0]).isdigit() else None
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
    raise StoreError(f"{path} is a damaged SQLite file ({error})") from None


class Store:
    def __init__(self, path: Path | str, readonly: bool = False):
        self.path = Path(path)
        if readonly:  # a file to read from (import): never created, migrated or switched to WAL
            self.engine = create_engine("sqlite://", creator=lambda: sqlite3.connect(
                _readonly_uri(self.path), uri=True, check_same_thread=False))
            return
        if self.path.is_dir():
            raise StoreError(f"session store {self.path} is a directory; give a file with --db")
        if self.path.is_file():
            found = sqlite_tables(self.path, in_use_ok=True)
            if found is None:
                raise StoreError(f"session store {self.path} is not a valid SQLite file; "
                                 "move it aside or use --db PATH")
            tables, version = found
            if tables and "meta" not in tables:  # someone else's database: not a byte is written to it
                raise StoreError(f"{self.path} is a SQLite file of another application (tables: "
                                 f"{', '.join(sorted(tables)[:5])}); not a Tunebench session store")
            if version is not None and version > SCHEMA_VERSION:  # before create_all or the WAL switch
                raise StoreError(f"session store {self.path} was written by a newer Tunebench "
                                 f"(schema {version} > {SCHEMA_VERSION})")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store directory {self.path.parent}: {exc.strerror}") from None
        self.engine = create_engine(f"sqlite:///{self.path}", connect_args={"timeout": 5})
        event.listen(self.engine, "connect", _sqlite_pragmas)
        self._guard(self._init_schema)

    def _guard(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except OperationalError as exc:
            if "locked" in str(exc.orig):
                raise StoreLocked(f"session store {self.path} is locked by another process; try again") from None
            raise StoreError(f"session store {self.path}: {_plain(exc.orig)}") from None
        except DatabaseError as exc:
            raise StoreError(f"session store {self.path} is not a valid SQLite file ({exc.orig}); "
                             "move it aside or use --db PATH") from None

    def _patient(self, fn: Any, *args: Any) -> Any:
        """`_guard`, but a store locked by another process is waited for (up to LOCK_PATIENCE s)."""
        deadline = time.monotonic() + LOCK_PATIENCE
        while True:
            try:
                return self._guard(fn, *args)
            except StoreLocked:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _init_schema(self) -> None:
        Base.metadata.create_all(self.engine)
        with OrmSession(self.engine) as s:
            row = s.get(Meta, "schema_version")
            if row is None:
                s.add(Meta(key="schema_version", value=str(SCHEMA_VERSION)))
                s.commit()
            elif int(row.value) > SCHEMA_VERSION:
                raise StoreError(f"session store {self.path} was written by a newer Tunebench "
                                 f"(schema {row.value} > {SCHEMA_VERSION})")
            elif int(row.value) < SCHEMA_VERSION:
                self._migrate(s, int(row.value))

    def _migrate(self, s: OrmSession, version: int) -> None:
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
        s.get(Meta, "schema_version").value = str(SCHEMA_VERSION)  # type: ignore[union-attr]
        s.commit()

    # ---- knob journal ---------------------------------------------------------------------------
    def journal_add(self, *, session_id: int | None, target: Target, name: str, kind: str, original: str,
                    owner_pid: int, owner_start: str) -> int | None:
        """Record an original value unless one is already pending for this target+knob (the first wins:
        a later 'original' would be a value we set). Returns the new row's ID, or None."""
        def write() -> int | None:
            with OrmSession(self.engine) as s:
                exists = s.scalar(select(KnobJournalRow.id).where(
                    KnobJournalRow.target_name == target.name, KnobJournalRow.name == name,
                    KnobJournalRow.state == "pending"))
                if exists is not None:
                    return None
                row = KnobJournalRow(session_id=session_id, target=json.dumps(target.to_dict()),
                                     target_name=target.name, name=name, kind=kind, original=original,
                                     state="pending", owner_pid=owner_pid, owner_start=owner_start,
                                     created_at=time.time())
                s.add(row)
                s.commit()
                return row.id
        return self._patient(write)  # type: ignore[no-any-return]

    def journal_pending(self) -> list[dict[str, Any]]:
        def read() -> list[dict[str, Any]]:
            with OrmSession(self.engine) as s:
                return [
                    {"id": r.id, "session_id": r.session_id, "target": json.loads(r.target),
                     "target_name": r.target_name, "name": r.name, "kind": r.kind, "original": r.original,
                     "owner_pid": r.owner_pid, "owner_start": r.owner_start, "created_at": r.created_at}
                    for r in s.scalars(select(KnobJournalRow).where(KnobJournalRow.state == "pending")
                                       .order_by(KnobJournalRow.id))
                ]
        return self._guard(read)  # type: ignore[no-any-return]

    def mark_interrupted(self, session_id: int) -> bool:
        """A session whose process died mid-run (kill -9, crash) is 'interrupted', not 'running'."""
        with OrmSession(self.engine) as s:
            r = s.get(SessionRow, session_id)
            if r is None or r.status != "running":
                return False
            r.status = "interrupted"
            s.commit()
            return True

    def mark_orphans(self) -> list[int]:
        """Sessions still 'running' whose writing process is gone (kill -9, crash, power cut) become
        'interrupted'; returns their IDs. Sessions of a live process are left alone."""
        def write() -> list[int]:
            with OrmSession(self.engine) as s:
                gone = [r for r in s.scalars(select(SessionRow).where(SessionRow.status == "running"))
                        if r.owner_pid is not None and not owner_alive(r.owner_pid, r.owner_start)]
                for r in gone:
                    r.status = "interrupted"
                s.commit()
                return [r.id for r in gone]
        return self._guard(write)  # type: ignore[no-any-return]

    def journal_mark(self, row_id: int, state: str, message: str | None = None) -> None:
        """state: restored | failed | discarded (the change was refused: nothing to put back)."""
        def write() -> None:
            with OrmSession(self.engine) as s:
                r = s.get(KnobJournalRow, row_id)
                if r is not None:
                    r.state, r.message, r.restored_at = state, message, time.time()
                    s.commit()
        self._patient(write)

    def close(self) -> None:
        self.engine.dispose()

    # ---- targets -------------------------------------------------------------------------------
    def save_target(self, t: Target) -> None:
        with OrmSession(self.engine) as s:
            s.merge(TargetRow(name=t.name, socket=t.socket, host=t.host, port=t.port, user=t.user,
                              schema=t.schema, password_file=t.password_file, db_host=t.db_host,
                              ssh_key=t.ssh_key, option_file=t.option_file, restart_command=t.restart_command))
            s.commit()

    def get_target(self, name: str) -> Target | None:
        with OrmSession(self.engine) as s:
            r = s.get(TargetRow, name)
            if r is None:
                return None
            return _target(r)

    def list_targets(self) -> list[Target]:
        with OrmSession(self.engine) as s:
            return [_target(r)
                    for r in s.scalars(select(TargetRow).order_by(TargetRow.name))]

    def delete_target(self, name: str) -> bool:
        with OrmSession(self.engine) as s:
            n = s.execute(delete(TargetRow).where(TargetRow.name == name)).rowcount
            s.commit()
            return bool(n)

    # ---- reading sessions ---------------------------------------------------------------------
    def list_sessions(self) -> list[dict[str, Any]]:
        def read() -> list[dict[str, Any]]:
            with OrmSession(self.engine) as s:
                return [_session_dict(r) for r in s.scalars(select(SessionRow).order_by(SessionRow.id))]
        return self._guard(read)  # type: ignore[no-any-return]

    def browse(self) -> list[dict[str, Any]]:
        """Every session with its steps' configurations and its knob events (what the browser's table
        shows), in three queries whatever the number of sessions."""
        def read() -> list[dict[str, Any]]:
            with OrmSession(self.engine) as s:
                out = {r.id: _session_dict(r) for r in s.scalars(select(SessionRow).order_by(SessionRow.id))}
                for d in out.values():
                    d["steps"], d["events"] = [], []
                for sid, cfg in s.execute(select(StepRow.session_id, StepRow.config).order_by(StepRow.idx)):
                    if sid in out:
                        out[sid]["steps"].append({"config": json.loads(cfg)})
                for sid, t, label, data in s.execute(select(EventRow.session_id, EventRow.t, EventRow.label,
                                                            EventRow.data).where(EventRow.kind == "knob")):
                    if sid in out:
                        out[sid]["events"].append({"t": t, "kind": "knob", "label": label,
                                                   "data": json.loads(data) if data else {}})
                return list(out.values())
        return self._guard(read)  # type: ignore[no-any-return]

    def get_session(self, session_id: int) -> dict[str, Any]:
        def read() -> dict[str, Any]:
            with OrmSession(self.engine) as s:
                r = s.get(SessionRow, session_id)
                if r is None:
                    raise StoreError(f"no session {session_id} in {self.path}")
                out = _session_dict(r)
                out["steps"] = [
                    {"idx": st.idx, "started_at": st.started_at, "measure_from": st.measure_from,
                     "ended_at": st.ended_at, "config": json.loads(st.config),
                     "summary": json.loads(st.summary) if st.summary else None}
                    for st in s.scalars(select(StepRow).where(StepRow.session_id == session_id)
                                        .order_by(StepRow.idx))
                ]
                out["events"] = [
                    {"t": e.t, "kind": e.kind, "label": e.label, "data": json.loads(e.data) if e.data else {}}
                    for e in s.scalars(select(EventRow).where(EventRow.session_id == session_id)
                                       .order_by(EventRow.t, EventRow.id))
                ]
                out["variables"] = {
                    v.name: v.value
                    for v in s.scalars(select(VariableRow).where(VariableRow.session_id == session_id))
                }
                return out
        return self._guard(read)  # type: ignore[no-any-return]

    def series(self, session_id: int, names: Iterable[str] | None = None) -> dict[str, SeriesData]:
        """The samples of a session (or of the named series only), sorted by time."""
        def read() -> dict[str, SeriesData]:
            q = (select(SeriesRow.name, SeriesRow.kind, ChunkRow.codec, ChunkRow.n, ChunkRow.ts, ChunkRow.vs)
                 .join(ChunkRow, ChunkRow.series_id == SeriesRow.id).where(SeriesRow.session_id == session_id)
                 .order_by(SeriesRow.name, ChunkRow.t_first, ChunkRow.id))
            if names is not None:
                q = q.where(SeriesRow.name.in_(list(names)))
            with OrmSession(self.engine) as s:
                rows = s.execute(q).all()
            parts: dict[str, tuple[str, list[np.ndarray], list[np.ndarray]]] = {}
            for name, kind, codec, n, ts, vs in rows:
                t, v = decode_chunk(codec, n, ts, vs)
                entry = parts.setdefault(name, (kind, [], []))
                entry[1].append(t)
                entry[2].append(v)
            out = {}
            for name, (kind, tparts, vparts) in parts.items():
                t, v = np.concatenate(tparts), np.concatenate(vparts)
                if len(tparts) > 1 and np.any(np.diff(t) < 0):  # chunks of a resumed session can overlap
                    order = np.argsort(t, kind="stable")
                    t, v = t[order], v[order]
                out[name] = SeriesData(name, kind, t, v)
            return out
        return self._guard(read)  # type: ignore[no-any-return]

    def series_names(self, session_id: int) -> dict[str, str]:
        """name -> kind of every series of a session, without reading a sample."""
        with OrmSession(self.engine) as s:
            return dict(s.execute(select(SeriesRow.name, SeriesRow.kind)
                                  .where(SeriesRow.session_id == session_id)).tuples().all())

    def update_session(self, session_id: int, *, name: str | None = None, tags: str | None = None,
                       notes: str | None = None) -> None:
        """Rename, tag, annotate ('' clears; None leaves as is)."""
        def write() -> None:
            with OrmSession(self.engine) as s:
                r = s.get(SessionRow, session_id)
                if r is None:
                    raise StoreError(f"no session {session_id} in {self.path}")
                for field, value in (("name", name), ("tags", tags), ("notes", notes)):
                    if value is not None:
                        setattr(r, field, value.strip() or None)
                s.commit()
        self._guard(write)

    def export_session(self, session_id: int, path: Path | str) -> Path:
        """The session (with its steps, events, variables and samples) as a SQLite file of its own, in
        this store's format: another Tunebench imports it with `import_sessions`."""
        dest = Path(path)
        if dest.exists():
            raise StoreError(f"{dest} exists; choose another name")
        tmp = dest.with_name(dest.name + ".part")
        tmp.unlink(missing_ok=True)
        other = Store(tmp)
        try:
            self._guard(_copy_session, self.engine, other.engine, session_id)
        finally:
            other.close()
        shutil.move(str(tmp), dest)
        for suffix in ("-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        return dest

    def import_sessions(self, path: Path | str) -> list[int]:
        """Every session of an exported file, copied in under new IDs, all or none. The file is only
        read (never migrated, switched to WAL or given tables); a file that is not a session store (or
        is damaged, or newer) raises StoreError and changes nothing, here or there."""
        src_path = Path(path)
        if src_path.is_dir():
            raise StoreError(f"cannot import {src_path}: it is a directory")
        if not src_path.is_file():
            raise StoreError(f"no such file: {src_path}")
        if src_path.resolve() == self.path.resolve():
            raise StoreError(f"cannot import {src_path}: it is the session store itself")
        what = f"cannot import {src_path}: not a Tunebench session file"
        try:
            found = sqlite_tables(src_path)
        except StoreError as exc:
            raise StoreError(f"cannot import: {exc}") from None
        if found is None:
            raise StoreError(f"{what} (file is not a database)")
        tables = found[0]
        if not tables:
            raise StoreError(f"{what} (empty)")
        missing = {"meta", "sessions", "steps", "events", "variables", "series", "sample_chunks"} - tables
        if missing:
            raise StoreError(f"{what} (a SQLite file without {', '.join(sorted(missing))})")
        with tempfile.TemporaryDirectory(prefix="tunebench-import-") as tmp:
            src = Store(src_path, readonly=True)
            try:
                version = self._guard(_schema_version, src.engine)
                if version > SCHEMA_VERSION:
                    raise StoreError(f"cannot import {src_path}: written by a newer Tunebench "
                                     f"(schema {version} > {SCHEMA_VERSION})")
                if version < SCHEMA_VERSION:  # migrate a copy, never the user's file
                    src.close()
                    copy = Path(tmp) / "import.sqlite"
                    shutil.copyfile(src_path, copy)
                    src = Store(copy)
                ids = _readable_sessions(src, src_path)
                return self._guard(_copy_sessions, src.engine, self.engine, ids)  # type: ignore[no-any-return]
            finally:
                src.close()

    def delete_session(self, session_id: int) -> None:
        def write() -> None:
            with OrmSession(self.engine) as s:
                s.execute(delete(SessionRow).where(SessionRow.id == session_id))
                s.commit()
        self._guard(write)

    def shrink(self) -> bool:
        """VACUUM when deleted sessions left more than VACUUM_SHARE of the file as free pages, and no
        run is writing (a session 'running', or the file busy). Returns whether the file shrank."""
        try:
            with self.engine.connect() as c:
                pages = int(c.exec_driver_sql("PRAGMA page_count").scalar() or 0)
                free = int(c.exec_driver_sql("PRAGMA freelist_count").scalar() or 0)
                running = c.execute(select(SessionRow.id).where(SessionRow.status == "running")).first()
            if not pages or free / pages <= VACUUM_SHARE or running is not None:
                return False
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.exec_driver_sql("VACUUM")
                c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            return True
        except OperationalError:  # locked: someone writes; the space is reused anyway
            return False

    # ---- writing ------------------------------------------------------------------------------
    def new_session(self, **fields: Any) -> SessionWriter:
        return SessionWriter(self, **fields)

    def resume_session(self, session_id: int) -> SessionWriter:
        """A writer appending to an existing session (sweep --resume)."""
        return SessionWriter(self, resume=session_id)


class SessionWriter:
    """Writes one session as it happens: every flush commits, so a kill loses at most ~1 s.

    A store locked by another process does not stop the run: samples and events stay in memory and go in
    with the next flush (`LOCK_PATIENCE` at most). Any other store failure (disk full, read-only) raises
    StoreError; what was committed before stays intact.
    """

    def __init__(self, store: Store, *, target: str = "", transport: str = "", engine: str = "", workload: str = "",
                 config: Mapping[str, Any] | None = None, flavor: str | None = None, version: str | None = None,
                 resume: int | None = None, started_at: float | None = None):
        self.store = store
        self._series_ids: dict[str, int] = {}
        self._pending: dict[str, list[tuple[float, float]]] = defaultdict(list)
        self._events: list[Event] = []  # events waiting for a locked store
        self._kinds: dict[str, str] = {}
        self._last_compact = time.monotonic()
        self._last_flush = time.monotonic()
        self._locked_since: float | None = None
        self.on_locked: Any = lambda _msg: None  # told once when the store is found locked, and when it is free
        # The engine's sink and the probe threads write concurrently; one lock orders them.
        self._lock = threading.RLock()
        self.id = store._patient(self._open, target, transport, engine, workload, config, flavor, version, resume,
                                 started_at)

    def _open(self, target: str, transport: str, engine: str, workload: str, config: Mapping[str, Any] | None,
              flavor: str | None, version: str | None, resume: int | None, started_at: float | None) -> int:
        with OrmSession(self.store.engine) as s:
            if resume is not None:
                old = s.get(SessionRow, resume)
                if old is None:
                    raise StoreError(f"no session {resume} in {self.store.path}")
                old.status, old.ended_at = "running", None
                old.owner_pid, old.owner_start = owner_me()
                for sr in s.scalars(select(SeriesRow).where(SeriesRow.session_id == resume)):
                    self._series_ids[sr.name] = sr.id
                s.commit()
                return resume
            started = time.time() if started_at is None else started_at
            pid, start = owner_me()
            row = SessionRow(started_at=started, status="running", target=target, transport=transport,
                             engine=engine, workload=workload, config=json.dumps(config or {}), flavor=flavor,
                             version=version, owner_pid=pid, owner_start=start)
            s.add(row)
            s.commit()
            return row.id

    def snapshot_variables(self, variables: Mapping[str, str]) -> None:
        def write() -> None:
            with OrmSession(self.store.engine) as s:
                for name, value in variables.items():
                    if any(w in name.lower() for w in SECRET_VARIABLE_WORDS):
                        continue
                    s.add(VariableRow(session_id=self.id, name=name, value=value))
                s.commit()
        self.store._patient(write)

    def add_interval(self, iv: Interval) -> None:
        with self._lock:
            for name, value in iv.series().items():
                self._pending[name].append((iv.t, value))

    def add_samples(self, t: float, values: Mapping[str, float], kinds: Mapping[str, str] | None = None) -> None:
        """Probe samples; `kinds` says 'rate' or 'gauge' per name (default: guessed from the name)."""
        with self._lock:
            if kinds:
                self._kinds.update(kinds)
            for name, value in values.items():
                self._pending[name].append((t, value))

    def maybe_flush(self, max_age: float = 1.0) -> None:
        if time.monotonic() - self._last_flush >= max_age:
            self.flush()

    def add_event(self, ev: Event) -> None:
        with self._lock:
            self._events.append(ev)
            if self._locked_since is None:
                self._write_pending()

    def start_step(self, idx: int, started_at: float, measure_from: float, config: Mapping[str, Any]) -> int:
        def write() -> int:
            with OrmSession(self.store.engine) as s:
                row = StepRow(session_id=self.id, idx=idx, started_at=started_at, measure_from=measure_from,
                              config=json.dumps(config))
                s.add(row)
                s.commit()
                return row.id
        return self.store._patient(write)  # type: ignore[no-any-return]

    def end_step(self, step_id: int, ended_at: float, summary: Mapping[str, Any]) -> None:
        self.flush()

        def write() -> None:
            with OrmSession(self.store.engine) as s:
                row = s.get(StepRow, step_id)
                assert row is not None
                row.ended_at = ended_at
                row.summary = json.dumps(summary)
                s.commit()
        self.store._patient(write)

    def flush(self) -> None:
        with self._lock:
            self._last_flush = time.monotonic()
            if not self._pending and not self._events:
                return
            self._write_pending()

    def _write_pending(self) -> None:
        try:
            self.store._guard(self._flush_locked)
        except StoreLocked as exc:
            now = time.monotonic()
            if self._locked_since is None:
                self._locked_since = now
                self.on_locked(f"{exc}: keeping the samples in memory meanwhile")
            elif now - self._locked_since > LOCK_PATIENCE:
                raise StoreLocked(f"{exc} (for {now - self._locked_since:.0f} s)") from None
            return
        if self._locked_since is not None:
            self.on_locked(f"session store free again after {time.monotonic() - self._locked_since:.0f} s: "
                           "nothing was lost")
            self._locked_since = None

    def _flush_locked(self) -> None:
        """One transaction: the pending samples and events go in together, or stay pending together."""
        with OrmSession(self.store.engine) as s:
            new_ids: dict[str, int] = {}
            for name, points in self._pending.items():
                sid = self._series_id(s, name, new_ids)
                points.sort()
                arr = np.asarray(points, dtype=np.float64)
                ts, vs = encode_chunk(arr[:, 0], arr[:, 1])
                s.add(ChunkRow(series_id=sid, t_first=points[0][0], t_last=points[-1][0], n=len(points),
                               ts=ts, vs=vs, codec=CODEC))
            for ev in self._events:
                s.add(EventRow(session_id=self.id, t=ev.t, kind=ev.kind, label=ev.label,
                               data=json.dumps(dict(ev.data), default=str)))
            s.commit()
        self._series_ids.update(new_ids)  # only once committed: a rolled-back series row is no series
        self._pending = defaultdict(list)
        self._events = []
        if time.monotonic() - self._last_compact >= COMPACT_EVERY:
            self.compact()

    def _series_id(self, s: OrmSession, name: str, new_ids: dict[str, int]) -> int:
        sid = self._series_ids.get(name) or new_ids.get(name)
        if sid is None:
            row = SeriesRow(session_id=self.id, name=name, kind=self._kinds.get(name) or series_kind(name))
            s.add(row)
            s.flush()
            sid = new_ids[name] = row.id
        return sid

    def compact(self) -> None:
        """Merge each series' small chunks into one, in one transaction (readers never see a gap)."""
        with self._lock:
            self._last_compact = time.monotonic()
            try:
                self.store._guard(self._compact)
            except StoreLocked:
                pass  # the next flush tries again a minute later; small chunks are only slower to read

    def _compact(self) -> None:
        with OrmSession(self.store.engine) as s:
            for sid in self._series_ids.values():
                chunks = list(s.scalars(select(ChunkRow).where(ChunkRow.series_id == sid)
                                        .order_by(ChunkRow.t_first, ChunkRow.id)))
                small = [c for c in chunks if c.n < 3600]
                if len(small) < 2:
                    continue
                decoded = [decode_chunk(c.codec, c.n, c.ts, c.vs) for c in small]
                t = np.concatenate([d[0] for d in decoded])
                v = np.concatenate([d[1] for d in decoded])
                order = np.argsort(t, kind="stable")
                for c in small:
                    s.delete(c)
                ts, vs = encode_chunk(t[order], v[order])
                s.add(ChunkRow(series_id=sid, t_first=float(t[order[0]]), t_last=float(t[order[-1]]),
                               n=len(t), ts=ts, vs=vs, codec=CODEC))
            s.commit()

    def finish(self, status: str, summary: Mapping[str, Any] | None = None, ended_at: float | None = None) -> None:
        with self._lock:
            self.store._patient(self._flush_locked)
        self.compact()

        def write() -> None:
            with OrmSession(self.store.engine) as s:
                row = s.get(SessionRow, self.id)
                assert row is not None
                row.status = status
                row.ended_at = time.time() if ended_at is None else ended_at
                if summary is not None:
                    row.summary = json.dumps(summary)
                s.commit()
        self.store._patient(write)


def _add_column(s: OrmSession, table: str, column: str, sql_type: str) -> None:
    have = {row[1] for row in s.execute(text(f"PRAGMA table_info({table})"))}
    if column not in have:
        s.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}"))


def _target(r: TargetRow) -> Target:
    return Target(r.name, r.socket, r.host, r.port, r.user, r.schema, r.password_file, r.db_host, r.ssh_key,
                  r.option_file, r.restart_command)


def _session_dict(r: SessionRow) -> dict[str, Any]:
    summary = json.loads(r.summary) if r.summary else {}
    return {
        "id": r.id, "started_at": r.started_at, "ended_at": r.ended_at, "status": r.status, "target": r.target,
        "transport": r.transport, "flavor": r.flavor, "version": r.version, "engine": r.engine,
        "workload": r.workload, "config": json.loads(r.config), "summary": summary, "name": r.name,
        "tags": r.tags, "notes": r.notes,
    }


def _schema_version(engine: Engine) -> int:
    with engine.connect() as c:
        value = c.execute(text("SELECT value FROM meta WHERE key='schema_version'")).scalar()
    try:
        return int(value)
    except (TypeError, ValueError):
        raise StoreError(f"not a Tunebench session file (schema version {value!r})") from None


def _readable_sessions(src: Store, path: Path) -> list[int]:
    """Every session of `src`, read in full (JSON, samples) before one is copied: a damaged file is
    refused as a whole instead of half imported."""
    try:
        ids = [s["id"] for s in src.list_sessions()]
        for sid in ids:
            src.get_session(sid)
            src.series(sid)
    except StoreError as exc:
        raise StoreError(f"cannot import {path}: {exc}") from None
    except (ValueError, zlib.error, KeyError, TypeError) as exc:  # bad JSON, bad UTF-8, bad sample chunk
        raise StoreError(f"cannot import {path}: the file is damaged ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:120] if str(exc) else 'no detail'})") from None
    if not ids:
        raise StoreError(f"cannot import {path}: it holds no session")
    return ids


def _copy_sessions(src: Engine, dst: Engine, ids: list[int]) -> list[int]:
    """Several sessions in one transaction: all are imported or none."""
    with src.connect() as a, dst.begin() as b:
        return [_copy_rows(a, b, sid) for sid in ids]


def _copy_session(src: Engine, dst: Engine, session_id: int) -> int:
    """One session and everything under it from one store to another; returns its ID there."""
    with src.connect() as a, dst.begin() as b:
        return _copy_rows(a, b, session_id)


def _copy_rows(a: Any, b: Any, session_id: int) -> int:
    """One session and everything under it, from connection `a` into transaction `b`; its ID there."""
    tables = Base.metadata.tables
    sessions, series, chunks = tables["sessions"], tables["series"], tables["sample_chunks"]
    row = a.execute(select(sessions).where(sessions.c.id == session_id)).mappings().one_or_none()
    if row is None:
        raise StoreError(f"no session {session_id} to copy")
    new_id = int(b.execute(insert(sessions).values({k: v for k, v in row.items() if k != "id"})
                           ).inserted_primary_key[0])  # type: ignore[index]
    for table in (tables["steps"], tables["events"], tables["variables"]):
        rows = [dict(r) for r in a.execute(select(table).where(table.c.session_id == session_id)).mappings()]
        for r in rows:
            r.pop("id", None)
            r["session_id"] = new_id
        if rows:
            b.execute(insert(table), rows)
    for sr in a.execute(select(series).where(series.c.session_id == session_id)).mappings().all():
        sid = b.execute(insert(series).values(session_id=new_id, name=sr["name"], kind=sr["kind"])
                        ).inserted_primary_key[0]  # type: ignore[index]
        rows = [dict(c) for c in a.execute(select(chunks).where(chunks.c.series_id == sr["id"])).mappings()]
        for c in rows:
            c.pop("id")
            c["series_id"] = sid
        if rows:
            b.execute(insert(chunks), rows)
    return new_id


def _sqlite_pragmas(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
