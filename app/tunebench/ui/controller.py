"""The window's state and what it asks of the rest of the app: the run (its child process, its outcome),
the replay, and the blocking server work done through the one task runner. MainWindow only lays out and
wires panels to this; nothing here touches a widget.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QObject, Signal

from tunebench.core.interval import Event
from tunebench.core.sweep import Plan, SweepSpec
from tunebench.hosts.sandbox import SandboxServer
from tunebench.mysql.target import Target
from tunebench.run import tasks
from tunebench.run.child import RunRequest
from tunebench.run.idle_knobs import IdleKnobs
from tunebench.run.metrics_endpoint import MetricsEndpoint
from tunebench.run.records import RunOutcome
from tunebench.store.repo import Store
from tunebench.ui.replay import load_session
from tunebench.ui.run_worker import RunWorker
from tunebench.ui.tasks import TaskRunner
from tunebench.ui.timeline import Timeline


class WindowController(QObject):
    """Target work, the run and the replay; every answer comes back as a signal on the GUI thread."""

    message = Signal(str)
    running_changed = Signal(bool)
    run_started = Signal(object)  # RunWorker
    run_finished = Signal(object)  # RunOutcome
    timeline_event = Signal(object)  # Event: the run's (`event` is QObject's)
    step = Signal(object)  # StepResult
    trial = Signal(object)  # a tune's Trial, as it ends
    sweep_planned = Signal(object)  # the running sweep's Plan
    host_key_unknown = Signal(str)  # ssh://user@host:port, from a run's RunError
    facts = Signal(str, object)  # target name, ServerFacts
    facts_failed = Signal(str, str)  # target name, message
    knob_facts = Signal(object)  # {name: KnobFacts}
    plan_ready = Signal(object, object, object)  # SweepSpec, Plan, [notes]
    plan_failed = Signal(object, str)  # SweepSpec, message
    prepared = Signal(str)  # the prepare/cleanup outcome's one line (a failure's too)
    idle_restored = Signal(object)  # [restored journal rows]: the knobs set between runs, put back

    def __init__(self, store: Store, sandbox: SandboxServer, parent: QObject | None = None):
        super().__init__(parent)
        self.store, self.sandbox = store, sandbox
        self.tasks = TaskRunner(self)
        self.tasks.failed.connect(lambda _kind, message: self.message.emit(message))
        self.timeline = Timeline()
        self.replay_timeline = Timeline()
        self.replay_session: dict[str, Any] | None = None
        self.worker: RunWorker | None = None
        self.started_at: float | None = None
        self.last_outcome: RunOutcome | None = None
        self.server_version: str | None = None
        self.prepare_cancel: threading.Event | None = None
        self.metrics: MetricsEndpoint | None = None  # `gui --metrics-listen`: every run of the window feeds it
        # knobs set between runs (issue 46 item 4): journaled, put back by Restore all or when the window closes
        self.idle_knobs = IdleKnobs(store.location)

    # -- the run --
    def start_run(self, request: RunRequest) -> bool:
        if self.worker is not None and self.worker.running():
            if not self.worker.ended:
                self.message.emit("a run is in progress: stop it first")
                return False
            self.worker.wait(10)  # the last run has ended; its process is exiting
        self.timeline.clear()
        self.timeline.headlines = {g.name: h for g in request.spec.groups if (h := g.headline) is not None}
        self.last_outcome = None
        if self.metrics is not None:
            request = replace(request, live_metrics=True)
        request = replace(request, preset=self.idle_knobs.changes(request.target.name))  # its start's markers
        worker = RunWorker(request, self)
        if self.metrics is not None:
            self._feed_metrics(worker, self.metrics)
        worker.interval.connect(self.timeline.add_interval)
        worker.samples.connect(self.timeline.add)
        worker.timeline_event.connect(self._on_event)
        worker.note.connect(self.message)
        worker.step.connect(self.step)
        worker.trial.connect(self.trial)
        worker.plan.connect(self.sweep_planned)
        worker.finished.connect(self._on_finished)
        self.worker = worker
        self.started_at = time.time()
        self.running_changed.emit(True)
        worker.start()
        self.run_started.emit(worker)
        return True

    @staticmethod
    def _feed_metrics(worker: RunWorker, metrics: MetricsEndpoint) -> None:
        """The run's records to the endpoint too (a few dict updates a second on this thread; the endpoint serves
        from its own)."""
        worker.session.connect(metrics.session)
        worker.interval.connect(metrics.interval)
        worker.reading.connect(metrics.reading)
        worker.timeline_event.connect(metrics.event)
        worker.finished.connect(lambda _outcome: metrics.run_ended())

    def running(self) -> bool:
        return self.worker is not None and self.worker.running() and not self.worker.ended

    def elapsed(self) -> float | None:
        return time.time() - self.started_at if self.started_at is not None and self.running() else None

    def stop_run(self, by_user: bool = True) -> None:
        if self.worker is not None:
            self.worker.stop(by_user)

    def shutdown(self, timeout: float = 30) -> None:
        """Stop the run and wait for its process: it puts the knobs back before it exits. The window closed under
        a run: it ends "aborted", as the README says (not "stopped", which is the Stop button's). Then the knobs
        set between runs go back too (bounded: a server that does not answer leaves them to the journal)."""
        self.stop_run(by_user=False)
        if self.worker is not None:
            self.worker.wait(timeout)
        if self.idle_knobs.pending():
            done = threading.Event()

            def restore() -> None:
                try:
                    self.idle_knobs.restore()
                except Exception:  # the journal keeps them: put back at the next start or `tunebench restore`
                    pass
                finally:
                    done.set()
            threading.Thread(target=restore, name="idle-knobs-restore", daemon=True).start()
            done.wait(min(timeout, 15))
        self.idle_knobs.close()

    def _on_event(self, ev: Event) -> None:
        self.timeline.add_event(ev)
        self.timeline_event.emit(ev)

    def _on_finished(self, outcome: RunOutcome) -> None:
        self.last_outcome = outcome
        self.running_changed.emit(False)
        if outcome.error is None:
            self.message.emit(f"session {outcome.session_id} {outcome.status}: best {outcome.best_tps:,.0f} TPS")
        else:
            self.message.emit(outcome.error.message)
            if outcome.error.kind == "host_key_unknown" and outcome.error.host:
                self.host_key_unknown.emit(outcome.error.host)
        self.run_finished.emit(outcome)

    def change_rate(self, group: str, rate: float, on_done: Any, on_failed: Any) -> None:
        if not self.running():
            on_failed("the rate changes during an open-loop run (Build > Rate)")
            return
        assert self.worker is not None
        self.worker.change_rate(group, rate, on_done, on_failed)

    def change_knob(self, name: str, value: str, on_done: Any, on_failed: Any, target: Target | None = None
                    ) -> None:
        """A live flip in the running load; between runs (`target`: the one the next run goes to), a change the next
        run starts with, journaled and put back by Restore all or when the window closes."""
        if not self.running():
            if target is None:
                on_failed("pick a target to set a knob on")
                return
            self.tasks.submit("idle-knob", lambda: self.idle_knobs.set(target, name, value), on_done, on_failed)
            return
        assert self.worker is not None
        self.worker.change_knob(name, value, on_done, on_failed)

    def confirm_knob(self, name: str | None, on_done: Any, on_failed: Any, block_seconds: int = 10) -> None:
        """Confirm the run's last live flip (or `name`'s): ABBA BAAB blocks; the verdict comes as an event."""
        if not self.running():
            on_failed("Confirm works on a running load: flip a knob during a run, then Confirm")
            return
        assert self.worker is not None
        self.worker.confirm_knob(name, on_done, on_failed, block_seconds)

    def restore_knobs(self) -> None:
        if not self.running() and self.idle_knobs.pending():
            def restored(done: list[dict[str, Any]]) -> None:
                self.idle_restored.emit(done)
                self.message.emit(f"restored {len(done)} knob(s) set between runs")

            self.tasks.submit("idle-knob", self.idle_knobs.restore, restored, self.message.emit)
            return
        if self.worker is not None:
            self.worker.restore_knobs(lambda done: self.message.emit(f"restored {len(done)} knob(s)"),
                                      self.message.emit)

    def mark(self) -> str | None:
        """Ask the run to record a mark (it comes back as its event, drawn then); why not, when it cannot."""
        label = f"mark {len([m for m in self.timeline.markers if m.kind == 'mark']) + 1}"
        if self.worker is None or not self.running() or not self.worker.mark(label):
            return "no mark: the run has ended"
        return None

    def session_id(self) -> int | None:
        """The session on screen: the one replayed, else the last run's."""
        if self.replay_session is not None:
            return int(self.replay_session["id"])
        return self.last_outcome.session_id if self.last_outcome is not None else None

    # -- replay --
    def open_replay(self, session_id: int, prefixes: tuple[str, ...]) -> dict[str, Any]:
        """Read a recorded session into the replay timeline (TunebenchError when it cannot be read)."""
        self.replay_session = load_session(self.store, session_id, self.replay_timeline, prefixes)
        return self.replay_session

    def close_replay(self) -> None:
        self.replay_session = None

    # -- server work, off the GUI thread --
    def load_facts(self, target: Target, names: list[str]) -> None:
        """The target's version and variables, and what the knobs `names` are (type, range, dynamic)."""
        name = target.name

        def done(facts: tasks.ServerFacts) -> None:
            self.server_version = facts.version
            self.facts.emit(name, facts)

        self.tasks.submit("facts", lambda: tasks.read_server_facts(target, names), done,
                          lambda message: self.facts_failed.emit(name, message))

    def describe_knobs(self, target: Target, names: list[str]) -> None:
        self.tasks.submit("describe", lambda: dict(tasks.read_server_facts(target, names).knobs),
                          self.knob_facts.emit)

    def plan(self, target: Target, spec: SweepSpec) -> None:
        """The plan `tunebench sweep --plan` prints, against this target."""
        notes: list[str] = []

        def work() -> Plan:
            from tunebench.run.spec import plan_sweep

            return plan_sweep(spec, target, spec.transport, note=notes.append)[0]

        self.tasks.submit("plan", work, lambda plan: self.plan_ready.emit(spec, plan, notes),
                          lambda message: self.plan_failed.emit(spec, message))

    def prepare(self, target: Target, request: tasks.DataRequest, on_progress: Any = None) -> None:
        """Prepare or clean up the workload's data (`request` from tasks.data_request, checked already).
        `on_progress` gets the loader's lines and its RowsProgress; cancel_prepare() stops the load."""
        cancel = self.prepare_cancel = threading.Event()

        def work(progress: Any) -> str:
            return tasks.prepare_data(target, request, progress=progress, on_rows=progress, cancel=cancel).summary

        self.tasks.submit("prepare", work, self.prepared.emit, self.prepared.emit, on_progress)

    def cancel_prepare(self) -> None:
        """Stop the prepare in progress between two INSERTs; its outcome then says what it kept and dropped."""
        if self.prepare_cancel is not None:
            self.prepare_cancel.set()

    def trust_host_key(self, url: str) -> None:
        """Trust an SSH host's key the user has seen and accepted (never silently)."""
        self.tasks.submit("trust", lambda: tasks.trust_host_key(url), self.message.emit)

