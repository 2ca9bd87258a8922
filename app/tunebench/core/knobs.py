"""Server variables ("knobs"): what a name may look like, what values a knob takes, and checking a
requested value before anything reaches a server. No I/O: the facts come from `mysql.knobs`.

Identifiers are never interpolated unchecked: a knob name must match NAME_RE *and* exist in the
server's own variable list; values travel as SQL parameters, normalised to the knob's type first.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from tunebench.core.errors import ConfigError

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
SIZE_RE = re.compile(r"^(\d+)\s*([kmgt]?)b?$", re.IGNORECASE)
SIZE_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
BOOL_TRUE, BOOL_FALSE = ("on", "1", "true", "yes"), ("off", "0", "false", "no")
TYPES = ("bool", "int", "float", "enum", "set", "string")


# Variables with a session scope whose session value is initialized from the global value when a connection
# opens, so SET GLOBAL reaches only connections opened afterwards: the load's open connections keep the old
# value until they reconnect. (MySQL Reference Manual, 7.1.9 "Using System Variables": "the server initializes
# the session value ... from the current global value when a client connects"; MariaDB KB "Server System
# Variables": the session value "is initialized from the global value when the client connects".) Global-only
# variables (innodb_flush_log_at_trx_commit, innodb_thread_concurrency, innodb_spin_wait_delay, sync_binlog)
# act at once and are not here.
NEW_SESSIONS_ONLY = frozenset({
    "autocommit", "transaction_isolation", "tx_isolation", "transaction_read_only", "tx_read_only",
    "sort_buffer_size", "join_buffer_size", "read_buffer_size", "read_rnd_buffer_size", "tmp_table_size",
    "max_heap_table_size", "bulk_insert_buffer_size", "net_buffer_length", "optimizer_switch",
    "optimizer_search_depth", "optimizer_prune_level", "eq_range_index_dive_limit", "range_optimizer_max_mem_size",
    "long_query_time", "sql_mode", "innodb_lock_wait_timeout", "lock_wait_timeout", "max_execution_time",
    "unique_checks", "foreign_key_checks", "sql_log_bin", "binlog_format", "binlog_row_image",
    "internal_tmp_mem_storage_engine", "big_tables", "max_length_for_sort_data", "group_concat_max_len",
    "div_precision_increment", "session_track_gtids", "innodb_strict_mode", "wait_timeout", "interactive_timeout",
})


# MySQL does not say which variables no option sets (MariaDB does: SYSTEM_VARIABLES.COMMAND_LINE_ARGUMENT is NULL):
# the ones the server computes, by name and by prefix.
SERVER_SET = frozenset({
    "hostname", "license", "protocol_version", "system_time_zone", "lower_case_file_system", "character_set_system",
    "large_files_support", "large_page_size", "locked_in_memory", "server_uuid", "error_count", "warning_count",
    "in_transaction", "external_user", "proxy_user", "log_bin_basename", "log_bin_index", "relay_log_basename",
    "relay_log_index", "gtid_executed", "gtid_owned", "skip_external_locking",
})
SERVER_SET_PREFIXES = ("version", "have_")


def server_set(name: str) -> bool:
    """Whether MySQL computes `name` itself (no option or SET changes it)."""
    return name in SERVER_SET or name.startswith(SERVER_SET_PREFIXES)


# variables with a session value only (no global one a knob could set), in MySQL 8+/9 and MariaDB: known without
# a server, so that `sweep --plan` and `tune`'s parse refuse them (the server's own refusal covers the rest)
SESSION_ONLY = frozenset({
    "sql_log_bin", "timestamp", "insert_id", "last_insert_id", "identity", "pseudo_thread_id", "rand_seed1",
    "rand_seed2", "gtid_next", "error_count", "warning_count", "sql_warnings", "pseudo_slave_mode",
    "pseudo_replica_mode", "transaction_allow_batching",
})


def session_only_text(name: str) -> str:
    # issue 43 item 15: it passed the pre-check and aborted later, saying "needs a restart"
    return (f"{name} is a session variable: it has no global value a knob could set (each connection sets its "
            "own); it cannot be a knob or a sweep axis")


def check_knob_name(name: str) -> str:
    """check_name, and not a session-only variable: ConfigError."""
    norm = check_name(name)
    if norm in SESSION_ONLY:
        raise ConfigError(session_only_text(norm))
    return norm


def new_sessions_only(name: str) -> bool:
    """Whether a live SET GLOBAL of `name` leaves the already open connections (the load's) unchanged."""
    return name.strip().lower() in NEW_SESSIONS_ONLY


def check_name(name: str) -> str:
    """A syntactically valid variable name (lower-cased), or ConfigError. Dashes become underscores."""
    norm = str(name).strip().lower().replace("-", "_")
    if not NAME_RE.match(norm):
        raise ConfigError(f"invalid server variable name {name!r}: only letters, digits and '_' are allowed")
    return norm


@dataclass(frozen=True, slots=True)
class KnobInfo:
    """What the server (or the catalog) says about one variable."""

    name: str
    type: str  # one of TYPES
    dynamic: bool
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = field(default_factory=tuple)
    current: str | None = None
    # read-only even at startup: the server sets it itself (version, hostname, have_*); no knob, live or restart
    fixed: bool = False

    def check_settable(self) -> None:
        """ConfigError naming the variable when it is not a knob at all."""
        if self.fixed:
            raise ConfigError(f"{self.name} is read-only: the server sets it itself, so it cannot be a knob or a "
                              "sweep axis (not even with a restart)")

    def normalize(self, value: Any) -> int | float | str:
        """The value as it will be sent (int/float/str), or ConfigError saying what is accepted."""
        text = str(value).strip()
        if self.type == "bool":
            low = text.lower()
            if isinstance(value, bool):
                return "ON" if value else "OFF"
            if low in BOOL_TRUE:
                return "ON"
            if low in BOOL_FALSE:
                return "OFF"
            raise ConfigError(f"{self.name}: {value!r} is not a boolean (use ON/OFF)")
        if self.type in ("int", "float"):
            num = _number(text, self.type == "int")
            if num is None:
                raise ConfigError(f"{self.name}: {value!r} is not {'an integer' if self.type == 'int' else 'a number'}"
                                  + (" (sizes may use K/M/G suffixes)" if self.type == "int" else ""))
            if (self.min is not None and num < self.min) or (self.max is not None and num > self.max):
                raise ConfigError(f"{self.name}: {value!r} is out of range [{_fmt(self.min)}, {_fmt(self.max)}]")
            return num
        if self.type == "enum":
            for choice in self.choices:
                if text.lower() == choice.lower():
                    return choice
            if text.isdigit() and int(text) < len(self.choices):
                return self.choices[int(text)]
            raise ConfigError(f"{self.name}: {value!r} is not one of {', '.join(self.choices)}")
        if self.type == "set":
            parts = [p.strip() for p in text.split(",") if p.strip()]
            lower = {c.lower(): c for c in self.choices}
            bad = [p for p in parts if p.lower() not in lower]
            if bad and self.choices:
                raise ConfigError(f"{self.name}: {bad[0]!r} is not one of {', '.join(self.choices)}")
            return ",".join(lower.get(p.lower(), p) for p in parts)
        if any(c in text for c in "\n\r\0"):
            raise ConfigError(f"{self.name}: value contains a line break or NUL")
        return text

    def same(self, a: Any, b: Any) -> bool:
        """Whether two values mean the same for this knob (ON == 1, 1G == 1073741824, case of enums);
        None is SQL NULL and equals only itself."""
        if a is None or b is None:
            return a is None and b is None
        try:
            return _canon(self, a) == _canon(self, b)
        except ConfigError:
            return str(a).strip().lower() == str(b).strip().lower()


def _canon(info: KnobInfo, value: Any) -> Any:
    loose = KnobInfo(info.name, info.type, info.dynamic, None, None, info.choices)
    v = loose.normalize(value)
    return v.lower() if isinstance(v, str) else v


def _number(text: str, integer: bool) -> int | float | None:
    m = SIZE_RE.match(text)
    if m:
        return int(m.group(1)) * SIZE_MULT[m.group(2).lower()]
    if integer:
        return int(text) if re.fullmatch(r"-?\d+", text) else None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None  # NaN passed every range check (issue 43 item 15)


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return str(int(v)) if float(v).is_integer() else str(v)


def cnf_entry(name: str, value: int | float | str) -> tuple[str, str | None]:
    """A normalised value as a my.cnf overlay line (name, value; None = bare option).

    log_bin is the odd one: its option value is the binary log's base name, so ON becomes
    `log_bin = binlog` and OFF `skip_log_bin`.
    """
    if name == "log_bin":
        return ("log_bin", "binlog") if str(value).upper() == "ON" else ("skip_log_bin", None)
    return name, str(value)
