"""Opening administrative connections, mapping driver errors to one clear line, and introspection."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mysql.connector
from mysql.connector import errorcode

from tunebench.core.errors import TargetError
from tunebench.core.target import ConnParams, Target
from tunebench.mysql.rsa_auth import AUTH_NEEDS_SECURE, rsa_connection
from tunebench.mysql.target import conn_params

SECURE_TRANSPORT_REQUIRED = 3159  # ER_SECURE_TRANSPORT_REQUIRED (require_secure_transport=ON)
EXPIRED = (1820, 1862)  # ER_MUST_CHANGE_PASSWORD, ER_MUST_CHANGE_PASSWORD_LOGIN


def describe_error(exc: mysql.connector.Error, where: str, user: str) -> str:
    errno = getattr(exc, "errno", None)
    msg = getattr(exc, "msg", None) or str(exc)
    if errno == 2026 or "SSL connection error" in msg:  # CR_SSL_CONNECTION_ERROR
        why = msg.split("SSL connection error:", 1)[-1].strip()
        return (f"TLS with {where} failed ({why}): check --ssl-ca (the CA that signed the server's certificate) "
                "and --ssl-mode")
    if errno == SECURE_TRANSPORT_REQUIRED:
        return (f"{where} accepts only secure connections (require_secure_transport=ON): use --ssl-mode "
                "PREFERRED or stronger, or its UNIX socket")
    if errno == AUTH_NEEDS_SECURE or "requires secure connection" in msg:
        return (f"the account {user!r} at {where} authenticates with caching_sha2_password, which needs TLS over "
                "TCP: use --ssl-mode PREFERRED (the default for a target) or stronger, the UNIX socket, or (without "
                "TLS) --get-server-public-key")
    if "client_ed25519" in msg:
        return (f"the account {user!r} at {where} authenticates with MariaDB's ed25519 plugin, which the driver "
                "(mysql-connector-python) cannot load: give the benchmark account mysql_native_password or "
                "caching_sha2_password")
    if errno == 1698:  # ER_ACCESS_DENIED_NO_PASSWORD_ERROR: unix_socket/auth_socket
        return (f"access denied for user {user!r} at {where}: the account authenticates by its UNIX user "
                "(unix_socket), so only the system user of that name may log in this way")
    if errno in EXPIRED:
        return (f"the password of {user!r} at {where} has expired: change it with the mysql client "
                "(ALTER USER CURRENT_USER() IDENTIFIED BY '…'), then run again")
    if errno == errorcode.ER_ACCESS_DENIED_ERROR:
        return f"access denied for user {user!r} at {where} (wrong password?)"
    if errno == errorcode.CR_CONNECTION_ERROR:
        return f"cannot connect to UNIX socket {where}: no server listening there (is it running?)"
    if errno == errorcode.CR_CONN_HOST_ERROR:
        return f"cannot connect to {where}: host unreachable or connection refused"
    if errno == errorcode.CR_UNKNOWN_HOST:
        return f"cannot connect to {where}: unknown host"
    if errno == errorcode.ER_BAD_DB_ERROR:
        return f"unknown database at {where}: {exc.msg}"
    if errno in (errorcode.CR_SERVER_LOST, errorcode.CR_SERVER_GONE_ERROR):
        return f"lost the connection to {where}"
    return f"{where}: {msg}"


def open_connection(params: ConnParams, name: str = "target", autocommit: bool = True,
                    timeout: int = 10, read_timeout: int | None = None) -> Any:
    """A mysql.connector connection (C extension when it loads). Environment failures -> TargetError.
    `read_timeout` bounds every reply (a frozen server then gives error 2013 instead of a hang)."""
    kwargs: dict[str, Any] = {
        "user": params.user,
        "password": params.password,
        "database": params.database,
        "autocommit": autocommit,
        "connection_timeout": timeout,
        "use_pure": not mysql.connector.HAVE_CEXT,
        **params.connector_tls(),
    }
    if read_timeout is not None:
        kwargs["read_timeout"] = kwargs["write_timeout"] = read_timeout
    if params.socket:
        kwargs["unix_socket"] = params.socket
        where = params.socket
    else:
        kwargs["host"], kwargs["port"] = params.host, params.port
        where = f"{params.host}:{params.port}"
    try:
        use_key = params.get_server_public_key and not params.socket
        if use_key and kwargs["use_pure"]:
            conn = rsa_connection(**kwargs)  # the pure connector would send the password in clear (1045)
        else:
            try:
                conn = mysql.connector.connect(**kwargs)
            except mysql.connector.Error as exc:
                if not (exc.errno == AUTH_NEEDS_SECURE and use_key):
                    raise
                conn = rsa_connection(**kwargs)  # its full authentication lets the C extension's fast path in
    except mysql.connector.Error as exc:
        raise TargetError(f"{name}: {describe_error(exc, where, params.user)}", exc.errno) from None
    try:  # an expired password logs in (MariaDB's sandbox mode) and fails at the first statement: say it here
        conn.cmd_query("DO 1")  # not a SELECT: the statement mix checks count Com_select
    except mysql.connector.Error as exc:
        conn.close()
        raise TargetError(f"{name}: {describe_error(exc, where, params.user)}", exc.errno) from None
    if params.tls_required:
        check_tls_in_use(conn, params, f"{name}: {where}")
    return conn


def tls_state(conn: Any) -> dict[str, str]:
    """The connection's TLS version and cipher as the server sees them ('' when it is plain)."""
    cur = conn.cursor()
    try:
        cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')")
        return {str(k).lower().removeprefix("ssl_"): ("" if v is None else str(v)) for k, v in cur.fetchall()}
    finally:
        cur.close()


def connection_tls(conn: Any, params: ConnParams) -> dict[str, Any]:
    """What a run's connections use, for the session: the mode asked, and the TLS version and cipher the server
    reports on this connection (a socket: none, it is secure of its own)."""
    if params.socket:
        return {"mode": "socket", "tls": False, "version": "", "cipher": ""}
    state = tls_state(conn)
    out: dict[str, Any] = {"mode": params.ssl_mode, "tls": bool(state.get("cipher")),
                           "version": state.get("version", ""), "cipher": state.get("cipher", "")}
    if params.ssl_mode == "PREFERRED" and not out["tls"]:
        out["note"] = "the server offers no TLS: this run's connections are plain TCP (ssl-mode PREFERRED)"
    elif params.ssl_mode == "DISABLED":
        out["note"] = None
    return out


def check_tls_in_use(conn: Any, params: ConnParams, where: str) -> None:
    """The connector falls back to a plain connection when the server offers no TLS: a mode that requires it
    refuses that here (before any statement of the run)."""
    state = tls_state(conn)
    if not state.get("cipher"):
        conn.close()
        raise TargetError(f"{where}: ssl-mode {params.ssl_mode} but the server offers no TLS (have_ssl DISABLED or "
                          "no certificate): configure TLS on the server, or choose --ssl-mode PREFERRED/DISABLED")


def admin_connect(target: Target, password: str | None = None, transport: str | None = None,
                  database: str | None = None) -> Any:
    return open_connection(conn_params(target, transport, database, password), target.name)


def query_all(conn: Any, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    cur = conn.cursor()
    try:
        cur.execute(sql, args)
        return list(cur.fetchall()) if cur.with_rows else []
    finally:
        cur.close()


def query_sets(conn: Any, statements: Sequence[tuple[str, tuple[Any, ...]]]) -> list[list[tuple[Any, ...]]]:
    """Several statements in one round trip (a multi-statement): each one's rows, in order ([] for one without)."""
    sqls: list[str] = []
    args: list[Any] = []
    many = any(a for _, a in statements)
    for sql, a in statements:
        sqls.append(sql if a or not many else sql.replace("%", "%%"))  # the marks of one string: escape the others'
        args.extend(a)
    cur = conn.cursor()
    try:
        cur.execute("; ".join(sqls), tuple(args))
        out = []
        while True:
            out.append(list(cur.fetchall()) if cur.with_rows else [])
            if not _next_set(cur):
                break
        if len(out) != len(statements):
            raise mysql.connector.InterfaceError(msg=f"{len(out)} results to {len(statements)} statements")
        return out
    finally:
        cur.close()


def _next_set(cur: Any) -> bool:
    """cur.nextset(), its failures as the connector's errors: the C extension's cursor lets the raw
    _mysql_connector.MySQLInterfaceError through (a server killed between two result sets), which is no
    mysql.connector.Error, and a probe's thread died of it with a traceback on the terminal."""
    try:
        return bool(cur.nextset())
    except mysql.connector.Error:
        raise
    except Exception as exc:
        if type(exc).__name__ != "MySQLInterfaceError":
            raise
        raise mysql.connector.errors.OperationalError(msg=str(exc)) from None


def flavor_of(version: str, version_comment: str) -> str:
    if "MariaDB" in version or "mariadb" in version_comment.lower():
        return "mariadb"
    if "percona" in version_comment.lower():
        return "percona"
    return "mysql"


@dataclass(frozen=True, slots=True)
class ServerInfo:
    flavor: str
    version: str
    version_full: str
    version_comment: str
    performance_schema: bool
    variables: dict[str, str] = field(repr=False)

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", self.version)[:3])

    def summary(self) -> dict[str, object]:
        return {
            "flavor": self.flavor,
            "version": self.version,
            "version_comment": self.version_comment,
            "performance_schema": self.performance_schema,
        }


def text_of(value: Any) -> str:
    """A column value as text (the C extension returns bytes for some SHOW/information_schema columns)."""
    if isinstance(value, (bytes, bytearray)):
        return value.decode(errors="replace")
    return "" if value is None else str(value)


def num_of(value: Any) -> float | None:
    """A column value as a number, or None when it is not one."""
    try:
        return float(text_of(value))
    except ValueError:
        return None



def introspect(conn: Any) -> ServerInfo:
    variables = {text_of(k).lower(): text_of(v) for k, v in query_all(conn, "SHOW GLOBAL VARIABLES")}
    full = variables.get("version", "")
    comment = variables.get("version_comment", "")
    m = re.match(r"(\d+\.\d+\.\d+)", full)
    return ServerInfo(
        flavor=flavor_of(full, comment),
        version=m.group(1) if m else full,
        version_full=full,
        version_comment=comment,
        performance_schema=variables.get("performance_schema", "OFF").upper() in ("ON", "1"),
        variables=variables,
    )


def global_status(conn: Any, names: tuple[str, ...] | None = None) -> dict[str, int]:
    rows = query_all(conn, "SHOW GLOBAL STATUS")
    out: dict[str, int] = {}
    for k, v in rows:
        key = text_of(k)
        if names and key not in names:
            continue
        try:
            out[key] = int(text_of(v))
        except ValueError:
            continue
    return out
