"""Starting the window: `tunebench` (no arguments) or `tunebench gui [--demo] [--screenshot FILE]`.

The demo starts the sandbox when needed, runs oltp_update_index over two short steps with every probe,
flips innodb_flush_log_at_trx_commit 1 -> 2 in the middle of the second step, and (with --screenshot)
renders the whole window to a PNG and quits.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from tunebench.hosts.sandbox import SandboxServer
from tunebench.store.repo import Store
from tunebench.ui.main_window import MainWindow
from tunebench.ui.theme import THEMES, apply_theme

DEMO_WORKLOAD = "oltp_update_index"
DEMO_THREADS = "4,16"
DEMO_STEP_SECONDS = 10


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM") in ("offscreen", "minimal", "vnc"))


def run_gui(store_path: Path, demo: bool = False, screenshot: str | None = None, full_screen: bool = False,
            theme: str | None = None) -> int:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationName("Tunebench")
    store = Store(store_path)
    sandbox = SandboxServer()
    if demo and not sandbox.status().running:
        sys.stderr.write("starting the sandbox server ...\n")
        sandbox.start()
    window = MainWindow(store, sandbox)
    if theme:
        window.theme = THEMES[theme]
        window.dashboard.apply_theme(window.theme)
    apply_theme(app, window.theme)
    if full_screen:
        window.showFullScreen()
    else:
        window.show()
    if demo:
        start_demo(window, screenshot)
    code = app.exec()
    store.close()
    return int(code)


def start_demo(window: MainWindow, screenshot: str | None) -> None:
    if screenshot and not window.isFullScreen():
        window.resize(1600, 1000)  # the README's picture: the same size whatever the last layout was
    w = window.workload
    w.workload.setCurrentText(DEMO_WORKLOAD)
    w.threads.setText(DEMO_THREADS)
    w.step_seconds.setValue(DEMO_STEP_SECONDS)
    w.warmup_seconds.setValue(0)
    w.editors["table_size"].setValue(10000)  # type: ignore[attr-defined]
    flipped = {"done": False}

    def on_event(ev: Any) -> None:
        if ev.kind == "step_start" and ev.label.startswith("step 2") and not flipped["done"]:
            flipped["done"] = True
            QTimer.singleShot(DEMO_STEP_SECONDS * 500, lambda: window.flip_knob("innodb_flush_log_at_trx_commit", "2"))

    def on_finished(result: dict[str, Any]) -> None:
        if screenshot:
            QTimer.singleShot(1200, lambda: save_and_quit(window, screenshot, result))

    window.run_finished.connect(on_finished)
    window.run_started.connect(lambda worker: worker.event.connect(on_event))
    QTimer.singleShot(300, window.run_workload)


def save_and_quit(window: MainWindow, path: str, result: dict[str, Any]) -> None:
    window.dashboard._update_plots()
    window.grab().save(path)
    sys.stderr.write(f"wrote {path} (session {result.get('session_id')}, {result.get('status')})\n")
    window.close()
    app = QApplication.instance()
    if app is not None:
        app.quit()
