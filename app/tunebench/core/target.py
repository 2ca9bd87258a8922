"""A target (where the server is and who we are) and the connection parameters made from it: plain data,
picklable for worker processes. How its password is found lives in mysql/target.py."""

from __future__ import annotations

import getpass
from dataclasses import asdict, dataclass, field
from urllib.parse import parse_qs, unquote, urlparse

from tunebench.core.errors import ConfigError

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
