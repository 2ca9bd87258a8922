"""What the orchestrator needs from a load engine, and the client-group description both engines take."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tunebench.core.histogram import LatencyHistogram
from tunebench.core.interval import Interval
from tunebench.core.schedule import OpenLoop
from tunebench.load.family import Family
from tunebench.load.workload import Workload

IntervalSink = Callable[[Interval], None]
NoteSink = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ClientGroup:
    """A set of client connections running one workload on one concurrency schedule."""

    name: str
    workload: Workload
    options: Mapping[str, Any]
    schedule: tuple[int, ...]
    lua_script: str | None = None  # sysbench engine only: any Lua script path
    extra: Mapping[str, Any] = field(default_factory=dict)
    # open-loop load (core/schedule.py): the group's target rate per step, like `schedule` ((): closed loop),
    # its arrival process and latency limit; the threads are then the pool of connections serving the rate
    rates: tuple[float, ...] = ()
    arrival: str = "poisson"
    latency_limit_ms: float | None = None

    @property
    def family(self) -> Family:
        return self.workload.family

    @property
    def headline(self) -> tuple[str, float, str] | None:
        """(trx type, factor, label) of the group's headline figure, or None (TPS is it)."""
        return self.family.headline_of(self.options)

    @property
    def steps(self) -> int:
        """The steps the group has a concurrency or a rate for (one of either holds through every step)."""
        return max(len(self.schedule), len(self.rates))

    def threads_at(self, step: int) -> int:
        return self.schedule[min(step, len(self.schedule) - 1)]

    def open_loop_at(self, step: int) -> OpenLoop | None:
        """The step's open-loop load, or None (closed loop)."""
        if not self.rates:
            return None
        return OpenLoop(self.rates[min(step, len(self.rates) - 1)], self.arrival, self.latency_limit_ms)


class LoadEngine(Protocol):
    name: str
    service_hists: dict[str, LatencyHistogram]  # the last step's open-loop service times per group (builtin)
    # why the last step ended before its seconds: "finished" (every connection had done its work: iiBench's
    # max_rows), or None
    ended: str | None

    def open(self) -> None: ...

    def run_step(
        self, threads: Mapping[str, int], seconds: int, sink: IntervalSink, stop: threading.Event,
        warmup: int = 0, ramp: IntervalSink | None = None, rates: Mapping[str, OpenLoop] | None = None,
    ) -> dict[str, LatencyHistogram | None]:
        """Run every group at its thread count for `seconds` 1-second intervals, feeding `sink`.

        The seconds count once the step's connections are open. An engine that opens them while its clock
        runs (builtin) feeds the seconds before to `ramp`, when given: they belong on the timeline, not in
        the step. sysbench starts its clock after its threads connect and never calls it.
        Returns each group's latency histogram over the step after the first `warmup` measured seconds,
        where the engine has one (builtin); None where it cannot (sysbench). `rates`: the groups that run open
        loop this step (their latency then counts from each transaction's intended start).
        """
        ...

    def client_pids(self) -> list[int]: ...

    def close(self) -> None: ...
