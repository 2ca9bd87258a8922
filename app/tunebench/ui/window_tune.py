"""The window's tune: Start from the Tune tab (the Workload tab's load at the tab's thread count, run through the
RunWorker like any run), the live TuneProgress fed the run's trials and its "tune" event, the replayed one
filled from a tune session, the results dock and the stage's best-so-far readout kept on the model on screen.
A part of MainWindow (ui/main_window.py), kept apart to keep that one about layout and wiring."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from PySide6.QtWidgets import QMainWindow

from tunebench.core.errors import ConfigError
from tunebench.core.interval import Event
from tunebench.mysql.target import typed_password
from tunebench.run.child import RunRequest
from tunebench.run.records import RunOutcome
from tunebench.run.tune import Trial, tune_run_spec
from tunebench.ui.wording import for_window

if TYPE_CHECKING:
    # For the checker, the mixin is the widget it is mixed into (as WindowDialogs); a plain class at run time.
    from PySide6.QtWidgets import QWidget as _WindowBase

    from tunebench.ui.tune_panel import TunePanel
    from tunebench.ui.tune_results import TuneResultsView
    from tunebench.ui.workload_panel import WorkloadPanel
else:
    _WindowBase = object


class WindowTune(_WindowBase):
    """MainWindow's tune; uses its controller, store, panels, the tune results dock and the stage."""

    controller: Any
    store: Any
    targets: Any
    workload: WorkloadPanel
    tune: TunePanel
    tune_results: TuneResultsView
    tune_dock: Any
    dashboard: Any
    stage: Any

    def show_message(self, text: str) -> None: ...  # (MainWindow's)

    def _start(self, request: RunRequest) -> None: ...  # (MainWindow's)

    _password_ready: Any  # (MainWindow's: a saved target's password asked for first)

    def _connect_tune(self) -> None:
        self.tune.start_requested.connect(self.run_tune)
        self.tune.stop_requested.connect(self.controller.stop_run)
        self.tune.message.connect(self.show_message)
        self.controller.trial.connect(self._on_trial)
        self.controller.timeline_event.connect(self._on_tune_event)
        self.controller.run_finished.connect(self._on_tune_finished)
        for signal in (self.workload.workload.currentTextChanged, self.workload.engine.currentTextChanged,
                       self.workload.lua.textChanged):
            signal.connect(self._update_tune_load)
        self._update_tune_load()

    def _update_tune_load(self, *_args: object) -> None:
        lua = self.workload.lua.text().strip()
        what = f"the Lua script {lua}" if lua else self.workload.workload.currentText()
        self.tune.show_workload(f"{what} on the {self.workload.engine.currentText()} engine")

    def run_tune(self) -> None:
        """Start the tune the Tune tab describes on the Workload tab's load; refused input in one line, in the
        tab and the Events."""
        if not self._password_ready():
            return
        try:
            tune = self.tune.current_spec()
            spec = self.workload.run_spec(threads=self.tune.threads_text())
            tune_run_spec(spec, tune)  # (run_tune makes it again in the run: here it only refuses early)
            target = self.targets.current_target()
        except ConfigError as exc:
            line = for_window(str(exc)).splitlines()[0]
            self.tune.show_status(f"⚠ {line}")
            self.show_message(line)
            return
        if self.controller.running():
            self.tune.show_status("⚠ a run is in progress: stop it first")
            self.show_message("a run is in progress: stop it first")
            return
        self._start(RunRequest(str(self.store.path), target, spec, password=typed_password(target), tune=tune))

    # -- the live tune --
    def _on_tune_run_started(self, worker: Any) -> None:
        live = self.tune_results.live
        tune = getattr(getattr(worker, "request", None), "tune", None)  # (a test emits no worker)
        if tune is None:
            live.clear()
            self.tune_dock.hide()
        else:
            live.start(tune.to_dict())
            self.tune_results.show_model(live)
            if not self.stage.on:  # stage keeps its docks hidden
                self.tune_results.reveal(cast(QMainWindow, self))
        self._tune_changed()

    def _on_trial(self, trial: Trial) -> None:
        if self.tune_results.live.active:
            self.tune_results.live.add_trial(trial)
            self._tune_changed()

    def _on_tune_event(self, ev: Event) -> None:
        if ev.kind == "tune" and self.tune_results.live.active:
            self.tune_results.live.add_event(ev.kind, ev.data)
            self._tune_changed()

    def _on_tune_finished(self, outcome: RunOutcome) -> None:
        live = self.tune_results.live
        if not live.active:
            return
        live.finished(outcome.details)
        self._tune_changed()
        if outcome.error is not None and live.result is None:
            self.tune.show_status(f"⚠ {for_window(outcome.error.message).splitlines()[0]}")
            if not live.trials:  # nothing ran (a refused knob): no results to show
                live.clear()
                self.tune_dock.hide()
                self._tune_changed()

    def _tune_changed(self) -> None:
        live = self.tune_results.live
        if live.active:
            self.tune.show_status(live.status_text())
        self.tune_results.refresh()
        self.update_tune_readout()

    # -- replay --
    def _show_replayed_tune(self, session: dict[str, Any], t0: float) -> None:
        replayed = self.tune_results.replayed
        if replayed.load_session(session, t0):
            self.tune_results.show_model(replayed)
            if not self.stage.on:
                self.tune_results.reveal(cast(QMainWindow, self))
        else:
            self.tune_results.show_model(self.tune_results.live)
            if not self.tune_results.live.active:
                self.tune_dock.hide()
        self.update_tune_readout()

    def _tune_replay_moved(self, x: float) -> None:
        if self.tune_results.model is self.tune_results.replayed:
            self.tune_results.replayed.replay_to(x)
            self.tune_results.refresh()
            self.update_tune_readout()

    def _show_live_tune(self) -> None:
        self.tune_results.show_model(self.tune_results.live)
        if not self.tune_results.live.active:
            self.tune_dock.hide()
        self.update_tune_readout()

    # -- stage --
    def update_tune_readout(self) -> None:
        """On stage, during a tune (or its replay): the best so far, large; nothing off stage."""
        model = self.tune_results.model
        self.dashboard.show_tune_readout(model.stage_text() if self.stage.on and model.active else None)
