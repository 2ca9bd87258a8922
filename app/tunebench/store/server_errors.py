"""A server store's failures in the user's words: gone (unreachable, restarted, connection lost: a run keeps its
samples in memory meanwhile), or refused (the login, the database, a privilege: one line, nothing to wait for)."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError

from tunebench.core.errors import StoreError
from tunebench.store.location import KEYRING_SERVICE, PASSWORD_ENV


class StoreUnavailable(StoreError):
    """The store's server cannot be reached now (down, restarting, network): a run keeps what it would write."""


# MySQL client errors of a connection that is not there: can't connect (socket, TCP), unknown host, server gone,
# lost during a query, lost during the handshake, shutdown in progress, connection killed, client disconnected
_MYSQL_GONE = {2002, 2003, 2005, 2006, 2013, 2055, 1053, 1927, 4031}
_MYSQL_REFUSED = {1044, 1045, 1049, 1698, 1251, 2059, 1129, 1130}
# PostgreSQL: a connection exception (08xxx), the server shutting down or not ready (57P01-57P03)
_PG_GONE_STATES = ("08", "57P01", "57P02", "57P03")
_PG_REFUSED_WORDS = ("authentication failed", "no password supplied", "does not exist", "pg_hba.conf",
                     "permission denied", "password is required", "role ")


def server_failure(where: str, exc: DBAPIError) -> StoreError:
    """The StoreError (or StoreUnavailable) a DBAPI error of a server store means."""
    orig = exc.orig
    first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
    errno = getattr(orig, "errno", None)
    state = getattr(orig, "sqlstate", None)
    postgres = type(orig).__module__.startswith("psycopg")
    if errno in _MYSQL_REFUSED or (postgres and state in ("28000", "28P01", "3D000")) or (
            postgres and state is None and any(w in first for w in _PG_REFUSED_WORDS)):
        return StoreError(f"session store {where}: the server refused the login ({first}); the password comes from "
                          f"${PASSWORD_ENV} or the keyring (service {KEYRING_SERVICE}, user USER@HOST:PORT)")
    gone = exc.connection_invalidated or errno in _MYSQL_GONE or (
        postgres and (state is None or str(state).startswith(_PG_GONE_STATES))
        and type(orig).__name__ in ("OperationalError", "InterfaceError", "AdminShutdown", "CannotConnectNow",
                                    "CrashShutdown"))
    if gone:
        return StoreUnavailable(f"session store {where} is unreachable ({first})")
    return StoreError(f"session store {where}: {first}")
