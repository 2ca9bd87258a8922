"""Targets (where the server is and who we are) and where their passwords come from.

Passwords are resolved at connect time from a client option file, $MYSQL_PWD, the keyring,
~/.my.cnf [client], or a prompt; they are never stored in SQLite or printed.
"""

from __future__ import annotations

import configparser
import contextlib
import getpass
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from tunebench.core.errors import ConfigError

KEYRING_SERVICE = "tunebench"
TRANSPORTS = ("socket", "tcp")


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    socket: str | None = None
    host: str | None = None
    port: int | None = None
    user: str = "root"
    schema: str | None = None
    # A my.cnf-style file whose [client] section holds the password (the sandbox's client.cnf).
    password_file: str | None = None
    # ssh://user@host[:port] of the machine the server runs on: its CPU, disks and mysqld over SSH.
    db_host: str | None = None
    ssh_key: str | None = None  # a private key file for db_host (else the agent, ~/.ssh/config, ~/.ssh/id_*)
    # Static knobs on db_host: the option file Tunebench writes its [mysqld] overlay to, and the command that
    # restarts the server so it reads it (e.g. `sudo systemctl restart mariadb`).
    option_file: str | None = None
    restart_command: str | None = None

    def address(self, transport: str | None = None) -> str:
        if (transport or self.default_transport()) == "socket":
            return f"{self.socket}"
        return f"{self.host}:{self.port}"

    def default_transport(self) -> str:
        return "socket" if self.socket else "tcp"

    def check_transport(self, transport: str) -> None:
        if transport not in TRANSPORTS:
            raise ConfigError(f"unknown transport {transport!r}; use socket or tcp")
        if transport == "socket" and not self.socket:
            raise ConfigError(f"target {self.name} has no UNIX socket; use --transport tcp")
        if transport == "tcp" and not (self.host and self.port):
            raise ConfigError(f"target {self.name} has no host:port; use --transport socket")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ConnParams:
    """Everything a worker process needs to open a connection. Picklable; the password never reprs."""

    user: str
    password: str = field(repr=False)
    socket: str | None = None
    host: str | None = None
    port: int | None = None
    database: str | None = None

    @property
    def transport(self) -> str:
        return "socket" if self.socket else "tcp"


def parse_target_url(url: str) -> Target:
    """`mysql://user@host:port/schema` or `mysql://user@localhost/schema?socket=/path/to/sock`."""
    parsed = urlparse(url)
    if parsed.scheme not in ("mysql", "mariadb"):
        raise ConfigError(f"target URL must start with mysql://, got {url!r}")
    if parsed.password:
        raise ConfigError("do not put passwords in target URLs; use the keyring, ~/.my.cnf or $MYSQL_PWD")
    query = parse_qs(parsed.query)
    sock = query.get("socket", [None])[0]
    try:
        port = parsed.port
    except ValueError:
        raise ConfigError(f"invalid port in target URL {url!r}") from None
    if port == 0:
        raise ConfigError(f"invalid port in target URL {url!r}: 1-65535")
    if not parsed.hostname and not sock:
        raise ConfigError(f"target URL {url!r} names no host (mysql://USER@HOST[:PORT]) or socket (?socket=PATH)")
    host = parsed.hostname
    return Target(
        name=url,
        socket=sock,
        host=host if (host or not sock) else None,
        port=(port or 3306) if host else None,
        user=unquote(parsed.username or getpass.getuser()),
        schema=parsed.path.lstrip("/") or None,
    )


def read_option_file_password(path: Path, section: str = "client") -> str | None:
    parser = configparser.ConfigParser(allow_no_value=True, strict=False, interpolation=None)
    try:
        lines = [ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("!")]
        parser.read_string("\n".join(lines))
    except (OSError, configparser.Error):
        return None
    if not parser.has_section(section):
        return None
    value = parser.get(section, "password", fallback=None)
    if value is None:
        return None
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value


def keyring_backend_name() -> str:
    try:
        import keyring

        backend = keyring.get_keyring()
    except Exception as exc:  # keyring raises many kinds when no backend works
        return f"unavailable ({exc.__class__.__name__})"
    return f"{backend.__class__.__module__}.{backend.__class__.__name__}"


def _keyring_password(target: Target) -> str | None:
    try:
        import keyring

        return keyring.get_password(KEYRING_SERVICE, f"{target.user}@{target.address()}")
    except Exception:  # no usable backend on a headless box is normal, not an error
        return None


# Passwords typed into the GUI for this process only: never written anywhere.
_SESSION_PASSWORDS: dict[str, str] = {}


def remember_password(target: Target, password: str) -> None:
    _SESSION_PASSWORDS[f"{target.user}@{target.address()}"] = password


def save_to_keyring(target: Target, password: str) -> str | None:
    """Store the password in the system keyring; None when done, else why not (no usable backend...)."""
    try:
        import keyring
        from keyring.errors import KeyringError

        keyring.set_password(KEYRING_SERVICE, f"{target.user}@{target.address()}", password)
    except (ImportError, KeyringError, RuntimeError) as exc:
        return f"the keyring could not store it ({exc.__class__.__name__}: {exc})"
    return None


def typed_password(target: Target) -> str | None:
    return _SESSION_PASSWORDS.get(f"{target.user}@{target.address()}")


def resolve_password(target: Target, prompt: bool = True) -> str:
    typed = _SESSION_PASSWORDS.get(f"{target.user}@{target.address()}")
    if typed is not None:
        return typed
    if target.password_file:
        pw = read_option_file_password(Path(target.password_file))
        if pw is not None:
            return pw
    env = os.environ.get("MYSQL_PWD")
    if env is not None:
        return env
    pw = _keyring_password(target)
    if pw is not None:
        return pw
    pw = read_option_file_password(Path.home() / ".my.cnf")
    if pw is not None:
        return pw
    if prompt and sys.stdin is not None and sys.stdin.isatty():
        with contextlib.suppress(EOFError, KeyboardInterrupt):
            return getpass.getpass(f"Password for {target.user}@{target.address()}: ")
    return ""


def conn_params(target: Target, transport: str | None = None, database: str | None = None,
                password: str | None = None) -> ConnParams:
    transport = transport or target.default_transport()
    target.check_transport(transport)
    pw = resolve_password(target) if password is None else password
    if transport == "socket":
        return ConnParams(user=target.user, password=pw, socket=target.socket, database=database)
    return ConnParams(user=target.user, password=pw, host=target.host, port=target.port, database=database)
