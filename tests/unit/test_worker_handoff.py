"""The builtin worker's per-second hand-off (load/worker.py) without a server: however the connection threads are
preempted, every event a connection counts has its latency in the same take, and no latency is lost."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from tunebench.core.target import ConnParams
from tunebench.load import worker
from tunebench.load.worker import GroupPlan, Slot, WorkerSpec

CONNECTIONS = 8
STALL_EVERY = 500  # clock readings of one thread between two of its stalls


class NoServer:
    """The session of a connection whose events run no statement."""

    def close(self) -> None:
        pass


class OfflineSlot(Slot):
    """A real Slot (its loops, its counters, its hand-off) whose event is a little Python work."""

    def _connect(self) -> None:
        self.session = NoServer()
        self.done = 0
        self.work = self._event

    def _event(self) -> int:
        self.reads += 1
        self.done += 1
        return self.done % max(self.ntrx, 1)


class StallingClock:
    """The worker's `time`, whose perf_counter_ns stalls a connection thread for 3 ms now and then: a thread
    preempted for longer than the reporter waits, at the instant it measures an event's latency."""

    def __init__(self) -> None:
        self.calls = threading.local()

    def perf_counter_ns(self) -> int:
        n = self.calls.n = getattr(self.calls, "n", 0) + 1
        if n % STALL_EVERY == 0 and threading.current_thread() is not threading.main_thread():
            time.sleep(0.003)
        return time.perf_counter_ns()

    def __getattr__(self, name: str):
        return getattr(time, name)


@pytest.fixture
def preempted_everywhere(monkeypatch):
    """Switch threads every microsecond, so a connection thread is stopped between any two of its bytecodes, and
    stall them for longer than that now and then, as a loaded machine does."""
    monkeypatch.setattr(worker, "time", StallingClock())
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.mark.parametrize("trx", [(), ("a", "b", "c")], ids=["one type", "three types"])
def test_every_counted_event_has_its_latency_in_the_same_take(preempted_everywhere, trx):
    spec = WorkerSpec(index=0, params=ConnParams(user="nobody", password=""), groups=(), t0_mono=time.monotonic())
    group = GroupPlan(name="main", family="oltp", plan=None, options={}, trx=trx,
                      slots=tuple(range(CONNECTIONS)), nslots=CONNECTIONS)
    slots = [OfflineSlot(spec, group, n, []) for n in range(CONNECTIONS)]
    ntrx = slots[0].ntrx
    seen = {id(s): (0, [0] * ntrx) for s in slots}  # events and per-type events up to the last take
    latencies, takes, mismatched = 0, 0, []

    def take(s: Slot) -> None:
        nonlocal latencies, takes
        got = s.take()
        events, per_type = seen[id(s)]
        if got.counters[0] - events != len(got.lat):
            mismatched.append((s.number, takes, got.counters[0] - events, len(got.lat)))
        for k in range(ntrx):
            if got.trx_counts[k][0] - per_type[k] != len(got.trx_lat[k]):
                mismatched.append((s.number, takes, k, got.trx_counts[k][0] - per_type[k], len(got.trx_lat[k])))
        seen[id(s)] = (got.counters[0], [c[0] for c in got.trx_counts])
        latencies += len(got.lat)
        takes += 1

    for s in slots:
        s.active = True
        s.gate.set()
        s.start()
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            for s in slots:
                take(s)
    finally:
        for s in slots:
            s.shutdown = True
            s.deactivate()
            s.gate.set()
        for s in slots:
            s.join(10)
    assert not any(s.is_alive() for s in slots)
    for s in slots:
        take(s)  # what each did after the last take in the loop
    assert all(s.fatal is None for s in slots), [s.fatal for s in slots]
    events = sum(s.events for s in slots)
    assert latencies == events, (latencies, events)
    assert mismatched == [], mismatched[:10]
    assert events > 20_000 and takes > 20 * CONNECTIONS, (events, takes)  # a stress, not a handful of events


def test_a_seconds_edge_on_the_wall_clock_is_not_moved_by_a_preemption(monkeypatch):
    """A worker's second ends at an instant of CLOCK_MONOTONIC, told on the wall clock by reading both clocks. At
    load 15 the reporter was preempted between the two reads: the edge came out early by the preemption (a 6-s
    window's client count 3 % over the server's Com_commit, tests/integration/test_numbers.py). Read in a bracket
    (monotonic, wall, monotonic), a pair that waited is read again."""
    from tunebench.core import clocks

    wall0, mono0 = 1_000_000.0, 5_000_000_000
    clock = {"mono": mono0, "wall": wall0, "stalls": [150_000_000]}  # the first read pair is 150 ms apart

    def monotonic_ns() -> int:
        clock["mono"] += 1_000
        return clock["mono"]

    def wall() -> float:
        clock["mono"] += 1_000
        now = wall0 + (clock["mono"] - mono0) / 1e9
        clock["mono"] += clock["stalls"].pop(0) if clock["stalls"] else 0  # preempted once it has read the clock
        return now

    monkeypatch.setattr(clocks.time, "monotonic_ns", monotonic_ns)
    monkeypatch.setattr(clocks.time, "time", wall)
    edge = mono0 - 300_000_000  # an edge 0.3 s ago
    assert abs(clocks.wall_at(edge) - (wall0 - 0.3)) < 0.001
