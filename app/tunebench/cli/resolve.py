"""What a command's --db and --target name: the session store, and the target (the sandbox started on demand)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from tunebench import paths
from tunebench.core.errors import ConfigError

DB_ENV = "TUNEBENCH_DB"


def db_path(args: argparse.Namespace) -> str:
    """The session store --db names (else $TUNEBENCH_DB, else the file under the user data dir): a file path, or
    a server database's URL (store/location.py)."""
    return getattr(args, "db", None) or os.environ.get(DB_ENV) or str(paths.default_db_path())


def open_store(args: argparse.Namespace) -> Any:
    from tunebench.store.repo import Store

    return Store(db_path(args))


def sandbox(args: argparse.Namespace | None = None, name: str | None = None) -> Any:
    """The sandbox of `--server NAME` (a unique prefix is enough), else the default one."""
    from tunebench.hosts.sandbox import SandboxServer

    return SandboxServer.named(name or (getattr(args, "server", None) if args is not None else None))


def resolve_target(args: argparse.Namespace, store: Any, start_sandbox: bool = True) -> Any:
    from tunebench.core.target import parse_target_url

    server = getattr(args, "server", None)
    name = getattr(args, "target", None) or "sandbox"
    if server and name != "sandbox":
        raise ConfigError("--server names a sandbox; it goes without --target (or with --target sandbox)")
    if name == "sandbox" or name.startswith("sandbox:"):
        sb = sandbox(name=server or name.partition(":")[2] or None)
        if start_sandbox and not sb.status().running:
            print(f"starting the {sb.target_name} server ...", file=sys.stderr)
            sb.start()
        return sb.target()
    if "://" in name:
        return parse_target_url(name)
    target = store.get_target(name)
    if target is None:
        known = ", ".join(["sandbox", *(t.name for t in store.list_targets())])
        raise ConfigError(f"unknown target {name!r}; known: {known}")
    return target
