"""The window's toolbar, File and Help menus: every action with its shortcut and tooltip."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QAction, QKeySequence

from tunebench.ui.stage import Stage

if TYPE_CHECKING:
    from tunebench.ui.main_window import MainWindow


def action(w: MainWindow, text: str, shortcut: str, slot: Any, tip: str) -> QAction:
    a = QAction(text, w)
    a.setShortcut(QKeySequence(shortcut))
    a.setToolTip(f"{tip} ({shortcut})" if shortcut else tip)
    a.triggered.connect(slot)
    w.addAction(a)
    return a


def build_actions(w: MainWindow) -> None:
    bar = w.addToolBar("Run")
    bar.setObjectName("toolbar-run")
    w.run_action = action(w, "Run", "F5", w.run_workload, "Run the workload over its steps")
    w.stop_action = action(w, "Stop", "Shift+F5", w.stop_run, "Stop the run (knobs are put back)")
    w.flip_action = action(w, "Flip knob", "F6", w.flip_favourite,
                          "Flip innodb_flush_log_at_trx_commit between its presets")
    w.mark_action = action(w, "Mark", "M", w.mark, "Put a marker on the timeline")
    w.full_action = action(w, "Full screen", "F11", w.toggle_full_screen, "Presentation mode")
    w.theme_action = action(w, "Dark/Light", "Ctrl+T", w.toggle_theme, "Switch theme")
    w.bigger_action = action(w, "A+", "Ctrl+=", lambda: w.scale_fonts(1.15), "Bigger fonts")
    w.smaller_action = action(w, "A-", "Ctrl+-", lambda: w.scale_fonts(1 / 1.15), "Smaller fonts")
    w.stage_action = action(w, "Stage", "F12", lambda: w.stage.toggle(), "Stage mode: full screen, "  # noqa: PLW0108 (made below)
                           "big, high contrast, chosen plots, F1-F8 hotkeys (Esc leaves)")
    w.live_action = action(w, "Live", "Ctrl+L", w.show_live, "Back to the live view")
    for a in (w.run_action, w.stop_action, w.flip_action, w.mark_action, w.full_action,
              w.stage_action, w.live_action, w.theme_action, w.bigger_action, w.smaller_action):
        bar.addAction(a)
    w.toolbar = bar
    menu = w.menuBar().addMenu("&File")
    for text, shortcut, slot in (("Export plots as PNG…", "Ctrl+Shift+P", lambda: w.export_view("png")),
                                 ("Export plots as SVG…", "Ctrl+Shift+S", lambda: w.export_view("svg")),
                                 ("Export plotted series as CSV…", "Ctrl+Shift+C", lambda: w.export_view("csv")),
                                 ("Markdown report of the session…", "Ctrl+Shift+R", lambda: w.export_view("md")),
                                 ):
        menu.addAction(action(w, text, shortcut, slot, text.rstrip("…")))
    # Exports hold the whole session; this asks for what the plots show instead (the file says which)
    w.visible_only_action = action(w, "Export the visible range only", "", lambda: None,
                                   "Exports hold only the time range the plots show, not the whole session")
    w.visible_only_action.setCheckable(True)
    menu.addAction(w.visible_only_action)
    menu.addSeparator()
    w.import_action = action(w, "Import session file…", "Ctrl+I", w.sessions.import_files, "Import session file")
    menu.addAction(w.import_action)
    menu.addAction(action(w, "Sessions", "Ctrl+O", lambda: w.central.setCurrentIndex(1), "Sessions"))
    history = action(w, "History", "Ctrl+H", w.show_history,
                     "Each experiment's sessions over time, with the change points found in them")
    menu.addAction(history)
    w.addAction(history)  # one key away on stage too, where the menus are hidden
    menu.addSeparator()
    w.quit_action = action(w, "Quit", "Ctrl+Q", w.close, "Quit Tunebench (a run is stopped, knobs put back)")
    menu.addAction(w.quit_action)
    w.stage = Stage(w)
    build_view_menu(w)
    build_demo_menu(w)
    help_menu = w.menuBar().addMenu("&Help")
    help_menu.addAction(action(w, "Keyboard shortcuts", "Ctrl+/", w.show_shortcuts, "Every action's key"))
    help_menu.addAction(action(w, "About Tunebench", "Ctrl+F1", w.show_about, "Versions, for a bug report"))


def build_view_menu(w: MainWindow) -> None:
    """View: the compact layout (a projector's: one tabbed side column) and which plots the dashboard shows
    (kept in the settings; fewer plots rather than all of them squeezed on a small screen)."""
    view = w.menuBar().addMenu("&View")
    w.compact_action = action(w, "Compact layout", "Ctrl+Shift+L", lambda on: w.room.set_compact(bool(on)),
                              "The side panels as tabs in one column: the dashboard keeps most of the width")
    w.compact_action.setCheckable(True)
    view.addAction(w.compact_action)
    plots = view.addMenu("Plots")
    saved = w.settings.value("plots")
    chosen = None if saved is None else [str(t) for t in (saved if isinstance(saved, list) else [saved])]
    w.plot_actions = []

    def changed() -> None:
        titles = [a.text() for a in w.plot_actions if a.isChecked()]
        if not titles:  # never none at all: the last one stays
            w.plot_actions[0].setChecked(True)
            titles = [w.plot_actions[0].text()]
        every = len(titles) == len(w.plot_actions)
        w.dashboard.choose(None if every else titles)
        w.settings.setValue("plots", titles)

    for panel in w.dashboard.panels:
        a = QAction(panel.title, w)
        a.setCheckable(True)
        a.setChecked(chosen is None or panel.title in chosen)
        a.toggled.connect(lambda _on: changed())
        plots.addAction(a)
        w.plot_actions.append(a)
    if chosen is not None and any(a.isChecked() for a in w.plot_actions):
        w.dashboard.choose([a.text() for a in w.plot_actions if a.isChecked()])


def build_demo_menu(w: MainWindow) -> None:
    """Demo: run a plan (a TOML file: what happens when), rehearse it over a recording at 10x, and while one
    runs Space pauses or resumes it and N runs its next step now (enabled only then: Space is the form's
    otherwise)."""
    menu = w.menuBar().addMenu("&Demo")
    menu.addAction(action(w, "Run demo plan…", "", w.run_demo_plan, "A plan file: the load, flips and captions "
                                                                       "at their seconds, hands-free"))
    menu.addAction(action(w, "Rehearse demo plan over a session…", "", w.rehearse_demo_plan,
                          "The plan over a recorded session at 10x: nothing is done to a server"))
    w.demo_pause_action = action(w, "Pause / resume the demo", "Space", w.demo.toggle_pause,
                                 "Pause the plan's clock, or resume it")
    w.demo_next_action = action(w, "Next demo step now", "N", w.demo.skip, "Run the plan's next step now")
    w.demo_stop_action = action(w, "Stop the demo plan", "", lambda: w.demo.stop("stopped by the speaker"),
                                "Stop the plan (the load it started keeps running: Stop stops it)")
    for a in (w.demo_pause_action, w.demo_next_action, w.demo_stop_action):
        a.setEnabled(False)
        menu.addAction(a)

    def running(on: bool) -> None:
        for a in (w.demo_pause_action, w.demo_next_action, w.demo_stop_action):
            a.setEnabled(on)

    w.demo.line.connect(lambda text: running(w.demo.running))
    w.demo.finished.connect(lambda _why: running(False))
