"""Launching the GUI without a display (no server: not an integration test)."""

import glob
import os
import subprocess
import sys

import pytest


def test_no_display_falls_back_to_the_headless_demo_message():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    code = "from tunebench.ui.launch import has_display; print(has_display())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _children(pid: int) -> list[int]:
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.split("/")[2]))
    return out


def _windows(pid: int) -> list[int]:
    """The launcher's children that are the window (`python -m tunebench ... gui`)."""
    out = []
    for child in _children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"tunebench" in argv and b"gui" in argv:
            out.append(child)
    return out


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True



@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_the_window_dies_with_its_launcher(tmp_path, signal_name):
    """Issue 29 item 12: `timeout 180 tunebench gui` killed the launcher and the window (its own session) ran on
    at 100 % CPU."""
    import signal
    import time

    from tests.conftest import ROOT, wait_until

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "TUNEBENCH_HOME": str(tmp_path)}
    env.pop("TUNEBENCH_OWN_SESSION", None)
    launcher = subprocess.Popen([sys.executable, "-m", "tunebench", "--db", str(tmp_path / "s.sqlite"), "gui"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # the window's process, not a passing helper the launcher's imports start (ctypes.util.find_library runs
        # ldconfig: under load the test caught that one, gone a moment later)
        wait_until(lambda: _windows(launcher.pid), 60, "the window's process")
        window = _windows(launcher.pid)[0]
        time.sleep(1.0)  # (the window's Qt start-up under way: the moment does not matter, the outcome does)
        launcher.send_signal(getattr(signal, signal_name))
        launcher.wait(30)
        wait_until(lambda: _gone(window), 30, "the window to end with its launcher")
    finally:
        launcher.kill()
        for child in _children(launcher.pid):
            os.kill(child, signal.SIGKILL)
