"""The store's sessions lined up as series of one experiment each (core/history.py), named, with their change
points and what else differed between the sessions on either side of each (the fair-comparison diff)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tunebench.core import history
from tunebench.core.confdiff import between_sessions
from tunebench.core.errors import ConfigError
from tunebench.store.repo import Store

NAME_PREFIX = "series:"  # the store's key/value rows that name a series: series:<key> -> name
MAX_NAME = 64


@dataclass
class Series:
    key: str
    identity: dict[str, Any]
    name: str | None = None
    sessions: list[dict[str, Any]] = field(default_factory=list)  # id, started_at, version, host, status
    points: list[history.Point] = field(default_factory=list)
    changes: list[history.ChangePoint] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.name or self.key

    def describe(self) -> str:
        return history.describe(self.identity)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "experiment": self.describe(), "identity": self.identity,
                "sessions": self.sessions,
                "points": [{"session": p.session_id, "started_at": p.started_at, "load": p.load, "metric": p.metric,
                            "value": p.value, "low": p.low, "high": p.high, "version": p.version,
                            "busy": p.busy, "busy_seconds": p.busy_seconds} for p in self.points],
                "change_points": [c.as_dict() for c in self.changes]}


def _line_of(session: Mapping[str, Any]) -> str | None:
    """A session's line: its tag `line:NAME` (a series across server versions), if any."""
    for tag in (session.get("tags") or "").replace(",", " ").split():
        if tag.startswith("line:") and len(tag) > 5:
            return tag[5:]
    return None


def collect(store: Store, statuses: tuple[str, ...] = ("completed",),
            progress: Callable[[int, int], None] | None = None) -> list[Series]:
    """Every series of the store's sessions (those that ended as `statuses`), most sessions first; each with its
    points in session order and its change points."""
    names = {k: str(v) for k, v in store.meta_items(NAME_PREFIX).items()}
    listed = [s for s in store.list_sessions() if s.get("status") in statuses]
    by_key: dict[str, Series] = {}
    full: dict[int, dict[str, Any]] = {}
    for i, row in enumerate(sorted(listed, key=lambda s: (s.get("started_at") or 0.0, s["id"]))):
        if progress is not None:
            progress(i, len(listed))
        session = store.get_session(int(row["id"]), events=False)
        ident = history.identity(session, _line_of(session))
        key = history.series_key(ident)
        series = by_key.setdefault(key, Series(key, ident, names.get(key)))
        series.sessions.append({k: session.get(k) for k in ("id", "started_at", "version", "host", "status")})
        series.points += history.points(session)
        full[int(session["id"])] = session
    for series in by_key.values():
        series.changes = history.series_changes(series.points)
        for cp in series.changes:
            cp.differed = differed(full[cp.before], full[cp.after])
    return sorted(by_key.values(), key=lambda s: (-len(s.sessions), s.key))


def differed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What else differed between two sessions of a series: server version, then the servers' configurations."""
    out = []
    if before.get("version") != after.get("version"):
        out.append(f"server version: {before.get('version')} → {after.get('version')}")
    out += between_sessions(before, after).lines()
    return out


def find(series: list[Series], which: str) -> Series:
    """A series by its name or key (a key's unique prefix of at least 4 characters)."""
    named = [s for s in series if s.name == which]
    if named:
        return named[0]
    keyed = [s for s in series if len(which) >= 4 and s.key.startswith(which)]
    if len(keyed) == 1:
        return keyed[0]
    if len(keyed) > 1:
        raise ConfigError(f"series {which!r} is ambiguous: " + ", ".join(s.key for s in keyed))
    raise ConfigError(f"no series {which!r} (tunebench history list shows them)")


def name_series(store: Store, series: Series, name: str) -> None:
    """Name a series (an empty name takes the name off); a name is one series'."""
    name = name.strip()
    if len(name) > MAX_NAME or any(c.isspace() for c in name) or name.startswith("-"):
        raise ConfigError(f"a series name is 1-{MAX_NAME} characters without spaces, not starting with '-'")
    if name:
        taken = {v: k for k, v in store.meta_items(NAME_PREFIX).items()}
        if taken.get(name) not in (None, series.key):
            raise ConfigError(f"the name {name!r} is series {taken[name]}'s")
    store.meta_set(NAME_PREFIX + series.key, name or None)
    series.name = name or None
