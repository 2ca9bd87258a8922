"""`tunebench` with no command (or `gui`): the window, in its own session; without a display, the headless demo."""

from __future__ import annotations

import argparse
import sys

from tunebench.cli.resolve import db_path
from tunebench.core.errors import ConfigError


def cmd_gui(args: argparse.Namespace) -> int:
    from tunebench.ui.launch import check_screenshot_path, has_display, in_own_session, rerun_in_own_session

    if args.screenshot:
        check_screenshot_path(args.screenshot)  # before anything runs (issue 43 item 14)
    plan = getattr(args, "demo_plan", None)
    if plan is not None:
        from tunebench.load.demo_plans import load_plan

        load_plan(plan)  # a bad plan is one line, before any window opens
    asked = [flag for flag, on in (("--replay", args.replay is not None), ("--screenshot", args.screenshot),
                                   ("--stage", args.stage), ("--full-screen", args.full_screen),
                                   ("--demo-plan", plan is not None)) if on]
    if not has_display() and asked:  # the headless demo is what `make run` falls back to, not what these ask
        raise ConfigError(f"no display for {' '.join(asked)} (set DISPLAY, or QT_QPA_PLATFORM=offscreen)")
    if not has_display():
        print("no display: running the headless demo instead (set DISPLAY, or QT_QPA_PLATFORM=offscreen)",
              file=sys.stderr)
        ns = argparse.Namespace(**{**vars(args), "step_seconds": 5})
        return cmd_demo(ns)
    endpoint = getattr(args, "metrics_endpoint", None)
    if not in_own_session():
        if endpoint is not None:  # checked here (a port in use: one line, no window); the window binds it again
            endpoint.close(linger=False)
            args.metrics_endpoint = None
        return rerun_in_own_session(sys.argv[1:])  # Qt is loaded there, not here
    try:
        from tunebench.ui.app import run_gui
    except ImportError as exc:
        raise ConfigError(f"the GUI needs PySide6 and pyqtgraph ({exc}); `make run` installs them") from None
    return run_gui(db_path(args), demo=args.demo, screenshot=args.screenshot, full_screen=args.full_screen,
                   theme=args.theme, replay=args.replay, stage=args.stage, metrics=endpoint, demo_plan=plan)


def cmd_demo(args: argparse.Namespace) -> int:
    """The headless demo (`make run` without a display): sandbox + point selects, both engines."""
    from tunebench.cli.parser import build_parser  # the parser names this command: imported when it runs
    from tunebench.cli.runs import cmd_run

    print("Tunebench headless demo: embedded sandbox, oltp_point_select at 1 and 4 threads, both engines")
    for engine in ("builtin", "sysbench"):
        # Parsed like a typed `run`, so every option the run command grows has its default here too.
        argv = ["run", "--workload", "oltp_point_select", "--threads", "1,4", "--engine", engine,
                "--step-seconds", str(args.step_seconds), "--target", "sandbox"]
        ns = build_parser().parse_args([*(["--db", args.db] if getattr(args, "db", None) else []), *argv])
        ns.metrics_endpoint = getattr(args, "metrics_endpoint", None)  # `gui --metrics-listen` without a display
        print(f"\n=== engine: {engine}")
        rc = cmd_run(ns)
        if rc:
            return rc
    print("\nSessions are in the store: tunebench sessions list")
    return 0
