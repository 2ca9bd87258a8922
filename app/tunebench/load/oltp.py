"""sysbench 1.0 OLTP statements, schema and per-event programs, exactly as oltp_common.lua defines them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tunebench.core.errors import WorkloadError

C_TEMPLATE = "-".join(["###########"] * 10)  # CHAR(120) value, 119 chars
PAD_TEMPLATE = "-".join(["###########"] * 5)  # CHAR(60) value, 59 chars

# stmt_defs of oltp_common.lua: key -> (SQL with %u table number, statement class)
STATEMENTS: dict[str, tuple[str, str]] = {
    "point_selects": ("SELECT c FROM sbtest%u WHERE id=?", "read"),
    "simple_ranges": ("SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ?", "read"),
    "sum_ranges": ("SELECT SUM(k) FROM sbtest%u WHERE id BETWEEN ? AND ?", "read"),
    "order_ranges": ("SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c", "read"),
    "distinct_ranges": ("SELECT DISTINCT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c", "read"),
    "index_updates": ("UPDATE sbtest%u SET k=k+1 WHERE id=?", "write"),
    "non_index_updates": ("UPDATE sbtest%u SET c=? WHERE id=?", "write"),
    "deletes": ("DELETE FROM sbtest%u WHERE id=?", "write"),
    "inserts": ("INSERT INTO sbtest%u (id, k, c, pad) VALUES (?, ?, ?, ?)", "write"),
}
# oltp_insert.lua issues a plain (not prepared) query.
INSERT_TEXT = "INSERT INTO sbtest%d (id, k, c, pad) VALUES (%d, %d, '%s', '%s')"

RANGE_BLOCKS = ("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges")
COUNTED_BLOCKS = ("point_selects", *RANGE_BLOCKS, "index_updates", "non_index_updates", "delete_inserts")
# Event items a workload file may list, in the order the event runs them.
EVENT_ITEMS = ("begin", *COUNTED_BLOCKS, "commit", "delete", "insert")


@dataclass(frozen=True, slots=True)
class Block:
    """One step of an event: `kind` from EVENT_ITEMS, repeated `count` times on one random table."""

    kind: str
    count: int = 1


@dataclass(frozen=True, slots=True)
class EventProgram:
    """What one event (one sysbench transaction) executes, given resolved options."""

    blocks: tuple[Block, ...]
    options: Mapping[str, Any]

    def statement_mix(self) -> dict[str, int]:
        """Statements per event by class, as sysbench's r/w/o counters count them."""
        mix = {"read": 0, "write": 0, "other": 0}
        for b in self.blocks:
            if b.kind in ("begin", "commit"):
                mix["other"] += 1
            elif b.kind == "delete_inserts":
                mix["write"] += 2 * b.count
            elif b.kind in ("delete", "insert"):
                mix["write"] += 1
            else:
                mix[STATEMENTS[b.kind][1]] += b.count
        return mix

    def prepared_keys(self) -> list[str]:
        keys: list[str] = []
        for b in self.blocks:
            names = ["deletes", "inserts"] if b.kind == "delete_inserts" else (
                ["deletes"] if b.kind == "delete" else [b.kind])
            keys += [k for k in names if k in STATEMENTS and k not in keys]
        return keys

    @property
    def has_trx(self) -> bool:
        return any(b.kind == "begin" for b in self.blocks)


def compile_program(event: Sequence[str], options: Mapping[str, Any]) -> EventProgram:
    """Apply sysbench's switches (skip_trx, range_selects, per-block counts) to an event list."""
    blocks: list[Block] = []
    for item in event:
        if item not in EVENT_ITEMS:
            raise WorkloadError(f"unknown event item {item!r}; known: {', '.join(EVENT_ITEMS)}")
        if item in ("begin", "commit"):
            if not options["skip_trx"]:
                blocks.append(Block(item))
        elif item in RANGE_BLOCKS:
            if options["range_selects"] and options[item] > 0:
                blocks.append(Block(item, options[item]))
        elif item in COUNTED_BLOCKS:
            if options[item] > 0:
                blocks.append(Block(item, options[item]))
        else:
            blocks.append(Block(item))
    return EventProgram(tuple(blocks), dict(options))


def create_table_sql(table_num: int, options: Mapping[str, Any]) -> str:
    id_def = "INTEGER NOT NULL AUTO_INCREMENT" if options["auto_inc"] else "INTEGER NOT NULL"
    id_index_def = "KEY xid" if options["secondary"] else "PRIMARY KEY"
    engine_def = f"/*! ENGINE = {options['mysql_storage_engine']} */"
    return (
        f"CREATE TABLE sbtest{table_num}(\n"
        f"  id {id_def},\n"
        "  k INTEGER DEFAULT '0' NOT NULL,\n"
        "  c CHAR(120) DEFAULT '' NOT NULL,\n"
        "  pad CHAR(60) DEFAULT '' NOT NULL,\n"
        f"  {id_index_def} (id)\n"
        f") {engine_def} "
    )


def secondary_index_sql(table_num: int) -> str:
    return f"CREATE INDEX k_{table_num} ON sbtest{table_num}(k)"
