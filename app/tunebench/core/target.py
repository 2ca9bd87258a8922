"""A target (where the server is and who we are) and the connection parameters made from it: plain data,
picklable for worker processes. How its password is found lives in mysql/target.py."""

from __future__ import annotations

import getpass
from dataclasses import asdict, dataclass, field
from urllib.parse import parse_qs, unquote, urlparse

from tunebench.core.errors import ConfigError

TRANSPORTS = ("socket", "tcp", "tcp+tls")  # tcp+tls: TCP with TLS required (the sweep axis' cost of TLS)
# As the mysql client names them. A UNIX socket is a secure transport of its own: no TLS there (as the client).
SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
SSL_RANK = {m: i for i, m in enumerate(SSL_MODES)}


def check_ssl_mode(mode: str | None) -> str | None:
    if mode is None:
        return None
    upper = str(mode).strip().upper().replace("-", "_")
    if upper not in SSL_MODES:
        raise ConfigError(f"unknown ssl-mode {mode!r}; use one of {', '.join(SSL_MODES)}")
    return upper


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
    # TLS as the mysql client's options name it; ssl_mode None: PREFERRED, DISABLED for Tunebench's sandboxes
    ssl_mode: str | None = None
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    # caching_sha2_password without TLS: take the server's RSA public key (the mysql client's option of that name)
    get_server_public_key: bool = False

    @property
    def is_sandbox(self) -> bool:
        return self.name == "sandbox" or self.name.startswith("sandbox:")

    def effective_ssl_mode(self, transport: str | None = None) -> str:
        """What TLS a TCP connection to this target uses: its mode, at least REQUIRED for tcp+tls."""
        mode = self.ssl_mode or ("DISABLED" if self.is_sandbox else "PREFERRED")
        if transport == "tcp+tls" and SSL_RANK[mode] < SSL_RANK["REQUIRED"]:
            mode = "REQUIRED"
        return mode

    def check_tls(self) -> None:
        """The TLS settings make sense together (files are checked when a connection is made)."""
        mode = check_ssl_mode(self.ssl_mode)
        if mode in ("VERIFY_CA", "VERIFY_IDENTITY") and not self.ssl_ca:
            raise ConfigError(f"target {self.name}: ssl-mode {mode} needs --ssl-ca (the CA that signed the server's "
                              "certificate)")
        if bool(self.ssl_cert) != bool(self.ssl_key):
            raise ConfigError(f"target {self.name}: --ssl-cert and --ssl-key go together")
        if mode == "DISABLED" and (self.ssl_ca or self.ssl_cert):
            raise ConfigError(f"target {self.name}: ssl-mode DISABLED with certificates: leave them out, or choose "
                              "a mode that uses TLS")

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
        if transport in ("tcp", "tcp+tls") and not (self.host and self.port):
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
    ssl_mode: str = "DISABLED"  # resolved (core.target.SSL_MODES); always DISABLED on a UNIX socket
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    get_server_public_key: bool = False

    @property
    def transport(self) -> str:
        return "socket" if self.socket else "tcp"

    @property
    def tls(self) -> bool:
        return self.ssl_mode != "DISABLED"

    @property
    def tls_required(self) -> bool:
        return SSL_RANK[self.ssl_mode] >= SSL_RANK["REQUIRED"]

    def connector_tls(self) -> dict[str, object]:
        """mysql-connector-python's (and its C extension's) options for this mode. The connector falls back to
        a plain connection when the server has no TLS: REQUIRED and up are checked after connecting
        (mysql/connect.check_tls_in_use)."""
        if not self.tls:
            return {"ssl_disabled": True}
        out: dict[str, object] = {"ssl_disabled": False}
        if self.ssl_ca:
            out["ssl_ca"] = self.ssl_ca
        if self.ssl_cert:
            out["ssl_cert"], out["ssl_key"] = self.ssl_cert, self.ssl_key
        if self.ssl_mode in ("VERIFY_CA", "VERIFY_IDENTITY"):
            out["ssl_verify_cert"] = True
        if self.ssl_mode == "VERIFY_IDENTITY":
            out["ssl_verify_identity"] = True
        return out


def parse_target_url(url: str) -> Target:
    """`mysql://user@host:port/schema` or `mysql://user@localhost/schema?socket=/path/to/sock`."""
    parsed = urlparse(url)
    if parsed.scheme not in ("mysql", "mariadb"):
        raise ConfigError(f"target URL must start with mysql://, got {url!r}")
    if parsed.password:
        raise ConfigError("do not put passwords in target URLs; use the keyring, ~/.my.cnf or $MYSQL_PWD")
    query = parse_qs(parsed.query)
    unknown = set(query) - {"socket", "ssl-mode", "ssl-ca", "ssl-cert", "ssl-key", "get-server-public-key"}
    if unknown:
        raise ConfigError(f"unknown option {sorted(unknown)[0]!r} in target URL; known: socket, ssl-mode, ssl-ca, "
                          "ssl-cert, ssl-key, get-server-public-key")
    public_key = query.get("get-server-public-key", ["0"])[0].lower()
    if public_key not in ("0", "1", "true", "false", "on", "off"):
        raise ConfigError(f"get-server-public-key={public_key!r} in target URL: use 1 or 0")
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
    target = Target(
        name=url,
        socket=sock,
        host=host if (host or not sock) else None,
        port=(port or 3306) if host else None,
        user=unquote(parsed.username or getpass.getuser()),
        schema=parsed.path.lstrip("/") or None,
        ssl_mode=check_ssl_mode(query.get("ssl-mode", [None])[0]),
        ssl_ca=query.get("ssl-ca", [None])[0],
        ssl_cert=query.get("ssl-cert", [None])[0],
        ssl_key=query.get("ssl-key", [None])[0],
        get_server_public_key=public_key in ("1", "true", "on"),
    )
    target.check_tls()
    return target
