"""The orchestrator: target + data + engine + store -> a recorded session, step by step."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tunebench.core.errors import ConfigError, EngineError, StoreError, TargetError, TunebenchError
from tunebench.core.interval import Event, Interval
from tunebench.core.probe import PROBE_NAMES, check_interval
from tunebench.core.results import sweep_tables
from tunebench.core.stats import StepSummary, summarize
from tunebench.core.sweep import MAX_SECONDS, ConfigPlan, Plan, SweepSpec, make_plan
from tunebench.hosts.ssh import SshRunner, parse_ssh_url
from tunebench.load.builtin import BuiltinEngine, default_workers
from tunebench.load.capacity import Capacity, check_capacity, estimate_mb, mem_available_mb, peak_connections
from tunebench.load.driver import driver_mode
from tunebench.load.engine import ClientGroup, LoadEngine
from tunebench.load.prepare import check_schema_name, cleanup, prepare, tables_ready
from tunebench.load.sysbench import SysbenchEngine
from tunebench.run.monitor import ProbeSampler, build_probes, local_server_pid, server_is_local, status_map
from tunebench.mysql.connect import ServerInfo, introspect, open_connection
from tunebench.mysql.knobs import describe_knobs
from tunebench.mysql.target import Target, conn_params
from tunebench.run.runlock import RunLock
from tunebench.store.repo import SessionWriter, Store
from tunebench.run.tuning import KnobController, restore_pending, restored_lines, sandbox_for
from tunebench.run.watch import Outage, ServerWatch

ENGINES = ("builtin", "sysbench")
RECOVER_SECONDS = 30  # how long a run waits for a server that stopped answering before it gives up
MAX_WORKERS = 1024


@dataclass(frozen=True, slots=True)
class RunSpec:
    groups: tuple[ClientGroup, ...]
    engine: str = "builtin"
    step_seconds: int = 10
    warmup_seconds: int = 0
    transport: str | None = None
    schema: str = "tunebench"
    workers: int | None = None
    prepare_threads: int = 4
    seed: int | None = None
    probes: tuple[str, ...] | None = None  # None: every probe that works here; (): none
    probe_interval: float = 1.0
    extra: dict[str, Any] = field(default_factory=dict)
    client_hosts: tuple[str, ...] = ()  # ssh://user@host[:port]: sysbench runs there (split threads)
    trust_host_key: bool = False  # accept (and remember) a client host's unknown host key
    ssh_keys: tuple[str, ...] = ()

    @property
    def steps(self) -> int:
        return max(len(g.schedule) for g in self.groups)

    def validate(self) -> None:
        if self.engine not in ENGINES:
            raise ConfigError(f"unknown engine {self.engine!r}; use {' or '.join(ENGINES)}")
        if not self.groups:
            raise ConfigError("a run needs at least one client group")
        names = [g.name for g in self.groups]
        if len(set(names)) != len(names):
            raise ConfigError(f"client group names must be unique: {', '.join(names)}")
        for g in self.groups:
            if not g.schedule or any(n < 1 for n in g.schedule):
                raise ConfigError(f"group {g.name}: thread counts must be >= 1, got {list(g.schedule)}")
            if max(g.schedule) > 100_000:
                raise ConfigError(f"group {g.name}: {max(g.schedule)} threads is beyond reason")
        if not 1 <= self.step_seconds <= MAX_SECONDS:
            raise ConfigError(f"--step-seconds must be from 1 to {MAX_SECONDS}, got {self.step_seconds}")
        if not 0 <= self.warmup_seconds <= MAX_SECONDS:
            raise ConfigError(f"--warmup-seconds must be from 0 to {MAX_SECONDS}, got {self.warmup_seconds}")
        if self.workers is not None and not 1 <= self.workers <= MAX_WORKERS:
            raise ConfigError(f"--workers must be from 1 to {MAX_WORKERS}, got {self.workers}")
        if self.seed is not None and not 0 <= self.seed < 2**32:
            raise ConfigError(f"--seed must be from 0 to {2**32 - 1}, got {self.seed}")
        check_schema_name(self.schema)
        check_interval(self.probe_interval)
        for url in self.client_hosts:
            parse_ssh_url(url)
        if len(set(self.client_hosts)) != len(self.client_hosts):
            raise ConfigError("each --client-host once (two names for one machine are two hosts)")
        if self.client_hosts and self.engine != "sysbench":
            raise ConfigError("client hosts run the sysbench engine (--engine sysbench); the builtin engine "
                              "runs on this machine only so far")
        unknown = [p for p in self.probes or () if p not in PROBE_NAMES]
        if unknown:
            raise ConfigError(f"unknown probe {unknown[0]!r}; choose from {', '.join(PROBE_NAMES)}")
        shapes = {(g.options["tables"], g.options["table_size"], g.options["secondary"], g.options["auto_inc"])
                  for g in self.groups}
        if len(shapes) > 1:
            raise ConfigError("client groups share the sbtest tables: tables/table_size/secondary/auto_inc "
                              "must be the same in every group")


@dataclass(frozen=True, slots=True)
class StepResult:
    idx: int
    summaries: tuple[StepSummary, ...]
    config: int = 0
    segments: tuple[dict[str, Any], ...] = ()
    incomplete: bool = False  # a client host or worker was lost, or the server did not answer


def single_config(spec: RunSpec) -> ConfigPlan:
    return ConfigPlan(0, {}, {}, spec.transport, spec.engine, None)


class Experiment:
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
                 cooldown_seconds: int = 0, on_event: Callable[[Event], None] | None = None):
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
        self.sampler: ProbeSampler | None = None
        self.probe_status: dict[str, dict[str, Any]] = {}
        self.stop_event = threading.Event()
        self.writer: SessionWriter | None = None
        self.results: list[StepResult] = []
        self.server: dict[str, Any] = {}
        self.controller: KnobController | None = None
        self.applied: dict[int, dict[str, str]] = {}
        self.restored: list[dict[str, Any]] = []
        self._engine_now: LoadEngine | None = None
        self._live_marks: list[tuple[float, dict[str, Any]]] = []
        self._done: set[tuple[int, int]] = set()
        self._gaps = 0
        self._runners: list[SshRunner] = []
        self._watch: list[tuple[str, str, SshRunner]] = []
        self.server_watch: ServerWatch | None = None
        self.lock: RunLock | None = None
        self._store_error: StoreError | None = None

    def request_stop(self) -> None:
        self.stop_event.set()

    def change_knob(self, name: str, value: Any) -> dict[str, Any]:
        """Change a dynamic knob while the load runs: journaled, applied, marked on the timeline; the
        step's summary then holds before/after segments."""
        if self.controller is None:
            raise ConfigError("no run in progress")
        change = self.controller.set_live(name, value)
        self._live_marks.append((time.time(), change))
        return change

    def _engine(self, params: Any, engine: str) -> LoadEngine:
        if engine == "sysbench" and self._runners:
            return SysbenchEngine(params, list(self.spec.groups), notes=self._note, runners=self._runners,
                                  host_sink=self._host_samples, on_gap=self._on_gap)
        if engine == "sysbench":
            return SysbenchEngine(params, list(self.spec.groups), notes=self._note, on_gap=self._on_gap)
        # on_gap: a worker lost mid-step or a server not answering marks the step incomplete
        return BuiltinEngine(params, list(self.spec.groups), workers=self.spec.workers, seed=self.spec.seed,
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

    def _store_failed(self, exc: StoreError) -> None:
        """The store stopped taking writes (disk full, read-only, locked too long): stop the run; what was
        committed stays, the knobs go back, and the run ends with this one line."""
        if self._store_error is None:
            self._store_error = exc
            self.on_note(f"{exc}: stopping the run")
        self.stop_event.set()

    def _note(self, message: str) -> None:
        self.on_note(message)
        self._record(Event(time.time(), "note", message))

    def _event(self, ev: Event) -> None:
        if ev.kind in ("restart", "restore", "error"):
            self.on_note(ev.label)
        self._record(ev)

    def _ensure_data(self, params: Any, force: bool = False) -> None:
        group = self.spec.groups[0]
        opts = group.options
        rows = max(g.workload.prepare_rows(g.options) for g in self.spec.groups)
        if force:
            self.on_note(f"resetting the data: re-preparing schema {self.spec.schema}")
            cleanup(params, self.spec.schema)
        if force or not tables_ready(params, self.spec.schema, opts, rows):
            self.on_note(f"preparing {opts['tables']} table(s) x {rows} rows in schema {self.spec.schema}")
            prepare(params, self.spec.schema, opts, rows, threads=self.spec.prepare_threads, progress=self.on_note)

    def _session_config(self) -> dict[str, Any]:
        spec = self.spec
        return {
            "groups": [{"name": g.name, "workload": g.workload.name, "options": dict(g.options),
                        "schedule": list(g.schedule), "lua_script": g.lua_script} for g in spec.groups],
            "step_seconds": spec.step_seconds, "warmup_seconds": spec.warmup_seconds, "schema": spec.schema,
            "driver": driver_mode(), "workers": spec.workers,
            "probes": list(spec.probes) if spec.probes is not None else "all",
            "probe_interval": spec.probe_interval,
            # the spec as written, not its expansion (a big product made this a 482 MB blob); the configurations
            # that ran are in the steps and in the summary's sweep tables
            **({"sweep": {**self.plan.spec.to_dict(), "restarts_planned": self.plan.restarts,
                          "estimated_seconds": round(self.plan.seconds), "baseline_config": self.plan.baseline},
                "sweep_fingerprint": self.plan.spec.fingerprint()} if self.plan else {}),
        }

    def _open_session(self, transport: str, info: ServerInfo) -> SessionWriter:
        if self.resume is None:
            writer = self.store.new_session(
                target=self.target.name, transport=transport, engine=self.spec.engine,
                workload="+".join(g.workload.name for g in self.spec.groups), config=self._session_config(),
                flavor=info.flavor, version=info.version)
            writer.snapshot_variables(info.variables)
            return writer
        old = self.store.get_session(self.resume)
        want = self.plan.spec.fingerprint() if self.plan else None
        if old["config"].get("sweep_fingerprint") != want:
            raise ConfigError(f"session {self.resume} was not recorded from this sweep spec; cannot resume it")
        for st in old["steps"]:
            if st["summary"] is not None and st["ended_at"] is not None:
                cfg, step = st["config"].get("config", 0), st["config"].get("step", st["idx"])
                self._done.add((cfg, step))
                self.results.append(StepResult(st["idx"], tuple(StepSummary.from_dict(v) for k, v in
                                                                  st["summary"].items() if not k.startswith("_")), cfg))
        writer = self.store.resume_session(self.resume)
        writer.add_event(Event(time.time(), "note", f"resumed: {len(self._done)} step(s) were already done"))
        return writer

    def run(self) -> dict[str, Any]:
        spec = self.spec
        # Client hosts first: an unreachable, untrusted or refusing host stops the run before anything
        # (data, session, knobs) is touched.
        self._runners = [self._ssh(u) for u in spec.client_hosts]
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
        try:
            return self._run_locked(admin_params, transport)
        finally:
            self.lock.release()

    def _run_locked(self, admin_params: Any, transport: str) -> dict[str, Any]:
        spec = self.spec
        conn = open_connection(admin_params, self.target.name)
        try:
            info = introspect(conn)
            self._check_capacity(conn, info, transport)  # before anything on the server changes
            cur = conn.cursor()
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{spec.schema}`")
            cur.close()
        finally:
            conn.close()
        self.password = admin_params.password
        self.server = info.summary()
        self._ensure_data(conn_params(self.target, transport, database=spec.schema, password=self.password))
        self.writer = self._open_session(transport, info)
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
        status = "failed"
        restore = self._install_signal_handlers()
        engine: LoadEngine | None = None
        try:
            self._start_probes(admin_params, transport, info)
            self._start_watch(admin_params)
            for n, cfg in enumerate(self.configs):
                if self.stop_event.is_set():
                    break
                todo = [i for i in range(spec.steps) if (cfg.idx, i) not in self._done]
                if not todo:
                    continue
                engine = self._start_config(cfg, n)
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
            status = "aborted" if self.stop_event.is_set() else \
                "incomplete" if any(r.incomplete for r in self.results) else "completed"
        except KeyboardInterrupt:
            status = "aborted"
        except TunebenchError as exc:
            self._record(Event(time.time(), "error", str(exc)))
            raise
        finally:
            if self.server_watch is not None:
                self.server_watch.stop()
            if engine is not None:
                with contextlib.suppress(Exception):
                    engine.close()
            if self.sampler is not None:
                self.sampler.close()  # puts the probes' own settings back first
                self.sampler = None
            for _label, _role, runner in self._watch:
                runner.close()
            self.restored = self.controller.restore()
            restore()
            try:
                self.writer.finish(status, {"steps": self._steps_json(), **self._tables()})
            except StoreError as exc:
                if self._store_error is None:
                    raise
                self.on_note(f"the session could not be closed in the store ({exc}); what was written before is "
                             "intact, and the next start marks it interrupted")
        return self.result(status)

    def _check_capacity(self, conn: Any, info: ServerInfo, transport: str) -> None:
        cur = conn.cursor()
        cur.execute("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
        row = cur.fetchone()
        cur.close()
        in_use = int(row[1]) if row else 0
        limits = [int(info.variables.get("max_connections", "151"))]
        # a sweep may raise the limit itself
        limits += [int(c.knobs["max_connections"]) for c in self.configs if "max_connections" in c.knobs]
        peak = peak_connections([g.schedule for g in self.spec.groups])
        engines = {c.engine for c in self.configs} | {self.spec.engine}
        workers = self.spec.workers or default_workers(peak)
        memory = max(estimate_mb(peak, e, workers, server_is_local(self.target, transport) and not self._runners,
                                 info.variables) for e in engines)
        check_capacity(Capacity(peak, max(limits), in_use, memory, mem_available_mb()))

    def _start_config(self, cfg: ConfigPlan, n: int) -> LoadEngine:
        assert self.controller is not None and self.writer is not None
        if cfg.knobs or cfg.static or cfg.cpus or self.plan:
            self.on_note(f"configuration {cfg.idx + 1}/{len(self.configs)}: {cfg.label()}")
            self.applied[cfg.idx] = self.controller.apply_config(cfg)
            self._record(Event(time.time(), "config", f"configuration {cfg.idx + 1}: {cfg.label()}",
                                        {"config": cfg.idx, "knobs": self.applied[cfg.idx], "cpus": cfg.cpus,
                                         "transport": cfg.transport, "engine": cfg.engine}))
        transport = cfg.transport or self.spec.transport or self.target.default_transport()
        if self.spec.client_hosts and transport != "tcp":
            self.on_note("client hosts connect over TCP: transport tcp")
            transport = "tcp"
        params = conn_params(self.target, transport, database=self.spec.schema, password=self.password)
        if self.reset_data and n > 0:
            self._ensure_data(params, force=True)
        engine = self._engine(params, cfg.engine)
        engine.open()
        self._engine_now = engine
        self._record(Event(time.time(), "engine", f"{cfg.engine} engine started ({transport})",
                                    {"client_pids": engine.client_pids(), "config": cfg.idx}))
        return engine

    def _start_probes(self, params: Any, transport: str, info: ServerInfo) -> None:
        """Probes start before the load (a baseline second) and stop after it; see monitor.py."""
        if self.spec.probes == ():
            return
        writer = self.writer
        assert writer is not None
        pid, why = local_server_pid(self.target, info, transport)
        assert self.controller is not None
        probes = build_probes(self.spec.probes, params, self.target.name, info, pid,
                              None if self._runners else self._client_pids, why,
                              pid_file=info.variables.get("pid_file"), remote=self._watch,
                              journal=self.controller.probe_journal())

        def sink(t: float, values: dict[str, float], kinds: dict[str, str]) -> None:
            writer.add_samples(t, values, kinds)
            try:
                writer.maybe_flush()
            except StoreError as exc:
                self._store_failed(exc)
            self.on_samples(t, values)

        def report(kind: str, probe: str, message: str) -> None:
            if kind != "probe":
                self.on_note(message)
            self._record(Event(time.time(), kind, message, {"probe": probe}))

        self.sampler = ProbeSampler(probes, self.spec.probe_interval, sink, report)
        self.probe_status = status_map(self.sampler.open())
        self.sampler.start()

    def _start_watch(self, params: Any) -> None:
        name = f"{self.target.name} (watch)"

        def down(o: Outage) -> None:
            self.on_note(f"server not answering: {o.why}")
            self._record(Event(o.start, "gap", f"server not answering: {o.why}", {"server": "down", "why": o.why}))

        def up(o: Outage) -> None:
            took = (o.end or time.time()) - o.start
            self.on_note(f"server answering again after {took:.1f} s")
            self._record(Event(o.end or time.time(), "note", f"server answering again after {took:.1f} s",
                               {"server": "up", "seconds": round(took, 2)}))

        self.server_watch = ServerWatch(lambda: open_connection(params, name, timeout=3, read_timeout=3), down, up)
        self.server_watch.start()

    def _pause_probes(self) -> None:
        """A planned restart: neither a probe failure nor a server outage."""
        if self.server_watch is not None:
            self.server_watch.stop()
        if self.sampler is not None:
            self.sampler.stop()

    def _resume_probes(self) -> None:
        if self.lock is not None:
            self.lock.after_restart()
        if self.stop_event.is_set():
            return
        if self.sampler is not None:
            self.sampler.start()
        if self.server_watch is not None:
            self.server_watch.start()

    def _client_pids(self) -> list[int]:
        engine = self._engine_now
        return engine.client_pids() if engine is not None else []

    def _run_step(self, engine: LoadEngine, cfg: ConfigPlan, step: int) -> None:
        spec, writer = self.spec, self.writer
        assert writer is not None
        idx = cfg.idx * spec.steps + step
        threads = {g.name: g.threads_at(step) for g in spec.groups}
        started = time.time()
        measure_from = started + spec.warmup_seconds
        step_id = writer.start_step(idx, started, measure_from, {"threads": threads, "config": cfg.idx,
                                                                "step": step, "knobs": dict(cfg.knobs)})
        self._record(Event(started, "step_start", f"step {idx + 1}: " + ", ".join(
            f"{g}={n}" for g, n in threads.items()), {"threads": threads, "config": cfg.idx}))
        self._live_marks = []
        gaps_before = self._gaps
        collected: dict[str, list[Interval]] = {g.name: [] for g in spec.groups}
        first_t: dict[str, float] = {}

        def sink(iv: Interval) -> None:
            first_t.setdefault(iv.group, iv.t)
            # Warm-up seconds are recorded on the timeline but left out of the step's summary.
            if iv.t - first_t[iv.group] >= spec.warmup_seconds:
                collected[iv.group].append(iv)
            writer.add_interval(iv)
            try:
                writer.flush()
            except StoreError as exc:
                self._store_failed(exc)
            self.on_interval(iv)

        lost: TunebenchError | None = None
        try:
            hists = engine.run_step(threads, spec.warmup_seconds + spec.step_seconds, sink, self.stop_event,
                                    warmup=spec.warmup_seconds)
        except EngineError as exc:
            outage = self._outage_now(grace=4.0)  # a ping's read timeout (3 s), and then some
            if outage is None:
                raise
            # The engine gave up because the server went away (sysbench exits on a lost connection).
            hists = {}
            lost = TargetError(f"the server stopped answering during step {idx + 1} ({outage.why}); "
                               f"the {engine.name} engine stopped: {exc}")
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
        if not self.stop_event.is_set() and not any(collected.values()) and not down:
            raise EngineError(f"step {idx + 1} produced no intervals")
        summaries = tuple(
            summarize(g.name, threads[g.name], collected[g.name],
                      (h.summary_ms() if (h := hists.get(g.name)) is not None and h.total else None),
                      detect_steady=True)
            for g in spec.groups
        )
        segments = self._segments(collected, threads)
        ended = time.time()
        summary: dict[str, Any] = {s.group: s.to_dict() for s in summaries}
        if segments:
            summary["_segments"] = list(segments)
        incomplete: dict[str, Any] = {}
        if self._gaps > gaps_before:  # a client host was lost during the step: its numbers are partial
            incomplete["gaps"] = self._gaps - gaps_before
        if down:
            incomplete.update(server_down_seconds=round(down, 1), why=why)
        if incomplete:
            summary["_incomplete"] = incomplete
        writer.end_step(step_id, ended, summary)
        verdict = f"step {idx + 1} incomplete: " + (f"the server did not answer for {down:.1f} s ({why})" if down
                                                   else "a client host was lost") if incomplete else ""
        self._record(Event(ended, "step_end", verdict or f"step {idx + 1} done", incomplete))
        if verdict:
            self.on_note(verdict)
        result = StepResult(idx, summaries, cfg.idx, segments, bool(incomplete))
        self.results.append(result)
        self.on_step(result)
        if lost is not None:
            raise lost
        if self._outage_now() is not None:
            self._await_server(idx)

    def _outage_now(self, grace: float = 0.0) -> Outage | None:
        """The outage in progress, if any; `grace`: give the watch that long to notice one."""
        w = self.server_watch
        if w is None:
            return None
        deadline = time.monotonic() + grace
        while w.down is None and time.monotonic() < deadline and not self.stop_event.is_set():
            time.sleep(0.25)
        return w.down

    def _await_server(self, idx: int) -> None:
        w = self.server_watch
        assert w is not None
        outage = w.down
        if outage is None:
            return
        self.on_note(f"waiting up to {RECOVER_SECONDS} s for the server to answer again")
        if w.wait_up(RECOVER_SECONDS, self.stop_event) or self.stop_event.is_set():
            return
        raise TargetError(f"the server has not answered for {time.time() - outage.start:.0f} s ({outage.why}): "
                          f"the run stopped after step {idx + 1}")

    def _segments(self, collected: dict[str, list[Interval]], threads: dict[str, int]) -> tuple[dict[str, Any], ...]:
        """Before/after statistics around live knob changes made during the step."""
        if not self._live_marks:
            return ()
        cuts = [t for t, _ in self._live_marks]
        out = []
        bounds = [float("-inf"), *cuts, float("inf")]
        for i in range(len(bounds) - 1):
            seg = {"from": None if i == 0 else bounds[i], "to": None if i == len(cuts) else bounds[i + 1],
                   "after": None if i == 0 else self._live_marks[i - 1][1], "groups": {}}
            for g, ivs in collected.items():
                # an interval is stamped at its end: it belongs to the segment where it started
                part = [iv for iv in ivs if bounds[i] <= iv.t - 1 < bounds[i + 1]]
                if part:
                    seg["groups"][g] = summarize(g, threads[g], part).to_dict()
            out.append(seg)
        return tuple(out)

    def _install_signal_handlers(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = signal.getsignal(signal.SIGTERM)

        def on_term(_sig: int, _frame: Any) -> None:
            self.request_stop()

        signal.signal(signal.SIGTERM, on_term)
        return lambda: signal.signal(signal.SIGTERM, previous)

    def _steps_json(self) -> list[dict[str, Any]]:
        out = []
        for r in sorted(self.results, key=lambda r: r.idx):
            for s in r.summaries:
                out.append({"step": r.idx + 1, "config": r.config, "group": s.group, "threads": s.threads,
                            "tps": round(s.tps, 2), "qps": round(s.qps, 2), "lat_p95_ms": s.lat_p95_ms,
                            "lat_p99_ms": s.lat_p99_ms, "errors": s.errors, "reconnects": s.reconnects, "cv": s.cv,
                            "tps_median": round(s.tps_median, 2), "qps_median": round(s.qps_median, 2),
                            "seconds": s.seconds,
                            "steady_skipped": s.steady_skipped,
                            **({"segments": list(r.segments)} if r.segments else {}),
                            **({"incomplete": True} if r.incomplete else {})})
        return out

    def _tables(self) -> dict[str, Any]:
        if self.plan is None:
            return {}
        return sweep_tables(self.plan, self._steps_json(), self.applied)

    def result(self, status: str) -> dict[str, Any]:
        return {
            "session_id": self.writer.id if self.writer else None,
            "status": status,
            "engine": self.spec.engine,
            "target": self.target.name,
            "server": self.server,
            "probes": self.probe_status,
            "steps": self._steps_json(),
            **self._tables(),
            **({"restored": self.restored} if self.restored else {}),
            "restarts": self.controller.restarts if self.controller else 0,
        }


def sweep_run_spec(sweep: SweepSpec, **overrides: Any) -> RunSpec:
    """The RunSpec a sweep runs with (groups, engine, times, transport, schema, seed from the spec), for the
    CLI and the window alike; `overrides` are the caller's own settings (probes, client hosts, ...)."""
    from tunebench.load.workload import load_workload

    groups = []
    for g in sweep.groups:
        wl = load_workload(g.workload)
        groups.append(ClientGroup(g.name, wl, wl.options(dict(g.options)), g.threads))
    fields: dict[str, Any] = {"groups": tuple(groups), "engine": sweep.engine, "step_seconds": sweep.step_seconds,
                              "warmup_seconds": sweep.warmup_seconds, "transport": sweep.transport,
                              "schema": sweep.schema, "seed": sweep.seed}
    fields.update({k: v for k, v in overrides.items() if v is not None})
    return RunSpec(**fields)


def plan_sweep(sweep: SweepSpec, target: Target, transport: str | None = None,
               note: Callable[[str], None] | None = None) -> tuple[Plan, ServerInfo]:
    """Validate a sweep against the target's own variable list and expand it; nothing is changed."""
    conn = open_connection(conn_params(target, transport or sweep.transport), target.name)
    try:
        info = introspect(conn)
        missing = {a for a in sweep.optional if a in sweep.axes and a not in info.variables}
        if missing:
            (note or (lambda _m: None))(f"{info.flavor} {info.version} has no {', '.join(sorted(missing))}: "
                                        "that axis is left out")
            sweep = sweep.without_axes(missing)
        knobs = describe_knobs(conn, info, sweep.knob_axes)
    finally:
        conn.close()
    sb = sandbox_for(target)
    plan = make_plan(sweep, knobs, info.variables, sb.status().cpus if sb else None)
    if sb is not None:
        from tunebench.hosts.sandbox import check_cpus

        for cpus in sorted({c.cpus for c in plan.configs if c.cpus}):
            check_cpus(cpus)
    if sb is None:
        for c in plan.configs:
            if c.cpus:
                raise ConfigError(f"the cpus axis binds the sandbox server; target {target.name} is not it")
            if c.static and not target.restart_command:
                raise ConfigError(f"{next(iter(c.static))} needs a server restart and target {target.name} has no "
                                  "restart method: `tunebench target add` with --db-host, --option-file and "
                                  "--restart-command gives it one")
    return plan, info
