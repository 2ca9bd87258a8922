"""`tunebench doctor`: what this machine has (driver, sysbench, servers, keyring, sandbox) and which probes work."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tunebench import __version__
from tunebench.cli.output import emit, probe_lines
from tunebench.cli.resolve import db_path, open_store, resolve_target, sandbox
from tunebench.core.errors import TunebenchError


def cmd_doctor(args: argparse.Namespace) -> int:
    import mysql.connector

    from tunebench.hosts.kits import list_servers
    from tunebench.hosts.sandbox import SandboxServer
    from tunebench.load.driver import driver_mode
    from tunebench.load.hotloop import HAVE_HOT, loop_mode
    from tunebench.load.sysbench import sysbench_binary, sysbench_version
    from tunebench.mysql.target import keyring_backend_name

    servers = []
    for b in list_servers():  # the system's and the kits, each with its sandbox
        own = SandboxServer.for_server(b)
        st = own.status()
        servers.append({"name": b.name, "path": b.path, "flavor": b.flavor, "version": b.version,
                        "source": b.source, "sandbox": own.target_name, "running": st.running, "port": st.port})
    sb = sandbox().status()
    report: dict[str, Any] = {
        "tunebench": __version__,
        "python": sys.version.split()[0],
        "driver": {"name": "mysql-connector-python", "version": mysql.connector.__version__,
                   "c_extension": bool(mysql.connector.HAVE_CEXT), "mode": driver_mode()},
        "engine_loop": loop_mode(),
        "sysbench": {"path": sysbench_binary(), "version": sysbench_version()},
        "servers": servers,
        "keyring": keyring_backend_name(),
        "sandbox": {"running": sb.running, "initialized": sb.initialized, "base_dir": sb.base_dir,
                    "port": sb.port, "socket": sb.socket, "flavor": sb.flavor, "version": sb.version},
        "store": db_path(args),
    }
    problems = []
    if not servers:
        problems.append("no mysqld/mariadbd found (apt-get install mariadb-server)")
    if not report["sysbench"]["path"]:
        problems.append("sysbench not found (apt-get install sysbench)")
    if not mysql.connector.HAVE_CEXT:
        problems.append("mysql-connector C extension not active: builtin engine runs in pure Python (slow)")
    if not HAVE_HOT:  # said once, on the engine line (which says why and what to install)
        problems.append(report["engine_loop"])
    report["problems"] = problems
    report["probes"] = _doctor_probes(args, sb.running)
    d = report["driver"]
    lines = [
        f"tunebench   {__version__} (Python {report['python']})",
        f"driver      mysql-connector-python {d['version']}, {d['mode']}",
        f"engine      {report['engine_loop']}",
        f"sysbench    {report['sysbench']['version'] or 'NOT FOUND'} {report['sysbench']['path'] or ''}",
        "servers     " + ("\n            ".join(
            f"{s['name']:<17} {s['path']} ({s['sandbox']}: {'running' if s['running'] else 'stopped'})"
            for s in servers) or "NONE FOUND"),
        f"keyring     {report['keyring']}",
        f"sandbox     {'running' if sb.running else 'stopped'}"
        + (f" {sb.flavor} {sb.version} port {sb.port} socket {sb.socket}" if sb.running else "")
        + f" ({sb.base_dir})",
        f"store       {report['store']}",
        *probe_lines(report["probes"]),
        *(f"PROBLEM     {p}" for p in problems if p != report["engine_loop"]),
    ]
    emit(args, report, "\n".join(lines))
    return 1 if problems else 0


def _doctor_probes(args: argparse.Namespace, sandbox_running: bool) -> dict[str, Any]:
    """Which probes work against the target (the sandbox when it runs); opened and closed, nothing kept."""
    from tunebench.mysql.target import conn_params
    from tunebench.run.monitor import ProbeSampler, build_probes, local_server_pid, status_map
    from tunebench.run.tasks import read_server_facts

    if not args.target and not sandbox_running:
        return {"target": None, "skipped": "no target: start the sandbox or pass --target"}
    try:
        store = open_store(args)
        target = resolve_target(args, store, start_sandbox=False)
        params = conn_params(target, args.transport)  # the probes connect with these (asked for once)
        facts = read_server_facts(target, transport=args.transport, password=params.password)
        info = facts.info
    except TunebenchError as exc:
        return {"target": getattr(args, "target", None) or "sandbox", "error": str(exc)}
    from tunebench.run.tuning import KnobController

    pid, why = local_server_pid(target, info, args.transport)
    journal = KnobController(store, target, info, None).probe_journal()  # what a probe enables is journaled
    sampler = ProbeSampler(build_probes(None, params, target.name, info, pid, None, why, journal=journal), 1.0,
                           lambda _t, _v, _k: None, lambda _k, _p, _m: None)
    try:
        statuses = sampler.open()
    finally:
        sampler.close()
    from tunebench.core.results import tls_text

    return {"target": target.name, "server": f"{info.flavor} {info.version}", "available": status_map(statuses),
            "tls": {**facts.tls, "text": tls_text(facts.tls)}}
