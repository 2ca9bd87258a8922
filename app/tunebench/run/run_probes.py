"""The run's probes and server watch around the load: started before it (a baseline second), paused across a
planned restart, the waits probe's last read awaited before a verdict reads the store; and what a step's
summary gets from them (the drift guard's flag, the per-operation efficiency). A part of Experiment
(run/experiment.py), apart so that one stays about the steps."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from tunebench.core.errors import StoreError
from tunebench.core.interval import Event
from tunebench.core.openmetrics import LiveReading
from tunebench.hosts.profile import ProfileProbe, stripped_note
from tunebench.hosts.ssh import SshRunner
from tunebench.load.engine import LoadEngine
from tunebench.mysql.connect import ServerInfo
from tunebench.mysql.target import Target
from tunebench.run.drift import DriftGuard
from tunebench.run.monitor import ProbeSampler, build_probes, local_server_pid, start_sampler
from tunebench.run.runlock import RunLock
from tunebench.run.session import busy_of, efficiency_of
from tunebench.run.spec import RunSpec
from tunebench.run.tuning import KnobController
from tunebench.run.watch import ServerWatch
from tunebench.store.repo import SessionWriter, Store

PROFILE_COVERED = 0.8  # a step's CPU profile over less of it than this share is said to be a sample


class RunProbes:
    """Experiment's probe lifecycle; the attributes below are Experiment's."""

    spec: RunSpec
    target: Target
    writer: SessionWriter | None
    controller: KnobController | None
    sampler: ProbeSampler | None
    probe_status: dict[str, dict[str, Any]]
    server_watch: ServerWatch | None
    lock: RunLock | None
    stop_event: threading.Event
    on_note: Callable[[str], None]
    on_samples: Callable[[float, dict[str, float]], None]
    on_reading: Callable[[LiveReading], None] | None
    _runners: list[SshRunner]
    _watch: list[tuple[str, str, SshRunner]]
    _engine_now: LoadEngine | None
    _waits_t: float | None
    drift: DriftGuard | None
    store: Store
    _said_stripped = False  # the profile's stripped-server line: said once a run
    _said_late_profile = False  # a step whose last profile window came too late: said once a run
    _said_gaps = False  # a step whose profile covered less than PROFILE_COVERED of it: said once a run

    def _record(self, ev: Event) -> None: ...  # (Experiment's)

    def _note(self, message: str) -> None: ...  # (Experiment's)

    def _store_failed(self, exc: StoreError) -> None: ...  # (Experiment's)

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
                              journal=self.controller.probe_journal(), schema=self.spec.schema)

        self.sampler, self.probe_status = start_sampler(probes, self.spec.probe_interval, writer, self._probe_samples,
                                                        self._store_failed, self.on_note, self._record,
                                                        self.on_reading)

    def _probe_samples(self, t: float, values: dict[str, float]) -> None:
        if any(k.startswith("waits.") for k in values):
            self._waits_t = max(self._waits_t or t, t)
        for f in list(getattr(self, "_feeds", ())):
            f.feed_samples(t, values)
        self.on_samples(t, values)

    def _await_waits(self, t: float) -> None:
        """The waits probe's seconds up to `t` written before a verdict reads them: its read in flight when the
        step ended lands a moment later (bounded: a probe that stopped answering gets one interval and 2 s)."""
        limit = time.monotonic() + self.spec.probe_interval + 2.0
        while self._waits_t is not None and self._waits_t < t and time.monotonic() < limit:
            if self.stop_event.wait(0.05):
                return

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

    def _step_extras(self, summary: dict[str, Any], idx: int, groups: list[str], lo: float, hi: float) -> None:
        """What a step's summary adds to the load's numbers: the drift guard's flag (variables changed outside
        Tunebench during it), the CPU profile's folded stacks (`_profile` the server's, `_profile_client` the load
        generator's), and each group's per-operation efficiency."""
        # (not against a server the watch calls lost: the check's connect would wait out its timeout, ~10 s)
        lost = self.server_watch is not None and self.server_watch.down is not None
        if self.drift and not lost and (drift := self.drift.check(f"during step {idx + 1}")):
            summary["_drift"] = [d.text() for d in drift]
        for probe in (self.sampler.probes if self.sampler else []):
            if isinstance(probe, ProfileProbe):
                # the window in progress ends with the step, and its samples are the step's
                if not probe.cut() and not self._said_late_profile:
                    self._said_late_profile = True
                    self._note(f"{probe.perf.where}: the CPU profile's last window of step {idx + 1} came too late "
                               "(a loaded machine): its samples count in the next step")
                stacks, covered = probe.take()
                summary["_profile_seconds"] = round(covered, 2)
                if covered < PROFILE_COVERED * (hi - lo) and not self._said_gaps:
                    self._said_gaps = True  # once a run; every step's summary has its own
                    self._note(f"{probe.perf.where}: the CPU profile covered {covered:.1f} of step {idx + 1}'s "
                               f"{hi - lo:.1f} s (perf's windows leave gaps while `perf script` runs, wide on a "
                               "loaded machine): its stacks are a sample of the step")
                for label, folded in stacks.items():
                    key = "_profile" if label == "mysqld" else f"_profile_{label}"
                    summary.setdefault(key, {}).update(folded)
                    if label == "mysqld" and not self._said_stripped and (said := stripped_note(folded)):
                        self._said_stripped = True  # once a run
                        self._note(said)
        writer = self.writer
        if writer is None:
            return
        try:
            writer.flush()  # the efficiency reads the step's seconds back from the store
            summary["_efficiency"] = efficiency_of(self.store, writer.id, groups, lo, hi)
            if groups and (busy := busy_of(self.store, writer.id, lo, hi, groups[0])) is not None:
                summary["_busy"] = busy
        except StoreError as exc:
            self._store_failed(exc)
