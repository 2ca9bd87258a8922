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

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QEvent, QObject, QRect, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget

from tunebench.core.display import rate_text
from tunebench.ui.knee_plot import KneePlot
from tunebench.ui.stage_help import FLASH_MS, StageHelp
from tunebench.ui.theme import THEMES
from tunebench.ui.window_room import ResizeWatch

if TYPE_CHECKING:
    from tunebench.ui.main_window import MainWindow

DEFAULT_PLOTS = ["TPS", "latency ms", "waits ms/s"]
NO_VERDICT_MS = 8000  # a flip that gets no verdict says why long enough to be read out
DEFAULT_PRESETS = ["innodb_flush_log_at_trx_commit=1", "innodb_flush_log_at_trx_commit=2",
                   "innodb_spin_wait_delay=6", "innodb_spin_wait_delay=96",
                   "innodb_thread_concurrency=0", "innodb_thread_concurrency=32"]
FONT_SCALE = 1.8
LINE_SCALE = 2.0
# Every text on stage is at least 1/TEXT_SHARE of the screen's height (its em, in pixels): 24 px on a 1080-line
# screen, 17 on 768, 16 on 720 -- read from the back of a hall. The plots' base text (ticks, legends, marker
# labels: 9 pt times the stage's font scale) is at least that; texts that shrink to fit (readouts, titles, the
# tune line) stop there and are elided instead; the cards' smallest text is that.
TEXT_SHARE = 45


def text_floor_px(screen_height: int) -> float:
    return screen_height / TEXT_SHARE


# pairs of values per knob, in the order the default presets take them from the knobs the server has
PRESET_PAIRS = [("innodb_flush_log_at_trx_commit", "1", "2"), ("innodb_spin_wait_delay", "6", "96"),
                ("innodb_thread_concurrency", "0", "32"), ("innodb_adaptive_hash_index", "OFF", "ON"),
                ("innodb_io_capacity", "200", "2000"), ("sync_binlog", "0", "1")]


def default_presets(server: set[str]) -> list[tuple[str, str]]:
    """Three knobs the server has, two values each (F1-F6)."""
    out: list[tuple[str, str]] = []
    for name, a, b in PRESET_PAIRS:
        if name in server and len(out) < 6:
            out += [(name, a), (name, b)]
    return out


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


class Stage(QObject):
    def __init__(self, window: MainWindow):
        super().__init__(window)
        self.w = window
        # dock state and geometry to restore once the size is back, and how many more times to try
        self._pending: tuple[QByteArray | None, QRect, int] | None = None
        self.on = False
        self.scale = FONT_SCALE  # the stage's font scale (from the screen's height, at least FONT_SCALE)
        self._floor_for = 0  # the height the texts' floor was set for
        self._watch = ResizeWatch(self._on_window_resized)
        window.installEventFilter(self._watch)
        self._saved: dict[str, Any] = {}
        self.presets = read_presets(window.settings)
        plots = window.settings.value("stage/plots", DEFAULT_PLOTS)
        self.plots = [str(p) for p in (plots if isinstance(plots, list) else [plots])]
        self.actions: list[QAction] = []
        self.help = StageHelp(window)
        # K: a rate sweep's latency against rate, large over the plots (the sweep results dock is hidden on stage)
        self.knee = KneePlot(THEMES["stage"])
        self.knee.setParent(window.central)
        self.knee.hide()
        window.central.installEventFilter(self)
        self.preset_actions: list[QAction] = []
        self._custom = window.settings.value("stage/presets") is not None  # the user's own: kept as they are
        self._key("F7", "mark", window.mark)
        self._key("F8", "play/pause", lambda: window.replay_bar.play(not window.replay_bar.play_button.isChecked()))
        self._key("PgUp", "open loop: rate x2", lambda: self._step_rate(2.0))
        self._key("PgDown", "open loop: rate /2", lambda: self._step_rate(0.5))
        self._key("K", "a rate sweep's p99 against rate (the knees)", self.toggle_knee)
        self._key("C", "confirm the last flip (ABBA BAAB)", self._confirm)
        self._key("H", "show these keys (or dismiss a verdict)", self.help.toggle_keys)
        self._key("Esc", "leave stage mode", lambda: self.set(False))
        self._build_presets()
        window.controller.facts.connect(lambda _name, facts: self.set_server_variables(facts.variables))
        self._head: float | None = None  # the replay's play head, as last moved
        self._told = ""  # the keys line last put in the Events
        window.replay_bar.moved.connect(self._on_moved)

    def toggle_knee(self) -> None:
        """K on stage: the sweep's p99 against rate (live, or the replay's up to its head) over the plots, or away."""
        if self.knee.isVisible():
            self.knee.hide()
            return
        knee = self.w.sweep_results.model.tables().get("knee")
        if not knee:
            self.help.flash("K shows a sweep over rates: p99 against rate and each knee (none on screen)")
            return
        self.knee.apply_theme(self.w.theme)
        self.knee.set_points(9 * self.scale)  # the stage's sizes: its ticks and legend as the plots' below
        self.knee.show_curves({c["label"]: {"points": c["points"], "knee": c["knee"],
                                            "slo_p99_ms": knee.get("slo_p99_ms")} for c in knee["configs"]})
        self.knee.setGeometry(self.w.central.rect())
        self.knee.show()
        self.knee.raise_()

    def _confirm(self) -> None:
        self.help.flash("C: confirming the last flip …")
        self.w.confirm_flip(on_done=lambda c: self.help.flash(f"C: {c['text']}; the verdict comes at its end",
                                                               NO_VERDICT_MS),
                            on_failed=lambda m: self.help.flash(f"C: {m}"))

    def _step_rate(self, factor: float) -> None:
        self.w.step_rate(factor, on_done=lambda c: self.help.flash(f"rate {c['group']} {rate_text(c['from'])} → "
                                                                   f"{rate_text(c['to'])}/s"),
                         on_failed=self.help.flash)

    def set_server_variables(self, variables: Any) -> None:
        """The current server's variables: the default presets are made of knobs it has (MariaDB has no
        innodb_thread_concurrency), and a preset of the user's for a knob it lacks is off and left off the card."""
        names = {str(n).lower() for n in variables}
        if not self._custom:
            self.presets = default_presets(names)
        self._build_presets(names)

    def _build_presets(self, server: set[str] | None = None) -> None:
        for a in self.preset_actions:
            self.w.removeAction(a)
            self.actions.remove(a)
        self.preset_actions = []
        for i, (name, value) in enumerate(self.presets):
            if server is not None and name.lower() not in server:
                continue
            a = self._key(f"F{i + 1}", f"{name} = {value}", self._preset(f"F{i + 1}", name, value))
            self.preset_actions.append(a)
        fixed = [a for a in self.actions if a not in self.preset_actions]
        self.actions = [*self.preset_actions, *fixed]  # F1-F6 first on the card, then F7, F8, H, Esc
        self.help.set_keys([(a.shortcut().toString(), a.text()) for a in self.actions])

    def _preset(self, key: str, name: str, value: str) -> Any:
        # A slot that takes no arguments: QAction.triggered passes `checked` (False), which a lambda with
        # default arguments (`lambda n=name, v=value: ...`) took as the knob's name ("unknown server
        # variable 'false'").
        def slot() -> None:
            self.help.flash(f"{key}: {name} = {value} …")
            self.w.flip_knob(name, value, on_done=lambda c: self.help.flash(
                f"{key}: {c['name']} {c['from']} → {c['to']}" + (f"\n{c['outlook']}" if c.get("outlook") else ""),
                NO_VERDICT_MS if c.get("outlook") and c.get("verdict_in") is None else FLASH_MS),
                             on_failed=lambda m: self.help.flash(f"{key}: {m}"))

        return slot

    def _on_moved(self, x: float) -> None:
        """A replay played past the moment a flip's verdict was known (its step's end, the verdict event's time,
        where its marker appears): its verdict, big, as live shows it when it arrives -- not at the change itself,
        which showed it before the play head reached it (seeking backwards or jumping more than a minute ahead
        shows nothing)."""
        before, self._head = self._head, x
        session, t0 = self.w.controller.replay_session, self.w.replay_timeline.t0
        if not self.on or session is None or t0 is None or before is None or not 0 < x - before <= 60:
            return
        crossed = [e for e in session["events"] if e["kind"] == "verdict" and before < float(e["t"]) - t0 <= x]
        if crossed:
            self.help.show_verdict(crossed[-1]["data"])

    def _key(self, key: str, text: str, slot: Any) -> QAction:
        a = QAction(text, self.w)
        a.setShortcut(QKeySequence(key))
        a.triggered.connect(slot)
        a.setEnabled(self.on)  # only in stage mode: F5/F6 are Run/Flip otherwise
        self.w.addAction(a)
        self.actions.append(a)
        return a

    def toggle(self) -> None:
        self.set(not self.on)

    def _apply_floor(self, height: int) -> None:
        """The stage's text sizes for a screen `height` px high: the smallest text 1/TEXT_SHARE of it, the
        plots' base text at least that (FONT_SCALE at least), the cards' smallest that."""
        if height <= 0 or height == self._floor_for:
            return
        self._floor_for = height
        w = self.w
        floor_px = text_floor_px(height)
        px_per_point = w.logicalDpiY() / 72
        self.scale = max(FONT_SCALE, 1.02 * floor_px / (9 * px_per_point))  # the plots' 9-pt base text
        w.set_appearance(THEMES["stage"], self.scale)
        w.dashboard.set_text_floor(floor_px / px_per_point)
        self.help.set_sizes(floor_px)
        if self.help.strip is not None:
            self.help.strip.setFixedHeight(self.help.reserve())

    def _on_window_resized(self) -> None:
        """Full screen, the window is the screen: its height (known once the window system has made it full
        screen) sets the texts' floor. Not a window of another size: the fonts set its minimum size, and following
        its height fed back (a --replay --stage window resized itself without end and never painted)."""
        if self.on and self.w.isFullScreen():
            self._apply_floor(self.w.height())

    def set(self, on: bool, full_screen: bool = True) -> None:
        """Enter or leave stage mode. A view state: leaving puts back exactly what entering found (theme and
        font scale through the window's one appearance function, geometry, full screen or not, docks)."""
        if on == self.on:
            return
        w = self.w
        self.on = on
        if on:
            self._saved = {"state": w.saveState(), "geometry": w.geometry(), "theme": w.theme.name,
                           "font_scale": w.font_scale, "window_state": w.windowState(),
                           "tab": w.central.currentIndex()}
            w.run_action.setShortcut(QKeySequence("Ctrl+F5"))
            w.flip_action.setShortcut(QKeySequence("Ctrl+F6"))
            for a in self.actions:
                a.setEnabled(True)
            # PySide6's stub does not tie findChildren's result to the type passed: the annotation does
            docks: Iterable[QDockWidget] = w.findChildren(QDockWidget)
            for dock in docks:
                dock.hide()
            w.toolbar.hide()
            w.menuBar().hide()
            w.statusBar().hide()
            w.central.tabBar().hide()
            w.central.setCurrentIndex(0)
            w.dashboard.show_only(self.plots, LINE_SCALE)
            screen = w.screen()
            self._apply_floor(screen.geometry().height() if full_screen and screen is not None else w.height())
            w.dashboard.crosshair.set_enabled(False)
            w.dashboard.card_strip.show()
            self.help.attach(w.dashboard.card_strip)
            w.update_tune_readout()  # during a tune: the best so far, large
            if full_screen:
                w.showFullScreen()
            keys = ("stage mode: " + ", ".join(f"F{i + 1} {n}={v}" for i, (n, v) in enumerate(self.presets))
                    + ", F7 mark, F8 play/pause, H keys, Esc leaves")
            if keys != self._told:  # the keys once in the Events (the card shows them on every entry), not at every F12
                self._told = keys
                w.show_message(keys)
            self.help.show_keys()
            return
        self._floor_for = 0
        self.help.hide()
        self.help.attach(None)
        self.help.set_sizes(18)
        w.dashboard.card_strip.hide()
        w.dashboard.crosshair.set_enabled(True)
        w.dashboard.set_text_floor(None)
        self.knee.hide()
        w.dashboard.show_tune_readout(None)
        saved = self._saved
        for a in self.actions:
            a.setEnabled(False)
        w.run_action.setShortcut(QKeySequence("F5"))
        w.flip_action.setShortcut(QKeySequence("F6"))
        # fonts and theme back first: the window's minimum size is computed from them, and a window left
        # full screen while the stage fonts were still in place grew to fit them
        w.dashboard.show_only(None, 1.0)
        w.set_appearance(THEMES[saved.get("theme", "light")], float(saved.get("font_scale", 1.0)))
        w.toolbar.show()
        w.menuBar().show()
        w.statusBar().show()
        # the bar keeps the height it last laid itself out for (a strut of the stage font's height, 33 px instead of
        # 22 at 1080 lines): a font change makes it measure again, with the everyday font
        QApplication.sendEvent(w.statusBar(), QEvent(QEvent.Type.FontChange))
        QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)  # before the docks' sizes are put back
        w.central.tabBar().show()
        w.central.setCurrentIndex(int(saved.get("tab", 0)))
        state = saved.get("state")
        if isinstance(state, QByteArray):
            w.restoreState(state)  # the docks, shown as they were
        window_state = saved.get("window_state", Qt.WindowState.WindowNoState)
        w.setWindowState(window_state)
        geometry = saved.get("geometry")
        if isinstance(geometry, QRect) and not window_state & (Qt.WindowState.WindowFullScreen
                                                             | Qt.WindowState.WindowMaximized):
            # the rectangle itself: restoreGeometry() after full screen kept a grown size (2224x1167 on a
            # 1920x1080 screen)
            w.setGeometry(geometry)
            if w.geometry() == geometry and isinstance(state, QByteArray):
                w.restoreState(state)  # the docks' sizes once more, now in the window's own size
            if w.geometry() != geometry:
                # Leaving full screen is carried out later by the window system, and its idea of the normal
                # size can overrule ours: set ours again when it is done, then the docks once more (their
                # sizes were restored into the full-screen window and would keep its proportions).
                self._pending = (state, geometry, 5)
                w.installEventFilter(self)
                QTimer.singleShot(3000, self._drop_pending)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.w.central and event.type() == QEvent.Type.Resize and self.knee.isVisible():
            self.knee.setGeometry(self.w.central.rect())  # the knee overlay covers the plots whatever the size
        if obj is self.w and self._pending is not None and event.type() in (QEvent.Type.Resize, QEvent.Type.Move,
                                                                             QEvent.Type.WindowStateChange):
            QTimer.singleShot(0, self._settle)
        return False

    def _settle(self) -> None:
        if self._pending is None:
            return
        state, geometry, tries = self._pending
        if self.w.geometry() != geometry and tries > 0:
            self._pending = (state, geometry, tries - 1)
            self.w.setGeometry(geometry)
            return
        self._drop_pending()
        if isinstance(state, QByteArray):
            self.w.restoreState(state)

    def _drop_pending(self) -> None:
        self._pending = None
        self.w.removeEventFilter(self)
