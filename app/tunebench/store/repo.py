"""The session store: open (with version check), write a session incrementally, read it back."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import create_engine, delete, event, select
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

COMPACT_EVERY = 60  # merge one-second chunks into one chunk per series every minute
# Rates are per second; gauges are instantaneous values.
GAUGE_SUFFIXES = (".threads", ".lat.p50", ".lat.p95", ".lat.p99", ".lat.max")
# Variables whose values are secrets, never copied into the store.
SECRET_VARIABLE_WORDS = ("password", "secret", "key_id")


def series_kind(name: str) -> str:
    return "gauge" if name.endswith(GAUGE_SUFFIXES) else "rate"


def _pack(arr: Iterable[float]) -> bytes:
    return np.asarray(list(arr), dtype="<f8").tobytes()


def _unpack(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f8")


@dataclass(frozen=True, slots=True)
class SeriesData:
    name: str
    kind: str
    t: np.ndarray
    v: np.ndarray


class Store:
    def __init__(self, path: Path | str):
        self.path = Path(path)
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
                raise StoreError(f"session store {self.path} is locked by another process; try again") from None
            raise StoreError(f"session store {self.path}: {exc.orig}") from None
        except DatabaseError as exc:
            raise StoreError(f"session store {self.path} is not a valid SQLite file ({exc.orig}); "
                             "move it aside or use --db PATH") from None

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
        s.get(Meta, "schema_version").value = str(SCHEMA_VERSION)  # type: ignore[union-attr]
        s.commit()

    # ---- knob journal ---------------------------------------------------------------------------
    def journal_add(self, *, session_id: int | None, target: Target, name: str, kind: str, original: str,
                    owner_pid: int, owner_start: str) -> bool:
        """Record an original value unless one is already pending for this target+knob (the first wins:
        a later 'original' would be a value we set). Returns whether a row was added."""
        def write() -> bool:
            with OrmSession(self.engine) as s:
                exists = s.scalar(select(KnobJournalRow.id).where(
                    KnobJournalRow.target_name == target.name, KnobJournalRow.name == name,
                    KnobJournalRow.state == "pending"))
                if exists is not None:
                    return False
                s.add(KnobJournalRow(session_id=session_id, target=json.dumps(target.to_dict()),
                                     target_name=target.name, name=name, kind=kind, original=original,
                                     state="pending", owner_pid=owner_pid, owner_start=owner_start,
                                     created_at=time.time()))
                s.commit()
                return True
        return self._guard(write)  # type: ignore[no-any-return]

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

    def journal_mark(self, row_id: int, state: str, message: str | None = None) -> None:
        with OrmSession(self.engine) as s:
            r = s.get(KnobJournalRow, row_id)
            if r is not None:
                r.state, r.message, r.restored_at = state, message, time.time()
                s.commit()

    def close(self) -> None:
        self.engine.dispose()

    # ---- targets -------------------------------------------------------------------------------
    def save_target(self, t: Target) -> None:
        with OrmSession(self.engine) as s:
            s.merge(TargetRow(name=t.name, socket=t.socket, host=t.host, port=t.port, user=t.user,
                              schema=t.schema, password_file=t.password_file))
            s.commit()

    def get_target(self, name: str) -> Target | None:
        with OrmSession(self.engine) as s:
            r = s.get(TargetRow, name)
            if r is None:
                return None
            return Target(r.name, r.socket, r.host, r.port, r.user, r.schema, r.password_file)

    def list_targets(self) -> list[Target]:
        with OrmSession(self.engine) as s:
            return [Target(r.name, r.socket, r.host, r.port, r.user, r.schema, r.password_file)
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

    def series(self, session_id: int) -> dict[str, SeriesData]:
        with OrmSession(self.engine) as s:
            rows = s.execute(
                select(SeriesRow.name, SeriesRow.kind, ChunkRow.ts, ChunkRow.vs)
                .join(ChunkRow, ChunkRow.series_id == SeriesRow.id)
                .where(SeriesRow.session_id == session_id)
                .order_by(SeriesRow.name, ChunkRow.t_first, ChunkRow.id)
            ).all()
        parts: dict[str, tuple[str, list[np.ndarray], list[np.ndarray]]] = {}
        for name, kind, ts, vs in rows:
            entry = parts.setdefault(name, (kind, [], []))
            entry[1].append(_unpack(ts))
            entry[2].append(_unpack(vs))
        return {n: SeriesData(n, k, np.concatenate(ts), np.concatenate(vs)) for n, (k, ts, vs) in parts.items()}

    def delete_session(self, session_id: int) -> None:
        with OrmSession(self.engine) as s:
            s.execute(delete(SessionRow).where(SessionRow.id == session_id))
            s.commit()

    # ---- writing ------------------------------------------------------------------------------
    def new_session(self, **fields: Any) -> SessionWriter:
        return SessionWriter(self, **fields)

    def resume_session(self, session_id: int) -> SessionWriter:
        """A writer appending to an existing session (sweep --resume)."""
        return SessionWriter(self, resume=session_id)


class SessionWriter:
    """Writes one session as it happens: every flush commits, so a kill loses at most ~1 s."""

    def __init__(self, store: Store, *, target: str = "", transport: str = "", engine: str = "", workload: str = "",
                 config: Mapping[str, Any] | None = None, flavor: str | None = None, version: str | None = None,
                 resume: int | None = None):
        self.store = store
        self._series_ids: dict[str, int] = {}
        self._pending: dict[str, list[tuple[float, float]]] = defaultdict(list)
        self._kinds: dict[str, str] = {}
        self._last_compact = time.monotonic()
        self._last_flush = time.monotonic()
        # The engine's sink and the probe threads write concurrently; one lock orders them.
        self._lock = threading.RLock()
        with OrmSession(store.engine) as s:
            if resume is not None:
                old = s.get(SessionRow, resume)
                if old is None:
                    raise StoreError(f"no session {resume} in {store.path}")
                old.status, old.ended_at = "running", None
                for sr in s.scalars(select(SeriesRow).where(SeriesRow.session_id == resume)):
                    self._series_ids[sr.name] = sr.id
                s.commit()
                self.id = resume
                return
            row = SessionRow(started_at=time.time(), status="running", target=target, transport=transport,
                             engine=engine, workload=workload, config=json.dumps(config or {}), flavor=flavor,
                             version=version)
            s.add(row)
            s.commit()
            self.id = row.id

    def snapshot_variables(self, variables: Mapping[str, str]) -> None:
        with OrmSession(self.store.engine) as s:
            for name, value in variables.items():
                if any(w in name.lower() for w in SECRET_VARIABLE_WORDS):
                    continue
                s.add(VariableRow(session_id=self.id, name=name, value=value))
            s.commit()

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
        with self._lock, OrmSession(self.store.engine) as s:
            s.add(EventRow(session_id=self.id, t=ev.t, kind=ev.kind, label=ev.label,
                           data=json.dumps(dict(ev.data), default=str)))
            s.commit()

    def start_step(self, idx: int, started_at: float, measure_from: float, config: Mapping[str, Any]) -> int:
        with OrmSession(self.store.engine) as s:
            row = StepRow(session_id=self.id, idx=idx, started_at=started_at, measure_from=measure_from,
                          config=json.dumps(config))
            s.add(row)
            s.commit()
            return row.id

    def end_step(self, step_id: int, ended_at: float, summary: Mapping[str, Any]) -> None:
        self.flush()
        with OrmSession(self.store.engine) as s:
            row = s.get(StepRow, step_id)
            assert row is not None
            row.ended_at = ended_at
            row.summary = json.dumps(summary)
            s.commit()

    def flush(self) -> None:
        with self._lock:
            self._last_flush = time.monotonic()
            if not self._pending:
                return
            self._flush_locked()

    def _flush_locked(self) -> None:
        pending, self._pending = self._pending, defaultdict(list)
        with OrmSession(self.store.engine) as s:
            for name, points in pending.items():
                sid = self._series_id(s, name)
                points.sort()
                s.add(ChunkRow(series_id=sid, t_first=points[0][0], t_last=points[-1][0], n=len(points),
                               ts=_pack(p[0] for p in points), vs=_pack(p[1] for p in points)))
            s.commit()
        if time.monotonic() - self._last_compact >= COMPACT_EVERY:
            self.compact()

    def _series_id(self, s: OrmSession, name: str) -> int:
        sid = self._series_ids.get(name)
        if sid is None:
            row = SeriesRow(session_id=self.id, name=name, kind=self._kinds.get(name) or series_kind(name))
            s.add(row)
            s.flush()
            sid = self._series_ids[name] = row.id
        return sid

    def compact(self) -> None:
        """Merge each series' small chunks into one, in one transaction (readers never see a gap)."""
        with self._lock, OrmSession(self.store.engine) as s:
            self._last_compact = time.monotonic()
            for sid in self._series_ids.values():
                chunks = list(s.scalars(select(ChunkRow).where(ChunkRow.series_id == sid)
                                        .order_by(ChunkRow.t_first, ChunkRow.id)))
                small = [c for c in chunks if c.n < 3600]
                if len(small) < 2:
                    continue
                ts = np.concatenate([_unpack(c.ts) for c in small])
                vs = np.concatenate([_unpack(c.vs) for c in small])
                order = np.argsort(ts, kind="stable")
                for c in small:
                    s.delete(c)
                s.add(ChunkRow(series_id=sid, t_first=float(ts[order[0]]), t_last=float(ts[order[-1]]),
                               n=len(ts), ts=ts[order].tobytes(), vs=vs[order].tobytes()))
            s.commit()

    def finish(self, status: str, summary: Mapping[str, Any] | None = None) -> None:
        self.flush()
        self.compact()
        with OrmSession(self.store.engine) as s:
            row = s.get(SessionRow, self.id)
            assert row is not None
            row.status = status
            row.ended_at = time.time()
            if summary is not None:
                row.summary = json.dumps(summary)
            s.commit()


def _session_dict(r: SessionRow) -> dict[str, Any]:
    summary = json.loads(r.summary) if r.summary else {}
    return {
        "id": r.id, "started_at": r.started_at, "ended_at": r.ended_at, "status": r.status, "target": r.target,
        "transport": r.transport, "flavor": r.flavor, "version": r.version, "engine": r.engine,
        "workload": r.workload, "config": json.loads(r.config), "summary": summary, "name": r.name,
        "tags": r.tags, "notes": r.notes,
    }


def _sqlite_pragmas(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
