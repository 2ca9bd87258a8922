"""What a session file must hold before a row of it is imported: times that are dates, text that is text, JSON
objects of finite numbers, sample chunks that inflate to what their rows say (one at a time, bounded). The rows
are read as SQLite returns them, before any type of ours converts them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from tunebench.core import record_schema
from tunebench.core.display import is_time
from tunebench.core.errors import StoreError
from tunebench.store.json_fields import NotAnObject, strict_object
from tunebench.store.samples import decode_chunk


class Damaged(ValueError):
    """A value of the file that is not what its column must hold."""


def _time(value: object, what: str, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if not is_time(value):
        raise Damaged(f"{what} is no date ({value!r:.40})")


def _text(value: object, what: str, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if not isinstance(value, str):
        raise Damaged(f"{what} is {type(value).__name__}, not text")


def _int(value: object, what: str, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**63:
        raise Damaged(f"{what} is no count ({value!r:.40})")


def _json(value: object, what: str, nullable: bool = False) -> None:
    try:
        strict_object(value, nullable)
    except NotAnObject as exc:
        raise Damaged(f"{what}: {exc}") from None


SESSION_CHECKS: list[tuple[str, Callable[..., None], bool]] = [
    ("id", _int, False), ("started_at", _time, False), ("ended_at", _time, True), ("status", _text, False),
    ("target", _text, False), ("transport", _text, False), ("flavor", _text, True), ("version", _text, True),
    ("engine", _text, False), ("workload", _text, False), ("config", _json, False), ("summary", _json, True),
    ("name", _text, True), ("tags", _text, True), ("notes", _text, True),
]


SESSION_COLUMNS = [name for name, _check, _null in SESSION_CHECKS]


def _loaded(text: Any) -> Any:
    return strict_object(text, nullable=True)


def _record(check: Callable[..., None], *args: Any) -> None:
    """One of record_schema's checks (what the readers of a tune, a trial, a verdict ... read), as Damaged."""
    try:
        check(*args)
    except record_schema.Damaged as exc:
        raise Damaged(str(exc)) from None


def check_session(c: Connection, sid: int) -> None:
    """Damaged (saying what, where) unless session `sid` of the file reads back as its columns say."""
    cols = ", ".join(name for name, _check, _null in SESSION_CHECKS)
    row = c.exec_driver_sql(f"SELECT {cols} FROM sessions WHERE id = ?", (sid,)).one()
    for (name, check, nullable), value in zip(SESSION_CHECKS, row, strict=True):
        check(value, name, nullable)
    summary = row[SESSION_COLUMNS.index("summary")]
    _record(record_schema.check_summary, _loaded(summary))
    for idx, started, measure_from, ended, config, summary in c.exec_driver_sql(
            "SELECT idx, started_at, measure_from, ended_at, config, summary FROM steps WHERE session_id = ?",
            (sid,)):
        _int(idx, "a step's number")
        what = f"step {idx + 1}"
        _time(started, f"{what}'s start")
        _time(measure_from, f"{what}'s measure_from")
        _time(ended, f"{what}'s end", nullable=True)
        _json(config, f"{what}'s config")
        _json(summary, f"{what}'s summary", nullable=True)
    for t, kind, label, data in c.exec_driver_sql(
            "SELECT t, kind, label, data FROM events WHERE session_id = ?", (sid,)):
        _time(t, "an event's time")
        _text(kind, "an event's kind")
        _text(label, "an event's label")
        _json(data, f"the data of event {label!r:.40}", nullable=True)
        _record(record_schema.check_event, kind, _loaded(data), f"event {label!r:.40}")
    for name, value in c.exec_driver_sql("SELECT name, value FROM variables WHERE session_id = ?", (sid,)):
        _text(name, "a variable's name")
        _text(value, f"variable {name}", nullable=True)
    names: set[str] = set()
    for series_id, name, kind in c.exec_driver_sql(
            "SELECT id, name, kind FROM series WHERE session_id = ?", (sid,)).all():
        _text(name, "a series' name")
        _text(kind, f"series {name!r:.40}'s kind")
        if name in names:
            raise Damaged(f"series {name!r:.40} twice")
        names.add(name)
        _check_chunks(c, series_id, name)


def _check_chunks(c: Connection, series_id: int, name: str) -> None:
    """Every chunk of a series decoded, one at a time: a bomb is refused at its first inflated byte too many."""
    for t_first, t_last, n, ts, vs, codec in c.exec_driver_sql(
            "SELECT t_first, t_last, n, ts, vs, codec FROM sample_chunks WHERE series_id = ?", (series_id,)):
        what = f"series {name!r:.40}"
        _time(t_first, f"{what}: a sample chunk's first time")
        _time(t_last, f"{what}: a sample chunk's last time")
        _text(codec, f"{what}: a sample chunk's encoding", nullable=True)
        try:
            decode_chunk(codec, n, ts, vs)
        except StoreError as exc:
            raise Damaged(f"{what}: {exc}") from None


def checked_sessions(c: Connection, path: Any) -> list[int]:
    """The IDs of the file's sessions once every one of them is checked (all or none are imported); StoreError
    saying which value of which session is not what it must be."""
    try:
        ids = [row[0] for row in c.exec_driver_sql("SELECT id FROM sessions ORDER BY id")]
        for sid in ids:
            try:
                check_session(c, sid)
            except Damaged as exc:
                raise StoreError(f"cannot import {path}: the file is damaged (session {sid}: {exc})") from None
    except DBAPIError as exc:  # text that is no UTF-8, a page that cannot be read
        detail = str(exc.orig).splitlines()[0][:120] if str(exc.orig) else type(exc.orig).__name__
        raise StoreError(f"cannot import {path}: the file is damaged ({detail})") from None
    if not ids:
        raise StoreError(f"cannot import {path}: it holds no session")
    return ids
