"""The orchestrator: target + data + engine + store -> a recorded session, step by step."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tunebench.core.errors import ConfigError, EngineError, TunebenchError
from tunebench.core.interval import Event, Interval
from tunebench.core.probe import PROBE_NAMES, check_interval
from tunebench.core.stats import StepSummary, summarize
from tunebench.load.builtin import BuiltinEngine
from tunebench.load.driver import driver_mode
from tunebench.load.engine import ClientGroup, LoadEngine
from tunebench.load.prepare import check_schema_name, prepare, tables_ready
from tunebench.load.sysbench import SysbenchEngine
from tunebench.monitor import ProbeSampler, build_probes, local_server_pid
from tunebench.mysql.connect import ServerInfo, introspect, open_connection
from tunebench.mysql.target import Target, conn_params
from tunebench.store.repo import SessionWriter, Store

ENGINES = ("builtin", "sysbench")


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
        if self.step_seconds < 1:
            raise ConfigError("--step-seconds must be >= 1")
        if self.warmup_seconds < 0:
            raise ConfigError("--warmup-seconds must be >= 0")
        check_schema_name(self.schema)
        check_interval(self.probe_interval)
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


class Experiment:
    """Runs a RunSpec against a target and records it; callbacks let the CLI (or GUI) watch."""

    def __init__(self, store: Store, target: Target, spec: RunSpec,
                 on_interval: Callable[[Interval], None] | None = None,
                 on_step: Callable[[StepResult], None] | None = None,
                 on_note: Callable[[str], None] | None = None,
                 on_samples: Callable[[float, dict[str, float]], None] | None = None):
        spec.validate()
        self.store, self.target, self.spec = store, target, spec
        self.on_interval = on_interval or (lambda _iv: None)
        self.on_step = on_step or (lambda _s: None)
        self.on_note = on_note or (lambda _m: None)
        self.on_samples = on_samples or (lambda _t, _v: None)
        self.sampler: ProbeSampler | None = None
        self.probe_status: dict[str, dict[str, Any]] = {}
        self.stop_event = threading.Event()
        self.writer: SessionWriter | None = None
        self.results: list[StepResult] = []
        self.server: dict[str, Any] = {}

    def request_stop(self) -> None:
        self.stop_event.set()

    def _engine(self, params: Any) -> LoadEngine:
        if self.spec.engine == "sysbench":
            return SysbenchEngine(params, list(self.spec.groups), notes=self._note)
        return BuiltinEngine(params, list(self.spec.groups), workers=self.spec.workers, seed=self.spec.seed,
                             notes=self._note)

    def _note(self, message: str) -> None:
        self.on_note(message)
        if self.writer:
            self.writer.add_event(Event(time.time(), "note", message))

    def _ensure_data(self, params: Any) -> None:
        group = self.spec.groups[0]
        opts = group.options
        rows = max(g.workload.prepare_rows(g.options) for g in self.spec.groups)
        if not tables_ready(params, self.spec.schema, opts, rows):
            self.on_note(f"preparing {opts['tables']} table(s) x {rows} rows in schema {self.spec.schema}")
            prepare(params, self.spec.schema, opts, rows, threads=self.spec.prepare_threads, progress=self.on_note)

    def run(self) -> dict[str, Any]:
        spec = self.spec
        transport = spec.transport or self.target.default_transport()
        admin_params = conn_params(self.target, transport)
        conn = open_connection(admin_params, self.target.name)
        try:
            info = introspect(conn)
            cur = conn.cursor()
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{spec.schema}`")
            cur.close()
        finally:
            conn.close()
        params = conn_params(self.target, transport, database=spec.schema, password=admin_params.password)
        self.server = info.summary()
        self._ensure_data(params)
        config = {
            "groups": [{"name": g.name, "workload": g.workload.name, "options": dict(g.options),
                        "schedule": list(g.schedule), "lua_script": g.lua_script} for g in spec.groups],
            "step_seconds": spec.step_seconds, "warmup_seconds": spec.warmup_seconds, "schema": spec.schema,
            "driver": driver_mode(), "workers": spec.workers,
            "probes": list(spec.probes) if spec.probes is not None else "all",
            "probe_interval": spec.probe_interval,
        }
        self.writer = self.store.new_session(
            target=self.target.name, transport=transport, engine=spec.engine,
            workload="+".join(g.workload.name for g in spec.groups), config=config,
            flavor=info.flavor, version=info.version)
        self.writer.snapshot_variables(info.variables)
        engine = self._engine(params)
        status = "failed"
        restore = self._install_signal_handlers()
        try:
            self._start_probes(admin_params, transport, info, engine)
            engine.open()
            self.writer.add_event(Event(time.time(), "engine", f"{spec.engine} engine started",
                                        {"client_pids": engine.client_pids()}))
            for idx in range(spec.steps):
                if self.stop_event.is_set():
                    break
                self._run_step(engine, idx)
            status = "aborted" if self.stop_event.is_set() else "completed"
        except KeyboardInterrupt:
            status = "aborted"
        except TunebenchError as exc:
            self.writer.add_event(Event(time.time(), "error", str(exc)))
            raise
        finally:
            with contextlib.suppress(Exception):
                engine.close()
            if self.sampler is not None:
                self.sampler.close()
            restore()
            self.writer.finish(status, {"steps": self._steps_json()})
        return self.result(status)

    def _start_probes(self, params: Any, transport: str, info: ServerInfo, engine: LoadEngine) -> None:
        """Probes start before the load (a baseline second) and stop after it; see monitor.py."""
        if self.spec.probes == ():
            return
        writer = self.writer
        assert writer is not None
        pid, why = local_server_pid(self.target, info, transport)
        probes = build_probes(self.spec.probes, params, self.target.name, info, pid, engine.client_pids, why)

        def sink(t: float, values: dict[str, float], kinds: dict[str, str]) -> None:
            writer.add_samples(t, values, kinds)
            writer.maybe_flush()
            self.on_samples(t, values)

        def report(kind: str, probe: str, message: str) -> None:
            if kind != "probe":
                self.on_note(message)
            writer.add_event(Event(time.time(), kind, message, {"probe": probe}))

        self.sampler = ProbeSampler(probes, self.spec.probe_interval, sink, report)
        self.probe_status = {s.name: {"ok": s.ok, "detail": s.detail} for s in self.sampler.open()}
        self.sampler.start()

    def _run_step(self, engine: LoadEngine, idx: int) -> None:
        spec, writer = self.spec, self.writer
        assert writer is not None
        threads = {g.name: g.threads_at(idx) for g in spec.groups}
        started = time.time()
        measure_from = started + spec.warmup_seconds
        step_id = writer.start_step(idx, started, measure_from, {"threads": threads})
        writer.add_event(Event(started, "step_start", f"step {idx + 1}: " + ", ".join(
            f"{g}={n}" for g, n in threads.items()), {"threads": threads}))
        collected: dict[str, list[Interval]] = {g.name: [] for g in spec.groups}
        first_t: dict[str, float] = {}

        def sink(iv: Interval) -> None:
            first_t.setdefault(iv.group, iv.t)
            # Warm-up seconds are recorded on the timeline but left out of the step's summary.
            if iv.t - first_t[iv.group] >= spec.warmup_seconds:
                collected[iv.group].append(iv)
            writer.add_interval(iv)
            writer.flush()
            self.on_interval(iv)

        hists = engine.run_step(threads, spec.warmup_seconds + spec.step_seconds, sink, self.stop_event,
                                warmup=spec.warmup_seconds)
        if not self.stop_event.is_set() and not any(collected.values()):
            raise EngineError(f"step {idx + 1} produced no intervals")
        summaries = tuple(
            summarize(g.name, threads[g.name], collected[g.name],
                      (h.summary_ms() if (h := hists.get(g.name)) is not None and h.total else None))
            for g in spec.groups
        )
        ended = time.time()
        writer.end_step(step_id, ended, {s.group: s.to_dict() for s in summaries})
        writer.add_event(Event(ended, "step_end", f"step {idx + 1} done"))
        result = StepResult(idx, summaries)
        self.results.append(result)
        self.on_step(result)

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
        for r in self.results:
            for s in r.summaries:
                out.append({"step": r.idx + 1, "group": s.group, "threads": s.threads, "tps": round(s.tps, 2),
                            "qps": round(s.qps, 2), "lat_p95_ms": s.lat_p95_ms, "lat_p99_ms": s.lat_p99_ms,
                            "errors": s.errors, "reconnects": s.reconnects, "cv": s.cv,
                            "tps_median": round(s.tps_median, 2), "seconds": s.seconds})
        return out

    def result(self, status: str) -> dict[str, Any]:
        return {
            "session_id": self.writer.id if self.writer else None,
            "status": status,
            "engine": self.spec.engine,
            "target": self.target.name,
            "server": self.server,
            "probes": self.probe_status,
            "steps": self._steps_json(),
        }
