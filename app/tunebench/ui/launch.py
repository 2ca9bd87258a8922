"""Before Qt: is there a display, and is this process the leader of its own session (see favour_the_window
in app.py)? Kept free of Qt imports so the launcher that re-executes itself does not load Qt twice."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from tunebench.core.errors import ConfigError


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM") in ("offscreen", "minimal", "vnc"))


OWN_SESSION_ENV = "TUNEBENCH_OWN_SESSION"


def in_own_session() -> bool:
    return os.getsid(0) == os.getpid() or os.environ.get(OWN_SESSION_ENV) == "1"


def rerun_in_own_session(args: list[str]) -> int:
    """Run `python -m tunebench ARGS` as the leader of a new session and wait for it.

    The window then has a scheduler autogroup of its own (see favour_the_window), which disappears with
    it: the terminal's session is never touched. Ctrl-C here stops the window there.
    """
    from tunebench.hosts.runner import die_with_us

    env = {**os.environ, OWN_SESSION_ENV: "1"}
    me = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "tunebench"]  # the bundle
    # The window dies with its launcher: SIGTERM/SIGHUP here are passed on (`timeout 180 tunebench gui` ends it),
    # and a launcher killed outright takes it along (the kernel sends it SIGTERM: its run puts knobs back).
    proc = subprocess.Popen([*me, *args], env=env, start_new_session=True,
                            preexec_fn=die_with_us(signal.SIGTERM))  # noqa: PLW1509 - one prctl call

    def pass_on(sig: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, pass_on)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        return proc.wait()


def check_screenshot_path(path: str) -> None:
    """Before any window: a picture that could not be written is said now, not after the run (issue 43 item 14:
    `--screenshot /nonexistent/x.png` printed "wrote" and exited 0)."""
    target = Path(path)
    if target.suffix.lower() != ".png":
        raise ConfigError(f"--screenshot {path}: the picture is a PNG file (FILE.png)")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ConfigError(f"--screenshot {path}: no folder {folder}")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ConfigError(f"--screenshot {path}: cannot write there")
