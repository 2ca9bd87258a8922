"""The `tunebench` command: the headless contract scripts and CI use (every command has --json).

parser builds the command line; each command lives with its kind (runs, targets, doctor, sessions, journal,
gui); output formats what they print and maps a run's end to the exit status."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from tunebench.cli.journal import auto_restore
from tunebench.cli.parser import build_parser
from tunebench.core.display import inert_text
from tunebench.core.errors import TunebenchError

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        args = parser.parse_args([*(sys.argv[1:] if argv is None else argv), "gui"])
    endpoint = None
    try:
        # before anything runs or changes: an address that cannot be bound is one line
        endpoint = metrics_endpoint(args)
        # `sandbox start` restores after the server is up (see cmd_sandbox)
        auto_restore(args, knobs=args.command not in ("restore", "doctor", "sandbox", "live"))
        return int(args.func(args) or 0)
    except TunebenchError as exc:
        print(f"tunebench: error: {inert_text(str(exc))}", file=sys.stderr)  # it may quote a file's bytes
        return exc.exit_code
    except KeyboardInterrupt:
        print("tunebench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `tunebench ... --json | head`: the reader has all it wanted (issue 43 item 18)
        with contextlib.suppress(OSError, ValueError, AttributeError):  # (a captured stdout has no descriptor)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush writes nowhere
        return 141  # as a shell reports a command ended by SIGPIPE
    finally:
        if endpoint is not None:
            endpoint.close()


def metrics_endpoint(args: Any) -> Any:
    """`--metrics-listen`'s endpoint, listening (kept in args for the command), or None when not asked for."""
    listen = getattr(args, "metrics_listen", None)
    if getattr(args, "metrics_token_file", None) and not listen:
        from tunebench.core.errors import ConfigError

        raise ConfigError("--metrics-token-file goes with --metrics-listen HOST:PORT")
    if not listen or getattr(args, "metrics_endpoint", None) is not None:
        return None
    from tunebench.run.metrics_endpoint import MetricsEndpoint

    endpoint = MetricsEndpoint(listen, getattr(args, "metrics_token_file", None))
    args.metrics_endpoint = endpoint
    print(f"live metrics: {endpoint.url}", file=sys.stderr, flush=True)
    if endpoint.warning:
        print(f"warning: {endpoint.warning}", file=sys.stderr, flush=True)
    return endpoint
