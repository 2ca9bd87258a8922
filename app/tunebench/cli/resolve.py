"""What a command's --db and --target name: the session store, and the target (the sandbox started on demand)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tunebench import paths
from tunebench.core.errors import ConfigError


def db_path(args: argparse.Namespace) -> Path:
    return Path(args.db) if args.db else paths.default_db_path()


def open_store(args: argparse.Namespace) -> Any:
    from tunebench.store.repo import Store

    return Store(db_path(args))


def sandbox() -> Any:
    from tunebench.hosts.sandbox import SandboxServer

    return SandboxServer()


def resolve_target(args: argparse.Namespace, store: Any, start_sandbox: bool = True) -> Any:
    from tunebench.core.target import parse_target_url

    name = getattr(args, "target", None) or "sandbox"
    if name == "sandbox":
        sb = sandbox()
        if start_sandbox and not sb.status().running:
            print("starting the sandbox server ...", file=sys.stderr)
            sb.start()
        return sb.target()
    if "://" in name:
        return parse_target_url(name)
    target = store.get_target(name)
    if target is None:
        known = ", ".join(["sandbox", *(t.name for t in store.list_targets())])
        raise ConfigError(f"unknown target {name!r}; known: {known}")
    return target
