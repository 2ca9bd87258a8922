"""The load engine's connection: raw C-extension prepared statements, or pure Python when it is missing.

The raw `_mysql_connector` path skips the DB-API layer: a point select costs ~20 us of client CPU
instead of ~60 us through cursors, which is what keeps the builtin engine close to sysbench.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

import mysql.connector

from tunebench.core.target import ConnParams
from tunebench.mysql.rsa_auth import AUTH_NEEDS_SECURE, rsa_connection

try:
    import _mysql_connector

    HAVE_RAW = bool(mysql.connector.HAVE_CEXT)
except ImportError:  # pragma: no cover - depends on the wheel
    _mysql_connector = None
    HAVE_RAW = False

# sysbench --mysql-ignore-errors default: deadlock, record changed, lock wait timeout -> retry the event.
RETRY_ERRNOS = frozenset({1213, 1020, 1205})
# oltp_common.lua's before_restart_event(): connection lost -> reconnect and re-prepare.
RECONNECT_ERRNOS = frozenset({2006, 2013, 2055, 2011})
# Prepared-statement protocol not supported for this statement: sysbench falls back to a plain query.
ER_UNSUPPORTED_PS = 1295
_NO_ATTRS: list[Any] = []
# libmysqlclient's mysql_init() runs mysql_library_init() on first use, and the extension calls it with
# the GIL released: two threads opening the first connections of a process at once could both go in,
# one of them using the half-initialised library (a SIGSEGV at address 0, or "Authentication plugin
# cannot be loaded: not initialized"). Opening is serialised per process; queries are not.
_CONNECT_LOCK = threading.Lock()
_library_ready = threading.Event()


class DriverError(Exception):
    def __init__(self, errno: int | None, msg: str):
        super().__init__(f"{errno}: {msg}")
        self.errno = errno
        self.msg = msg


def driver_mode() -> str:
    return "C extension" if HAVE_RAW else "pure Python"


def _plugin_dir() -> str:
    base = os.path.dirname(os.path.abspath(_mysql_connector.__file__)) if _mysql_connector else ""
    bundled = os.path.join(base, "mysql", "vendor", "plugin")
    if os.path.isdir(bundled):
        return bundled
    return "/usr/lib/mysql/plugin"


def init_client_library() -> None:
    """Initialise the C client library of this process once; call it on the main thread before any
    connection thread starts (mysql_library_init is not thread-safe)."""
    if _library_ready.is_set() or not HAVE_RAW:
        return
    with _CONNECT_LOCK:
        if _library_ready.is_set():
            return
        try:
            # The extension carries libmysqlclient and exports mysql_server_init (mysql_library_init).
            init = ctypes.CDLL(_mysql_connector.__file__).mysql_server_init
            init.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
            init.restype = ctypes.c_int
            if init(0, None, None) != 0:
                raise DriverError(None, "the MySQL client library did not initialise")
        except (OSError, AttributeError):
            pass  # a build without the symbol: the connect lock alone keeps the first init single-file
        _library_ready.set()


def _needs_public_key(params: ConnParams, errno: int | None) -> bool:
    """caching_sha2_password's full authentication over plain TCP, and the target allows the RSA key."""
    return errno == AUTH_NEEDS_SECURE and params.get_server_public_key and not params.socket


def _fill_sha2_cache(params: ConnParams) -> None:
    """One full authentication through the server's RSA key fills its caching_sha2 cache: the C extension's
    connection then logs in through the fast path (it cannot ask for the key itself)."""
    rsa_connection(user=params.user, password=params.password, host=params.host, port=params.port,
                   connection_timeout=10, ssl_disabled=True).close()


class RawSession:
    """One connection through the C extension; statements are MySQLPrepStmt handles."""

    def __init__(self, params: ConnParams):
        self._m = _mysql_connector.MySQL(buffered=False, raw=True, plugin_dir=_plugin_dir(),
                                         connection_timeout=10)
        kwargs: dict[str, Any] = {"user": params.user, "password": params.password,
                                  "database": params.database, **params.connector_tls()}
        if params.socket:
            kwargs["unix_socket"] = params.socket
        else:
            kwargs["host"], kwargs["port"] = params.host, params.port
        try:
            try:
                with _CONNECT_LOCK:
                    self._m.connect(**kwargs)
            except _mysql_connector.MySQLInterfaceError as exc:
                if not _needs_public_key(params, getattr(exc, "errno", None)):
                    raise
                _fill_sha2_cache(params)
                with _CONNECT_LOCK:
                    self._m.connect(**kwargs)
            self._m.autocommit(True)
        except _mysql_connector.MySQLInterfaceError as exc:
            raise DriverError(getattr(exc, "errno", None), getattr(exc, "msg", str(exc))) from None
        if params.tls_required and not any(v for _k, v in self.query_rows(b"SHOW SESSION STATUS LIKE 'Ssl_cipher'")):
            self.close()
            raise DriverError(2026, f"ssl-mode {params.ssl_mode} but the server offers no TLS")

    def prepare(self, sql: str) -> Any:
        try:
            return self._m.stmt_prepare(sql.encode())
        except _mysql_connector.MySQLInterfaceError as exc:
            if getattr(exc, "errno", None) == ER_UNSUPPORTED_PS:
                return _TextStatement(self, sql)
            raise DriverError(getattr(exc, "errno", None), getattr(exc, "msg", str(exc))) from None

    def execute(self, stmt: Any, *args: Any) -> None:
        try:
            stmt.stmt_execute(*args, query_attrs=_NO_ATTRS)
            if stmt.have_result_set:
                fetch = stmt.fetch_row
                while fetch() is not None:
                    pass
                stmt.free_result()
        except _mysql_connector.MySQLInterfaceError as exc:
            raise DriverError(getattr(exc, "errno", None), getattr(exc, "msg", str(exc))) from None

    def query_rows(self, sql: bytes) -> list[tuple[Any, ...]]:
        """A plain query's rows, every value as bytes (or None)."""
        m = self._m
        try:
            m.query(sql)
            out = []
            if m.have_result_set:
                while (row := m.fetch_row()) is not None:
                    out.append(row)
                m.free_result()
            return out
        except _mysql_connector.MySQLInterfaceError as exc:
            raise DriverError(getattr(exc, "errno", None), getattr(exc, "msg", str(exc))) from None

    def query(self, sql: bytes) -> None:
        m = self._m
        try:
            m.query(sql)
            if m.have_result_set:
                while m.fetch_row() is not None:
                    pass
                m.free_result()
        except _mysql_connector.MySQLInterfaceError as exc:
            raise DriverError(getattr(exc, "errno", None), getattr(exc, "msg", str(exc))) from None

    def close(self) -> None:
        try:
            self._m.close()
        except Exception:  # closing a dead connection may fail; nothing to do about it
            pass


class _TextStatement:
    """A statement the server won't prepare, executed as a plain query (what sysbench does)."""

    def __init__(self, session: RawSession, sql: str):
        self.session, self.sql = session, sql.encode()
        self.have_result_set = False

    def stmt_execute(self, *args: Any, query_attrs: Any = None) -> None:
        self.session.query(self.sql)
        self.have_result_set = False


class PureSession:
    """Fallback through mysql.connector's pure-Python prepared cursors (slower; doctor says so)."""

    def __init__(self, params: ConnParams):
        kwargs: dict[str, Any] = {"user": params.user, "password": params.password,
                                  "database": params.database, "use_pure": True, "autocommit": True,
                                  "connection_timeout": 10, **params.connector_tls()}
        if params.socket:
            kwargs["unix_socket"] = params.socket
        else:
            kwargs["host"], kwargs["port"] = params.host, params.port
        try:
            # the pure-Python connector sends the password in clear where the key is needed (the server says
            # 1045): with the key allowed, this connection makes the exchange itself
            use_key = params.get_server_public_key and not params.socket
            self._c = rsa_connection(**kwargs) if use_key else mysql.connector.connect(**kwargs)
        except mysql.connector.Error as exc:
            raise DriverError(exc.errno, exc.msg or str(exc)) from None
        if params.tls_required and not any(v for _k, v in self.query_rows(b"SHOW SESSION STATUS LIKE 'Ssl_cipher'")):
            self.close()
            raise DriverError(2026, f"ssl-mode {params.ssl_mode} but the server offers no TLS")

    def prepare(self, sql: str) -> Any:
        cur = self._c.cursor(prepared=True)
        return (cur, sql.replace("?", "%s"))

    def execute(self, stmt: Any, *args: Any) -> None:
        cur, sql = stmt
        try:
            cur.execute(sql, args)
            if cur.with_rows:
                cur.fetchall()
        except mysql.connector.Error as exc:
            raise DriverError(exc.errno, exc.msg or str(exc)) from None

    def query_rows(self, sql: bytes) -> list[tuple[Any, ...]]:
        cur: Any = self._c.cursor()
        try:
            cur.execute(sql.decode())
            return list(cur.fetchall()) if cur.with_rows else []
        except mysql.connector.Error as exc:
            raise DriverError(exc.errno, exc.msg or str(exc)) from None
        finally:
            cur.close()

    def query(self, sql: bytes) -> None:
        cur: Any = self._c.cursor()
        try:
            cur.execute(sql.decode())
            if cur.with_rows:
                cur.fetchall()
        except mysql.connector.Error as exc:
            raise DriverError(exc.errno, exc.msg or str(exc)) from None
        finally:
            cur.close()

    def close(self) -> None:
        try:
            self._c.close()
        except Exception:
            pass


def open_session(params: ConnParams) -> RawSession | PureSession:
    return RawSession(params) if HAVE_RAW else PureSession(params)
