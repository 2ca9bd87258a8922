"""The session store: open (with version check and migration), targets, the knob journal, sessions read back,
renamed, deleted. Writing a session is writer.py; export and import are session_transfer.py."""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
from sqlalchemy import CursorResult, and_, create_engine, delete, event, func, inspect, or_, select, text
from sqlalchemy.exc import DatabaseError, DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session as OrmSession

from tunebench.core.errors import StoreError
from tunebench.core.kinds import JournalKind, JournalState
from tunebench.core.target import Target
from tunebench.store import ledger
from tunebench.store.json_fields import lenient_event, lenient_object, session_summary
from tunebench.store.location import machine_id, parse_location, server_engine, this_host
from tunebench.store.migrations import migrate
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
from tunebench.store.owner import owner_alive
from tunebench.store.samples import SeriesData, decode_chunk
from tunebench.store.server_errors import StoreUnavailable, server_failure
from tunebench.store.sqlite_file import (
    LOCK_PATIENCE,
    StoreLocked,
    _plain,
    _readonly_uri,
    _sqlite_pragmas,
    sqlite_tables,
)
from tunebench.store.writer import SessionWriter

if TYPE_CHECKING:
    from tunebench.store.session_transfer import Imported

_T = TypeVar("_T")

VACUUM_SHARE = 0.25  # sessions delete shrinks the file when this share of it is free pages
# A server store's patience with a server that went away, for the writes that cannot wait in memory (a step's start
# and end, the knob journal, the session's end): a restart of the database server is survived.
OUTAGE_PATIENCE = 120.0
SCHEMA_LOCK = 0x7475_6E65  # "tune": the advisory lock under which one process makes or migrates a server's schema


class Store:
    """The session store: a SQLite file (`path`), or a server database named by URL (`path` None). `where` names it
    in messages, `location` is what opens it again (another process: the run's child)."""

    path: Path | None

    def __init__(self, path: Path | str, readonly: bool = False):
        loc = parse_location(path)
        self.location = self.where = loc.text
        self.host = this_host()
        self._vouched: dict[int, str] = {}  # journal row id -> its ledger digest (rows written or read here)
        if loc.url is not None:
            if readonly:
                raise StoreError(f"{self.where}: only a session file is read this way")
            self.path = None
            self.engine = server_engine(loc.url)
            self._open(self._init_server_schema)
            return
        self.path = file = Path(path)
        if readonly:  # a file to read from (import): never created, migrated or switched to WAL
            self.engine = create_engine("sqlite://", creator=lambda: sqlite3.connect(
                _readonly_uri(file), uri=True, check_same_thread=False))
            return
        if file.is_dir():
            raise StoreError(f"session store {file} is a directory; give a file with --db")
        if file.exists() and not file.is_file():
            # a device, a FIFO, a socket: SQLite would put its -journal or -wal beside it (/dev/null-journal)
            raise StoreError(f"session store {file} is not a regular file; give a file with --db")
        if file.is_file():
            found = sqlite_tables(file, in_use_ok=True)
            if found is None:
                raise StoreError(f"session store {file} is not a valid SQLite file; "
                                 "move it aside or use --db PATH")
            tables, version = found
            if tables and "meta" not in tables:  # someone else's database: not a byte is written to it
                raise StoreError(f"{file} is a SQLite file of another application (tables: "
                                 f"{', '.join(sorted(tables)[:5])}); not a Tunebench session store")
            if version == -1:  # issue 43 item 17: a traceback, or re-stamped and migrated (the file changed)
                raise StoreError(f"session store {file}: its schema version is missing or not a version number: "
                                 "a damaged store, left as it is")
            if version is not None and version > SCHEMA_VERSION:  # before create_all or the WAL switch
                raise StoreError(f"session store {file} was written by a newer Tunebench "
                                 f"(schema {version} > {SCHEMA_VERSION})")
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store directory {file.parent}: {exc.strerror}") from None
        self.engine = create_engine(f"sqlite:///{file}", connect_args={"timeout": 5})
        event.listen(self.engine, "connect", _sqlite_pragmas)
        self._open(self._init_schema)

    def _open(self, init: Callable[[], None]) -> None:
        """The schema made or checked; a store refused here (a newer Tunebench's, another application's) closes its
        connection now, not at the interpreter's exit (one a refusal in the window's process)."""
        try:
            self._guard(init)
        except BaseException:
            self.engine.dispose()
            raise

    @property
    def is_server(self) -> bool:
        return self.path is None

    def _guard(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self.path is None:
            try:
                return fn(*args)
            except DBAPIError as exc:
                raise server_failure(self.where, exc) from None
        file = self.path
        try:
            return fn(*args)
        except OperationalError as exc:
            if "locked" in str(exc.orig):
                raise StoreLocked(f"session store {self.where} is locked by another process; try again") from None
            raise StoreError(f"session store {self.where}: {_plain(exc.orig, file)}") from None
        except IntegrityError as exc:  # a constraint of ours, not a damaged file
            hint = " (the session it writes to was deleted)" if "FOREIGN KEY" in str(exc.orig) else ""
            raise StoreError(f"session store {self.where}: {exc.orig}{hint}") from None
        except DatabaseError as exc:
            raise StoreError(f"session store {self.where} is not a valid SQLite file ({exc.orig}); "
                             "move it aside or use --db PATH") from None

    def _patient(self, fn: Callable[..., _T], *args: Any) -> _T:
        """`_guard`, but a store locked by another process is waited for (up to LOCK_PATIENCE s), and a server
        store that went away for up to OUTAGE_PATIENCE s."""
        start = time.monotonic()
        while True:
            try:
                return self._guard(fn, *args)
            except StoreLocked:
                if time.monotonic() - start > LOCK_PATIENCE:
                    raise
                time.sleep(0.5)
            except StoreUnavailable as exc:
                waited = time.monotonic() - start
                if waited > OUTAGE_PATIENCE:
                    raise StoreUnavailable(f"{exc} (for {waited:.0f} s, the bound)") from None
                time.sleep(1.0)

    def _init_server_schema(self) -> None:
        """A server store's tables made, or migrated, by one process at a time (an advisory lock: several
        machines may start at once). A newer schema, or a database holding another application's tables, is
        refused before anything is written."""
        with self.engine.connect() as c:
            version = self._server_version(c)
            if version == SCHEMA_VERSION:
                return
            postgres = c.dialect.name == "postgresql"
            if postgres:
                c.execute(text("SELECT pg_advisory_lock(:k)"), {"k": SCHEMA_LOCK})
            else:
                got = c.execute(text("SELECT GET_LOCK(:k, 60)"), {"k": f"tunebench.schema.{SCHEMA_LOCK}"}).scalar()
                if got != 1:
                    raise StoreError(f"session store {self.where}: another Tunebench has been making its tables "
                                     "for 60 s; try again")
            c.commit()
            try:
                self._server_version(c)  # again: another process may have done it while we waited
                Base.metadata.create_all(c)
                c.commit()
                with OrmSession(bind=c) as s:
                    row = s.get(Meta, "schema_version")
                    if row is None:
                        s.add(Meta(key="schema_version", value=str(SCHEMA_VERSION)))
                        s.commit()
                    elif int(row.value) < SCHEMA_VERSION:
                        migrate(s, int(row.value))
            finally:
                c.rollback()
                if postgres:
                    c.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": SCHEMA_LOCK})
                else:
                    c.execute(text("SELECT RELEASE_LOCK(:k)"), {"k": f"tunebench.schema.{SCHEMA_LOCK}"})
                c.commit()

    def _server_version(self, c: Any) -> int | None:
        """The schema version of a server store (None: an empty database), refusing what is not ours or newer."""
        tables = set(inspect(c).get_table_names())
        c.rollback()
        if not tables:
            return None
        if "meta" not in tables:
            raise StoreError(f"{self.where} holds tables of another application ({', '.join(sorted(tables)[:5])}); "
                             "not a Tunebench session store: give it a database of its own")
        value = c.execute(select(Meta.value).where(Meta.key == "schema_version")).scalar()
        c.rollback()
        if value is None:
            return None
        if not str(value).isdigit():
            raise StoreError(f"session store {self.where}: schema version {value!r} is not a number")
        if int(value) > SCHEMA_VERSION:
            raise StoreError(f"session store {self.where} was written by a newer Tunebench "
                             f"(schema {value} > {SCHEMA_VERSION})")
        return int(value)

    def _init_schema(self) -> None:
        Base.metadata.create_all(self.engine)
        with OrmSession(self.engine) as s:
            row = s.get(Meta, "schema_version")
            if row is None:
                s.add(Meta(key="schema_version", value=str(SCHEMA_VERSION)))
                s.commit()
            elif int(row.value) > SCHEMA_VERSION:
                raise StoreError(f"session store {self.where} was written by a newer Tunebench "
                                 f"(schema {row.value} > {SCHEMA_VERSION})")
            elif int(row.value) < SCHEMA_VERSION:
                migrate(s, int(row.value))

    # ---- knob journal ---------------------------------------------------------------------------
    def journal_add(self, *, session_id: int | None, target: Target, name: str, kind: JournalKind, original: str,
                    owner_pid: int, owner_start: str, created_at: float | None = None) -> int | None:
        """Record an original value unless one is already pending for this target+knob (the first wins:
        a later 'original' would be a value we set). Returns the new row's ID, or None. The row is vouched for
        in this machine's ledger first (store/ledger.py): only such rows are ever restored."""
        when = time.time() if created_at is None else created_at
        target_json = json.dumps(target.to_dict())
        vouch = ledger.digest({"target": target_json, "target_name": target.name, "name": name, "kind": kind,
                               "original": original, "owner_pid": owner_pid, "owner_start": owner_start,
                               "session_id": session_id, "created_at": when})

        def write() -> int | None:
            with OrmSession(self.engine) as s:
                exists = s.scalar(select(KnobJournalRow.id).where(
                    KnobJournalRow.target_name == target.name, KnobJournalRow.name == name,
                    KnobJournalRow.state == "pending"))
                if exists is not None:
                    return None
                row = KnobJournalRow(session_id=session_id, target=target_json,
                                     target_name=target.name, name=name, kind=kind, original=original,
                                     state="pending", owner_pid=owner_pid, owner_start=owner_start,
                                     created_at=when, host=self.host, machine=self.machine)
                s.add(row)
                s.commit()
                return row.id
        ledger.vouch(vouch)
        try:
            row_id = self._patient(write)
        except BaseException:
            ledger.withdraw(vouch)
            raise
        if row_id is None:
            ledger.withdraw(vouch)
        else:
            self._vouched[row_id] = vouch
        return row_id

    @functools.cached_property
    def machine(self) -> str:
        """This machine's made-once id (store/location.machine_id)."""
        return machine_id()

    def _mine(self, host: Any, machine: Any) -> Any:
        """Rows of this machine: a pid means something only here (a shared store holds other machines' rows,
        whose processes this one can neither see nor restore for). By the machine id; rows written before it was
        recorded (schema 11) by the hostname, and before that (schema 10) every row."""
        return or_(machine == self.machine, and_(machine.is_(None), or_(host == self.host, host.is_(None))))

    def _pending_rows(self, failed: bool = False) -> list[dict[str, Any]]:
        states = ("pending", "failed") if failed else ("pending",)

        def read() -> list[dict[str, Any]]:
            with OrmSession(self.engine) as s:
                return [
                    {"id": r.id, "session_id": r.session_id, "target": json.loads(r.target), "state": r.state,
                     "target_name": r.target_name, "name": r.name, "kind": r.kind, "original": r.original,
                     "owner_pid": r.owner_pid, "owner_start": r.owner_start, "created_at": r.created_at,
                     "digest": ledger.digest({"target": r.target, "target_name": r.target_name, "name": r.name,
                                              "kind": r.kind, "original": r.original, "owner_pid": r.owner_pid,
                                              "owner_start": r.owner_start, "session_id": r.session_id,
                                              "created_at": r.created_at})}
                    for r in s.scalars(select(KnobJournalRow)
                                       .where(KnobJournalRow.state.in_(states),
                                              self._mine(KnobJournalRow.host, KnobJournalRow.machine))
                                       .order_by(KnobJournalRow.id))
                ]
        return self._guard(read)

    def journal_pending(self, failed: bool = False) -> list[dict[str, Any]]:
        """The pending rows of this machine's runs that this machine vouches for (written here, as written, still
        pending here): the only rows a restore acts on. `failed`: also those a restore could not put back (they stay
        for `tunebench restore`, issue 43 item 5)."""
        rows = []
        for r in self._pending_rows(failed):
            if ledger.vouched(r["digest"]):
                self._vouched[r["id"]] = r.pop("digest")
                rows.append(r)
        return rows

    def journal_unvouched(self) -> list[dict[str, Any]]:
        """Pending rows that name this machine but that it did not write as they read (a shared store's rows
        changed or made by someone else, or rows of a Tunebench before the ledger): shown, never acted on."""
        return [r for r in self._pending_rows(failed=True) if not ledger.vouched(r.pop("digest"))]

    def mark_interrupted(self, session_id: int) -> bool:
        """A session whose process died mid-run (kill -9, crash) is 'interrupted', not 'running'."""
        def write() -> bool:
            with OrmSession(self.engine) as s:
                r = s.get(SessionRow, session_id)
                if r is None or r.status != "running":
                    return False
                r.status = "interrupted"
                s.commit()
                return True
        return self._guard(write)

    def mark_orphans(self) -> list[int]:
        """Sessions of this machine still 'running' whose writing process is gone (kill -9, crash, power cut)
        become 'interrupted'; returns their IDs. Sessions of a live process (or of another machine) are left
        alone."""
        def write() -> list[int]:
            with OrmSession(self.engine) as s:
                gone = [r for r in s.scalars(select(SessionRow).where(SessionRow.status == "running",
                                                                      self._mine(SessionRow.host, SessionRow.machine)))
                        if r.owner_pid is not None and not owner_alive(r.owner_pid, r.owner_start)]
                for r in gone:
                    r.status = "interrupted"
                s.commit()
                return [r.id for r in gone]
        return self._guard(write)

    def journal_mark(self, row_id: int, state: JournalState, message: str | None = None) -> None:
        """state: restored | failed | discarded (the change was refused: nothing to put back)."""
        def write() -> None:
            with OrmSession(self.engine) as s:
                r = s.get(KnobJournalRow, row_id)
                if r is not None:
                    r.state, r.message, r.restored_at = state, message, time.time()
                    s.commit()
        self._patient(write)
        if state in ("restored", "discarded"):  # done: the ledger no longer vouches for the row (a failed one
            ledger.withdraw(self._vouched.pop(row_id, None))  # stays vouched for `tunebench restore`)

    def close(self) -> None:
        self.engine.dispose()

    # ---- targets -------------------------------------------------------------------------------
    def save_target(self, t: Target) -> None:
        def run() -> None:
            with OrmSession(self.engine) as s:
                s.merge(TargetRow(name=t.name, socket=t.socket, host=t.host, port=t.port, user=t.user,
                                  schema=t.schema, password_file=t.password_file, db_host=t.db_host,
                                  ssh_key=t.ssh_key, option_file=t.option_file, restart_command=t.restart_command,
                                  ssl_mode=t.ssl_mode, ssl_ca=t.ssl_ca, ssl_cert=t.ssl_cert, ssl_key=t.ssl_key,
                                  get_server_public_key=int(t.get_server_public_key)))
                s.commit()
        return self._guard(run)

    def get_target(self, name: str) -> Target | None:
        def run() -> Target | None:
            with OrmSession(self.engine) as s:
                r = s.get(TargetRow, name)
                if r is None:
                    return None
                return _target(r)
        return self._guard(run)

    def list_targets(self) -> list[Target]:
        def run() -> list[Target]:
            with OrmSession(self.engine) as s:
                return [_target(r)
                        for r in s.scalars(select(TargetRow).order_by(TargetRow.name))]
        return self._guard(run)

    def delete_target(self, name: str) -> bool:
        def run() -> bool:
            with OrmSession(self.engine) as s:
                # a DELETE's result is a CursorResult (it has rowcount); Session.execute is typed for any statement
                n = cast("CursorResult[Any]", s.execute(delete(TargetRow).where(TargetRow.name == name))).rowcount
                s.commit()
                return bool(n)
        return self._guard(run)

    # ---- reading sessions ---------------------------------------------------------------------
    def list_sessions(self, host: str | None = None) -> list[dict[str, Any]]:
        """Every session, or those recorded on machine `host` ('-': those of before hosts were recorded)."""
        def read() -> list[dict[str, Any]]:
            q = select(SessionRow).order_by(SessionRow.id)
            if host is not None:
                q = q.where(SessionRow.host.is_(None) if host == "-" else SessionRow.host == host)
            with OrmSession(self.engine) as s:
                return [_session_dict(r) for r in s.scalars(q)]
        return self._guard(read)

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
                        out[sid]["steps"].append({"config": lenient_object(cfg)})
                for sid, t, label, data in s.execute(select(EventRow.session_id, EventRow.t, EventRow.label,
                                                            EventRow.data).where(EventRow.kind == "knob")):
                    if sid in out:
                        out[sid]["events"].append({"t": t, "kind": "knob", "label": _text(label) or "",
                                                   "data": lenient_object(data)})
                return list(out.values())
        return self._guard(read)

    def get_session(self, session_id: int, *, events: bool = True,
                    other_events_limit: int | None = None) -> dict[str, Any]:
        """A session with its steps, events and variables. `events=False`: without events (what only needs the
        steps). `other_events_limit`: the timeline's events (steps, knob changes, configurations, restarts,
        verdicts, drift...) all, and of the others (notes, errors: a million in a long session) the first N;
        `events_left_out` says how many were not read (the window opens in a second whatever the session)."""
        def read() -> dict[str, Any]:
            with OrmSession(self.engine) as s:
                r = s.get(SessionRow, session_id)
                if r is None:
                    raise StoreError(f"no session {session_id} in {self.where}")
                out = _session_dict(r)
                out["steps"] = [
                    {"idx": st.idx, "started_at": st.started_at, "measure_from": st.measure_from,
                     "ended_at": st.ended_at, "config": lenient_object(st.config),
                     "summary": lenient_object(st.summary) if st.summary else None}
                    for st in s.scalars(select(StepRow).where(StepRow.session_id == session_id)
                                        .order_by(StepRow.idx))
                ]
                out["events"], out["events_left_out"] = [], 0
                cols = (EventRow.t, EventRow.kind, EventRow.label, EventRow.data)
                q = select(*cols).where(EventRow.session_id == session_id)
                if not events:
                    rows: list[Any] = []
                elif other_events_limit is None:
                    rows = list(s.execute(q.order_by(EventRow.t, EventRow.id)))
                else:
                    rows = list(s.execute(q.where(EventRow.kind.in_(TIMELINE_EVENT_KINDS))))
                    others = q.where(EventRow.kind.not_in(TIMELINE_EVENT_KINDS))
                    rows += list(s.execute(others.order_by(EventRow.t, EventRow.id).limit(other_events_limit)))
                    total = s.scalar(select(func.count()).select_from(EventRow).where(
                        EventRow.session_id == session_id, EventRow.kind.not_in(TIMELINE_EVENT_KINDS))) or 0
                    out["events_left_out"] = max(0, total - other_events_limit)
                    rows.sort(key=lambda r: r[0] if isinstance(r[0], float) else 0.0)
                out["events"] = []
                for t, kind, label, data in rows:
                    k, text, d = lenient_event(_text(kind) or "", _text(label) or "", data)
                    out["events"].append({"t": t, "kind": k, "label": text, "data": d})
                out["variables"] = {
                    v.name: v.value
                    for v in s.scalars(select(VariableRow).where(VariableRow.session_id == session_id))
                }
                return out
        return self._guard(read)

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
        return self._guard(read)

    def series_names(self, session_id: int) -> dict[str, str]:
        """name -> kind of every series of a session, without reading a sample."""
        def read() -> dict[str, str]:
            with OrmSession(self.engine) as s:
                return dict(s.execute(select(SeriesRow.name, SeriesRow.kind)
                                      .where(SeriesRow.session_id == session_id)).tuples().all())
        return self._guard(read)

    def update_session(self, session_id: int, *, name: str | None = None, tags: str | None = None,
                       notes: str | None = None) -> None:
        """Rename, tag, annotate ('' clears; None leaves as is)."""
        def write() -> None:
            with OrmSession(self.engine) as s:
                r = s.get(SessionRow, session_id)
                if r is None:
                    raise StoreError(f"no session {session_id} in {self.where}")
                for field, value in (("name", name), ("tags", tags), ("notes", notes)):
                    if value is not None:
                        setattr(r, field, value.strip() or None)
                s.commit()
        self._guard(write)

    # ---- names kept beside the sessions (a history's series names) ----------------------------------
    def meta_items(self, prefix: str) -> dict[str, Any]:
        """The store's own key/value rows whose key starts with `prefix` (the prefix taken off)."""
        def read() -> dict[str, Any]:
            with OrmSession(self.engine) as s:
                rows = s.scalars(select(Meta).where(Meta.key.startswith(prefix, autoescape=True)))
                return {r.key[len(prefix):]: r.value for r in rows}
        return self._guard(read)

    def meta_set(self, key: str, value: Any) -> None:
        """Set (None: delete) one of the store's own key/value rows ("schema_version" is not one to set)."""
        if key == "schema_version" or len(key) > 64:
            raise StoreError(f"not a key to set: {key!r}")

        def write() -> None:
            with OrmSession(self.engine) as s:
                row = s.get(Meta, key)
                if value is None:
                    if row is not None:
                        s.delete(row)
                elif row is None:
                    s.add(Meta(key=key, value=value))
                else:
                    row.value = value
                s.commit()
        self._guard(write)

    def export_session(self, session_id: int, path: Path | str) -> Path:
        """The session (with its steps, events, variables and samples) as a SQLite file of its own, in
        this store's format: another Tunebench imports it with `import_sessions`."""
        from tunebench.store import session_transfer  # it makes Stores of its own

        return session_transfer.export_session(self, session_id, path)

    def import_sessions(self, path: Path | str, again: bool = False,
                        only: Collection[int] | None = None) -> Imported:
        """Every session of an exported file (or those of `only`, IDs in the file), copied in under new IDs, all
        or none; one already here is skipped (`Imported.skipped`) unless `again`. The file is only read (never
        migrated, switched to WAL or given tables); a file that is not a session store (or is damaged, or newer)
        raises StoreError and changes nothing, here or there."""
        from tunebench.store import session_transfer  # it makes Stores of its own

        return session_transfer.import_sessions(self, path, again, only)

    def delete_session(self, session_id: int) -> None:
        """Delete a session and all under it; a session a live process is still recording is refused (its run
        would fail at its next write)."""
        def write() -> None:
            with OrmSession(self.engine) as s:
                r = s.get(SessionRow, session_id)
                elsewhere = r is not None and (r.machine not in (None, self.machine)
                                               or (r.machine is None and r.host not in (None, self.host)))
                if r is not None and r.status == "running" and elsewhere:
                    raise StoreError(f"session {session_id} is running on {r.host} (or its run there was killed: a "
                                     f"Tunebench started on {r.host} marks it interrupted); not deleted from here")
                if r is not None and r.status == "running" and owner_alive(r.owner_pid, r.owner_start):
                    raise StoreError(f"session {session_id} is running (recorded by process {r.owner_pid}); "
                                     "stop its run first")
                s.execute(delete(SessionRow).where(SessionRow.id == session_id))
                s.commit()
        self._guard(write)

    def shrink(self) -> bool:
        """VACUUM when deleted sessions left more than VACUUM_SHARE of the file as free pages, and no
        run is writing (a session 'running', or the file busy). Returns whether the file shrank. A server
        database reclaims space on its own."""
        if self.is_server:
            return False
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


# The events the timeline draws (markers, bands, the step table's verdicts): always read in full
TIMELINE_EVENT_KINDS = ("step_start", "step_end", "knob", "mark", "restart", "config", "verdict", "drift", "ramp",
                        "restore", "engine", "server", "gap", "outage", "statement", "rate", "trial", "tune")


def _target(r: TargetRow) -> Target:
    return Target(r.name, r.socket, r.host, r.port, r.user, r.schema, r.password_file, r.db_host, r.ssh_key,
                  r.option_file, r.restart_command, r.ssl_mode, r.ssl_ca, r.ssl_cert, r.ssl_key,
                  bool(r.get_server_public_key))


def _session_dict(r: SessionRow) -> dict[str, Any]:
    """A session's row as the commands and the window read it. Whatever a damaged or hand-edited row holds,
    this returns (text as text, JSON that is no object as {}): times are shown through core.display."""
    return {
        "id": r.id, "started_at": r.started_at, "ended_at": r.ended_at, "status": _text(r.status) or "",
        "target": _text(r.target) or "", "transport": _text(r.transport) or "", "flavor": _text(r.flavor),
        "version": _text(r.version), "engine": _text(r.engine) or "", "workload": _text(r.workload) or "",
        "config": lenient_object(r.config), "summary": session_summary(r.summary), "name": _text(r.name),
        "tags": _text(r.tags), "notes": _text(r.notes), "host": _text(r.host),
    }


def _text(value: object) -> str | None:
    """A text column's value as text (SQLite keeps what was put in: a number, bytes)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
