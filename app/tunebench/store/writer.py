"""Writing one session as it happens: samples, events and steps, flushed every second, compacted every minute."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession

from tunebench.core.errors import StoreError
from tunebench.core.interval import Event, Interval
from tunebench.core.kinds import RunStatus
from tunebench.store.models import (
    ChunkRow,
    EventRow,
    SeriesRow,
    SessionRow,
    StepRow,
    VariableRow,
)
from tunebench.store.owner import me as owner_me
from tunebench.store.samples import CODEC, MAX_CHUNK_SAMPLES, decode_chunk, encode_chunk, series_kind
from tunebench.store.server_errors import StoreUnavailable
from tunebench.store.sqlite_file import LOCK_PATIENCE, StoreLocked

if TYPE_CHECKING:
    from tunebench.store.repo import Store

_T = TypeVar("_T")

COMPACT_EVERY = 60  # merge one-second chunks into one chunk per series every minute
# Variables whose values are secrets, never copied into the store.
SECRET_VARIABLE_WORDS = ("password", "secret", "key_id")


def public_variables(variables: Mapping[str, Any]) -> dict[str, Any]:
    """A server's variables as a session keeps them: none whose name says it holds a secret."""
    return {n: v for n, v in variables.items() if not any(w in n.lower() for w in SECRET_VARIABLE_WORDS)}
# Samples a run keeps in memory while its server store is unreachable (about 100 bytes each: 2 million is
# 200 series for almost three hours); $TUNEBENCH_STORE_HOLD sets another bound.
HOLD_SAMPLES = 2_000_000
HOLD_ENV = "TUNEBENCH_STORE_HOLD"
SLOW_STORE = 8.0  # seconds a write may take before the run says the store is not answering (a frozen server;
# longer than a locked SQLite file's own wait, 5 s, which is said as such)
RETRY_GONE = 2.0  # seconds between two tries of a server store that went away (each may wait to connect)


def hold_bound() -> int:
    try:
        return max(1, int(os.environ.get(HOLD_ENV) or HOLD_SAMPLES))
    except ValueError:
        return HOLD_SAMPLES


class SessionWriter:
    """Writes one session as it happens: every flush commits, so a kill loses at most ~1 s.

    A store locked by another process does not stop the run: samples and events stay in memory and go in
    with the next flush (`LOCK_PATIENCE` at most). Nor does a server store that went away (restarted, network):
    they stay in memory until it is back, up to `hold_bound()` samples. Any other store failure (disk full,
    read-only, the bound reached) raises StoreError; what was committed before stays intact.
    """

    def __init__(self, store: Store, *, target: str = "", transport: str = "", engine: str = "", workload: str = "",
                 config: Mapping[str, Any] | None = None, flavor: str | None = None, version: str | None = None,
                 resume: int | None = None, started_at: float | None = None):
        self.store = store
        self._series_ids: dict[str, int] = {}
        self._pending: dict[str, list[tuple[float, float]]] = defaultdict(list)
        self._events: list[Event] = []  # events waiting for a locked store
        self._kinds: dict[str, str] = {}
        self._last_compact = time.monotonic()
        self._last_flush = time.monotonic()
        self._locked_since: float | None = None
        self._gone_since: float | None = None  # the server store went away (its outage, for the retries)
        self._tried = 0.0
        self._given_up = ""  # the bound was reached (what was said then): no more waiting, even to close it
        self._held = 0  # samples pending (a flush's worth, or all since the store went away)
        self._hold = hold_bound()
        self.on_locked: Any = lambda _msg: None  # told once when the store is found locked (or gone), and when back
        # The engine's sink and the probe threads add samples concurrently; `_lock` orders them and is only ever
        # held for moments: a flush takes the pending samples out under it and writes them without it, so a store
        # that hangs in a commit (a frozen server) never stops a probe thread from handing its samples over
        # (issue 43 item 7: the flush held it across the network commit, and 13-15 s of every probe series of a
        # store frozen 15 s were lost). `_flushing` lets one flush write at a time.
        self._lock = threading.RLock()
        self._flushing = threading.Lock()
        # maybe_flush() never writes itself (it runs on the probe threads and the engine's): it wakes this writer's
        # own thread, which does; a write that takes longer than SLOW_STORE is said, and its failure is raised at
        # the next maybe_flush()
        self._kick = threading.Event()
        self._flusher: threading.Thread | None = None
        self._closing = False
        self._failure: StoreError | None = None
        self._writing_since: float | None = None  # when the write in progress began
        self._slow_since: float | None = None  # a write that took longer than SLOW_STORE began then (said)
        self.id = store._patient(self._open, target, transport, engine, workload, config, flavor, version, resume,
                                 started_at)

    def _open(self, target: str, transport: str, engine: str, workload: str, config: Mapping[str, Any] | None,
              flavor: str | None, version: str | None, resume: int | None, started_at: float | None) -> int:
        with OrmSession(self.store.engine) as s:
            if resume is not None:
                old = s.get(SessionRow, resume)
                if old is None:
                    raise StoreError(f"no session {resume} in {self.store.where}")
                old.status, old.ended_at = "running", None
                old.owner_pid, old.owner_start = owner_me()
                old.host, old.machine = self.store.host, self.store.machine
                for sr in s.scalars(select(SeriesRow).where(SeriesRow.session_id == resume)):
                    self._series_ids[sr.name] = sr.id
                s.commit()
                return resume
            started = time.time() if started_at is None else started_at
            pid, start = owner_me()
            row = SessionRow(started_at=started, status="running", target=target, transport=transport,
                             engine=engine, workload=workload, config=json.dumps(config or {}), flavor=flavor,
                             version=version, owner_pid=pid, owner_start=start, host=self.store.host,
                             machine=self.store.machine)
            s.add(row)
            s.commit()
            return row.id

    def _patient(self, fn: Callable[[], _T]) -> _T:
        """The store's patience with a locked or departed store, unless this session already gave up waiting
        for it (the bound reached: the run is stopping, and must not wait at each of its last writes)."""
        if self._given_up:
            raise StoreError(self._given_up)
        return self.store._patient(fn)

    def snapshot_variables(self, variables: Mapping[str, str]) -> None:
        def write() -> None:
            with OrmSession(self.store.engine) as s:
                for name, value in public_variables(variables).items():
                    s.add(VariableRow(session_id=self.id, name=name, value=value))
                s.commit()
        self._patient(write)

    def add_interval(self, iv: Interval) -> None:
        with self._lock:
            for name, value in iv.series().items():
                self._pending[name].append((iv.t, value))
                self._held += 1

    def add_samples(self, t: float, values: Mapping[str, float], kinds: Mapping[str, str] | None = None) -> None:
        """Probe samples; `kinds` says 'rate' or 'gauge' per name (default: guessed from the name)."""
        with self._lock:
            if kinds:
                self._kinds.update(kinds)
            for name, value in values.items():
                self._pending[name].append((t, value))
                self._held += 1

    def maybe_flush(self, max_age: float = 1.0) -> None:
        """Never waits for the store: the writer's thread writes; what it could not is raised here, once."""
        with self._lock:
            failure, self._failure = self._failure, None
            if failure is not None:
                raise failure
            since = self._writing_since
            if since is not None and self._locked_since is None and self._slow_since is None \
                    and time.monotonic() - since >= SLOW_STORE:
                self._slow_since = since  # said once; "back ... nothing was lost" when the write ends
                self.on_locked(f"session store {self.store.where} has not answered for "
                               f"{time.monotonic() - since:.0f} s: keeping the samples in memory meanwhile")
            if time.monotonic() - self._last_flush < max_age:
                return
            if self._flusher is None and not self._closing:
                self._flusher = threading.Thread(target=self._flush_loop, name="store-writer", daemon=True)
                self._flusher.start()
        self._kick.set()

    def _flush_loop(self) -> None:
        while not self._closing:
            if not self._kick.wait(30.0):  # idle (a writer nobody finished): the thread goes, the next kick
                with self._lock:  # starts another
                    if not self._kick.is_set():
                        self._flusher = None
                        return
            self._kick.clear()
            if self._closing:
                return
            try:
                self.flush()
            except StoreError as exc:
                with self._lock:
                    self._failure = exc

    def stop_flusher(self) -> None:
        """The writer's thread ends (after the write it may be in): finish() writes the rest itself."""
        self._closing = True
        self._kick.set()

    def add_event(self, ev: Event) -> None:
        with self._lock:
            self._events.append(ev)
            if self._locked_since is not None:
                return
        # written at once unless a write is under way (a store that hangs): then the writer's thread takes it with
        # the rest, and the thread that had something to say (a probe's) is not held
        if not self._flushing.acquire(blocking=False):
            self._kick.set()
            return
        try:
            self._write_pending()
        finally:
            self._flushing.release()

    def start_step(self, idx: int, started_at: float, measure_from: float, config: Mapping[str, Any]) -> int:
        def write() -> int:
            with OrmSession(self.store.engine) as s:
                row = StepRow(session_id=self.id, idx=idx, started_at=started_at, measure_from=measure_from,
                              config=json.dumps(config))
                s.add(row)
                s.commit()
                return row.id
        return self._patient(write)

    def end_step(self, step_id: int, ended_at: float, summary: Mapping[str, Any],
                 measure_from: float | None = None) -> None:
        """`measure_from`: when the measured seconds began, if later than said at the start (a ramp)."""
        self.flush()

        def write() -> None:
            with OrmSession(self.store.engine) as s:
                row = s.get(StepRow, step_id)
                assert row is not None
                row.ended_at = ended_at
                if measure_from is not None:
                    row.measure_from = measure_from
                row.summary = json.dumps(summary)
                s.commit()
        self._patient(write)

    def flush(self) -> None:
        with self._flushing:
            with self._lock:
                now = time.monotonic()
                self._last_flush = now
                if not self._pending and not self._events:
                    return
                if self._gone_since is not None and now - self._tried < RETRY_GONE:
                    return  # a server store that went away: asked again every few seconds, not at every sample
            self._write_pending()

    def _take(self) -> tuple[dict[str, list[tuple[float, float]]], list[Event], int]:
        """The pending samples and events, out of the way of the threads adding more."""
        with self._lock:
            taken = self._pending, self._events, self._held
            self._pending, self._events, self._held = defaultdict(list), [], 0
            return taken

    def _give_back(self, pending: dict[str, list[tuple[float, float]]], events: list[Event], held: int) -> None:
        """A batch that was not written: pending again, before what came meanwhile (nothing lost, nothing twice)."""
        with self._lock:
            for name, points in pending.items():
                self._pending[name][:0] = points
            self._events[:0] = events
            self._held += held

    def _write_pending(self) -> None:
        """One batch (`_flushing` held by the caller): written without `_lock`, or given back and waited for."""
        pending, events, held = self._take()
        self._writing_since = time.monotonic()
        try:
            self.store._guard(lambda: self._write_batch(pending, events))
        except StoreLocked as exc:
            self._give_back(pending, events, held)
            now = time.monotonic()
            if self._locked_since is None:
                self._locked_since = now
                self.on_locked(f"{exc}: keeping the samples in memory meanwhile")
            elif now - self._locked_since > LOCK_PATIENCE:
                raise StoreLocked(f"{exc} (for {now - self._locked_since:.0f} s)") from None
            return
        except StoreUnavailable as exc:
            self._give_back(pending, events, held)
            now = self._tried = time.monotonic()
            self._gone_since = self._gone_since or now
            if self._locked_since is None:
                self._locked_since = now
                self.on_locked(f"{exc}: keeping the samples in memory until it is back (up to {self._hold:,} "
                               f"samples, ${HOLD_ENV})")
            elif self._held >= self._hold:
                self._given_up = (f"session store {self.store.where} unreachable for {now - self._locked_since:.0f} s: "
                                  f"{self._held:,} samples held in memory, the bound (${HOLD_ENV}={self._hold}); "
                                  "the samples since it went away are lost")
                raise StoreError(self._given_up) from None
            return
        except BaseException:
            self._give_back(pending, events, held)
            raise
        finally:
            self._writing_since = None
        if time.monotonic() - self._last_compact >= COMPACT_EVERY:
            self._compact_now()
        with self._lock:
            since = min((t for t in (self._locked_since, self._slow_since) if t is not None), default=None)
            if since is not None:
                back = "free again" if self.store.path is not None else "back"
                self.on_locked(f"session store {back} after {time.monotonic() - since:.0f} s: nothing was lost")
                self._locked_since = self._gone_since = self._slow_since = None

    def _write_batch(self, pending: dict[str, list[tuple[float, float]]], events: list[Event]) -> None:
        """One transaction: the batch's samples and events go in together, or stay pending together."""
        with OrmSession(self.store.engine) as s:
            new_ids: dict[str, int] = {}
            for name, points in pending.items():
                sid = self._series_id(s, name, new_ids)
                points.sort()
                arr = np.asarray(points, dtype=np.float64)
                ts, vs = encode_chunk(arr[:, 0], arr[:, 1])
                s.add(ChunkRow(series_id=sid, t_first=points[0][0], t_last=points[-1][0], n=len(points),
                               ts=ts, vs=vs, codec=CODEC))
            for ev in events:
                s.add(EventRow(session_id=self.id, t=ev.t, kind=ev.kind, label=ev.label,
                               data=json.dumps(dict(ev.data), default=str)))
            s.commit()
        self._series_ids.update(new_ids)  # only once committed: a rolled-back series row is no series

    def _series_id(self, s: OrmSession, name: str, new_ids: dict[str, int]) -> int:
        sid = self._series_ids.get(name) or new_ids.get(name)
        if sid is None:
            row = SeriesRow(session_id=self.id, name=name, kind=self._kinds.get(name) or series_kind(name))
            s.add(row)
            s.flush()
            sid = new_ids[name] = row.id
        return sid

    def compact(self) -> None:
        """Merge each series' small chunks into one, in one transaction (readers never see a gap)."""
        with self._flushing:
            self._compact_now()

    def _compact_now(self) -> None:
        """compact() with `_flushing` held (not `_lock`: the samples added meanwhile are not in the store yet)."""
        self._last_compact = time.monotonic()
        try:
            self.store._guard(self._compact)
        except (StoreLocked, StoreUnavailable):
            pass  # the next flush tries again a minute later; small chunks are only slower to read

    def _compact(self) -> None:
        with OrmSession(self.store.engine) as s:
            for sid in self._series_ids.values():
                chunks = list(s.scalars(select(ChunkRow).where(ChunkRow.series_id == sid)
                                        .order_by(ChunkRow.t_first, ChunkRow.id)))
                small: list[ChunkRow] = []
                total = 0
                for c in chunks:
                    if c.n < 3600 and total + c.n <= MAX_CHUNK_SAMPLES:  # a merged chunk stays readable
                        small.append(c)
                        total += c.n
                if len(small) < 2:
                    continue
                decoded = [decode_chunk(c.codec, c.n, c.ts, c.vs) for c in small]
                t = np.concatenate([d[0] for d in decoded])
                v = np.concatenate([d[1] for d in decoded])
                order = np.argsort(t, kind="stable")
                for c in small:
                    s.delete(c)
                ts, vs = encode_chunk(t[order], v[order])
                s.add(ChunkRow(series_id=sid, t_first=float(t[order[0]]), t_last=float(t[order[-1]]),
                               n=len(t), ts=ts, vs=vs, codec=CODEC))
            s.commit()

    def finish(self, status: RunStatus, summary: Mapping[str, Any] | None = None,
               ended_at: float | None = None) -> None:
        self.stop_flusher()
        with self._flushing:
            pending, events, held = self._take()
            try:
                self._patient(lambda: self._write_batch(pending, events))
            except BaseException:
                self._give_back(pending, events, held)
                raise
            self._compact_now()

        def write() -> None:
            with OrmSession(self.store.engine) as s:
                row = s.get(SessionRow, self.id)
                assert row is not None
                row.status = status
                row.ended_at = time.time() if ended_at is None else ended_at
                if summary is not None:
                    row.summary = json.dumps(summary)
                s.commit()
        self._patient(write)
