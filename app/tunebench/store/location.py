"""Where the session store is: a SQLite file, or a server database named by a SQLAlchemy URL (PostgreSQL,
MySQL/MariaDB) shared by a team. A URL never carries its password: it comes from $TUNEBENCH_DB_PASSWORD or
the system keyring, and is never stored, printed or passed on."""

from __future__ import annotations

import os
import re
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Engine, create_engine
from sqlalchemy.exc import ArgumentError

from tunebench import paths
from tunebench.core.errors import StoreError

PASSWORD_ENV = "TUNEBENCH_DB_PASSWORD"
KEYRING_SERVICE = "tunebench-store"  # user name in the keyring: USER@HOST:PORT (what `store_key` says)
HOST_ENV = "TUNEBENCH_HOSTNAME"  # the machine's name as sessions record it, when the hostname says nothing
# driver -> (what the dialect is called here, default port)
DRIVERS = {"postgresql+psycopg": ("PostgreSQL", 5432), "mysql+mysqlconnector": ("MySQL/MariaDB", 3306)}
SECRET_PARAMS = {"password", "passwd", "pwd", "pass", "sslpassword", "password1", "password2", "password3"}
CONNECT_TIMEOUT = 5  # seconds to reach the server: an unreachable store is said quickly


@dataclass(frozen=True)
class StoreLocation:
    """A parsed --db: `path` for a SQLite file, `url` (without password) for a server database."""

    path: Path | None = None
    url: URL | None = None

    @property
    def is_server(self) -> bool:
        return self.url is not None

    @property
    def text(self) -> str:
        """How it is named in messages and handed to a child process: the file, or the URL without password."""
        if self.url is None:
            return str(self.path)
        return self.url.render_as_string(hide_password=True)


def parse_location(spec: str | Path) -> StoreLocation:
    """A file path, or a URL of a supported driver without a password (StoreError otherwise)."""
    text = str(spec)
    if "://" not in text:
        return StoreLocation(path=Path(text))
    scheme = text.split("://", 1)[0]
    try:
        if not scheme:
            raise ArgumentError(text)
        url = _make_url(text)
    except ArgumentError:
        raise StoreError(f"--db {scheme}://...: not a database URL (e.g. postgresql+psycopg://USER@HOST:PORT/DB)") \
            from None
    # a password given as a query parameter (?password=, ?passwd=, libpq's sslpassword) is one all the same
    if url.password is not None or any(k.lower() in SECRET_PARAMS for k in url.query):
        # said without repeating the URL: it holds the password
        raise StoreError("--db: a store URL with a password is refused (it would end up in shell histories, process "
                         f"lists and logs); give the password in ${PASSWORD_ENV} or the keyring (service "
                         f"{KEYRING_SERVICE}, user USER@HOST:PORT)")
    if url.drivername not in DRIVERS:
        known = ", ".join(f"{d}://USER@HOST:PORT/DB" for d in DRIVERS)
        raise StoreError(f"--db: unknown store dialect {url.drivername!r}; a session store URL is one of: {known} "
                         "(or a SQLite file path)")
    if not url.host or not url.database or not url.username:
        raise StoreError(f"--db {url.render_as_string(hide_password=True)}: a store URL names a user, a host and a "
                         "database (DRIVER://USER@HOST:PORT/DB)")
    return StoreLocation(url=url)


def _make_url(text: str) -> URL:
    from sqlalchemy.engine import make_url

    try:
        return make_url(text)
    except ValueError as exc:  # a port that is no number
        raise ArgumentError(str(exc)) from None


def store_key(url: URL) -> str:
    """The keyring's user name for the store's password."""
    port = url.port or DRIVERS.get(url.drivername, ("", 0))[1]
    return f"{url.username}@{url.host}:{port}"


def store_password(url: URL) -> str | None:
    """$TUNEBENCH_DB_PASSWORD, else the keyring's entry, else None (trust, peer or certificate logins)."""
    env = os.environ.get(PASSWORD_ENV)
    if env is not None:
        return env
    try:
        import keyring

        return keyring.get_password(KEYRING_SERVICE, store_key(url))
    except Exception:  # no usable keyring backend on a headless box is normal, not an error
        return None


def server_engine(url: URL) -> Engine:
    """An engine on the server store: the password joined here only, connections checked before use (a server
    restarted mid-run leaves dead ones in the pool), and a bounded wait to connect."""
    password = store_password(url)
    full = url.set(password=password) if password else url
    args: dict[str, Any]
    if url.drivername.startswith("postgresql"):
        args = {"connect_timeout": CONNECT_TIMEOUT}
    else:
        # the pure-Python protocol: the C extension's error for a refused connection names the password
        # plugin's state, and ours must never say more than the URL does
        args = {"connection_timeout": CONNECT_TIMEOUT, "use_pure": True, "charset": "utf8mb4"}
    return create_engine(full, pool_pre_ping=True, pool_recycle=600, connect_args=args, hide_parameters=True)


MACHINE_FILE = "machine-id"


def machine_id() -> str:
    """This machine's id as Tunebench's rows record it: made once (random) and kept in the data dir, so that two
    machines of the same hostname on one shared store never take each other's sessions or journal rows for
    their own (issue 43 item 13). Not /etc/machine-id: cloned images and containers share that."""
    path = paths.data_dir() / MACHINE_FILE
    for _ in range(3):
        try:
            text = path.read_text().strip()
            if re.fullmatch(r"[0-9a-f]{32}", text):
                return text
            path.unlink()  # damaged: made again (rows written under the old one are then another machine's)
        except FileNotFoundError:
            pass
        tmp = path.with_name(f".{MACHINE_FILE}.{os.getpid()}")
        tmp.write_text(uuid.uuid4().hex + "\n")
        tmp.chmod(0o600)
        try:
            os.link(tmp, path)  # whole or not at all: a reader never sees it half written
        except FileExistsError:
            pass  # another process made it first: that one is read
        finally:
            tmp.unlink()
    raise StoreError(f"cannot keep this machine's id in {path}")


def this_host() -> str:
    """The machine's name as sessions record it ($TUNEBENCH_HOSTNAME, for containers whose hostname is random)."""
    return (os.environ.get(HOST_ENV) or socket.gethostname() or "?")[:255]
