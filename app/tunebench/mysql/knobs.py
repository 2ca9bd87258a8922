"""What a server says about its variables, and changing one: SET GLOBAL + read-back.

MariaDB describes every variable in information_schema.SYSTEM_VARIABLES (type, range, enum values,
READ_ONLY). MySQL 8 gives ranges in performance_schema.variables_info but no type or dynamic flag, so a
small catalog of the tuning knobs fills in, and for others the type is inferred from the current value.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

import mysql.connector

from tunebench.core.errors import ConfigError, TargetError
from tunebench.core.knobs import KnobInfo, check_name, server_set, session_only_text
from tunebench.mysql.connect import ServerInfo, query_all
from tunebench.mysql.connect import num_of as _num
from tunebench.mysql.connect import text_of as _text

MARIADB_TYPES = {"BOOLEAN": "bool", "ENUM": "enum", "SET": "set", "DOUBLE": "float", "VARCHAR": "string"}

# MySQL 8.0 facts the server does not expose (type, dynamic); ranges come from variables_info.
MYSQL_CATALOG: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    "innodb_flush_log_at_trx_commit": ("int", True, ()),
    "innodb_doublewrite": ("enum", True, ("OFF", "ON", "DETECT_AND_RECOVER", "DETECT_ONLY")),  # 8.0.30+
    "innodb_thread_concurrency": ("int", True, ()),
    "innodb_spin_wait_delay": ("int", True, ()),
    "innodb_spin_wait_pause_multiplier": ("int", True, ()),
    "innodb_sync_spin_loops": ("int", True, ()),
    "sync_binlog": ("int", True, ()),
    "innodb_buffer_pool_size": ("int", True, ()),
    "innodb_buffer_pool_instances": ("int", False, ()),
    "innodb_io_capacity": ("int", True, ()),
    "innodb_io_capacity_max": ("int", True, ()),
    "innodb_log_file_size": ("int", False, ()),
    "innodb_redo_log_capacity": ("int", True, ()),
    "innodb_flush_method": ("enum", False, ("fsync", "O_DSYNC", "littlesync", "nosync", "O_DIRECT",
                                             "O_DIRECT_NO_FSYNC")),
    "innodb_adaptive_hash_index": ("bool", True, ()),
    "innodb_change_buffering": ("enum", True, ("none", "inserts", "deletes", "changes", "purges", "all")),
    "performance_schema": ("bool", False, ()),
    "log_bin": ("bool", False, ()),
    "max_connections": ("int", True, ()),
    "table_open_cache": ("int", True, ()),
    "thread_cache_size": ("int", True, ()),
    "innodb_purge_threads": ("int", False, ()),
    "innodb_read_io_threads": ("int", False, ()),
    "innodb_write_io_threads": ("int", False, ()),
    "innodb_page_cleaners": ("int", False, ()),
}




def infer_type(current: str) -> str:
    if current.upper() in ("ON", "OFF"):
        return "bool"
    if re.fullmatch(r"-?\d+", current):
        return "int"
    if re.fullmatch(r"-?\d+\.\d+", current):
        return "float"
    return "string"


def unknown_variable(name: str, info: ServerInfo) -> ConfigError:
    close = difflib.get_close_matches(name, list(info.variables), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return ConfigError(f"unknown server variable {name!r} on {info.flavor} {info.version}{hint}")


def describe_knobs(conn: Any, info: ServerInfo, names: Iterable[str]) -> dict[str, KnobInfo]:
    """KnobInfo for each name; ConfigError for a malformed or unknown name (nothing is sent for those)."""
    wanted = []
    for raw in names:
        name = check_name(raw)
        if name not in info.variables:
            raise unknown_variable(name, info)
        wanted.append(name)
    if not wanted:
        return {}
    if info.flavor == "mariadb":
        return mariadb_knobs(conn, wanted)
    return mysql_knobs(conn, info, wanted)


def mariadb_knobs(conn: Any, names: list[str]) -> dict[str, KnobInfo]:
    marks = ",".join(["%s"] * len(names))
    rows = query_all(conn, "SELECT VARIABLE_NAME, VARIABLE_TYPE, READ_ONLY, NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE, "
                           "ENUM_VALUE_LIST, GLOBAL_VALUE, COMMAND_LINE_ARGUMENT "
                           f"FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME IN ({marks})",
                     tuple(n.upper() for n in names))
    return {k.name: k for k in (mariadb_row(r) for r in rows)}


def mariadb_row(row: tuple[Any, ...]) -> KnobInfo:
    name, vtype, read_only, lo, hi, enums, current, *option = row
    low = _text(name).lower()
    # read-only with no option that sets it at startup: the server's own (version, hostname); log_bin is set
    # through the log-bin option (core.knobs.cnf_entry)
    fixed = _text(read_only).upper() == "YES" and bool(option) and option[0] is None and low != "log_bin"
    base = _text(vtype).split()[0].upper()
    if base in MARIADB_TYPES:
        kind = MARIADB_TYPES[base]
    elif base in ("INT", "BIGINT", "TINYINT", "SMALLINT", "MEDIUMINT"):
        kind = "int"
    else:
        kind = "string"
    choices = tuple(c for c in _text(enums).split(",") if c) if kind in ("enum", "set") else ()
    return KnobInfo(name=low, type=kind, dynamic=_text(read_only).upper() != "YES", min=_num(lo),
                    max=_num(hi), choices=choices, current=_text(current), fixed=fixed)


def mysql_knobs(conn: Any, info: ServerInfo, names: list[str]) -> dict[str, KnobInfo]:
    ranges: dict[str, tuple[float | None, float | None]] = {}
    try:
        marks = ",".join(["%s"] * len(names))
        for name, lo, hi in query_all(conn, "SELECT VARIABLE_NAME, MIN_VALUE, MAX_VALUE FROM "
                                            f"performance_schema.variables_info WHERE VARIABLE_NAME IN ({marks})",
                                      tuple(names)):
            ranges[_text(name).lower()] = (_num(lo), _num(hi))
    except mysql.connector.Error:
        pass  # PFS off or no privilege: no ranges, the server still refuses bad values
    out = {}
    for name in names:
        current = info.variables.get(name, "")
        kind, dynamic, choices = MYSQL_CATALOG.get(name, (infer_type(current), True, ()))
        lo, hi = ranges.get(name, (None, None))
        if lo == hi == 0:  # variables_info says 0/0 for non-numeric variables
            lo = hi = None
        fixed = name not in MYSQL_CATALOG and server_set(name)
        out[name] = KnobInfo(name, kind, dynamic and not fixed, lo, hi, choices, current, fixed)
    return out


def read_global(conn: Any, name: str) -> str | None:
    """The global value as text; None when it is NULL (innodb_ft_server_stopword_table, init_file, ...)."""
    name = check_name(name)
    rows = query_all(conn, f"SELECT @@GLOBAL.{name}")
    if not rows or rows[0][0] is None:
        return None
    return _text(rows[0][0])


def check_set_privilege(conn: Any, names: list[str], user: str) -> None:
    """Before anything runs: may this account change these global variables? Each is set to its own value (no
    change; the same privilege check as a real SET GLOBAL). A refusal is one line naming the privilege."""
    for raw in names:
        name = check_name(raw)
        try:
            query_all(conn, f"SET GLOBAL {name} = @@GLOBAL.{name}")
        except mysql.connector.Error as exc:
            if getattr(exc, "errno", None) in (1227, 1142):
                raise TargetError(f"the account {user!r} may not change server variables ({name}): it needs the "
                                  "SYSTEM_VARIABLES_ADMIN (MySQL) or SUPER privilege; run without knobs, or GRANT it"
                                  ) from None
            if session_only(exc):
                raise ConfigError(session_only_text(name)) from None
            if getattr(exc, "errno", None) == 1238:
                continue  # read-only: a restart knob, checked elsewhere


def session_only(exc: Exception) -> bool:
    """The server's refusal of SET GLOBAL for a variable with no global value (sql_log_bin on MySQL 8+): 1228, or
    1238 "is a SESSION variable" (the same number says "read only" for a restart knob)."""
    errno, msg = getattr(exc, "errno", None), getattr(exc, "msg", None) or str(exc)
    return errno == 1228 or (errno == 1238 and "SESSION variable" in msg)


def set_global(conn: Any, knob: KnobInfo, value: int | float | str | None) -> str | None:
    """SET GLOBAL (name checked by describe_knobs, value as a parameter; None sets NULL); returns the
    read-back value."""
    name = check_name(knob.name)
    try:
        query_all(conn, f"SET GLOBAL {name} = %s", (value,))
    except mysql.connector.Error as exc:
        msg = getattr(exc, "msg", None) or str(exc)
        if session_only(exc):
            raise ConfigError(session_only_text(name)) from None
        if getattr(exc, "errno", None) == 1238:
            raise ConfigError(f"{name} is read-only on this server: it needs a restart to change") from None
        if getattr(exc, "errno", None) in (1227, 1142):
            raise TargetError(f"cannot set {name}: the account lacks SUPER/SYSTEM_VARIABLES_ADMIN") from None
        raise ConfigError(f"the server refused {name} = {value}: {msg}") from None
    return read_global(conn, name)
