"""Sessions from one store to another: a session exported as a SQLite file of its own, and the sessions of
such a file imported, all or none; a session already here is skipped unless a copy is asked for.

A session is the same recording when its start (to the stored float), target, engine, workload, configuration
and first stored samples are: what an export copies verbatim, whatever the store it went through gave it as ID,
name, tags or status. No column of its own, so a file written before this rule (or by an older schema) is
recognised too."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, CursorResult, Engine, insert, select, text

from tunebench.core.errors import StoreError
from tunebench.store.import_checks import checked_sessions
from tunebench.store.models import SCHEMA_VERSION, Base
from tunebench.store.repo import Store
from tunebench.store.sqlite_file import sqlite_tables

IMPORTED_TAG = "imported"  # every imported session carries it: the sessions list shows it, tag:imported finds them


def export_session(store: Store, session_id: int, path: Path | str) -> Path:
    """The session (with its steps, events, variables and samples) as a SQLite file of its own, in
    this store's format: another Tunebench imports it with `import_sessions`."""
    dest = Path(path)
    if dest.exists():
        raise StoreError(f"{dest} exists; choose another name")
    tmp = dest.with_name(dest.name + ".part")
    tmp.unlink(missing_ok=True)
    other = Store(tmp)
    try:
        store._guard(_copy_session, store.engine, other.engine, session_id)
    finally:
        other.close()
    shutil.move(str(tmp), dest)
    for suffix in ("-wal", "-shm"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    return dest


def transfer_session(src: Store, dst: Store, session_id: int) -> Imported:
    """`sessions push`/`pull`: one session of `src` copied into `dst` whole (steps, events, variables, samples,
    summary, the machine it ran on), through an exported file: what `dst` gets is what an import of that file
    gives (checked value by value, all or none, skipped if already there)."""
    if src.location == dst.location:
        raise StoreError(f"{src.where} is both ends of the copy")
    session = src.get_session(session_id, events=False)
    if session["status"] == "running":
        raise StoreError(f"session {session_id} is still running; copy it once its run has ended")
    with tempfile.TemporaryDirectory(prefix="tunebench-transfer-") as tmp:
        path = export_session(src, session_id, Path(tmp) / f"session-{session_id}.tbsession")
        # the team's copy is the same session: it keeps its own tags (an import from a file is tagged "imported";
        # a push tagged it too, and the team saw every session it shared as "imported": issue 46 item 11)
        return import_sessions(dst, path, tag=None)


@dataclass(frozen=True)
class Imported:
    """What an import did: the new IDs, and the sessions of the file it left out as already here."""

    ids: list[int] = field(default_factory=list)
    skipped: list[tuple[int, int]] = field(default_factory=list)  # (ID in the file, ID here)

    def skipped_lines(self) -> list[str]:
        return [f"session {theirs} is already here as {here}: skipped" for theirs, here in self.skipped]


def import_sessions(store: Store, path: Path | str, again: bool = False,
                    only: Collection[int] | None = None, tag: str | None = IMPORTED_TAG) -> Imported:
    """Every session of an exported file (or those of `only`, IDs in the file) copied in under new IDs, all or
    none; one already here (see the module) is skipped, unless `again` (then it is copied once more). The file
    is only read (never migrated, switched to WAL or given tables); a file that is not a session store (or is
    damaged, or newer) raises StoreError and changes nothing, here or there."""
    src_path = Path(path)
    if src_path.is_dir():
        raise StoreError(f"cannot import {src_path}: it is a directory")
    if src_path.exists() and not src_path.is_file():
        raise StoreError(f"cannot import {src_path}: not a regular file")
    if not src_path.is_file():
        raise StoreError(f"no such file: {src_path}")
    if store.path is not None and src_path.resolve() == store.path.resolve():
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
            version = store._guard(_schema_version, src.engine)
            if version > SCHEMA_VERSION:
                raise StoreError(f"cannot import {src_path}: written by a newer Tunebench "
                                 f"(schema {version} > {SCHEMA_VERSION})")
            if version < SCHEMA_VERSION:  # migrate a copy, never the user's file
                src.close()
                copy = Path(tmp) / "import.sqlite"
                shutil.copyfile(src_path, copy)
                src = Store(copy)
            ids = store._guard(_checked, src.engine, src_path)
            if only is not None:
                wanted = set(only)
                ids = [i for i in ids if i in wanted]
            return store._guard(_copy_sessions, src.engine, store.engine, ids, again, tag)
        finally:
            src.close()


def _schema_version(engine: Engine) -> int:
    with engine.connect() as c:
        value = c.execute(text("SELECT value FROM meta WHERE key='schema_version'")).scalar()
    if value is not None:
        try:
            if int(value) >= 1:
                return int(value)
        except (TypeError, ValueError):
            pass
    raise StoreError(f"not a Tunebench session file (schema version {value!r})")


def _checked(src: Engine, path: Path) -> list[int]:
    """Every session of the file, checked value by value before one is copied: a damaged file is refused as a
    whole instead of half imported (or imported and then breaking the list, a report, the window)."""
    with src.connect() as c:
        return checked_sessions(c, path)


def _copy_sessions(src: Engine, dst: Engine, ids: list[int], again: bool, tag: str | None = IMPORTED_TAG
                   ) -> Imported:
    """Several sessions in one transaction: all are imported or none; each tagged `tag` ("imported"; None: a
    push or pull, which keeps the session's own tags). Those already here are left out unless `again`."""
    done = Imported()
    with src.connect() as a, dst.begin() as b:
        for sid in ids:
            here = None if again else _already_here(a, b, sid)
            if here is not None:
                done.skipped.append((sid, here))
            else:
                done.ids.append(_copy_rows(a, b, sid, tag=tag, foreign=True))
    return done


def _fingerprint(c: Connection, session_id: int) -> tuple[Any, ...] | None:
    """What makes a session the recording it is (see the module); None if there is no such session."""
    tables = Base.metadata.tables
    sessions, series, chunks = tables["sessions"], tables["series"], tables["sample_chunks"]
    row = c.execute(select(sessions.c.started_at, sessions.c.target, sessions.c.engine, sessions.c.workload,
                           sessions.c.config).where(sessions.c.id == session_id)).one_or_none()
    if row is None:
        return None
    first = c.execute(select(chunks.c.t_first, chunks.c.n, chunks.c.ts, chunks.c.vs)
                      .join(series, series.c.id == chunks.c.series_id).where(series.c.session_id == session_id)
                      .order_by(series.c.name, chunks.c.t_first, chunks.c.id).limit(1)).one_or_none()
    return (*row, None if first is None else tuple(first))


def _already_here(a: Connection, b: Connection, session_id: int) -> int | None:
    """The ID in `b` of the same recording as session `session_id` of `a` (the oldest, if several), or None."""
    theirs = _fingerprint(a, session_id)
    if theirs is None:
        return None
    sessions = Base.metadata.tables["sessions"]
    candidates = b.execute(select(sessions.c.id).where(sessions.c.started_at == theirs[0],
                                                       sessions.c.target == theirs[1],
                                                       sessions.c.workload == theirs[3])
                           .order_by(sessions.c.id)).scalars().all()
    return next((int(here) for here in candidates if _fingerprint(b, here) == theirs), None)


def _copy_session(src: Engine, dst: Engine, session_id: int) -> int:
    """One session and everything under it from one store to another; returns its ID there."""
    with src.connect() as a, dst.begin() as b:
        return _copy_rows(a, b, session_id)


def with_tag(tags: str | None, tag: str) -> str:
    """The comma-separated `tags` with `tag` among them (once)."""
    tags = (tags or "").strip().rstrip(",")
    if tag in [t.strip() for t in tags.split(",")]:
        return tags
    return f"{tags},{tag}" if tags else tag


def _copy_rows(a: Connection, b: Connection, session_id: int, tag: str | None = None, foreign: bool = False
               ) -> int:
    """One session and everything under it, from connection `a` into transaction `b` (with `tag` added to its
    tags; `foreign`: from another store, whose process is not this one's); its ID there."""
    tables = Base.metadata.tables
    sessions, series, chunks = tables["sessions"], tables["series"], tables["sample_chunks"]
    row = a.execute(select(sessions).where(sessions.c.id == session_id)).mappings().one_or_none()
    if row is None:
        raise StoreError(f"no session {session_id} to copy")
    values = {k: v for k, v in row.items() if k != "id"}
    if tag:
        values["tags"] = with_tag(values.get("tags"), tag)
    if tag or foreign:  # an import: its process, if it still ran, is another machine's or long gone
        values["owner_pid"] = values["owner_start"] = None
        if values.get("status") == "running":
            values["status"] = "interrupted"
    new_id = _inserted_id(b.execute(insert(sessions).values(values)))
    for table in (tables["steps"], tables["events"], tables["variables"]):
        rows = [dict(r) for r in a.execute(select(table).where(table.c.session_id == session_id)).mappings()]
        for r in rows:
            r.pop("id", None)
            r["session_id"] = new_id
        if rows:
            b.execute(insert(table), rows)
    for sr in a.execute(select(series).where(series.c.session_id == session_id)).mappings().all():
        sid = _inserted_id(b.execute(insert(series).values(session_id=new_id, name=sr["name"], kind=sr["kind"])))
        rows = [dict(c) for c in a.execute(select(chunks).where(chunks.c.series_id == sr["id"])).mappings()]
        for c in rows:
            c.pop("id")
            c["series_id"] = sid
        if rows:
            b.execute(insert(chunks), rows)
    return new_id


def _inserted_id(result: CursorResult[Any]) -> int:
    """The ID of the row a single-row INSERT just wrote (SQLite always reports it)."""
    key = result.inserted_primary_key
    if key is None:
        raise StoreError("the session store did not report the ID of a row it wrote")
    return int(key[0])
