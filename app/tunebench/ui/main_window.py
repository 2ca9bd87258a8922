"""The workbench window: docks around the live dashboard, toolbar actions with shortcuts, status bar.

It lays out and wires: panels take their models, the WindowController (ui/controller.py) holds the run, the
replay and the server work, and answers with signals that land here on the panels.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDockWidget,
    QFrame,
    QListWidget,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QTabWidget,
    QToolBar,
    QWidget,
)

from tunebench import paths
from tunebench.core.demo_plan import DemoPlan
from tunebench.core.errors import ConfigError, TunebenchError
from tunebench.core.interval import Event
from tunebench.hosts.sandbox import SandboxServer
from tunebench.load.demo_plans import load_plan
from tunebench.mysql.target import typed_password
from tunebench.run.child import RunRequest
from tunebench.run.records import RunOutcome
from tunebench.run.spec import sweep_run_spec
from tunebench.run.sweep_progress import SweepProgress
from tunebench.run.tasks import data_request
from tunebench.run.tune_progress import TuneProgress
from tunebench.store.repo import Store
from tunebench.ui.compare import CompareView
from tunebench.ui.controller import WindowController
from tunebench.ui.dashboard import SHOWN_PREFIXES
from tunebench.ui.demo import DemoRunner
from tunebench.ui.empty_state import install_empty_states
from tunebench.ui.history_view import HistoryView
from tunebench.ui.hot_functions import HotFunctions
from tunebench.ui.knob_panel import FAVOURITES, KnobPanel
from tunebench.ui.replay import REPLAY_NOTES
from tunebench.ui.run_worker import RunWorker
from tunebench.ui.sessions_panel import SessionsPanel
from tunebench.ui.stage import Stage
from tunebench.ui.statements_panel import StatementsPanel
from tunebench.ui.status_line import StatusLine
from tunebench.ui.sweep_panel import SweepPanel
from tunebench.ui.sweep_results import SweepResultsView
from tunebench.ui.target_facts import TargetFacts
from tunebench.ui.targets_panel import TargetsPanel
from tunebench.ui.timeline import Timeline
from tunebench.ui.timeline_view import TimelineView
from tunebench.ui.tune_panel import TunePanel
from tunebench.ui.tune_results import TuneResultsView
from tunebench.ui.window_actions import build_actions
from tunebench.ui.window_appearance import WindowAppearance
from tunebench.ui.window_dialogs import WindowDialogs
from tunebench.ui.window_room import WindowRoom
from tunebench.ui.window_settings import client_hosts_of, initial_appearance, restore_window, save_window
from tunebench.ui.window_tune import WindowTune
from tunebench.ui.wording import for_window
from tunebench.ui.workload_panel import WorkloadPanel

HISTORY_TAB = 3  # the central tabs: Dashboard, Sessions, Compare, History


class MainWindow(QMainWindow, WindowDialogs, WindowAppearance, WindowTune):
    # made by window_actions.build_actions
    run_action: QAction
    stop_action: QAction
    flip_action: QAction
    mark_action: QAction
    full_action: QAction
    theme_action: QAction
    bigger_action: QAction
    smaller_action: QAction
    stage_action: QAction
    compact_action: QAction
    demo_pause_action: QAction
    demo_next_action: QAction
    demo_stop_action: QAction
    plot_actions: list[QAction]
    live_action: QAction
    visible_only_action: QAction
    import_action: QAction
    quit_action: QAction
    toolbar: QToolBar
    stage: Stage

    def __init__(self, store: Store, sandbox: SandboxServer | None = None, settings: QSettings | None = None):
        super().__init__()
        self.store = store
        self.sandbox = sandbox or SandboxServer()
        # Window layout and last choices, kept with the rest of Tunebench's data (TUNEBENCH_HOME moves both).
        self.settings = settings or QSettings(str(paths.data_dir() / "gui.ini"), QSettings.Format.IniFormat)
        self._running = False
        self.setWindowTitle("Tunebench")
        self.controller = WindowController(store, self.sandbox, self)
        self.theme, self.font_scale = initial_appearance(self.settings)
        self.view = TimelineView(self.timeline, self.theme)
        self.dashboard, self.replay_bar = self.view.dashboard, self.view.replay_bar
        self.sessions = SessionsPanel(store)
        self.compare = CompareView(store, self.theme)
        self.history = HistoryView(store, self.theme)
        self.central = QTabWidget()
        self.central.setObjectName("central-tabs")
        self.central.addTab(self.view, "Dashboard")
        for page, title in ((self.sessions, "Sessions"), (self.compare, "Compare")):
            scroll = QScrollArea()  # their toolbars never set the window's minimum width
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(page)
            self.central.addTab(scroll, title)
        self.central.addTab(self.history, "History")  # no scroll area: its plot gives up what a short window lacks
        self.setCentralWidget(self.central)
        self.targets = TargetsPanel(store, self.sandbox, self.controller.tasks)
        self.workload = WorkloadPanel()
        self.sweep = SweepPanel()
        self.tune = TunePanel()
        self.knobs = KnobPanel()
        self.log = QListWidget()
        self.builders = QTabWidget()
        for page, title in ((self.workload, "Workload"), (self.sweep, "Sweep"), (self.tune, "Tune")):
            # the form scrolls when the window is short: its rows never set the window's minimum height (a
            # 1600x1000 window grew to 1019 once the form had one row more)
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            scroll.setWidget(page)
            # as wide as the form wants, and room for the vertical bar: nothing is cut at the right
            scroll.setMinimumWidth(page.minimumSizeHint().width() + scroll.verticalScrollBar().sizeHint().width())
            self.builders.addTab(scroll, title)
        left, right = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea
        side = [(self._dock("Targets", self.targets, left), left), (self._dock("Build", self.builders, left), left),
                (self._dock("Knobs", self.knobs, right), right), (self._dock("Events", self.log, right), right)]
        self.hot = HotFunctions(self.dashboard, store, self.controller.session_id)
        # under the Events, not tabbed with them: a tab bar the dock layout makes on its own first appeared after
        # stage mode (a residue test_one_model caught)
        side.append((self._dock("Hot functions", self.hot, right), right))
        self.room = WindowRoom(self, side)  # a small screen's compact layout (one tabbed side column)
        # under the plots, between the side docks: both in sight during a sweep
        self.sweep_results = SweepResultsView(SweepProgress(), SweepProgress())
        self.sweep_dock = self._dock("Sweep results", self.sweep_results, Qt.DockWidgetArea.BottomDockWidgetArea)
        # under the plots too (a statement's text wants the width), shown once statements are on screen
        self.statements = StatementsPanel(self.dashboard)
        self.statements_dock = self._dock("Statements", self.statements, Qt.DockWidgetArea.BottomDockWidgetArea)
        # a tune's trials and convergence, under the plots (their trial bands) like a sweep's results
        self.tune_results = TuneResultsView(TuneProgress(), TuneProgress())
        self.tune_dock = self._dock("Tune results", self.tune_results, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.demo = DemoRunner(self)  # a demo plan run hands-free (the Demo menu, `gui --demo-plan`)
        self.demo.line.connect(self.dashboard.show_demo_line)
        build_actions(self)
        self.empty_states = install_empty_states(self)
        self._set_running(False)
        self.status = StatusLine(self.statusBar(), self.targets.current_name, self.workload.engine.currentText,
                                 self.controller.elapsed)
        self.facts = TargetFacts(self.controller, self.targets, self.knobs, self.sweep, self, self.tune)
        self.hosts_for = self.targets.current_name()  # client hosts belong to a target: kept per target
        self._connect_panels()
        self._connect_controller()
        self._connect_tune()
        restore_window(self)
        self.sweep_dock.hide()  # until a sweep runs or is replayed: a plain run keeps the whole height for plots
        self.statements_dock.hide()  # until a run or a replay has statements (the statements probe)
        self.tune_dock.hide()  # until a tune runs or is replayed
        self.statements.found.connect(self._show_statements)
        self.set_appearance(self.theme, self.font_scale)
        self.facts.reload()

    # -- the controller's state, for the panels and tests that read it --
    @property
    def timeline(self) -> Timeline:
        return self.controller.timeline

    @property
    def replay_timeline(self) -> Timeline:
        return self.controller.replay_timeline

    @property
    def worker(self) -> RunWorker | None:
        return self.controller.worker

    @property
    def run_started(self) -> Any:
        return self.controller.run_started

    @property
    def run_finished(self) -> Any:
        return self.controller.run_finished

    # -- construction --
    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{title}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _connect_panels(self) -> None:
        self.targets.message.connect(self.show_message)
        self.targets.target_changed.connect(self._on_target_changed)
        self.knobs.flip.connect(self.flip_knob)
        self.knobs.restore_all.connect(self.controller.restore_knobs)
        self.knobs.confirm.connect(self.confirm_flip)
        self.sweep.message.connect(self.show_message)
        self.sweep.run_button.clicked.connect(self.run_sweep)
        self.sweep.save_button.clicked.connect(self._on_save_sweep)
        self.sweep.load_button.clicked.connect(self._on_load_sweep)
        # one CPU profile setting for the window's runs, ticked from either tab of the Build dock
        self.workload.profile.toggled.connect(self.sweep.profile.setChecked)
        self.sweep.profile.toggled.connect(self.workload.profile.setChecked)
        self.replay_bar.moved.connect(self._replay_moved)
        self.replay_bar.moved.connect(lambda _x: self.statements.refresh())  # the head's table, in the same turn
        self.sessions.message.connect(self.show_message)
        self.sessions.open_requested.connect(self.open_replay)
        self.sessions.compare_requested.connect(self.compare_sessions)
        self.history.open_session.connect(self.open_replay)
        self.history.compare_requested.connect(self.compare_sessions)
        self.central.currentChanged.connect(self._tab_shown)
        self.workload.prepare_button.clicked.connect(lambda: self._on_prepare(False))
        self.workload.cleanup_button.clicked.connect(lambda: self._on_prepare(True))
        self.workload.cancel_requested.connect(self.controller.cancel_prepare)

    def _on_run_started(self, _worker: Any) -> None:
        self.sweep_results.clear()
        self.sweep_dock.hide()
        self.knobs.new_session()

    def _feed_sweep_results(self, worker: Any) -> None:
        """The run's seconds to the sweep view too: a configuration pair's A/B verdict as soon as both ended."""
        if worker is not None:
            worker.interval.connect(self.sweep_results.add_interval)
            worker.samples.connect(self.sweep_results.add_samples)  # the busy seconds its verdicts leave out

    def _connect_controller(self) -> None:
        c = self.controller
        c.message.connect(self.show_message)
        c.running_changed.connect(self._set_running)
        c.timeline_event.connect(self._on_event)
        c.idle_restored.connect(self._idle_restored)
        c.run_started.connect(self._on_run_started)
        c.run_started.connect(self._on_tune_run_started)
        c.run_started.connect(self._feed_sweep_results)
        c.sweep_planned.connect(self.sweep_results.start)
        c.sweep_planned.connect(self._show_sweep_results)
        c.step.connect(self.sweep_results.add_step)
        c.timeline_event.connect(self.sweep_results.add_event)
        c.run_finished.connect(self.sweep_results.run_finished)
        c.run_finished.connect(self._on_finished)
        c.host_key_unknown.connect(self._offer_trust)
        c.prepared.connect(self._on_prepared)

    def _on_target_changed(self, name: str) -> None:
        if self.hosts_for:
            self.settings.setValue(f"client_hosts/{self.hosts_for}", self.workload.client_hosts.text())
        self.hosts_for = name
        self.workload.client_hosts.setText(client_hosts_of(self.settings, name))
        try:
            self.workload.follow_target(self.targets.current_target())
        except ConfigError:  # a stopped sandbox (it has a socket), a target gone: every transport offered
            self.workload.follow_target(None)

    def save_settings(self) -> None:
        """The everyday layout and choices: never stage mode's (it is left first)."""
        self.stage.set(False)
        save_window(self)

    def closeEvent(self, event: Any) -> None:
        # an exception out of a Qt virtual can take the process down (a segfault where pytest-qt closed a window
        # whose run stub took no argument): a bug here is printed, and the window still closes
        try:
            self.save_settings()
            self.controller.shutdown()
        except Exception:
            traceback.print_exc()
        super().closeEvent(event)

    # -- status --
    def show_message(self, text: str) -> None:
        text = for_window(text)
        bar = self.statusBar()
        # elided to the room the permanent labels leave (whole in the Events and on hover): never over them
        shown = bar.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, self.status.message_room(bar))
        bar.showMessage(shown, 10000)
        bar.setToolTip(text if shown != text else "")
        self.log.addItem(text)
        self.log.scrollToBottom()

    def _set_running(self, running: bool) -> None:
        self._running = running
        self.run_action.setEnabled(not running)
        self.stop_action.setEnabled(running)
        self.flip_action.setEnabled(running)
        self._update_mark_action()
        self.knobs.set_running(running)
        self.sweep.run_button.setEnabled(not running)
        self.tune.set_running(running)
        self.dashboard.state_label.setText("running" if running else "idle")

    # -- runs --
    def _password_ready(self) -> bool:
        """A saved target with no password anywhere: asked here (the run's child process cannot ask), and the
        Run waits for the user to run again."""
        if self.targets.needs_password() is None:
            return True
        self.targets.ask_password()
        why = f"{self.targets.current_name()}: give its password, then run again"
        self.show_message(why)
        self.workload.refused(why)
        return False

    def run_workload(self) -> None:
        if not self._password_ready():
            return
        try:
            target = self.targets.current_target()
            spec = self.workload.run_spec()
            target.check_transport(spec.transport or target.default_transport())  # before a run child starts
        except ConfigError as exc:
            self.show_message(str(exc))
            self.workload.refused(str(exc))
            return
        if self.workload.progress_label.text().startswith("⚠"):
            self.workload.refused("")
        self._start(RunRequest(self.store.location, target, spec, password=typed_password(target)))

    def run_sweep(self) -> None:
        if not self._password_ready():
            return
        try:
            target = self.targets.current_target()
            sweep = self.sweep.current_spec()  # the panel's SweepSpec: what `tunebench sweep` would run
            spec = sweep_run_spec(sweep, probes=self.sweep.probes())
            spec.validate()
        except ConfigError as exc:
            self.show_message(str(exc))
            return
        self._start(RunRequest(self.store.location, target, spec, sweep=sweep, password=typed_password(target)))

    def _start(self, request: RunRequest) -> None:
        if self.controller.running():
            self.show_message("a run is in progress: stop it first")
            return
        self.show_live()
        self.dashboard.reset()
        self.controller.start_run(request)

    def stop_run(self) -> None:
        self.controller.stop_run()

    def _offer_trust(self, url: str) -> None:
        """An unknown SSH host key: show it and let the user trust it explicitly (never silently)."""
        answer = QMessageBox.question(self, "Unknown SSH host key",
                                      f"{url} is not in known_hosts.\n\nTrust its host key now (it is kept in "
                                      "Tunebench's own known_hosts), then run again?")
        if answer == QMessageBox.StandardButton.Yes:
            self.controller.trust_host_key(url)

    def _on_event(self, ev: Event) -> None:
        if ev.kind in ("step_start", "knob", "config", "mark", "verdict", "rate", "trial"):  # the others: as notes
            self.log.addItem(f"{time.strftime('%H:%M:%S', time.localtime(ev.t))}  {ev.label}")
            self.log.scrollToBottom()
        if ev.kind == "knob":
            # the value only: the change's outlook (when its verdict comes) is in the reply to the flip, and a
            # sweep's configuration being applied has no verdict to announce
            self.knobs.show_value(str(ev.data.get("name")), ev.data.get("to"))
        if ev.kind == "verdict":
            self.knobs.show_verdict(dict(ev.data))
            if self.stage.on:  # the Events dock is hidden on stage
                self.stage.help.show_verdict(dict(ev.data))
        if ev.kind == "restore" and ev.data.get("state") == "restored":
            self.knobs.show_value(str(ev.data.get("name")), ev.data.get("now", ev.data.get("original")))

    def _idle_restored(self, done: list[dict[str, Any]]) -> None:
        """The knobs set between runs, back: their values in the knob panel, and said there."""
        back = [d for d in done if d.get("state") == "restored" and not d.get("unchanged")]
        for d in back:
            self.knobs.show_value(str(d["name"]), d.get("now", d.get("original")))
        failed = [f"{d['name']}: {d.get('message')}" for d in done if d.get("state") != "restored"]
        self.knobs.result.setText("\n".join([f"{d['name']} put back to {d.get('now', d.get('original'))}"
                                              for d in back] + [f"not put back: {f}" for f in failed])
                                  or "nothing to put back")

    def _show_sweep_results(self, *_plan: Any) -> None:
        if not self.stage.on:  # stage keeps its docks hidden
            self.sweep_results.reveal()

    def _show_statements(self) -> None:
        if not self.stage.on:  # stage keeps its docks hidden
            self.statements_dock.show()

    def _on_finished(self, _outcome: RunOutcome) -> None:
        self.sessions.refresh()

    # -- knobs --
    def _replies(self, show: Callable[[Any], None], on_done: Any, on_failed: Any
                 ) -> tuple[Callable[[Any], None], Callable[[str], None]]:
        """A request's (done, failed) slots: `show` the reply in the knob panel, a failure on the status line, then
        the caller's own (stage mode shows them on its overlay: the Events log is hidden there)."""
        def failed(message: str) -> None:
            self.show_message(message)
            if on_failed is not None:
                on_failed(message)

        def done(reply: Any) -> None:
            show(reply)
            if on_done is not None:
                on_done(reply)

        return done, failed

    def flip_knob(self, name: str, value: str, on_done: Any = None, on_failed: Any = None) -> None:
        """`on_done(change)` / `on_failed(message)` in addition to the knob panel and the Events log."""
        target = None
        if not self.controller.running():  # between runs: set on the target the next run goes to
            try:
                target = self.targets.current_target()
            except ConfigError as exc:
                self.show_message(str(exc))
                return
        self.controller.change_knob(name, value, *self._replies(self.knobs.show_change, on_done, on_failed),
                                    target=target)

    # -- demo plans --
    def run_demo_plan(self, path: str | None = None) -> bool:
        """A demo plan live (a file; None: asked for), from its first step; False (said) when refused."""
        plan = self._demo_plan(path)
        if plan is None:
            return False
        self.demo.start(plan)
        return True

    def rehearse_demo_plan(self, path: str | None = None, session_id: int | None = None) -> bool:
        """The plan over a recorded session at 10x (None: asked for; the plan's own `rehearsal` first)."""
        plan = self._demo_plan(path)
        if plan is None:
            return False
        if session_id is None:
            from PySide6.QtWidgets import QInputDialog

            sid, ok = QInputDialog.getInt(self, "Rehearse over a session", "Session ID (a run of this plan)",
                                          plan.rehearsal or self.controller.session_id() or 1, 1, 10 ** 9)
            if not ok:
                return False
            session_id = sid
        return self.demo.rehearse(plan, session_id)

    def _demo_plan(self, path: str | None) -> DemoPlan | None:
        if path is None:
            from PySide6.QtWidgets import QFileDialog

            path = QFileDialog.getOpenFileName(self, "Demo plan", str(paths.workloads_dir() / "demos"),
                                               "Demo plans (*.toml)")[0]
            if not path:
                return None
        try:
            return load_plan(path)
        except ConfigError as exc:
            self.show_message(str(exc))
            if self.stage.on:
                self.stage.help.flash(str(exc))
            return None

    def confirm_flip(self, on_done: Any = None, on_failed: Any = None) -> None:
        """Confirm the last live flip: its two values in ABBA BAAB blocks on the running load (run/confirm.py); the
        plan now, the verdict later as an event (knob panel, Events, stage card)."""
        self.controller.confirm_knob(None, *self._replies(self.knobs.show_confirming, on_done, on_failed))

    def step_rate(self, factor: float, on_done: Any = None, on_failed: Any = None) -> None:
        """An open-loop run's rate (its first group's) times `factor`, live: the stage's rate keys."""
        groups = sorted({n.split(".")[1] for n in self.controller.timeline.names("client.", ".rate")})
        rate = self.controller.timeline.last(f"client.{groups[0]}.rate") if groups else None

        def failed(message: str) -> None:
            self.show_message(message)
            if on_failed is not None:
                on_failed(message)

        if rate is None:
            failed("the rate keys change an open-loop run's rate: start one with a rate (Build > Rate)")
            return
        self.controller.change_rate(groups[0], max(1.0, round(rate * factor)), on_done or (lambda _c: None), failed)

    def flip_favourite(self) -> None:
        name = "innodb_flush_log_at_trx_commit"
        current = self.knobs.current[name].text()
        presets = FAVOURITES[name]
        nxt = presets[(presets.index(current) + 1) % len(presets)] if current in presets else presets[1]
        self.flip_knob(name, nxt)

    def _update_mark_action(self) -> None:
        """Mark puts a marker into the running session: only while a run goes and its plots are on screen."""
        self.mark_action.setEnabled(self._running and self.view.is_live())

    def mark(self) -> None:
        """A marker on the run's timeline, recorded with the session; refused with a line while no run goes or a
        replay is on screen (a mark drawn there was in no session: gone on the next start or seek)."""
        if not self._running:
            refused = "Mark puts a marker into a running session: no run goes"
        elif not self.view.is_live():
            refused = "Mark puts a marker into the running session: back to Live (Ctrl+L) first"
        else:
            refused = self.controller.mark()
        if refused:
            self.show_message(refused)
            if self.stage.on:  # (the status line and the Events are hidden on stage)
                self.stage.help.flash(refused)

    # -- replay, compare, export --
    def _replay_moved(self, x: float) -> None:
        """The play head moved: the sweep view shows the steps ended by then, and at the replay's end every step
        (the last one ends a moment after the timeline's last second: its profile window, its verdict)."""
        self.sweep_results.replay_to(float("inf") if x >= self.replay_timeline.end else x)
        self._tune_replay_moved(float("inf") if x >= self.replay_timeline.end else x)

    def open_replay(self, session_id: int) -> float:
        """Open a recorded session in the dashboard, whole (Play replays it from the start, following the
        head as live does); returns the seconds it took."""
        t = time.perf_counter()
        try:
            s = self.controller.open_replay(session_id, SHOWN_PREFIXES)
        except TunebenchError as exc:
            self.show_message(str(exc))
            return 0.0
        tl = self.replay_timeline
        self.view.show_replay(tl)
        self._update_mark_action()
        self.knobs.new_session()
        if self.sweep_results.show_session(s):
            self._show_sweep_results()
        else:  # not a sweep: an empty "Sweep results" dock stayed from the last one and squeezed the others
            self.sweep_dock.hide()
        self._show_replayed_tune(s, tl.t0 or 0.0)
        self.central.setCurrentIndex(0)
        took = time.perf_counter() - t
        left_out = int(s.get("events_left_out") or 0)
        self.show_message(f"replaying session {session_id} ({s['workload']}, {len(tl.series)} series, "
                          f"{tl.end:.0f} s), opened in {took:.2f} s"
                          + (f"; its first {REPLAY_NOTES:,} notes and errors shown, {left_out:,} more in the "
                             "session's JSON export" if left_out else ""))
        return took

    def show_live(self) -> None:
        if not self.view.is_live():
            self.view.show_live()
            self.controller.close_replay()
            self.sweep_results.show_live()
            if not self.sweep_results.live.active:  # no sweep runs: its dock goes with the replay
                self.sweep_dock.hide()
            self._show_live_tune()
            self._update_mark_action()

    def _tab_shown(self, index: int) -> None:
        if index == HISTORY_TAB:  # read each time it is shown: a run since may have joined a series
            self.history.refresh()

    def show_history(self) -> None:
        """Ctrl+H: the History tab; on stage (no tab bar there) the same key goes back to the dashboard, and the
        stage's card (the keys, a verdict) is put away while the history shows."""
        if self.stage.on and self.central.currentIndex() == HISTORY_TAB:
            self.central.setCurrentIndex(0)
            return
        self.central.setCurrentIndex(HISTORY_TAB)
        if self.stage.on:
            self.stage.help.hide()

    def compare_sessions(self, ids: list[int]) -> None:
        try:
            self.compare.set_sessions(ids)
        except TunebenchError as exc:
            self.show_message(str(exc))
            return
        self.central.setCurrentIndex(2)

    # -- data --
    def _on_prepare(self, clean: bool) -> None:
        try:
            target = self.targets.current_target()
            group = self.workload.groups()[0]
            request = data_request(group.workload, group.options, cleanup=clean)
        except TunebenchError as exc:
            self.show_message(str(exc))
            return
        self.workload.set_busy(request.busy_text, cancellable=not clean)
        self.controller.prepare(target, request, self.workload.show_progress)

    def _on_prepared(self, text: str) -> None:
        self.workload.set_busy(None)
        self.workload.progress_label.setText(text)
        self.show_message(text)
