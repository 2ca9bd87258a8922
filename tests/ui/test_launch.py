"""Launching the GUI without a display (no server: not an integration test)."""

import os
import subprocess
import sys


def test_no_display_falls_back_to_the_headless_demo_message():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    code = "from tunebench.ui.launch import has_display; print(has_display())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
