"""The orchestrator: target + data + engine + store -> a recorded session, step by step."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import mysql.connector

from tunebench.core.confdiff import compare
from tunebench.core.display import rate_text
from tunebench.core.errors import ConfigError, EngineError, StoreError, TargetError, TunebenchError
from tunebench.core.interval import Event, Interval
from tunebench.core.kinds import RunStatus
from tunebench.core.openmetrics import LiveReading
from tunebench.core.results import sweep_tables
from tunebench.core.schedule import MAX_RATE, MIN_RATE, OpenLoop
from tunebench.core.stats import summarize
from tunebench.core.sweep import ConfigPlan, PhaseSpec, Plan
from tunebench.core.verdict import order_text
from tunebench.hosts.ssh import SshRunner, parse_ssh_url
from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup, LoadEngine
from tunebench.load.remote_builtin import RemoteBuiltinEngine, check_client_python
from tunebench.load.sysbench import SysbenchEngine, check_sysbench_tls, sysbench_tls
from tunebench.mysql.connect import ServerInfo, connection_tls, introspect, open_connection
from tunebench.mysql.knobs import check_set_privilege
from tunebench.mysql.target import Target, conn_params
from tunebench.run.drift import DriftGuard, read_variables
from tunebench.run.monitor import ProbeSampler, server_is_local
from tunebench.run.records import RunError, RunOutcome, RunSession, StepResult
from tunebench.run.run_probes import RunProbes
from tunebench.run.runlock import RunLock
from tunebench.run.session import (
    flip_verdicts,
    live_segments,
    open_session,
    phases_json,
    steps_json,
    steps_per_second,
    verdict_outlook,
)
from tunebench.run.spec import RunSpec, check_run_capacity, config_groups, single_config
from tunebench.run.tasks import DiskSpace, datadir_space, ensure_data, server_refusals
from tunebench.run.tuning import KnobController, restore_pending, restored_lines, sized
from tunebench.run.watch import ServerWatch, stop_on_sigterm, watch_server
from tunebench.store.repo import SessionWriter, Store
from tunebench.store.writer import public_variables

RECOVER_SECONDS = 30  # how long a run waits for a server that stopped answering (RunSpec.server_wait's default)



def server_segments(configs: Sequence[ConfigPlan]) -> list[tuple[str | None, tuple[ConfigPlan, ...]]]:
    """The configurations in runs of one server (a plan keeps each server's together)."""
    out: list[tuple[str | None, tuple[ConfigPlan, ...]]] = []
    for c in configs:
        if out and out[-1][0] == c.server:
            out[-1] = (c.server, (*out[-1][1], c))
        else:
            out.append((c.server, (c,)))
    return out


def window_start(first: float, warmup: int) -> float:
    """The measured window of a step whose first measured second ends at `first`: from that second's start, after
    the warm-up. A ms early: the store keeps times to the µs, and the window takes the seconds wholly inside."""
    return first - 1 + warmup - 1e-3

class Experiment(RunProbes):
    """Runs a RunSpec against a target and records it; callbacks let the CLI (or GUI) watch.

    With a sweep `plan`, every configuration of the plan runs the RunSpec's steps in turn, in one
    session; knobs are applied (and journaled) before each configuration and restored at the end.
    """

    def __init__(self, store: Store, target: Target, spec: RunSpec,
                 on_interval: Callable[[Interval], None] | None = None,
                 on_step: Callable[[StepResult], None] | None = None,
                 on_note: Callable[[str], None] | None = None,
                 on_samples: Callable[[float, dict[str, float]], None] | None = None,
                 plan: Plan | None = None, resume: int | None = None, reset_data: bool = False,
                 cooldown_seconds: int = 0, on_event: Callable[[Event], None] | None = None,
                 on_reading: Callable[[LiveReading], None] | None = None,
                 on_session: Callable[[RunSession], None] | None = None,
                 preset: Sequence[Mapping[str, Any]] = ()):
        spec.validate()
        self.store, self.target, self.spec = store, target, spec
        self.plan = plan
        self.configs: tuple[ConfigPlan, ...] = plan.configs if plan else (single_config(spec),)
        self.resume, self.reset_data, self.cooldown = resume, reset_data, cooldown_seconds
        self.on_interval = on_interval or (lambda _iv: None)
        self.on_step = on_step or (lambda _s: None)
        self.on_note = on_note or (lambda _m: None)
        self.on_samples = on_samples or (lambda _t, _v: None)
        self.on_event = on_event or (lambda _e: None)
        # a live metrics endpoint's: each probe reading with its kinds and counters, and the session's labels
        self.on_reading = on_reading
        self.on_session = on_session or (lambda _s: None)
        # knobs set between runs (the window's knob panel, run/idle_knobs.py): markers at this run's start
        self.preset = tuple(preset)
        self.sampler: ProbeSampler | None = None
        self.probe_status: dict[str, dict[str, Any]] = {}
        self.stop_event = threading.Event()
        # ends the running step as planned (a tune's search is done): the run goes on, or ends "completed"
        self._step_stop = threading.Event()
        self.extras: dict[str, Any] = {}  # more of the session's summary and the result (a tune's: "tune")
        self.on_ending: list[Callable[[], None]] = []  # before the knobs go back at the end of the run
        self.stop_status: RunStatus = "aborted"  # what a stop makes of the run: "stopped" when the user asked for it
        self.writer: SessionWriter | None = None
        self.results: list[StepResult] = []
        self.server: dict[str, Any] = {}
        self.servers: list[dict[str, Any]] = []  # every server the run measured (a server axis: several)
        self._server_variables: list[tuple[str, dict[str, Any]]] = []  # (label, its global variables), per server
        self._axis = False  # a server axis: several servers, one session
        self._reference: tuple[str, dict[str, str | None]] | None = None  # align = true: the first server's
        self._server_pending: ServerInfo | None = None  # a server axis: the server whose variables are still due
        self.tls: dict[str, Any] = {}  # what the run's connections use: mode, TLS version and cipher
        self._final = True  # the last server of the run: its end closes the session
        self.controller: KnobController | None = None
        self.applied: dict[int, dict[str, str | None]] = {}
        self.restored: list[dict[str, Any]] = []
        self._engine_now: LoadEngine | None = None
        self._params_now: Any = None  # the running configuration's connection (an action step uses it)
        self._live_marks: list[tuple[float, dict[str, Any]]] = []
        self._confirming: Any = None  # a Confirm running on the load now (run/confirm.py)
        self._last_confirmation: Any = None
        self._threads_now: dict[str, int] = {}  # each group's threads in the running step
        self._calibrations: list[dict[str, Any]] | None = None  # this machine's calibration sessions, read once
        self._feeds: list[Any] = []  # who else gets every interval and probe sample (feed, feed_samples)
        self._rates_now: dict[str, OpenLoop] = {}  # the open-loop groups' rates now (changed live: change_rate)
        self._rates_asked: dict[str, float] = {}  # what the running step's plan asks of each open-loop group
        self._live_rates: dict[str, tuple[float, float]] = {}  # group -> (the rate the plan asked, the live one)
        self._measured_since: float | None = None  # the running step's first measured second
        self._step_ends: float | None = None  # and when it is planned to end
        self._done: set[tuple[int, int]] = set()
        self._gaps = 0
        self._runners: list[SshRunner] = []
        self._watch: list[tuple[str, str, SshRunner]] = []
        self.server_watch: ServerWatch | None = None
        self.lock: RunLock | None = None
        self._store_error: StoreError | None = None
        self.drift: DriftGuard | None = None
        self._per_second: dict[int, Any] | None = None
        self._waits_t: float | None = None  # the latest second the waits probe reported
        self.disk: DiskSpace | None = None  # the server's datadir and its free space, when it runs here

    def request_stop(self, by_user: bool = False) -> None:
        """Stop after the current second. `by_user`: the user's Stop (the run ends "stopped"); otherwise a
        signal or a lost window (it ends "aborted")."""
        if not self.stop_event.is_set():
            self.stop_status = "stopped" if by_user else "aborted"
        self.stop_event.set()
        self._step_stop.set()

    def end_step(self) -> None:
        """End the running step now, as if its time were up (its summary covers the seconds it ran)."""
        self._step_stop.set()

    def change_knob(self, name: str, value: Any) -> dict[str, Any]:
        """Change a dynamic knob while the load runs: journaled, applied, marked on the timeline; the
        step's summary then holds before/after segments."""
        if self.controller is None:
            raise ConfigError("no run in progress")
        change = self.controller.set_live(name, value)
        now = time.time()
        change = {**change, **verdict_outlook(now, self._measured_since, self._step_ends,
                                              [t for t, _c in self._live_marks])}
        self._live_marks.append((now, change))
        return change

    def confirm_knob(self, name: str | None = None, values: tuple[str, str] | None = None,
                     block_seconds: int = 10, settle_seconds: int = 5) -> Any:
        """Confirm a live flip (the last one, or `name`'s, or `name` between `values`): the knob alternates between
        the two values in ABBA BAAB blocks on the running load and a replicated verdict comes as a "verdict"
        event (run/confirm.py). Returns the running Confirmation; ConfigError before any change otherwise."""
        from tunebench.run.confirm import start_confirmation

        return start_confirmation(self, name, values, block_seconds, settle_seconds)

    def workload_name(self, group: str) -> str | None:
        return next((g.workload.name for g in self.spec.groups if g.name == group), None)

    def threads_now(self, group: str) -> int | None:
        return self._threads_now.get(group)

    def noise_floor(self, group: str) -> dict[str, Any] | None:
        """This machine's calibrated noise floor (`tunebench calibrate`) for the group's workload at its threads
        now, on this target: {"floor_pct", "session", "at"}, or None when it was never calibrated so."""
        from tunebench.run.confirm import find_floor
        from tunebench.store.location import this_host

        if self._calibrations is None:
            try:
                self._calibrations = [s for s in self.store.list_sessions(host=this_host())
                                      if isinstance(s.get("summary"), dict) and "calibration" in s["summary"]]
            except StoreError:
                self._calibrations = []
        return find_floor(self._calibrations, self.target.name, this_host(), self.workload_name(group),
                          self.threads_now(group))

    def _confirm_started(self, c: Any) -> None:
        # a cut: a single flip before it is judged on the seconds up to here, not on the blocks
        self._confirming = c
        self._live_marks.append((time.time(), {"cut": "confirm", "phase": "start", "name": c.name}))
        self._feeds.append(c)
        self._record(Event(time.time(), "note", f"confirming {c.name} {c.a} → {c.b}: {order_text(c.order)}, "
                           f"blocks of {c.block} s", {"confirm": c.name}))

    def _confirm_ended(self, c: Any) -> None:
        with contextlib.suppress(ValueError):
            self._feeds.remove(c)
        self._live_marks.append((time.time(), {"cut": "confirm", "phase": "end", "name": c.name}))
        self._confirming, self._last_confirmation = None, c

    def change_rate(self, group: str, rate: float) -> dict[str, Any]:
        """An open-loop group's rate, changed while the load runs: the schedule goes on from now at `rate`, the
        step's later seconds are at it, and a "rate" event marks the change on the timeline."""
        engine = self._engine_now
        load = self._rates_now.get(group)
        if engine is None or load is None:
            raise ConfigError(f"group {group} does not run open loop now (start it with a rate)")
        if not MIN_RATE <= rate <= MAX_RATE:
            raise ConfigError(f"a rate is from {MIN_RATE:g} to {MAX_RATE:,} per second, got {rate:g}")
        if not hasattr(engine, "set_rate"):
            raise ConfigError(f"the {engine.name} engine cannot change its rate mid-step (sysbench's --rate is fixed "
                              "for its run): use the builtin engine")
        new = replace(load, rate=float(rate))
        engine.set_rate(group, new)
        self._rates_now[group] = new
        # held for the steps after this one while they ask the rate this one asked (a speaker's PgUp fell back
        # at the next step); a step that asks another (a sweep over rates) has its own, said then
        asked = self._rates_asked.get(group)
        self._live_rates[group] = (asked if asked is not None else load.rate, float(rate))
        change = {"group": group, "from": load.rate, "to": new.rate}
        label = f"rate {group} {rate_text(load.rate)} → {rate_text(new.rate)}/s"
        self._record(Event(time.time(), "rate", label, change))
        return change

    def mark(self, label: str) -> None:
        """A user's mark on the timeline, recorded with the session."""
        self._record(Event(time.time(), "mark", label))

    def restore_knobs(self) -> list[dict[str, Any]]:
        """Every knob this run changed, back to its original value now (the run goes on)."""
        return self.controller.restore(final=False) if self.controller is not None else []

    def _engine(self, params: Any, engine: str, groups: Sequence[ClientGroup] | None = None) -> LoadEngine:
        groups = list(groups if groups is not None else self.spec.groups)
        if engine == "sysbench" and self._runners:
            return SysbenchEngine(params, groups, notes=self._note, runners=self._runners,
                                  host_sink=self._host_samples, on_gap=self._on_gap)
        if engine == "sysbench":
            return SysbenchEngine(params, groups, notes=self._note, on_gap=self._on_gap)
        if self._runners:  # the builtin engine's workers on the client hosts, their seconds merged here
            return RemoteBuiltinEngine(params, groups, self._runners, python=self.spec.remote_python,
                                       workers=self.spec.workers, seed=self.spec.seed, notes=self._note,
                                       on_gap=self._on_gap, host_sink=self._host_samples)
        # on_gap: a worker lost mid-step or a server not answering marks the step incomplete
        return BuiltinEngine(params, groups, workers=self.spec.workers, seed=self.spec.seed,
                             notes=self._note, on_gap=self._on_gap)

    def _ssh(self, url: str) -> SshRunner:
        return SshRunner(parse_ssh_url(url), self.spec.trust_host_key, self.spec.ssh_keys, note=self._note).connect()

    def _host_samples(self, t: float, values: dict[str, float]) -> None:
        """Each client host's own seconds (`client.GROUP@HOST.*`), beside the merged group."""
        if self.writer is not None:
            self.writer.add_samples(t, values)
        self.on_samples(t, values)

    def _on_gap(self, t: float, label: str, data: dict[str, Any]) -> None:
        self._gaps += 1
        self._record(Event(t, "gap", label, data))

    def _record(self, ev: Event) -> None:
        """Every event goes to the store and to whoever watches (the GUI puts markers from these)."""
        if self.writer is not None:
            try:
                self.writer.add_event(ev)
            except StoreError as exc:
                self._store_failed(exc)
        self.on_event(ev)

    def _record_preset(self, info: Any) -> None:
        """The knobs set between runs that the server still reads as set: a marker each at the session's start
        ("set before the run"); one that reads otherwise now (put back, or changed by someone) is not claimed."""
        t = time.time()
        for p in self.preset:
            name = str(p.get("name", ""))
            now = info.variables.get(name.lower())
            if not name or now is None or str(now) != str(p.get("to")):
                continue
            self._record(Event(t, "knob", f"{name} = {sized(now)} (set before the run)",
                               {"name": name, "from": p.get("from"), "to": now, "before_run": True}))

    def _store_failed(self, exc: StoreError) -> None:
        """The store stopped taking writes (disk full, read-only, locked too long): stop the run; what was
        committed stays, the knobs go back, and the run ends with this one line."""
        if self._store_error is None:
            self._store_error = exc
            self.on_note(f"{exc}: stopping the run")
        self.stop_event.set()
        self._step_stop.set()  # now, not when the step's time is up: each second more is a second not kept

    def _note(self, message: str) -> None:
        self.on_note(message)
        self._record(Event(time.time(), "note", message))

    def _event(self, ev: Event) -> None:
        if ev.kind in ("restart", "restore", "error", "drift"):
            self.on_note(ev.label)
        self._record(ev)

    def run(self) -> RunOutcome:
        """The run; a sweep with a server axis runs each server's configurations on that server's sandbox in
        turn, into the one session (each server's knobs put back before the next one starts)."""
        segments = server_segments(self.configs)
        if len(segments) == 1 and segments[0][0] is None:
            return self._run_target()
        self._axis = True
        outcome = self.outcome("failed")
        from tunebench.hosts.sandbox import SandboxServer

        # the sandboxes this sweep started (its planning too): stopped again once it is done with them
        started: list[Any] = [SandboxServer.named(n) for n in (self.plan.started if self.plan else ())]
        try:
            for k, (name, configs) in enumerate(segments):
                if self.stop_event.is_set():
                    break
                outcome = self._run_server(k, len(segments), name or "", configs, started)
                if outcome.status not in ("completed", "incomplete"):
                    break
        finally:
            for sb in started:  # (its knobs are back: each server's part restores before the next one starts)
                try:
                    if not sb.status().running:
                        continue
                    sb.stop()
                    self.on_note(f"{sb.target_name} stopped (this sweep started it)")
                except TunebenchError as exc:
                    self.on_note(f"{sb.target_name} is still running (this sweep started it; `tunebench sandbox "
                                 f"stop --server {sb.target_name.removeprefix('sandbox:')}` stops it): {exc}")
        return outcome

    def _run_server(self, k: int, count: int, name: str, configs: tuple[ConfigPlan, ...], started: list[Any]
                    ) -> RunOutcome:
        """One server of a server axis: its sandbox (started if it was not, and noted in `started`), its
        configurations (aligned to the first server's settings when asked)."""
        from tunebench.hosts.sandbox import SandboxServer

        sb = SandboxServer.named(name)
        if not sb.status().running:
            self.on_note(f"starting the {sb.target_name} server ...")
            sb.start()
            if all(s.target_name != sb.target_name for s in started):
                started.append(sb)
        mine = self._align(sb.target(), name, configs) if self.plan is not None and self.plan.spec.align \
            else configs
        self.target, self.configs, self._final = sb.target(), mine, k == count - 1
        self.on_note(f"server {k + 1}/{count}: {name} ({len(configs)} configuration(s))")
        return self._run_target()

    def _align(self, target: Target, name: str, configs: tuple[ConfigPlan, ...]) -> tuple[ConfigPlan, ...]:
        """`align = true`: the first server is the reference; each later one's configurations get its settings
        (run/align.py), said in a note and kept in the summary (`aligned`)."""
        from tunebench.mysql.knobs import describe_knobs
        from tunebench.run.align import aligned_configs, alignment

        conn = open_connection(conn_params(target, target.default_transport()), target.name)
        try:
            variables = read_variables(conn)
            if self._reference is None:
                self._reference = (name, variables)
                self.on_note(f"aligned: {name} is the reference; the other servers run with its durability and "
                             "logging settings where they have them")
                return configs
            found = alignment(name, variables, *self._reference)
            facts = describe_knobs(conn, introspect(conn), list(found.knobs))
        finally:
            conn.close()
        found.knobs = {k: (facts[k].normalize(v) if facts[k].type != "string" else v) for k, v in found.knobs.items()}
        self.on_note(found.text())
        self.extras.setdefault("aligned", []).append(found.to_dict())
        return aligned_configs(configs, found, {k for k, f in facts.items() if not f.dynamic})

    def _run_target(self) -> RunOutcome:
        spec = self.spec
        # Client hosts first: an unreachable, untrusted or refusing host stops the run before anything
        # (data, session, knobs) is touched.
        self._runners = [self._ssh(u) for u in spec.client_hosts]
        if self._runners and "builtin" in {spec.engine, *(c.engine for c in self.configs)}:
            try:
                for runner in self._runners:  # Python and this Tunebench there, or one line saying what is missing
                    check_client_python(runner, spec.remote_python)
            except TunebenchError:
                for runner in self._runners:
                    runner.close()
                raise
        # the probes' own connections (the load's may drop and reconnect on their own)
        watched = [(self.target.db_host, "db")] if self.target.db_host else []
        watched += [(u, "client") for u in spec.client_hosts]
        self._watch = [(parse_ssh_url(u).label, role, self._ssh(u)) for u, role in watched] if spec.probes != () else []
        # A run killed earlier (kill -9 of this process or of a GUI's run child) may have left knobs or probe
        # settings changed and its session 'running': put them right before this run reads the server.
        self.store.mark_orphans()
        for line in restored_lines(restore_pending(self.store, note=self.on_note)[0]):
            self.on_note(line)
        transport = spec.transport or self.target.default_transport()
        admin_params = conn_params(self.target, transport)
        # One run at a time per server, taken before anything on it changes (see runlock.py).
        self.lock = RunLock(admin_params, self.target.name, "sweep" if self.plan else "run")
        self.lock.acquire()
        control = self._open_control()
        try:
            return self._run_locked(admin_params, transport)
        finally:
            if control is not None:
                control.close()
            self.lock.release()

    def _open_control(self) -> Any:
        """The run's control socket (`tunebench live flip|confirm` from another terminal); a run goes on without it
        when it cannot be opened (said once)."""
        from tunebench.run.confirm import ControlServer

        control = ControlServer(self)
        try:
            control.open()
        except OSError as exc:
            self.on_note(f"no control socket for `tunebench live` ({control.path}: {exc.strerror or exc})")
            return None
        return control

    def _run_locked(self, admin_params: Any, transport: str) -> RunOutcome:
        spec = self.spec
        conn = open_connection(admin_params, self.target.name)
        try:
            info = introspect(conn)
            # a knob the account may not change is refused here, before any session or data
            check_set_privilege(conn, sorted({k for c in self.configs for k in c.knobs if k not in c.static}),
                                admin_params.user)
            self.tls = connection_tls(conn, admin_params)
            uses_sysbench = "sysbench" in {spec.engine, *(c.engine for c in self.configs)}
            if uses_sysbench:  # what sysbench cannot do is refused before the schema or its tables are made
                check_sysbench_tls(conn_params(self.target, transport, database=spec.schema,  # (issue 43 item 10)
                                               password=admin_params.password))
            if admin_params.tls and not sysbench_tls(admin_params) and uses_sysbench:
                self.tls["load"] = "the sysbench engine's connections are plain TCP (sysbench 1.0 needs --ssl-ca, " \
                                   "--ssl-cert and --ssl-key for TLS)"
            if self.target.is_sandbox and transport == "tcp" and not self.target.ssl_mode:
                self.tls["note"] = ("TCP to the sandbox runs without TLS (for speed); --transport tcp+tls measures it "
                                    "with TLS")
            # before anything on the server changes
            check_run_capacity(conn, info, self.spec, self.configs,
                               server_is_local(self.target, transport) and not self._runners)
            cur = conn.cursor()
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{spec.schema}`")
            cur.close()
        finally:
            conn.close()
        self.password = admin_params.password
        self.server = self.server or info.summary()
        self.disk = datadir_space(info.variables.get("datadir"), server_is_local(self.target, transport))
        # a phase plan with an action changes the data's shape as it goes (iiBench's index build): it starts
        # from the data it was written for, freshly prepared
        fresh = any(p.action for p in spec.phases) and self.resume is None
        if not ensure_data(conn_params(self.target, transport, database=spec.schema, password=self.password), spec,
                           self.on_note, force=fresh, cancel=self.stop_event, space=self.disk):
            return self.outcome(self.stop_status)  # stopped while preparing: nothing recorded, nothing changed
        if self.writer is None:
            self.writer, self._done, self.results = open_session(self.store, self.target, spec, self.plan, info,
                                                                self.resume, self.tls)
            if self.tls.get("note"):
                self.on_note(self.tls["note"])
            self.on_session(RunSession(self.writer.id, "+".join(g.workload.name for g in spec.groups),
                                       self.target.name, socket.gethostname()))
            self._record_preset(info)
        self._server_pending = info if self._axis else None  # (its variables once its first configuration is on)
        self.servers.append(info.summary())
        self.writer.on_locked = self.on_note
        if self.lock is not None:
            self.lock.name_session(self.writer.id)
        self.controller = KnobController(self.store, self.target, info, self.writer.id, self._event, self._note,
                                         around_restart=(self._pause_probes, self._resume_probes),
                                         ssh_keys=spec.ssh_keys)
        knob_names = sorted({k for c in self.configs for k in c.knobs})
        if knob_names:
            self.controller.describe(knob_names)
        self.controller.check_restartable(self.configs)
        status: RunStatus = "failed"
        restore = stop_on_sigterm(self.request_stop)
        engine: LoadEngine | None = None
        try:
            self.drift = DriftGuard(lambda: open_connection(admin_params, f"{self.target.name} (drift guard)"),
                                    lambda: self.controller.touched if self.controller else (), self._event,
                                    lambda now: self.controller.unexpected(now) if self.controller else [],
                                    self.controller.delayed_companion)
            self.controller.moving = self.drift.moving  # what it learns is no knob's companion either
            self._start_probes(admin_params, transport, info)
            self.server_watch = watch_server(
                lambda: open_connection(admin_params, f"{self.target.name} (watch)", timeout=3, read_timeout=3),
                self.on_note, self._record)
            for n, cfg in enumerate(self.configs):
                if self.stop_event.is_set():
                    break
                todo = [i for i in range(spec.steps) if (cfg.idx, i) not in self._done]
                if not todo:
                    continue
                engine = self._start_config(cfg, n)
                if engine is None:  # stopped while re-preparing the data
                    break
                for i in todo:
                    if self.stop_event.is_set():
                        break
                    self._run_step(engine, cfg, i)
                engine.close()
                engine = self._engine_now = None
                if self.cooldown and n < len(self.configs) - 1 and not self.stop_event.is_set():
                    self.stop_event.wait(self.cooldown)
            if self._store_error is not None:
                raise self._store_error
            status = self.stop_status if self.stop_event.is_set() else \
                "incomplete" if any(r.incomplete for r in self.results) else "completed"
        except KeyboardInterrupt:
            status = "aborted"
        except TunebenchError as exc:
            self._record(Event(time.time(), "error", str(exc)))
            raise
        finally:
            # a server the watch calls lost now: what still waits on it is given short graces, not a slow one's
            lost = self.server_watch is not None and self.server_watch.down is not None
            if self.server_watch is not None:
                self.server_watch.stop()
                # gone for good: restoring the knobs below pauses and resumes the probes around a restart, and a
                # resumed watch outlived the run, pinging the server for ever (4 SELECTs in a later test's mix)
                self.server_watch = None
            if engine is not None:
                with contextlib.suppress(Exception):
                    engine.close()
            if self.sampler is not None:
                self.sampler.close(lost)  # puts the probes' own settings back first
                self.sampler = None
            for _label, _role, runner in self._watch:
                runner.close()
            for hook in self.on_ending:  # e.g. a tune's search: stops changing knobs, puts its result in extras
                hook()
            if self._confirming is not None:  # a Confirm still alternating: it stops before the knobs go back
                self._confirming.cancel()
            self.restored = self.controller.restore()
            restore()
            try:
                if self._final or status not in ("completed", "incomplete"):
                    self.writer.finish(status, {"steps": steps_json(self.results), **self._tables(), **self._phases(),
                                               **self._differed(), **self.extras})
            except StoreError as exc:
                if self._store_error is None:
                    raise
                self.on_note(f"the session could not be closed in the store ({exc}); what was written before is "
                             "intact, and the next start marks it interrupted")
        return self.outcome(status)

    def _start_config(self, cfg: ConfigPlan, n: int) -> LoadEngine | None:
        assert self.controller is not None and self.writer is not None
        if cfg.knobs or cfg.static or cfg.cpus or cfg.options or self.plan:
            total = len(self.plan.configs) if self.plan else len(self.configs)
            self.on_note(f"configuration {cfg.idx + 1}/{total}: {cfg.label()}")
            self.applied[cfg.idx] = self.controller.apply_config(cfg)
            self._record(Event(time.time(), "config", f"configuration {cfg.idx + 1}: {cfg.label()}",
                                        {"config": cfg.idx, "knobs": self.applied[cfg.idx], "cpus": cfg.cpus,
                                         **({"server": cfg.server} if cfg.server else {}),
                                         "transport": cfg.transport, "engine": cfg.engine,
                                         **({"options": dict(cfg.options)} if cfg.options else {})}))
        if self._server_pending is not None:
            self._server_seen(self._server_pending)
        groups = config_groups(self.spec.groups, cfg.options)
        transport = cfg.transport or self.spec.transport or self.target.default_transport()
        if self.spec.client_hosts and transport not in ("tcp", "tcp+tls"):
            self.on_note("client hosts connect over TCP: transport tcp")
            transport = "tcp"
        params = conn_params(self.target, transport, database=self.spec.schema, password=self.password)
        spec = replace(self.spec, groups=groups)
        if self.reset_data and n > 0 and not ensure_data(params, spec, self.on_note, force=True,
                                                         cancel=self.stop_event, space=self.disk):
            return None
        if cfg.options and not (self.reset_data and n > 0) and not ensure_data(params, spec, self.on_note,
                                                                               cancel=self.stop_event, space=self.disk):
            return None  # an option axis of the data set (iiBench's secondary_indexes): its tables, prepared
        self._params_now = params
        engine = self._engine(params, cfg.engine, groups)
        engine.open()
        self._engine_now = engine
        tls = "" if params.socket else f", ssl-mode {params.ssl_mode}"
        self._record(Event(time.time(), "engine", f"{cfg.engine} engine started ({transport}{tls})",
                           {"client_pids": engine.client_pids(), "config": cfg.idx, "transport": transport,
                            "ssl_mode": None if params.socket else params.ssl_mode}))
        return engine

    def _run_action_step(self, cfg: ConfigPlan, step: int, phase: PhaseSpec) -> None:
        """A phase that runs a family's action instead of load (iiBench's index build): a step of its own, timed,
        with the probes' seconds on the timeline and the action's result as its summary."""
        spec, writer = self.spec, self.writer
        assert writer is not None and phase.action is not None
        idx = cfg.idx * spec.steps + step
        group = spec.action_family(phase.action)
        threads = {g.name: 0 for g in spec.groups}
        self._rates_now = {}
        if self.drift:
            self.drift.check(f"before step {idx + 1}")
        started = time.time()
        step_id = writer.start_step(idx, started, started, {"threads": threads, "config": cfg.idx, "step": step,
                                                           "knobs": dict(cfg.knobs), "phase": phase.name,
                                                           "action": phase.action})
        # the phase's name after the colon: the plots' step marker shows what follows it
        self._record(Event(started, "step_start", f"step {idx + 1}: {phase.name} {phase.action}",
                           {"threads": threads, "config": cfg.idx, "step": idx + 1, "phase": phase.name,
                            "action": phase.action}))
        with server_refusals(f"{phase.action} ({phase.name})"):
            done = group.family.run_action(phase.action, self._params_now, spec.schema, group.options,
                                           cancel=self.stop_event)
        ended = time.time()
        action = {"phase": phase.name, "action": phase.action, "group": group.name, **done}
        incomplete = {} if done.get("done", True) else {"action_incomplete": True}
        writer.end_step(step_id, ended, {"_phase": phase.name, "_action": action,
                                         **({"_incomplete": incomplete} if incomplete else {})}, started)
        self._record(Event(ended, "step_end", f"step {idx + 1} {phase.name}: {done.get('what', phase.action)}",
                           {"phase": phase.name, "action": phase.action, "seconds": done.get("seconds"),
                            **incomplete}))
        self.on_note(f"{phase.name}: {done.get('what', phase.action)}")
        result = StepResult(idx, (), cfg.idx, (), bool(incomplete), {}, phase.name, action)
        self.results.append(result)
        self.on_step(result)

    def _run_step(self, engine: LoadEngine, cfg: ConfigPlan, step: int) -> None:
        spec, writer = self.spec, self.writer
        assert writer is not None
        phase = spec.phase_at(step)
        if phase is not None and phase.action:
            self._run_action_step(cfg, step, phase)
            return
        idx = cfg.idx * spec.steps + step
        threads = {g.name: g.threads_at(step) for g in spec.groups}
        running = [g for g in spec.groups if threads[g.name] > 0]  # a phase plan's idle groups: no summary
        main = running[0].name
        rates = {g.name: load for g in running if (load := g.open_loop_at(step)) is not None}
        self._rates_asked = {g: load.rate for g, load in rates.items()}
        for g, load in list(rates.items()):
            held = self._live_rates.get(g)
            if held is None:
                continue
            if held[0] == load.rate:
                rates[g] = replace(load, rate=held[1])
                self.on_note(f"rate {g} stays at {rate_text(held[1])}/s (set live; this step asks "
                             f"{rate_text(load.rate)}/s)")
            else:
                del self._live_rates[g]
                self.on_note(f"rate {g}: this step asks {rate_text(load.rate)}/s; the live {rate_text(held[1])}/s "
                             "ends")
        self._rates_now = dict(rates)
        if self.drift:
            self.drift.check(f"before step {idx + 1}")
        started = time.time()
        measure_from = started + spec.warmup_seconds
        named = f" {phase.name}" if phase is not None else ""
        shown = f"{phase.name} " if phase is not None else ""
        step_id = writer.start_step(idx, started, measure_from, {"threads": threads, "config": cfg.idx,
                                                                "step": step, "knobs": dict(cfg.knobs),
                                                                **({"phase": phase.name} if phase else {})})
        self._record(Event(started, "step_start", f"step {idx + 1}: {shown}" + ", ".join(
            f"{g}={n}" for g, n in threads.items() if n or phase is None),
            {"threads": threads, "config": cfg.idx, "step": idx + 1, **({"phase": phase.name} if phase else {})}))
        self._live_marks = []
        self._threads_now = dict(threads)
        # for a live change's verdict outlook: the step's first measured second, and when it is planned to end
        self._measured_since, self._step_ends = None, measure_from + spec.step_seconds
        gaps_before = self._gaps
        collected: dict[str, list[Interval]] = {g.name: [] for g in running}
        first_t: dict[str, float] = {}

        ramped: list[Interval] = []
        first_open: dict[str, int] = {}  # the connections open at each group's first measured second

        def record(iv: Interval) -> None:
            for f in list(self._feeds):
                f.feed(iv)
            writer.add_interval(iv)
            try:
                writer.maybe_flush(0.0)  # the writer's thread writes: a store that hangs never stops the run's seconds
            except StoreError as exc:
                self._store_failed(exc)
            self.on_interval(iv)

        def sink(iv: Interval) -> None:
            if iv.group not in collected:  # idle in this phase: on the timeline at 0, not in the step
                record(iv)
                return
            if iv.group not in first_t:
                first_t[iv.group], first_open[iv.group] = iv.t, iv.threads
                if ramped and iv.group == main:
                    self._ramp_ended(idx, ramped, iv, threads)
            # Warm-up seconds are recorded on the timeline but left out of the step's summary.
            if iv.t - first_t[iv.group] >= spec.warmup_seconds:
                if iv.group == main and not collected[iv.group]:
                    self._measured_since = iv.t - 1.0
                    self._step_ends = iv.t - 1.0 + spec.step_seconds
                collected[iv.group].append(iv)
            record(iv)

        def ramp(iv: Interval) -> None:
            # connections still opening: on the timeline, not in the step (nor its warm-up)
            ramped.append(iv)
            record(iv)

        lost: TunebenchError | None = None
        self._step_stop = threading.Event()
        if self.stop_event.is_set():
            self._step_stop.set()
        # the first step's warm-up (or its first seconds) tells which variables the server moves by itself
        learner = None
        if self.drift is not None and not self.drift.learned:
            learner = threading.Timer(max(1.0, min(float(spec.warmup_seconds or 5), spec.step_seconds / 2)),
                                      self.drift.learn)
            learner.daemon = True
            learner.start()
        try:
            hists = engine.run_step(threads, spec.warmup_seconds + spec.step_seconds, sink, self._step_stop,
                                    warmup=spec.warmup_seconds, ramp=ramp, rates=rates)
        except EngineError as exc:
            # a ping's read timeout (3 s), and then some
            outage = self.server_watch.outage_within(4.0, self.stop_event) if self.server_watch else None
            if outage is None:
                raise
            # The engine gave up because the server went away (sysbench exits on a lost connection).
            hists = {}
            lost = TargetError(f"the server stopped answering during step {idx + 1} ({outage.why}); "
                               f"the {engine.name} engine stopped: {exc}")
        finally:
            if learner is not None:
                learner.cancel()
        if self.server_watch is not None:
            self.server_watch.settle(time.time())
        down, why = self.server_watch.down_during(started, time.time()) if self.server_watch else (0.0, "")
        if down:
            # Seconds without a server are not measurements: the step keeps what it measured before, and
            # says it is incomplete (a zero-TPS second is never averaged in as load).
            assert self.server_watch is not None
            watch = self.server_watch
            for g, ivs in collected.items():
                collected[g] = [iv for iv in ivs if not watch.down_during(iv.t - 1, iv.t)[0]]
        # (a step whose work was done within its first second has no measured second: its totals say it)
        # (a client host lost before the step's first second: a gap, as later in a step - the step is incomplete
        # and the next one starts the host's workers again)
        if (not self.stop_event.is_set() and not any(collected.values()) and not down and engine.ended != "finished"
                and self._gaps == gaps_before):
            raise EngineError(f"step {idx + 1} produced no intervals")
        service = engine.service_hists
        summaries = tuple(
            summarize(g.name, threads[g.name], collected[g.name],
                      (h.summary_ms() if (h := hists.get(g.name)) is not None and h.total else None),
                      detect_steady=True, headline=g.headline,
                      service=(sv.summary_ms() if (sv := service.get(g.name)) is not None and sv.total else None))
            for g in running
        )
        segments = live_segments(self._live_marks, collected, threads)
        ended = time.time()
        summary: dict[str, Any] = {s.group: s.to_dict() for s in summaries}
        if segments:
            summary["_segments"] = list(segments)
        incomplete: dict[str, Any] = {}
        if self._gaps > gaps_before:  # a client host was lost during the step: its numbers are partial
            incomplete["gaps"] = self._gaps - gaps_before
        if down:
            incomplete.update(server_down_seconds=round(down, 1), why=why)
        # Every second an error and not one transaction: the step measured nothing (connections refused, a
        # statement the server rejects); it is not a result of 0 TPS.
        failed = [g for g, ivs in collected.items()
                  if ivs and not any(iv.tps > 0 for iv in ivs) and sum(iv.errors for iv in ivs) > 0]
        if failed and not self.stop_event.is_set():
            incomplete["failed_groups"] = failed
        if incomplete:
            summary["_incomplete"] = incomplete
        if phase is not None:
            summary["_phase"] = phase.name
        finished = None
        if engine.ended == "finished":  # every connection had done its work (max_rows): the step ended there
            # each group's transactions of the step (its first seconds too) over the time to its last one's end
            work = getattr(engine, "finished_work", {})
            finished = {"why": "finished", "transactions": {g: n for g, (n, _t) in work.items()},
                        "seconds": {g: round(max(t - started, 1e-3), 3) for g, (_n, t) in work.items()},
                        "headline": {g.name: work[g.name][0] * g.headline[1] for g in running
                                     if g.name in work and g.headline is not None
                                     and len(g.family.transactions(g.options)) == 1}}
            summary["_ended"] = finished
            self.on_note(f"step {idx + 1}{named}: every connection reached its max_rows after "
                         f"{ended - started:.0f} s: the step ends")
        if ramped and main in first_t:
            # the step was measured once its connections were open: its window starts there
            measure_from = window_start(first_t[main], spec.warmup_seconds)
            summary["_ramp"] = {"seconds": sum(1 for iv in ramped if iv.group == main),
                                "open": first_open[main], "asked": threads[main]}
        self._step_extras(summary, idx, list(collected), measure_from, ended)
        writer.end_step(step_id, ended, summary, measure_from)
        if self._live_marks:
            self._await_waits(ended)
            try:
                writer.flush()  # the verdict reads the step's seconds back from the store
                verdicts = flip_verdicts(self.store, writer.id, self._live_marks, collected, ended, spec.busy_pct,
                                         floors={g: f["floor_pct"] for g in collected
                                                 if (f := self.noise_floor(g)) is not None},
                                         measured_from=measure_from)
            except StoreError as exc:
                self._store_failed(exc)
                verdicts = []
            for ev in verdicts:
                self._record(ev)
        verdict = f"step {idx + 1} incomplete: " + (
            f"the server did not answer for {down:.1f} s ({why})" if down else
            f"no transaction completed in group {', '.join(incomplete['failed_groups'])}, only errors (see above)"
            if "failed_groups" in incomplete else "a client host was lost") if incomplete else ""
        self._record(Event(ended, "step_end", verdict or f"step {idx + 1} done", incomplete))
        if verdict:
            self.on_note(verdict)
        result = StepResult(idx, summaries, cfg.idx, segments, bool(incomplete), summary.get("_efficiency") or {},
                            phase.name if phase is not None else None, None, finished, summary.get("_busy"))
        self.results.append(result)
        self.on_step(result)
        if lost is not None:
            raise lost
        if self.server_watch is not None and self.server_watch.down is not None:
            wait = self.spec.server_wait
            self.on_note(f"waiting up to {wait} s for the server to answer again")
            self.server_watch.await_up(wait, self.stop_event, f"the run stopped after step {idx + 1}")

    def _ramp_ended(self, idx: int, ramped: list[Interval], first: Interval, threads: Mapping[str, int]) -> None:
        """The step's first measured second: the seconds before, while its connections opened, are said once."""
        seconds = sum(1 for iv in ramped if iv.group == first.group)
        measure_from = window_start(first.t, self.spec.warmup_seconds)
        asked = threads[first.group]
        how = ("measured from here" if first.threads >= asked
               else "the others did not open: measured with those from here")
        ev = Event(first.t - 1, "ramp", f"step {idx + 1}: {first.threads} of {asked} connections open after "
                   f"{seconds} s; {how}", {"step": idx + 1, "seconds": seconds, "measure_from": measure_from,
                                           "open": first.threads, "asked": asked})
        self._record(ev)
        if seconds > 1 or first.threads < asked:  # not worth a line: the second in which they all open
            self.on_note(ev.label)

    def _phases(self) -> dict[str, Any]:
        return {"phases": phases_json(self.results)} if self.spec.phases else {}

    def _tables(self) -> dict[str, Any]:
        # a phase plan's steps are phases, not a concurrency curve: no "best TPS by threads" of one configuration
        if self.plan is None or self.spec.phases:
            return {}
        per_second = self._per_second
        if per_second is None and self.writer is not None:
            try:  # at the end: the steps' per-second TPS as stored, for the configuration pairs' verdicts
                per_second = steps_per_second(self.store, self.writer.id, self.spec.groups[0].name,
                                              self.spec.busy_pct)
            except StoreError:
                per_second = {}
            if self._final:  # kept once the run's last server is done (an earlier server's end had its steps only)
                self._per_second = per_second
        return sweep_tables(self.plan, steps_json(self.results), self.applied, per_second, self._floor_at)

    def _server_seen(self, info: ServerInfo) -> None:
        """A server of a server axis, its first configuration applied (its aligned settings too): its variables as
        it runs, in a `server` event, and what makes it unfair against the servers before it said now."""
        self._server_pending = None
        assert self.controller is not None
        try:
            conn = self.controller.connect()
            try:
                variables = public_variables(read_variables(conn))
            finally:
                conn.close()
        except (TunebenchError, mysql.connector.Error) as exc:  # said, and the comparison says "not known"
            self.on_note(f"the server's variables could not be read for the comparison: {exc}")
            variables = {}
        self._record(Event(time.time(), "server", f"server {info.flavor} {info.version} ({self.target.name})",
                           {"target": self.target.name, **info.summary(), "index": len(self._server_variables),
                            "variables": variables}))
        self._server_variables.append((f"{info.flavor} {info.version}", variables))
        if len(self._server_variables) > 1:  # said as the next server starts, and in the results
            for line in compare(self._server_variables).warnings:
                self.on_note(f"unfair comparison, {line}")

    def _differed(self) -> dict[str, Any]:
        """A server axis: what else differed between its servers' configurations (core/confdiff.py)."""
        if len(self._server_variables) < 2:
            return {}
        return {"servers": self.servers, "differed": compare(self._server_variables).to_dict()}

    def _floor_at(self, threads: int) -> float | None:
        """This machine's calibrated noise floor for the main group's workload at `threads` (a sweep's cells)."""
        from tunebench.run.confirm import find_floor
        from tunebench.store.location import this_host

        self.noise_floor(self.spec.groups[0].name)  # (reads this machine's calibrations once)
        found = find_floor(self._calibrations or [], self.target.name, this_host(),
                           self.workload_name(self.spec.groups[0].name), threads)
        return found["floor_pct"] if found is not None else None

    def outcome(self, status: RunStatus, error: RunError | None = None) -> RunOutcome:
        """How the run ended; with `error`, why it failed (the session, if one was opened, says so too)."""
        return RunOutcome(
            status, self.writer.id if self.writer else None, tuple(sorted(self.results, key=lambda r: r.idx)),
            tuple(self.restored), error,
            {"engine": self.spec.engine, "target": self.target.name, "server": self.server,
             "tls": self.tls,
             "probes": self.probe_status, "steps": steps_json(self.results), **self._tables(), **self._phases(),
             **self._differed(),
             "restarts": self.controller.restarts if self.controller else 0, **self.extras})
