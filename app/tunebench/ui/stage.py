"""Stage mode: what a speaker projects. Full screen, large fonts and thick lines on the high-contrast
theme, only the chosen plots, the big TPS/p95 readouts, the REPLAY badge when not live, and F1-F8:

    F1-F6  knob presets (settings key stage/presets, "name=value" each; defaults below)
    F7     a marker on the timeline
    F8     replay: play / pause
    H      the hotkey card (also shown for a few seconds on entering)
    Esc    leave stage mode (F12 toggles)

Run and Flip keep working through Ctrl+F5 and Ctrl+F6 while F5 and F6 are presets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget

from tunebench.ui.stage_help import StageHelp
from tunebench.ui.theme import THEMES, apply_theme

if TYPE_CHECKING:
    from tunebench.ui.main_window import MainWindow

DEFAULT_PLOTS = ["TPS", "latency ms", "waits ms/s"]
DEFAULT_PRESETS = ["innodb_flush_log_at_trx_commit=1", "innodb_flush_log_at_trx_commit=2",
                   "innodb_spin_wait_delay=6", "innodb_spin_wait_delay=96",
                   "innodb_thread_concurrency=0", "innodb_thread_concurrency=32"]
FONT_SCALE = 1.8
LINE_SCALE = 2.0


def parse_presets(items: object) -> list[tuple[str, str]]:
    """"name=value" items as QSettings hands them back: a list, or one string when the file has a single
    entry or was edited by hand (`a=1, b=2`)."""
    if items is None:
        return []
    if isinstance(items, str):
        items = items.split(",")
    out = []
    for item in list(items)[:6]:  # type: ignore[call-overload]
        name, sep, value = str(item).partition("=")
        if sep and name.strip() and value.strip():
            out.append((name.strip(), value.strip()))
    return out


def read_presets(settings: QSettings) -> list[tuple[str, str]]:
    return parse_presets(settings.value("stage/presets", DEFAULT_PRESETS))


def write_presets(settings: QSettings, presets: list[tuple[str, str]]) -> None:
    settings.setValue("stage/presets", [f"{n}={v}" for n, v in presets])


class Stage:
    def __init__(self, window: MainWindow):
        self.w = window
        self.on = False
        self._saved: dict[str, Any] = {}
        self.presets = read_presets(window.settings)
        plots = window.settings.value("stage/plots", DEFAULT_PLOTS)
        self.plots = [str(p) for p in (plots if isinstance(plots, list) else [plots])]
        self.actions: list[QAction] = []
        self.help = StageHelp(window)
        for i, (name, value) in enumerate(self.presets):
            self._key(f"F{i + 1}", f"{name} = {value}", self._preset(f"F{i + 1}", name, value))
        self._key("F7", "mark", window.mark)
        self._key("F8", "play/pause", lambda: window.replay_bar.play(not window.replay_bar.play_button.isChecked()))
        self._key("H", "show these keys", self.help.toggle_keys)
        self._key("Esc", "leave stage mode", lambda: self.set(False))
        self.help.set_keys([(a.shortcut().toString(), a.text()) for a in self.actions])

    def _preset(self, key: str, name: str, value: str) -> Any:
        # A slot that takes no arguments: QAction.triggered passes `checked` (False), which a lambda with
        # default arguments (`lambda n=name, v=value: ...`) took as the knob's name ("unknown server
        # variable 'false'").
        def slot() -> None:
            self.help.flash(f"{key}: {name} = {value} …")
            self.w.flip_knob(name, value, on_done=lambda c: self.help.flash(f"{key}: {c['name']} {c['from']} → "
                                                                              f"{c['to']}"),
                             on_failed=lambda m: self.help.flash(f"{key}: {m}"))

        return slot

    def _key(self, key: str, text: str, slot: Any) -> None:
        a = QAction(text, self.w)
        a.setShortcut(QKeySequence(key))
        a.triggered.connect(slot)
        a.setEnabled(False)  # only in stage mode: F5/F6 are Run/Flip otherwise
        self.w.addAction(a)
        self.actions.append(a)

    def toggle(self) -> None:
        self.set(not self.on)

    def set(self, on: bool, full_screen: bool = True) -> None:
        if on == self.on:
            return
        w = self.w
        self.on = on
        if on:
            self._saved = {"state": w.saveState(), "theme": w.theme.name, "font_scale": w.font_scale,
                           "full": w.isFullScreen(), "geometry": w.saveGeometry()}
            w.run_action.setShortcut(QKeySequence("Ctrl+F5"))
            w.flip_action.setShortcut(QKeySequence("Ctrl+F6"))
            for a in self.actions:
                a.setEnabled(True)
            for dock in w.findChildren(QDockWidget):
                dock.hide()
            w.toolbar.hide()
            w.menuBar().hide()
            w.statusBar().hide()
            w.central.tabBar().hide()
            w.central.setCurrentIndex(0)
            self._set_theme("stage")
            w.scale_fonts(FONT_SCALE / w.font_scale)
            w.dashboard.show_only(self.plots, LINE_SCALE)
            if full_screen:
                w.showFullScreen()
            w.show_message("stage mode: " + ", ".join(f"F{i + 1} {n}={v}" for i, (n, v) in enumerate(self.presets))
                           + ", F7 mark, F8 play/pause, H keys, Esc leaves")
            self.help.show_keys()
            return
        self.help.hide()
        for a in self.actions:
            a.setEnabled(False)
        w.run_action.setShortcut(QKeySequence("F5"))
        w.flip_action.setShortcut(QKeySequence("F6"))
        w.toolbar.show()
        w.menuBar().show()
        w.statusBar().show()
        w.central.tabBar().show()
        w.dashboard.show_only(None, 1.0)
        self._set_theme(self._saved.get("theme", "light"))
        w.scale_fonts(self._saved.get("font_scale", 1.0) / w.font_scale)
        if not self._saved.get("full"):
            w.showNormal()
        state = self._saved.get("state")
        if isinstance(state, QByteArray):
            w.restoreState(state)

    def _set_theme(self, name: str) -> None:
        w = self.w
        w.theme = THEMES[name]
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_theme(app, w.theme)
        w.dashboard.apply_theme(w.theme)
        w.compare.apply_theme(w.theme)
