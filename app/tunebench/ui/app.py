"""Starting the window: `tunebench` (no arguments) or `tunebench gui [--demo] [--screenshot FILE]`.

The demo starts the sandbox when needed, runs oltp_update_index over two short steps with every probe,
flips innodb_flush_log_at_trx_commit 1 -> 2 in the middle of the second step, and (with --screenshot)
renders the whole window to a PNG and quits.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from tunebench.core.errors import ConfigError, TunebenchError
from tunebench.hosts.sandbox import SandboxServer
from tunebench.run.records import RunOutcome
from tunebench.store.repo import Store
from tunebench.ui.launch import (  # noqa: F401
    OWN_SESSION_ENV,
    check_screenshot_path,
    has_display,
    in_own_session,
    rerun_in_own_session,
)
from tunebench.ui.main_window import MainWindow
from tunebench.ui.theme import THEMES
from tunebench.ui.window_settings import fit_to_screen

DEMO_WORKLOAD = "oltp_update_index"
DEMO_THREADS = "4,16"
DEMO_STEP_SECONDS = 16  # the flip mid-step leaves 8 s after it: 3 s to settle and 5 for the A/B verdict


def favour_the_window() -> bool:
    """Ask the scheduler for a larger CPU share for the window's own session, when the OS allows it.

    The run, the server and the window are separate autogroups; under a saturating load each gets an
    equal share, which is plenty for the window on average but not in every 10 ms: stalls of a second were
    measured. A lower autogroup nice value needs CAP_SYS_NICE (root); without it nothing changes. Only
    done in a session of our own (it would otherwise change the whole terminal session). The load
    generator and the server keep equal weights between them.
    """
    if os.getsid(0) != os.getpid():
        return False
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("-20")
    except OSError:
        return False
    return True


def settle_heap() -> None:
    """Move everything built at start-up (modules, widgets, plots) out of the collector's sight.

    A full collection walks every object the process holds; with Qt, pyqtgraph and numpy loaded that took
    30-60 ms on the GUI thread, long enough to be seen as a stall. Frozen objects are never walked again.
    """
    gc.collect()
    gc.freeze()


def report_slot_errors(window: MainWindow) -> None:
    """An exception in a slot is a bug: Qt would only print it and carry on, so a panel could wait forever
    with nobody told. Its traceback still goes to stderr; the window also says so, in one line."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        previous(kind, exc, tb)
        if isinstance(exc, TunebenchError):
            window.show_message(str(exc))
        else:
            window.show_message(f"unexpected error ({kind.__name__}: {exc}); please report it with the traceback "
                                "on stderr")

    sys.excepthook = hook


def run_gui(store_path: Path | str, demo: bool = False, screenshot: str | None = None, full_screen: bool = False,
            theme: str | None = None, replay: int | None = None, stage: bool = False, metrics: Any = None,
            demo_plan: str | None = None) -> int:
    if demo_plan is not None and (demo or screenshot):
        raise ConfigError("--demo-plan runs the plan's own load: not with --demo or --screenshot")
    if screenshot and not (demo or replay is not None):
        raise ConfigError("--screenshot needs --demo or --replay SESSION")
    if demo and replay is not None:
        raise ConfigError("--demo runs a new session; --replay opens a recorded one: choose one")
    if screenshot:
        check_screenshot_path(screenshot)
    store = Store(store_path)
    if replay is not None:
        store.get_session(replay, events=False)  # no such session: one clear error, before any window
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationName("Tunebench")
    favour_the_window()
    sandbox = SandboxServer()
    if demo and not sandbox.status().running:
        sys.stderr.write("starting the sandbox server ...\n")
        sandbox.start()
    window = MainWindow(store, sandbox)
    window.controller.metrics = metrics  # `--metrics-listen`: the endpoint main() bound, fed by every run
    report_slot_errors(window)
    if screenshot and not theme and not stage:
        theme = "light"  # a reproducible picture, whatever the last session chose
    if theme:
        window.set_appearance(THEMES[theme], 1.0 if screenshot else window.font_scale)
    # a projector's width (or a picture's): one tabbed side column below 1,500 px, the dashboard keeping most of
    # it -- before the size is fitted to the screen, which the side-by-side docks' minimum width would overrule
    # (a window narrower than the screen -- a size kept from a projector -- counts by its own width)
    screen = window.screen()
    window.room.fit(window.width() if screenshot or screen is None
                    else min(window.width(), screen.availableGeometry().width()))
    if full_screen:
        window.showFullScreen()
    else:
        if not screenshot:  # a picture's size is its own; on screen the window fits the screen it opens on
            fit_to_screen(window)
        window.show()
    settle_heap()
    if os.environ.get("TUNEBENCH_STARTUP_TIME"):
        QTimer.singleShot(0, report_startup)  # runs once the shown window has had its first paint
    if not (demo or replay is not None or screenshot or demo_plan):
        window.maybe_welcome()  # first start, empty store
    if demo:
        start_demo(window, screenshot)
    if demo_plan is not None:  # live, or rehearsed over --replay's recording at 10x
        if stage:
            window.stage.set(True)
        if replay is not None:
            QTimer.singleShot(300, lambda: window.rehearse_demo_plan(demo_plan, replay))
        else:
            QTimer.singleShot(300, lambda: window.run_demo_plan(demo_plan))
    elif replay is not None:
        start_replay(window, replay, stage, screenshot)
    elif stage:
        window.stage.set(True, full_screen=not screenshot)  # live on stage: the keys work from the start
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

    def on_finished(outcome: RunOutcome) -> None:
        if screenshot:
            QTimer.singleShot(1200, lambda: save_and_quit(window, screenshot, outcome.session_id, outcome.status))

    window.run_finished.connect(on_finished)
    window.run_started.connect(lambda worker: worker.timeline_event.connect(on_event))
    QTimer.singleShot(300, window.run_workload)


def seconds_since_process_start() -> float:
    """From the kernel's start time of this process (so the interpreter's and the bundle's own start-up count)."""
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def report_startup() -> None:
    import time

    sys.stderr.write(f"startup: window painted {seconds_since_process_start():.2f} s after its process started "
                     f"(epoch {time.time():.3f})\n")


def start_replay(window: MainWindow, session_id: int, stage: bool, screenshot: str | None) -> None:
    """The recorded session in the dashboard; with a screenshot, as it ended, then quit."""
    if screenshot:
        window.resize(1920, 1080) if stage else window.resize(1600, 1000)
    window.open_replay(session_id)
    if stage:
        window.stage.set(True, full_screen=not screenshot)
        if screenshot:
            window.stage.help.hide()  # the picture is of the plots; the hotkey card shows on entering otherwise
    if screenshot:
        window.replay_bar.seek(window.replay_timeline.end)
        QTimer.singleShot(800, lambda: save_and_quit(window, screenshot, session_id, "replayed"))


def save_and_quit(window: MainWindow, path: str, session_id: int | None, status: str) -> None:
    window.dashboard.redraw()
    saved = window.grab().save(path)
    if saved:
        sys.stderr.write(f"wrote {path} (session {session_id}, {status})\n")
    else:
        sys.stderr.write(f"tunebench: error: could not write {path} (session {session_id}, {status})\n")
    window.close()
    app = QApplication.instance()
    if app is not None:
        app.exit(0 if saved else 2)
