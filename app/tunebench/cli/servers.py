"""`tunebench servers list|add|fetch|remove`: the servers Tunebench can sandbox (the system's, kits from
Debian's archive, basedirs and tarballs a user added)."""

from __future__ import annotations

import argparse
from typing import Any

from tunebench.cli.output import emit
from tunebench.core.errors import ConfigError


def _row(server: Any) -> dict[str, Any]:
    from tunebench.hosts.sandbox import SandboxServer

    sb = SandboxServer.for_server(server)
    st = sb.status()
    return {**server.to_dict(), "sandbox": {"target": sb.target_name, "running": st.running, "port": st.port,
                                            "datadir": st.datadir}}


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no servers: apt-get install mariadb-server, or tunebench servers fetch mysql"
    lines = [f"{'name':<18} {'flavor':<8} {'version':<9} {'sandbox':<9} source"]
    for r in rows:
        state = "running" if r["sandbox"]["running"] else "-"
        lines.append(f"{r['name']:<18} {r['flavor']:<8} {r['version']:<9} {state:<9} {r['source']}")
        lines.append(f"{'':<18} {r['path']}")
    return "\n".join(lines)


def cmd_servers(args: argparse.Namespace) -> int:
    from tunebench.hosts import kits

    if args.action == "list":
        rows = [_row(s) for s in kits.list_servers()]
        emit(args, rows, _table(rows))
        return 0
    if not args.what:
        raise ConfigError(f"servers {args.action} needs " + {"add": "a basedir or tarball", "fetch":
                          f"a kit: {' or '.join(kits.FETCHABLE)}", "remove": "a server's name"}[args.action])
    if args.action == "fetch":
        from tunebench.cli.progress import ProgressBar

        bar = ProgressBar()
        try:
            server, fresh = kits.fetch(args.what, bar, refresh=args.refresh)  # type: ignore[arg-type]
        finally:
            bar.end()
        emit(args, {**server.to_dict(), "fetched": fresh},
             f"{'fetched' if fresh else 'already here'}: {server.name} ({server.source})\n  {server.path}")
        return 0
    if args.action == "add":
        server = kits.add(args.what, args.name)
        emit(args, server.to_dict(), f"added {server.name}: {server.flavor} {server.version} at {server.path}")
        return 0
    server = kits.remove(args.what)
    from tunebench.hosts.sandbox import SandboxServer

    sb = SandboxServer.for_server(server)
    if sb.status().running:
        sb.stop()
    emit(args, server.to_dict(), f"removed {server.name} (its sandbox's datadir is kept: {sb.base})")
    return 0
