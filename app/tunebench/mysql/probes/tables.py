"""The size on disk of the run's tables, every second: `table.<name>.mb` (file size of each table's InnoDB
tablespace, data and indexes) and `table.total.mb`.

What the insert benchmark is about: the insert rate drops when a table's B-trees no longer fit the buffer
pool; with this beside server.innodb_buffer_pool_pages_data/free and server.innodb_buffer_pool_reads the
moment is on the timeline. InnoDB's own statistics (information_schema.TABLES data_length) are refreshed only
now and then; the tablespace file size is current: INNODB_SYS_TABLESPACES (MariaDB, MySQL 5.7) or
INNODB_TABLESPACES (MySQL 8.0). Those need the PROCESS privilege; without it the probe falls back to
information_schema.TABLES (data_length + index_length: InnoDB's estimate, refreshed now and then) and says so.
"""

from __future__ import annotations

import mysql.connector

from tunebench.core.probe import ProbeUnavailable, Reading
from tunebench.mysql.connect import ServerInfo
from tunebench.mysql.probes.sql_probe import ER_ACCESS_DENIED, Connector, SqlProbe, _why

TOP_TABLES = 20  # the biggest this many get a series of their own; every table counts in the total
SOURCES = ("INNODB_SYS_TABLESPACES", "INNODB_TABLESPACES")
FALLBACK = "TABLES"


class TablesProbe(SqlProbe):
    name = "tables"

    def __init__(self, connect: Connector, info: ServerInfo, schema: str):
        super().__init__(connect, info)
        self.schema = schema
        self.source = ""

    def open(self) -> str:
        errors = []
        for source in SOURCES:
            try:
                self.query(f"SELECT NAME, FILE_SIZE FROM information_schema.{source} LIMIT 1")
                self.source = source
                break
            except mysql.connector.Error as exc:
                errors.append((getattr(exc, "errno", None), _why(exc, "PROCESS")))
        note = ""
        if not self.source:
            denied = next((why for errno, why in errors if errno in ER_ACCESS_DENIED), None)
            self.source = FALLBACK
            note = (f" (InnoDB's estimates, refreshed now and then: the tablespace sizes need "
                    f"{'the PROCESS privilege' if denied else errors[-1][1]})")
        try:
            first = self.read()
        except mysql.connector.Error as exc:
            raise ProbeUnavailable(f"no table sizes: {_why(exc, 'SELECT')}") from None
        return (f"information_schema.{self.source}: {max(0, len(first.gauges) - 1)} table(s) of schema "
                f"{self.schema}, {first.gauges.get('table.total.mb', 0.0):,.1f} MB{note}")

    def read(self) -> Reading:
        if self.source == FALLBACK:
            rows = self.query("SELECT CONCAT(table_schema, '/', table_name), data_length + index_length "
                              "FROM information_schema.TABLES WHERE table_schema = %s", (self.schema,))
        else:
            rows = self.query(f"SELECT NAME, FILE_SIZE FROM information_schema.{self.source} WHERE NAME LIKE %s",
                              (f"{self.schema}/%",))
        sizes: dict[str, float] = {}
        for name, size in rows:
            text = name.decode() if isinstance(name, bytes) else str(name)
            table = text.split("/", 1)[1].split("#", 1)[0]  # partitions (t#P#p0) count in their table
            sizes[table] = sizes.get(table, 0.0) + float(size or 0) / 2**20
        gauges = {f"table.{t}.mb": round(mb, 3) for t, mb in sorted(sizes.items(), key=lambda kv: -kv[1])[:TOP_TABLES]}
        gauges["table.total.mb"] = round(sum(sizes.values()), 3)
        return Reading(gauges=gauges)
