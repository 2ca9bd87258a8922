"""The benchmarks' common start: the sandbox server running, oltp_point_select's table prepared."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tunebench.hosts.sandbox import SandboxServer
from tunebench.load.prepare import prepare, tables_ready
from tunebench.load.workload import Workload, load_workload
from tunebench.mysql.connect import ServerInfo, introspect, open_connection
from tunebench.mysql.target import Target, conn_params


@dataclass
class BenchSandbox:
    server: SandboxServer
    target: Target
    admin: Any  # ConnParams without a database
    params: Any  # ConnParams of schema tunebench
    info: ServerInfo
    workload: Workload
    options: dict[str, Any]


def point_select_sandbox(table_size: int) -> BenchSandbox:
    sb = SandboxServer()
    sb.start()
    target = sb.target()
    admin = conn_params(target, "socket")
    params = conn_params(target, "socket", database="tunebench", password=admin.password)
    conn = open_connection(admin)
    info = introspect(conn)
    conn.cursor().execute("CREATE DATABASE IF NOT EXISTS tunebench")
    conn.close()
    wl = load_workload("oltp_point_select")
    opts = wl.options({"table_size": table_size})
    if not tables_ready(params, "tunebench", opts, table_size):
        prepare(params, "tunebench", opts, table_size)
    return BenchSandbox(sb, target, admin, params, info, wl, opts)
