"""Short tasks on a target that the CLI and the window both call, so neither re-implements them: what the
server is (facts), preparing and cleaning a workload's data, trusting an SSH host key the user has seen."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tunebench.hosts.ssh import SshRunner, parse_ssh_url
from tunebench.load.engine import ClientGroup
from tunebench.load.prepare import cleanup, prepare
from tunebench.mysql.connect import ServerInfo, introspect, open_connection
from tunebench.mysql.knobs import describe_knobs
from tunebench.mysql.target import Target, conn_params

DATA_SCHEMA = "tunebench"


@dataclass(frozen=True)
class ServerFacts:
    """What a target is: flavor, version, its global variables, and what the asked-for knobs are."""

    target: str
    info: ServerInfo
    knobs: dict[str, Any] = field(default_factory=dict)  # name -> KnobFacts (type, range, dynamic)

    @property
    def version(self) -> str:
        return self.info.version

    @property
    def variables(self) -> dict[str, str]:
        return self.info.variables

    def line(self) -> str:
        i = self.info
        return (f"{self.target}: {i.flavor} {i.version}, performance_schema "
                f"{'ON' if i.performance_schema else 'OFF'}")


def server_facts(target: Target, knobs: Sequence[str] = (), transport: str | None = None) -> ServerFacts:
    """Introspect the target; `knobs` that the server has are described too (the others are left out)."""
    conn = open_connection(conn_params(target, transport), target.name)
    try:
        info = introspect(conn)
        wanted = [n for n in dict.fromkeys(knobs) if n in info.variables]
        return ServerFacts(target.name, info, describe_knobs(conn, info, wanted) if wanted else {})
    finally:
        conn.close()


@dataclass(frozen=True)
class PrepareOutcome:
    tables: tuple[str, ...]  # created, or dropped by a cleanup
    rows_per_table: int
    seconds: float
    summary: str  # the one line the user sees


def prepare_data(target: Target, group: ClientGroup, clean: bool = False,
                 progress: Callable[[str], None] | None = None, schema: str = DATA_SCHEMA,
                 threads: int = 4) -> PrepareOutcome:
    """Create (or, with `clean`, drop) the group's workload tables in `schema`, creating the schema first."""
    admin = conn_params(target, None)
    conn = open_connection(admin, target.name)
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{schema}`")
        cur.close()
    finally:
        conn.close()
    params = conn_params(target, None, database=schema, password=admin.password)
    if clean:
        r = cleanup(params, schema)
        dropped = tuple(r["dropped"])
        return PrepareOutcome(dropped, 0, 0.0, f"dropped {', '.join(dropped) or 'nothing'}")
    rows = group.workload.prepare_rows(group.options)
    r = prepare(params, schema, group.options, rows, threads=threads, progress=progress)
    tables = tuple(f"sbtest{i + 1}" for i in range(int(group.options["tables"])))
    return PrepareOutcome(tables, int(r["rows_per_table"]), float(r["seconds"]),
                          f"prepared {r['tables_created']} table(s) x {r['rows_per_table']} rows ({r['seconds']} s)")


def trust_host_key(url: str) -> str:
    """Connect once to `url` accepting its host key (kept in Tunebench's own known_hosts); the line to show."""
    notes: list[str] = []
    SshRunner(parse_ssh_url(url), trust=True, note=notes.append, retries=1).connect().close()
    return "; ".join(notes) or f"{url} trusted"
