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
    menu.addSeparator()
    w.quit_action = action(w, "Quit", "Ctrl+Q", w.close, "Quit Tunebench (a run is stopped, knobs put back)")
    menu.addAction(w.quit_action)
    w.stage = Stage(w)
    help_menu = w.menuBar().addMenu("&Help")
    help_menu.addAction(action(w, "Keyboard shortcuts", "Ctrl+/", w.show_shortcuts, "Every action's key"))
    help_menu.addAction(action(w, "About Tunebench", "Ctrl+F1", w.show_about, "Versions, for a bug report"))
