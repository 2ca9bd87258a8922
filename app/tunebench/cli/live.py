"""`tunebench live`: a running run's knobs from another terminal, through its control socket (run/confirm.py).

`live flip NAME=VALUE` changes a dynamic knob as the window's knob panel does (journaled, marked, judged at the
step's end as a single flip); `live confirm [NAME[=A,B]]` alternates the last flip's two values (or A and B) in
ABBA BAAB blocks on the running load and prints the replicated verdict when it comes."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tunebench.cli.output import emit
from tunebench.core.errors import ConfigError


def _name_values(text: str | None) -> tuple[str | None, list[str] | None]:
    if not text:
        return None, None
    name, eq, rest = text.partition("=")
    name = name.strip()
    if not name:
        raise ConfigError(f"a knob is NAME, NAME=VALUE or NAME=A,B, got {text!r}")
    if not eq:
        return name, None
    return name, [v.strip() for v in rest.split(",")]


def cmd_live(args: argparse.Namespace) -> int:
    from tunebench.run.confirm import control_request

    name, values = _name_values(args.knob)
    if args.action == "flip":
        if name is None or values is None or len(values) != 1 or not values[0]:
            raise ConfigError("live flip takes NAME=VALUE (one value)")
        reply = control_request({"flip": {"name": name, "value": values[0]}}, args.pid)
        text = f"{reply['name']} {reply['from']} → {reply['to']}" + (f"\n{reply['outlook']}" if reply.get("outlook")
                                                                        else "")
        emit(args, reply, text)
        return 0
    if values is not None and (len(values) != 2 or not all(values)):
        raise ConfigError("live confirm takes NAME=A,B (two values), NAME (its last flip) or nothing (the last flip)")
    request: dict[str, Any] = {"name": name, "values": values, "block_seconds": args.block_seconds,
                               "settle_seconds": args.settle_seconds}
    plan = control_request({"confirm": request}, args.pid)
    if not args.json:
        print(plan["text"], file=sys.stderr if args.wait else sys.stdout, flush=True)
    if not args.wait:
        if args.json:
            emit(args, plan, "")
        return 0
    done = control_request({"await": {}}, args.pid)
    emit(args, done, str(done.get("verdict") or "the confirmation ended without a verdict"))
    return 0 if done.get("data") else 1
