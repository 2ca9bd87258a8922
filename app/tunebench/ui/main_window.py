"""The workbench window: docks around the live dashboard, toolbar actions with shortcuts, status bar."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QEvent, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QFrame,
    QLabel,
    QListWidget,
    QMainWindow,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from tunebench import paths
from tunebench.core.errors import ConfigError, TunebenchError
from tunebench.core.interval import Event
from tunebench.run.experiment import RunSpec
from tunebench.hosts.sandbox import SandboxServer
from tunebench.load.driver import driver_mode
from tunebench.load.prepare import cleanup, prepare
from tunebench.mysql.connect import introspect, open_connection
from tunebench.mysql.knobs import describe_knobs
from tunebench.mysql.target import conn_params, typed_password
from tunebench.run.child import RunRequest
from tunebench.store.repo import Store
from tunebench.ui.compare import CompareView
from tunebench.ui.dashboard import SHOWN_PREFIXES, Dashboard
from tunebench.ui.knob_panel import FAVOURITES, KnobPanel
from tunebench.ui.replay import ReplayBar, load_session
from tunebench.ui.run_worker import RunWorker, call_in_background
from tunebench.ui.sessions_panel import SessionsPanel
from tunebench.ui.stage import Stage
from tunebench.ui.sweep_panel import SweepPanel
from tunebench.ui.targets_panel import TargetsPanel
from tunebench.ui.theme import THEMES, Theme, apply_appearance
from tunebench.ui.timeline import Timeline
from tunebench.ui.workload_panel import WorkloadPanel


class MainWindow(QMainWindow):
    run_started = Signal(object)  # RunWorker
    run_finished = Signal(object)

    def __init__(self, store: Store, sandbox: SandboxServer | None = None, settings: QSettings | None = None):
        super().__init__()
        self.store = store
        self.sandbox = sandbox or SandboxServer()
        # Window layout and last choices, kept with the rest of Tunebench's data (TUNEBENCH_HOME moves both).
        self.settings = settings or QSettings(str(paths.data_dir() / "gui.ini"), QSettings.Format.IniFormat)
        self.setWindowTitle("Tunebench")
        self.timeline = Timeline()
        self.theme = THEMES.get(str(self.settings.value("theme", "light")), THEMES["light"])
        if self.theme.name == "stage":  # stage is a view state, never the everyday theme
            self.theme = THEMES["light"]
        try:
            self.font_scale = float(self.settings.value("font_scale", 1.0))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            self.font_scale = 1.0
        self.worker: RunWorker | None = None
        self.started_at: float | None = None
        self.last_result: dict[str, Any] | None = None
        self.dashboard = Dashboard(self.timeline, self.theme)
        self.replay_timeline = Timeline()
        self.replay_session: dict[str, Any] | None = None
        self.replay_bar = ReplayBar()
        self.replay_bar.hide()
        self.replay_bar.playing.connect(lambda on: on and self.dashboard.follow_box.setChecked(True))
        view = QWidget()
        vl = QVBoxLayout(view)
        vl.setContentsMargins(0, 0, 0, 0)
        vl.setSpacing(0)
        vl.addWidget(self.replay_bar)
        vl.addWidget(self.dashboard, 1)
        self.sessions = SessionsPanel(store)
        self.compare = CompareView(store, self.theme)
        self.central = QTabWidget()
        self.central.setObjectName("central-tabs")
        self.central.addTab(view, "Dashboard")
        for page, title in ((self.sessions, "Sessions"), (self.compare, "Compare")):
            scroll = QScrollArea()  # their toolbars never set the window's minimum width
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(page)
            self.central.addTab(scroll, title)
        self.setCentralWidget(self.central)
        self.targets = TargetsPanel(store, self.sandbox)
        self.workload = WorkloadPanel()
        self.sweep = SweepPanel()
        self.knobs = KnobPanel()
        self.log = QListWidget()
        builders = QTabWidget()
        builders.addTab(self.workload, "Workload")
        builders.addTab(self.sweep, "Sweep")
        self.builders = builders
        self._dock("Targets", self.targets, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._dock("Build", builders, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._dock("Knobs", self.knobs, Qt.DockWidgetArea.RightDockWidgetArea)
        self._dock("Events", self.log, Qt.DockWidgetArea.RightDockWidgetArea)
        self._build_actions()
        self._build_status()
        self.targets.message.connect(self.show_message)
        self.targets.target_changed.connect(lambda _n: self._load_server_facts())
        self.targets.target_ready.connect(lambda _n: self._load_server_facts())
        # client hosts belong to a target: kept per target, back when it is chosen again
        self._hosts_for = self.targets.current_name()
        self.targets.target_changed.connect(self._switch_client_hosts)
        self.knobs.flip.connect(self.flip_knob)
        self.knobs.restore_all.connect(self._on_restore_all)
        self.sweep.wants_facts.connect(self._on_wants_facts)
        self.sweep.plan_wanted.connect(self._on_plan_wanted)
        self.sweep.message.connect(self.show_message)
        self.sweep.run_button.clicked.connect(self.run_sweep)
        self.sweep.save_button.clicked.connect(self._on_save_sweep)
        self.sweep.load_button.clicked.connect(self._on_load_sweep)
        self.sessions.message.connect(self.show_message)
        self.sessions.open_requested.connect(self.open_replay)
        self.sessions.compare_requested.connect(self.compare_sessions)
        self.workload.prepare_button.clicked.connect(lambda: self._on_prepare(False))
        self.workload.cleanup_button.clicked.connect(lambda: self._on_prepare(True))
        self.clock = QTimer(self)
        self.clock.setInterval(1000)
        self.clock.timeout.connect(self._update_status)
        self.clock.start()
        self._restore_settings()
        self.set_appearance(self.theme, self.font_scale)
        self._load_server_facts()

    # -- construction --
    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{title}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _action(self, text: str, shortcut: str, slot: Any, tip: str) -> QAction:
        a = QAction(text, self)
        a.setShortcut(QKeySequence(shortcut))
        a.setToolTip(f"{tip} ({shortcut})")
        a.triggered.connect(slot)
        self.addAction(a)
        return a

    def _build_actions(self) -> None:
        bar = self.addToolBar("Run")
        bar.setObjectName("toolbar-run")
        self.run_action = self._action("Run", "F5", self.run_workload, "Run the workload over its steps")
        self.stop_action = self._action("Stop", "Shift+F5", self.stop_run, "Stop the run (knobs are put back)")
        self.flip_action = self._action("Flip knob", "F6", self.flip_favourite,
                                        "Flip innodb_flush_log_at_trx_commit between its presets")
        self.mark_action = self._action("Mark", "M", self.mark, "Put a marker on the timeline")
        self.full_action = self._action("Full screen", "F11", self.toggle_full_screen, "Presentation mode")
        self.theme_action = self._action("Dark/Light", "Ctrl+T", self.toggle_theme, "Switch theme")
        self.bigger_action = self._action("A+", "Ctrl+=", lambda: self.scale_fonts(1.15), "Bigger fonts")
        self.smaller_action = self._action("A-", "Ctrl+-", lambda: self.scale_fonts(1 / 1.15), "Smaller fonts")
        self.stage_action = self._action("Stage", "F12", lambda: self.stage.toggle(), "Stage mode: full screen, "  # noqa: PLW0108 (made below)
                                         "big, high contrast, chosen plots, F1-F8 hotkeys (Esc leaves)")
        self.live_action = self._action("Live", "Ctrl+L", self.show_live, "Back to the live view")
        for a in (self.run_action, self.stop_action, self.flip_action, self.mark_action, self.full_action,
                  self.stage_action, self.live_action, self.theme_action, self.bigger_action, self.smaller_action):
            bar.addAction(a)
        self.toolbar = bar
        menu = self.menuBar().addMenu("&File")
        for text, shortcut, slot in (("Export plots as PNG…", "Ctrl+Shift+P", lambda: self._export("png")),
                                     ("Export plots as SVG…", "Ctrl+Shift+S", lambda: self._export("svg")),
                                     ("Export visible series as CSV…", "Ctrl+Shift+C", lambda: self._export("csv")),
                                     ("Markdown report of the session…", "Ctrl+Shift+R", lambda: self._export("md")),
                                     ("Import session file…", "Ctrl+I", self.sessions._import),
                                     ("Sessions", "Ctrl+O", lambda: self.central.setCurrentIndex(1))):
            menu.addAction(self._action(text.rstrip("…"), shortcut, slot, text.rstrip("…")))
        self.stage = Stage(self)
        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction(self._action("About Tunebench", "Ctrl+F1", self.show_about, "Versions, for a bug report"))
        self._set_running(False)

    def _build_status(self) -> None:
        self.status_target = QLabel()
        self.status_engine = QLabel()
        self.status_driver = QLabel(f"driver: {driver_mode()}")
        self.status_elapsed = QLabel("00:00")
        for w in (self.status_target, self.status_engine, self.status_driver, self.status_elapsed):
            self.statusBar().addPermanentWidget(w)
        self._fix_clock_width()
        self._update_status()

    def _fix_clock_width(self) -> None:
        # the clock ticks every second: a fixed width, so it never relayouts the status bar
        self.status_elapsed.setFixedWidth(self.status_elapsed.fontMetrics().horizontalAdvance("888:88") + 8)

    def _switch_client_hosts(self, name: str) -> None:
        if self._hosts_for:
            self.settings.setValue(f"client_hosts/{self._hosts_for}", self.workload.client_hosts.text())
        self._hosts_for = name
        self.workload.client_hosts.setText(str(self.settings.value(f"client_hosts/{name}", "") or ""))

    def _restore_settings(self) -> None:
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1600, 1000)
        state = self.settings.value("state")
        if state is not None:
            self.restoreState(state)
        for key, widget in (("workload", self.workload.workload), ("engine", self.workload.engine)):
            value = self.settings.value(key)
            if value:
                widget.setCurrentText(str(value))
        threads = self.settings.value("threads")
        if threads:
            self.workload.threads.setText(str(threads))
        if self._hosts_for:
            self.workload.client_hosts.setText(str(self.settings.value(f"client_hosts/{self._hosts_for}", "") or ""))

    def save_settings(self) -> None:
        """The everyday layout and choices: never stage mode's (it is left first)."""
        self.stage.set(False)
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("state", self.saveState())
        self.settings.setValue("theme", self.theme.name)
        self.settings.setValue("font_scale", round(self.font_scale, 4))
        self.settings.setValue("workload", self.workload.workload.currentText())
        self.settings.setValue("engine", self.workload.engine.currentText())
        self.settings.setValue("threads", self.workload.threads.text())
        if self._hosts_for:
            self.settings.setValue(f"client_hosts/{self._hosts_for}", self.workload.client_hosts.text())

    def closeEvent(self, event: Any) -> None:
        self.save_settings()
        self.stop_run()
        if self.worker is not None:
            self.worker.wait(30)
        super().closeEvent(event)

    # -- status --
    def show_message(self, text: str) -> None:
        self.statusBar().showMessage(text, 10000)
        self.log.addItem(text)
        self.log.scrollToBottom()

    def _update_status(self) -> None:
        self.status_target.setText(f"target: {self.targets.current_name()}")
        self.status_engine.setText(f"engine: {self.workload.engine.currentText()}")
        if self.started_at is not None and self.worker is not None and self.worker.running():
            s = int(time.time() - self.started_at)
            self.status_elapsed.setText(f"{s // 60:02d}:{s % 60:02d}")

    def _set_running(self, running: bool) -> None:
        self.run_action.setEnabled(not running)
        self.stop_action.setEnabled(running)
        self.flip_action.setEnabled(running)
        self.knobs.set_running(running)
        self.sweep.run_button.setEnabled(not running)
        self.dashboard.state_label.setText("running" if running else "idle")

    # -- runs --
    def run_workload(self) -> None:
        try:
            target = self.targets.current_target()
            groups = self.workload.groups()
            spec = RunSpec(groups=groups, engine=self.workload.engine.currentText(),
                           step_seconds=self.workload.step_seconds.value(),
                           warmup_seconds=self.workload.warmup_seconds.value(),
                           transport=self.workload.transport.currentText(),
                           client_hosts=self.workload.client_host_urls())
            spec.validate()
        except ConfigError as exc:
            self.show_message(str(exc))
            return
        self._start(RunRequest(str(self.store.path), target, spec, password=typed_password(target)))

    def _offer_trust(self, message: str) -> None:
        """An unknown SSH host key: show it and let the user trust it explicitly (never silently)."""
        import re

        from PySide6.QtWidgets import QMessageBox

        from tunebench.hosts.ssh import SshRunner, parse_ssh_url

        m = re.search(r"ssh (\S+)@(\S+?):(\d+): unknown host key", message)
        if not m:
            return
        url = f"ssh://{m.group(1)}@{m.group(2)}:{m.group(3)}"
        answer = QMessageBox.question(self, "Unknown SSH host key",
                                      f"{url} is not in known_hosts.\n\nTrust its host key now (it is kept in "
                                      "Tunebench's own known_hosts), then run again?")
        if answer != QMessageBox.StandardButton.Yes:
            return

        def trust() -> str:
            notes: list[str] = []
            SshRunner(parse_ssh_url(url), trust=True, note=notes.append, retries=1).connect().close()
            return "; ".join(notes) or f"{url} trusted"

        call_in_background(self, trust, self.show_message, self.show_message)

    def run_sweep(self) -> None:
        from tunebench.run.experiment import sweep_run_spec

        try:
            target = self.targets.current_target()
            sweep = self.sweep.current_spec()  # the panel's SweepSpec: what `tunebench sweep` would run
            spec = sweep_run_spec(sweep)
            spec.validate()
        except ConfigError as exc:
            self.show_message(str(exc))
            return

        self._start(RunRequest(str(self.store.path), target, spec, sweep=sweep, password=typed_password(target)))

    def _start(self, request: RunRequest) -> None:
        if self.worker is not None and self.worker.running():
            if not self.worker.ended:
                self.show_message("a run is in progress: stop it first")
                return
            self.worker.wait(10)  # the last run has ended; its process is exiting
        self.show_live()
        self.timeline.clear()
        self.dashboard.reset()
        self.last_result = None
        worker = RunWorker(request, self)
        worker.interval.connect(self.timeline.add_interval)
        worker.samples.connect(self.timeline.add)
        worker.event.connect(self._on_event)
        worker.note.connect(self.show_message)
        worker.step.connect(self._on_step)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        self.worker = worker
        self.started_at = time.time()
        self._set_running(True)
        worker.start()
        self.run_started.emit(worker)

    def stop_run(self) -> None:
        if self.worker is not None:
            self.worker.stop()

    def _on_event(self, ev: Event) -> None:
        self.timeline.add_event(ev)
        if ev.kind in ("step_start", "knob", "config", "mark"):  # the others arrive as notes too
            self.log.addItem(f"{time.strftime('%H:%M:%S', time.localtime(ev.t))}  {ev.label}")
            self.log.scrollToBottom()
        if ev.kind == "knob":
            self.knobs.show_change(dict(ev.data))
        if ev.kind == "restore" and ev.data.get("state") == "restored" and ev.data.get("name") in self.knobs.current:
            self.knobs.current[str(ev.data["name"])].setText(str(ev.data.get("now", ev.data.get("original"))))

    def _on_step(self, result: Any) -> None:
        if result.segments:
            self.knobs.show_segments(list(result.segments))

    def _on_finished(self, result: dict[str, Any]) -> None:
        self.last_result = result
        self._set_running(False)
        best = max((s["tps"] for s in result.get("steps", [])), default=0.0)
        self.show_message(f"session {result['session_id']} {result['status']}: best {best:,.0f} TPS")
        self.sessions.refresh()
        self.run_finished.emit(result)

    def _on_failed(self, message: str) -> None:
        self._set_running(False)
        self.show_message(message)
        if "unknown host key" in message:
            self._offer_trust(message)
        self.run_finished.emit({"status": "failed", "error": message})

    # -- knobs --
    def flip_knob(self, name: str, value: str, on_done: Any = None, on_failed: Any = None) -> None:
        """`on_done(change)` / `on_failed(message)` in addition to the knob panel and the Events log (stage mode
        shows them on its overlay: the log is hidden there)."""
        def failed(message: str) -> None:
            self.show_message(message)
            if on_failed is not None:
                on_failed(message)

        def done(change: Any) -> None:
            self.knobs.show_change(change)
            if on_done is not None:
                on_done(change)

        if self.worker is None or not self.worker.running():
            failed("knobs change during a run")
            return
        self.worker.change_knob(name, value, done, failed)

    def flip_favourite(self) -> None:
        name = "innodb_flush_log_at_trx_commit"
        current = self.knobs.current[name].text()
        presets = FAVOURITES[name]
        nxt = presets[(presets.index(current) + 1) % len(presets)] if current in presets else presets[1]
        self.flip_knob(name, nxt)

    def _on_restore_all(self) -> None:
        if self.worker is not None:
            self.worker.restore_knobs(lambda done: self.show_message(f"restored {len(done)} knob(s)"),
                                      self.show_message)

    def mark(self) -> None:
        label = f"mark {len([m for m in self.timeline.markers if m.kind == 'mark']) + 1}"
        if self.worker is None or not self.worker.mark(label):  # recorded by the run when there is one
            self._on_event(Event(time.time(), "mark", label))

    # -- first run, about --
    def show_about(self) -> Any:
        from tunebench.ui.about import AboutDialog

        dlg = AboutDialog(getattr(self, "server_version", None), self)
        dlg.show()
        return dlg

    def maybe_welcome(self) -> Any:
        """The welcome, once, when the store is empty: never modal, so nothing waits on it."""
        from tunebench.ui.about import WelcomeDialog

        try:
            empty = not self.store.list_sessions()
        except TunebenchError:
            empty = False
        if not empty or self.settings.value("welcomed", False, type=bool):
            return None
        self.settings.setValue("welcomed", True)
        dlg = WelcomeDialog(self)
        dlg.show()
        return dlg

    # -- replay, compare, export --
    def open_replay(self, session_id: int) -> float:
        """Open a recorded session in the dashboard, whole (Play replays it from the start, following the
        head as live does); returns the seconds it took."""
        t = time.perf_counter()
        try:
            self.replay_session = load_session(self.store, session_id, self.replay_timeline, SHOWN_PREFIXES)
        except TunebenchError as exc:
            self.show_message(str(exc))
            return 0.0
        self.dashboard.set_timeline(self.replay_timeline, replay=True)
        self.replay_bar.attach(self.replay_timeline)
        self.replay_bar.show()
        self.central.setCurrentIndex(0)
        self.dashboard.follow_box.setChecked(False)
        self.dashboard._update_plots()
        end = max(1.0, self.replay_timeline.end)
        self.dashboard.set_x_range(-0.01 * end, 1.01 * end)
        took = time.perf_counter() - t
        s = self.replay_session
        self.show_message(f"replaying session {session_id} ({s['workload']}, {len(self.replay_timeline.series)} "
                          f"series, {self.replay_timeline.end:.0f} s), opened in {took:.2f} s")
        return took

    def show_live(self) -> None:
        if self.dashboard.timeline is self.timeline:
            return
        self.replay_bar.play(False)
        self.replay_bar.hide()
        self.replay_session = None
        self.dashboard.set_timeline(self.timeline, replay=False)

    def compare_sessions(self, ids: list[int]) -> None:
        try:
            self.compare.set_sessions(ids)
        except TunebenchError as exc:
            self.show_message(str(exc))
            return
        self.central.setCurrentIndex(2)

    def _export(self, kind: str) -> None:
        from tunebench.ui import export

        filters = {"png": "PNG image (*.png)", "svg": "SVG image (*.svg)", "csv": "CSV (*.csv)",
                   "md": "Markdown (*.md)"}
        sid = (self.replay_session or {}).get("id") or (self.last_result or {}).get("session_id")
        if kind == "md" and sid is None:
            self.show_message("a report is of a recorded session: replay one or finish a run first")
            return
        name = f"session-{sid}.{kind}" if sid else f"tunebench.{kind}"
        path, _ = QFileDialog.getSaveFileName(self, "Export", name, filters[kind])
        if not path:
            return
        try:
            if kind == "png":
                out = export.save_png(self.dashboard, path)
            elif kind == "svg":
                out = export.save_svg(self.dashboard, path)
            elif kind == "csv":
                out = export.save_csv(self.dashboard, path)
            else:
                out = export.save_report(self.store.get_session(int(sid)), self.dashboard, path)
        except TunebenchError as exc:
            self.show_message(str(exc))
            return
        self.show_message(f"wrote {out}")

    # -- presentation --
    def toggle_full_screen(self) -> None:
        if self.isFullScreen():
            self.showNormal()
        else:
            self.showFullScreen()

    def set_appearance(self, theme: Theme, scale: float) -> None:
        """The window's look from its two inputs, theme and font scale, whatever the order they change in:
        the application (font, then palette), the dashboard, the compare view."""
        self.theme, self.font_scale = theme, max(0.6, min(3.0, scale))
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_appearance(app, theme, self.font_scale)
            # Qt passes the new font and palette on to widgets through posted events: deliver them now, so
            # every size computed from here on (leaving stage: the window's minimum size, from docks still
            # hidden) is of the new fonts, not of the ones before
            for kind in (QEvent.Type.ApplicationFontChange, QEvent.Type.FontChange,
                         QEvent.Type.ApplicationPaletteChange, QEvent.Type.PaletteChange):
                QApplication.sendPostedEvents(None, kind)
        self._fix_clock_width()
        self.dashboard.set_appearance(theme, self.font_scale)
        self.compare.apply_theme(theme)

    def set_theme(self, name: str) -> None:
        self.set_appearance(THEMES[name], self.font_scale)

    def toggle_theme(self) -> None:
        self.set_theme("dark" if self.theme.name == "light" else "light")

    def scale_fonts(self, factor: float) -> None:
        scale = self.font_scale * factor
        if abs(scale - round(scale)) < 1e-9:
            scale = round(scale)  # A+ then A- is 1.0 again, not 0.9999999
        self.set_appearance(self.theme, scale)

    # -- server facts for the sweep builder --
    def _load_server_facts(self) -> None:
        """The current target's variables, read off the GUI thread whenever it changes or becomes ready: the
        knob panel's current values and the sweep panel's facts. An answer about another target is dropped."""
        self.knobs.clear_values()
        try:
            target = self.targets.current_target()
        except ConfigError as exc:
            self.knobs.result.setText(str(exc))
            return
        names = list(self.sweep.spec.knob_axes)
        name = target.name

        def fetch() -> tuple[dict[str, str], dict[str, Any]]:
            conn = open_connection(conn_params(target, None), target.name)
            try:
                info = introspect(conn)
                wanted = [n for n in [*names, *FAVOURITES] if n in info.variables]
                return info.variables, describe_knobs(conn, info, wanted)
            finally:
                conn.close()

        def done(result: tuple[dict[str, str], dict[str, Any]]) -> None:
            if self.targets.current_name() != name:
                return
            variables, facts = result
            self.server_version = variables.get("version")
            self.sweep.set_server(variables, facts)
            self.knobs.show_values({n: variables[n] for n in FAVOURITES if n in variables})
            self.knobs.result.setText(f"{name}: {variables.get('version', '')}".rstrip(": "))

        def failed(message: str) -> None:
            if self.targets.current_name() == name:
                self.knobs.result.setText(message)
            self.show_message(message)

        call_in_background(self, fetch, done, failed)

    def _on_wants_facts(self, names: list[str]) -> None:
        try:
            target = self.targets.current_target()
        except ConfigError:
            return

        def fetch() -> dict[str, Any]:
            conn = open_connection(conn_params(target, None), target.name)
            try:
                info = introspect(conn)
                return describe_knobs(conn, info, [n for n in names if n in info.variables])
            finally:
                conn.close()

        call_in_background(self, fetch, self.sweep.add_facts, self.show_message)

    def _on_plan_wanted(self, spec: Any) -> None:
        """The sweep panel's plan, from the planner `tunebench sweep --plan` uses, against the current target."""
        from tunebench.run.experiment import plan_sweep

        try:
            target = self.targets.current_target()
        except ConfigError as exc:
            self.sweep.show_plan_error(spec, str(exc))
            return
        notes: list[str] = []

        def work() -> Any:
            plan, _info = plan_sweep(spec, target, spec.transport, note=notes.append)
            return plan

        call_in_background(self, work, lambda plan: self.sweep.show_plan(spec, plan, notes),
                           lambda message: self.sweep.show_plan_error(spec, message))

    def _on_save_sweep(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save sweep", f"{self.sweep.spec.name}.toml", "TOML (*.toml)")
        if path:
            try:
                self.sweep.save(path)
            except (OSError, ConfigError) as exc:
                self.show_message(str(exc))

    def _on_load_sweep(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load sweep", "", "TOML (*.toml)")
        if path:
            try:
                with open(path) as f:
                    self.sweep.load_toml(f.read(), path)
            except (OSError, ConfigError) as exc:
                self.show_message(str(exc))

    def _on_prepare(self, clean: bool) -> None:
        try:
            target = self.targets.current_target()
            group = self.workload.groups()[0]
        except ConfigError as exc:
            self.show_message(str(exc))
            return
        w = self.workload
        w.set_busy("cleaning up …" if clean else f"preparing {group.options['tables']} table(s) x "
                   f"{group.workload.prepare_rows(group.options):,} rows …")

        def work() -> str:
            admin = conn_params(target, None)
            conn = open_connection(admin, target.name)
            try:
                conn.cursor().execute("CREATE DATABASE IF NOT EXISTS `tunebench`")
            finally:
                conn.close()
            params = conn_params(target, None, database="tunebench", password=admin.password)
            if clean:
                r = cleanup(params, "tunebench")
                return f"dropped {', '.join(r['dropped']) or 'nothing'}"
            r = prepare(params, "tunebench", group.options, group.workload.prepare_rows(group.options))
            return f"prepared {r['tables_created']} table(s) x {r['rows_per_table']} rows ({r['seconds']} s)"

        def finished(text: str) -> None:
            w.set_busy(None)
            w.progress_label.setText(text)
            self.show_message(text)

        call_in_background(self, work, finished, finished)
