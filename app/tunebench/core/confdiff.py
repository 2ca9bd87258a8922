"""What else differed: the server configurations of the sides of a comparison, side by side.

A comparison (a server axis, Compare, `sessions diff`, a sweep's ratio tables, a report) is only as good as what it
holds equal. Each side's global variables (the snapshot its session took, SHOW GLOBAL VARIABLES) are normalised --
sizes and numbers as numbers, ON/OFF/1/0 as one boolean, paths, identities and version-only variables apart -- and the
ones that differ are listed, the performance-relevant ones first, with one line per topic where the difference makes
the comparison unfair ("binary log: log_bin=ON, sync_binlog=1 on mysql 9.7.0; log_bin=OFF on mariadb 10.11.14").
Percona's pt-config-diff does the first half for two servers; no benchmark tool puts it beside its results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# the same setting under two names (MySQL's renames, MariaDB's older names): compared as the first
ALIASES: dict[str, str] = {
    "tx_isolation": "transaction_isolation",
    "log_slave_updates": "log_replica_updates",
    "tx_read_only": "transaction_read_only",
    "slave_parallel_workers": "replica_parallel_workers",
    "slave_parallel_threads": "replica_parallel_workers",
}

# Topics in the order a performance engineer reads them; in each, its variables (after ALIASES). `key`: the ones
# whose difference makes a comparison unfair (said in a warning line); the rest are listed, not warned about.
TOPICS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("binary log", ("log_bin", "sync_binlog", "binlog_format"),
     ("binlog_row_image", "binlog_order_commits", "binlog_group_commit_sync_delay", "binlog_commit_wait_count",
      "binlog_commit_wait_usec", "log_replica_updates", "binlog_transaction_dependency_tracking", "binlog_checksum",
      "binlog_cache_size", "binlog_expire_logs_seconds", "expire_logs_days", "max_binlog_size")),
    ("GTID", ("gtid_mode",), ("enforce_gtid_consistency", "gtid_strict_mode")),
    ("redo log and flushing", ("innodb_flush_log_at_trx_commit", "innodb_flush_method", "redo log size"),
     ("innodb_flush_log_at_timeout", "innodb_log_file_size", "innodb_log_files_in_group", "innodb_redo_log_capacity",
      "innodb_log_buffer_size", "innodb_log_write_ahead_size", "innodb_flush_neighbors", "innodb_io_capacity",
      "innodb_io_capacity_max", "innodb_max_dirty_pages_pct", "innodb_max_dirty_pages_pct_lwm",
      "innodb_adaptive_flushing", "innodb_adaptive_flushing_lwm", "innodb_lru_scan_depth", "innodb_page_cleaners",
      "innodb_use_fdatasync", "innodb_log_writer_threads", "innodb_flush_sync")),
    ("doublewrite", ("innodb_doublewrite",), ("innodb_doublewrite_pages", "innodb_doublewrite_files")),
    ("buffer pool", ("innodb_buffer_pool_size",),
     ("innodb_buffer_pool_instances", "innodb_buffer_pool_chunk_size", "innodb_old_blocks_time",
      "innodb_change_buffering", "innodb_adaptive_hash_index", "innodb_adaptive_hash_index_parts")),
    ("performance_schema", ("performance_schema",), ()),
    ("threads", ("thread_handling", "innodb_thread_concurrency"),
     ("thread_pool_size", "thread_pool_max_threads", "innodb_concurrency_tickets", "innodb_spin_wait_delay",
      "innodb_sync_spin_loops", "innodb_read_io_threads", "innodb_write_io_threads", "thread_cache_size",
      "max_connections", "innodb_purge_threads", "innodb_thread_sleep_delay")),
    ("isolation", ("transaction_isolation",), ("innodb_snapshot_isolation", "autocommit")),
    ("character set", ("character_set_server", "collation_server"), ()),
    ("tables and pages", (), ("innodb_page_size", "innodb_file_per_table", "innodb_stats_persistent",
                              "innodb_use_native_aio", "innodb_numa_interleave", "innodb_checksum_algorithm",
                              "table_open_cache", "table_open_cache_instances", "query_cache_type",
                              "query_cache_size", "tmp_table_size", "max_heap_table_size")),
)
TOPIC_OF: dict[str, tuple[int, str]] = {}
ORDER: dict[str, int] = {}  # a variable's place in the reading order (topic, then key ones first)
KEY: set[str] = set()
for _i, (_topic, _key, _rest) in enumerate(TOPICS):
    for _n in (*_key, *_rest):
        TOPIC_OF[_n] = (_i, _topic)
        ORDER[_n] = len(ORDER)
    KEY.update(_key)
# sizes: a difference under a quarter is not what makes one side faster (128M against 134M of buffer pool)
SIZE_KEYS = frozenset({"innodb_buffer_pool_size", "redo log size"})
MATERIAL = 1.25
# a binary-log setting matters only where the log is written: with it off on every side, sync_binlog differs in name
BINLOG_ONLY = frozenset(n for n in (*TOPICS[0][1], *TOPICS[0][2]) if n != "log_bin")
REDO_PARTS = frozenset({"innodb_redo_log_capacity", "innodb_log_file_size", "innodb_log_files_in_group"})
REDO = "redo log size"  # derived: innodb_redo_log_capacity (MySQL 8.0.30+), else log_file_size x files_in_group

# identities, paths, state and what only names the build: they differ between any two servers
EXACT_APART = frozenset({
    "hostname", "server_uuid", "server_id", "port", "socket", "pid_file", "log_error", "general_log_file",
    "slow_query_log_file", "license", "protocol_version", "system_time_zone", "timestamp", "pseudo_thread_id",
    "warning_count", "error_count", "last_insert_id", "identity", "insert_id", "rand_seed1", "rand_seed2",
    "gtid_executed", "gtid_purged", "gtid_owned", "gtid_binlog_pos", "gtid_binlog_state", "gtid_current_pos",
    "gtid_slave_pos", "gtid_domain_id", "innodb_version", "report_host", "report_port", "mysqlx_port",
    "mysqlx_socket", "admin_port", "large_files_support", "lower_case_file_system", "log_bin_basename",
    "log_bin_index", "relay_log_basename", "relay_log_index", "datadir", "basedir", "tmpdir", "plugin_dir",
    "character_sets_dir", "lc_messages_dir", "secure_file_priv", "innodb_data_home_dir",
    "innodb_log_group_home_dir", "innodb_undo_directory", "innodb_temp_tablespaces_dir",
    "innodb_monitor_enable", "innodb_monitor_disable", "innodb_monitor_reset", "innodb_monitor_reset_all",
    "wsrep_provider", "debug_sync", "in_transaction", "external_user", "proxy_user",
})
PREFIXES_APART = ("version", "have_", "ssl_", "performance_schema_consumer_", "performance_schema_instrument",
                  "mysqlx_ssl", "admin_ssl", "caching_sha2_password_", "sha256_password_")
SUFFIXES_APART = ("_dir", "_path", "_file", "_basename", "_index")

BOOLEANS = {"ON": True, "OFF": False, "TRUE": True, "FALSE": False, "YES": True, "NO": False}


def apart(name: str) -> bool:
    """Whether `name` is left out of a comparison: an identity, a path, the server's state, the build."""
    return name in EXACT_APART or name.startswith(PREFIXES_APART) or name.endswith(SUFFIXES_APART)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def same_value(a: str | None, b: str | None) -> bool:
    """Two values of one variable, normalised: ON/TRUE/YES/1 one boolean, numbers as numbers (67108864 and
    67108864.000000), words case-insensitively; None (absent) equals only None."""
    if a is None or b is None:
        return a is b
    ua, ub = a.strip().upper(), b.strip().upper()
    if ua == ub:
        return True
    ba = BOOLEANS.get(ua, {"1": True, "0": False}.get(ua) if ub in BOOLEANS else None)
    bb = BOOLEANS.get(ub, {"1": True, "0": False}.get(ub) if ua in BOOLEANS else None)
    if ba is not None and bb is not None:
        return ba == bb
    na, nb = _number(ua), _number(ub)
    return na is not None and nb is not None and na == nb


def normalised(variables: Mapping[str, Any]) -> dict[str, str]:
    """A session's variables as compared: names lower-case and under one name (ALIASES), the left-apart ones
    gone, values as text, and the derived `redo log size`."""
    out: dict[str, str] = {}
    for raw, value in variables.items():
        name = ALIASES.get(str(raw).lower(), str(raw).lower())
        if value is None or apart(name):
            continue
        text = str(value)
        if text.startswith("/"):  # a path under any name
            continue
        out.setdefault(name, text)
    capacity = _number(out.get("innodb_redo_log_capacity", "")) if "innodb_redo_log_capacity" in out else None
    size = _number(out.get("innodb_log_file_size", "")) if "innodb_log_file_size" in out else None
    files = _number(out.get("innodb_log_files_in_group", "1")) or 1.0
    if capacity is not None:
        out[REDO] = str(int(capacity))
    elif size is not None:
        out[REDO] = str(int(size * files))
    return out


def shown(value: str | None) -> str:
    """A value as a difference line says it: sizes the way my.cnf writes them (134217728 -> 128M)."""
    if value is None:
        return "(none)"
    if value.isdigit() and int(value) >= 1 << 20 and int(value) % (1 << 20) == 0:
        n = int(value)
        for unit, div in (("G", 1 << 30), ("M", 1 << 20)):
            if n % div == 0:
                return f"{n // div}{unit}"
    return value


@dataclass(frozen=True, slots=True)
class Difference:
    """One variable that differs between the sides: its values (None where a side has no such variable)."""

    name: str
    values: tuple[str | None, ...]
    topic: str | None  # None: not one of the performance-relevant ones

    @property
    def key(self) -> bool:
        return self.name in KEY

    def to_dict(self, labels: Sequence[str]) -> dict[str, Any]:
        return {"name": self.name, "topic": self.topic, "unfair": self.key,
                "values": dict(zip(labels, self.values, strict=True))}


@dataclass(slots=True)
class ConfigDiff:
    """The differences between two or more sides' configurations (`labels`: how each side is named)."""

    labels: tuple[str, ...]
    differences: list[Difference] = field(default_factory=list)  # relevant first, by topic; then the rest by name
    only: dict[str, list[str]] = field(default_factory=dict)  # label -> variables only that side has (relevant)
    only_counts: dict[str, int] = field(default_factory=dict)  # label -> how many variables only that side has
    warnings: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # labels whose variables were not recorded

    @property
    def relevant(self) -> list[Difference]:
        return [d for d in self.differences if d.topic is not None]

    @property
    def unfair(self) -> bool:
        return bool(self.warnings)

    def to_dict(self) -> dict[str, Any]:
        return {"sides": list(self.labels), "unfair": self.unfair, "warnings": list(self.warnings),
                "differences": [d.to_dict(self.labels) for d in self.differences],
                "only": {k: v for k, v in self.only.items() if v}, "only_counts": dict(self.only_counts),
                "not_recorded": list(self.missing)}

    def short(self) -> str:
        """One line for a view with little room: the topics that make it unfair (the lines in a tooltip)."""
        if self.missing:
            return self.lines()[0]
        if self.warnings:
            return "⚠ unfair: " + ", ".join(w.split(":", 1)[0] for w in self.warnings) + " differ (hover for how)"
        if self.differences:
            return (f"what else differed: {len(self.relevant)} performance-relevant setting(s), none that makes "
                    "the comparison unfair (hover for the list)")
        return self.lines()[0]

    def lines(self, limit: int = 12) -> list[str]:
        """The diff as text lines: the warnings, then the relevant differences (at most `limit`), then a count."""
        if self.missing:
            out = [f"what else differed: not known ({', '.join(self.missing)}: no server variables recorded)"]
        elif not self.differences and not any(self.only.values()):
            return ["what else differed: nothing in the servers' configurations (" + ", ".join(self.labels) + ")"]
        else:
            out = [f"unfair: {w}" for w in self.warnings]
        rel = self.relevant
        if rel:
            out.append("server configurations differ (" + " | ".join(self.labels) + "):")
            out += [f"  {d.name}: " + " | ".join(shown(v) for v in d.values) for d in rel[:limit]]
            if len(rel) > limit:
                out.append(f"  ... and {len(rel) - limit} more performance-relevant")
        rest = len(self.differences) - len(rel)
        if rest:
            out.append(f"  {rest} other variable(s) differ (sessions diff --json lists them)")
        for label, names in self.only.items():
            if names:
                out.append(f"  only {label} has: {', '.join(names[:8])}" + (" ..." if len(names) > 8 else ""))
        return out

    def markdown(self, limit: int = 20) -> str:
        if self.missing:
            return f"What else differed: not known ({', '.join(self.missing)}: no server variables recorded).\n"
        if not self.differences:
            return "What else differed: nothing in the servers' configurations.\n"
        out = [f"> **Unfair:** {w}" for w in self.warnings]
        if out:
            out.append("")
        out += ["| variable | " + " | ".join(self.labels) + " |", "|---|" + "---|" * len(self.labels)]
        for d in self.relevant[:limit]:
            mark = " ⚠" if d.key else ""
            out.append(f"| {d.name}{mark} | " + " | ".join(shown(v) for v in d.values) + " |")
        rest = len(self.differences) - min(len(self.relevant), limit)
        if rest:
            out.append(f"\n{rest} other variable(s) differ (`--json` lists them).")
        return "\n".join(out) + "\n"


def compare(sides: Sequence[tuple[str, Mapping[str, Any] | None]]) -> ConfigDiff:
    """The configurations of `sides` ((label, variables or None when not recorded), two or more) compared."""
    labels = tuple(label for label, _v in sides)
    out = ConfigDiff(labels)
    out.missing = [label for label, v in sides if not v]
    if out.missing:
        return out
    norm = [normalised(v or {}) for _label, v in sides]
    names = sorted(set().union(*norm))
    binlog = [same_value(n.get("log_bin"), "ON") for n in norm]
    for name in names:
        values = tuple(n.get(name) for n in norm)
        present = [v for v in values if v is not None]
        if len(present) < len(values):  # a variable of one flavor or version: listed apart, never a difference
            if present and name in TOPIC_OF and not (name in REDO_PARTS and all(REDO in n for n in norm)):
                for label, v in zip(labels, values, strict=True):
                    if v is not None:
                        out.only.setdefault(label, []).append(name)
            for label, v in zip(labels, values, strict=True):
                if v is not None:
                    out.only_counts[label] = out.only_counts.get(label, 0) + 1
            continue
        if all(same_value(present[0], v) for v in present[1:]):
            continue
        if name in BINLOG_ONLY and not any(binlog):
            continue  # no side writes a binary log: its settings change nothing
        topic = TOPIC_OF.get(name)
        out.differences.append(Difference(name, values, topic[1] if topic else None))
    out.differences.sort(key=lambda d: (ORDER.get(d.name, len(ORDER)), d.name))
    out.warnings = _warnings(labels, norm, out.differences, binlog)
    return out


def _material(values: Sequence[str | None]) -> bool:
    parsed = [_number(v) for v in values if v is not None]
    nums = [x for x in parsed if x is not None and x > 0]
    if len(nums) < len(parsed) or not nums:
        return True
    return max(nums) / min(nums) > MATERIAL


def _warnings(labels: Sequence[str], norm: Sequence[Mapping[str, str]], diffs: Sequence[Difference],
              binlog: Sequence[bool]) -> list[str]:
    """One line per topic whose key variables differ, each group of sides with the same values named together. A key
    variable only some sides have counts where it is on there (MySQL's gtid_mode=ON against a MariaDB without it)."""
    out: list[str] = []
    differing = {d.name for d in diffs if d.key and (d.name not in SIZE_KEYS or _material(d.values))}
    for n in norm:
        for name in KEY:
            if name in n and BOOLEANS.get(n[name].upper()) and any(name not in m for m in norm):
                differing.add(name)
    for topic, key, _rest in TOPICS:
        names = [n for n in key if n in differing]
        if not names:
            continue
        groups: dict[tuple[str, ...], list[str]] = {}
        for label, n, on in zip(labels, norm, binlog, strict=True):
            if topic == "binary log":  # the log's own settings only where it is written
                shown_names = ["log_bin", *([x for x in names if x != "log_bin"] if on else [])]
            else:
                shown_names = names
            value = tuple(f"{x}={shown(n.get(x)) if x in n else '(none)'}" for x in shown_names)
            groups.setdefault(value, []).append(label)
        if len(groups) < 2:
            continue
        out.append(f"{topic}: " + "; ".join(", ".join(v) + " on " + ", ".join(ls) for v, ls in groups.items()))
    return out


def session_sides(session: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any] | None]]:
    """The servers a session measured, each (label, its variables or None when not recorded): the first from the
    session's own snapshot, the others (a server axis) from their `server` events."""
    first = (f"{session.get('flavor') or ''} {session.get('version') or ''}".strip() or str(session.get("target")),
             session.get("variables") or None)
    servers = server_sides(session.get("events") or ())
    # a server axis names every server in a `server` event (index 0 the first); before it did, the first was the
    # session's own snapshot and the others had no variables
    sides = servers if any(i == 0 for i, _s in servers) else [(0, first), *servers]
    seen: dict[str, int] = {}
    out = []
    for _i, (label, variables) in sides:  # two sides of one name: numbered
        seen[label] = seen.get(label, 0) + 1
        out.append((label if seen[label] == 1 else f"{label} ({seen[label]})", variables))
    return out


def server_sides(events: Iterable[Mapping[str, Any]]) -> list[tuple[int | None, tuple[str, Mapping[str, Any] | None]]]:
    """The `server` events of a server axis as (index, (label, variables or None))."""
    sides: list[tuple[int | None, tuple[str, Mapping[str, Any] | None]]] = []
    for ev in events:
        if ev.get("kind") != "server":
            continue
        data = ev.get("data") or {}
        label = f"{data.get('flavor') or ''} {data.get('version') or ''}".strip() or str(data.get("target"))
        variables = data.get("variables")
        index = data.get("index")
        sides.append((index if isinstance(index, int) else None,
                      (label, variables if isinstance(variables, Mapping) else None)))
    return sides


def between_sessions(a: Mapping[str, Any], b: Mapping[str, Any]) -> ConfigDiff:
    """Two sessions' (first) servers compared; a session's label is its ID and server."""
    (la, va), (lb, vb) = session_sides(a)[0], session_sides(b)[0]
    return compare([(f"#{a.get('id')} {la}", va), (f"#{b.get('id')} {lb}", vb)])
