"""What every probe is and the arithmetic they share (no I/O here).

A probe reads something cumulative or instantaneous from a server or a host and returns a
`Reading`: named values, each a *counter* (monotonic; the sampler turns it into a per-second
rate), a *rate* the probe computed itself, or a *gauge* (kept as is). Names follow DESIGN.md:
`server.questions`, `waits.<instrument>.count`, `host.<host>.cpu.user`, `proc.<host>.<role>.cpu`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from tunebench.core.errors import TunebenchError
from tunebench.core.interval import Event

Kind = Literal["counter", "gauge"]
PROBE_NAMES = ("status", "waits", "metrics", "tables", "cpu", "proc", "statements", "profile")
# `statements` (every statement timed, a read of the digest table each second) and `profile` (perf) cost: only when
# asked for
DEFAULT_PROBES = PROBE_NAMES[:6]
MIN_INTERVAL, MAX_INTERVAL = 0.25, 60.0


class ProbeUnavailable(TunebenchError):
    """This probe cannot work against this server/host (privilege, flavor, PFS off, remote)."""


@dataclass(slots=True)
class Reading:
    """One sample. `counters` are cumulative (the sampler makes them rates); `rates` are already per
    second (probes that must see deltas themselves, e.g. top-N waits); `gauges` are values; `events` go to the
    session beside them (a statement digest's text, said once)."""

    counters: dict[str, float] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    # The instant (this machine's clock) the values were taken, where the probe knows it better than the sampler's
    # midpoint of the read: a SQL probe reads the server's clock in the same round trip (SqlProbe.query_timed)
    at: float | None = None
    # how far `at` may be from the instant the counters were really read (half the server's time on the read):
    # a read a starved server took 1.7 s over is no instant to end a second's rate at (RateTracker)
    uncertainty: float = 0.0


class ServerClock:
    """Maps instants of a server's clock onto this machine's.

    A timed read brackets its statements between two readings of the server's clock, [s1, s2], inside one round
    trip [sent, answered] here. The offset (server minus here) is taken from the read of the last WINDOW whose time
    outside the server (the round trip less s2 - s1) was the least: the least uncertain (NTP's rule). On a machine
    short of CPU a request or its answer can wait a few hundred ms on the way and move a read's midpoint by half of
    that; the server's own instant moves by the time its statements took. An instant mapped that way is kept inside
    the read's own [sent, answered]: it cannot have been taken outside it."""

    WINDOW = 64

    def __init__(self, same_clock: bool = False) -> None:
        self._samples: list[tuple[float, float]] = []  # (time outside the server, offset)
        # a server on this machine reads the same clock: no offset to estimate. On a busy machine every read waits
        # a few hundred ms on the way, so an estimated offset was off by ~0.2 s, and a 10-s span of the status
        # probe's Questions 2 % off the engine's count of the same seconds
        self.same_clock = same_clock

    def instant(self, s1: float, s2: float, sent: float, answered: float) -> float:
        if self.same_clock:
            return min(max((s1 + s2) / 2, sent), answered)
        inside = max(0.0, s2 - s1)
        outside = max(0.0, (answered - sent) - inside)
        self._samples.append((outside, (s1 + s2) / 2 - (sent + answered) / 2))
        del self._samples[:-self.WINDOW]
        offset = min(self._samples)[1]
        return min(max((s1 + s2) / 2 - offset, sent), answered)


class Probe(Protocol):
    name: str

    def open(self) -> str:
        """Check the probe can work (raise ProbeUnavailable) and prepare; return a one-line description."""
        ...

    def read(self) -> Reading: ...

    def close(self) -> None:
        """Release connections and put back anything `open` changed."""
        ...


_UNSAFE = re.compile(r"[^A-Za-z0-9_/:+-]+")


def name_part(text: str) -> str:
    """One dotted-name component: dots and odd characters become '_' so names split cleanly on '.'."""
    return _UNSAFE.sub("_", text.strip()).strip("_") or "_"


class RateTracker:
    """Turns successive counter readings into per-second rates.

    A counter that goes down (server restart, FLUSH STATUS) yields no rate for that sample, never a
    negative one; the next sample resumes from the new base.
    """

    # a reading whose instant is uncertain by more than this share of the time since the last one used gives no rate
    # and is not a base: the next reading's rate spans both seconds (an uncertain instant in between made one second
    # of the status probe's Questions 0.15x and the next 3.8x the engine's)
    UNCERTAIN_SHARE = 0.1

    def __init__(self) -> None:
        self._prev: dict[str, tuple[float, float]] = {}

    def rates(self, t: float, counters: Mapping[str, float], uncertainty: float = 0.0) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, value in counters.items():
            prev = self._prev.get(name)
            if prev is not None and uncertainty > self.UNCERTAIN_SHARE * max(0.0, t - prev[0]):
                continue  # neither a rate nor a base: the next certain reading spans both seconds
            self._prev[name] = (t, value)
            if prev is None:
                continue
            dt = t - prev[0]
            if dt <= 0 or value < prev[1]:
                continue
            out[name] = (value - prev[1]) / dt
        return out

    def reset(self) -> None:
        self._prev.clear()


def parse_probe_list(text: str | None) -> tuple[str, ...] | None:
    """`--probes` value: None (every default probe that works: all but statements and profile), 'none', or a comma
    list of PROBE_NAMES (`all` in it: the default ones)."""
    from tunebench.core.errors import ConfigError

    if text is None or text.strip() in ("", "all"):
        return None
    if text.strip() == "none":
        return ()
    names = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if "all" in names:  # the default ones and those named beside: `all,statements`
        names = tuple(dict.fromkeys(n for p in names for n in (DEFAULT_PROBES if p == "all" else (p,))))
    unknown = [n for n in names if n not in PROBE_NAMES]
    if unknown:
        raise ConfigError(f"unknown probe {unknown[0]!r}; choose from {', '.join(PROBE_NAMES)}, all or none")
    return names


def check_interval(seconds: float) -> float:
    from tunebench.core.errors import ConfigError

    if not MIN_INTERVAL <= seconds <= MAX_INTERVAL:
        raise ConfigError(f"probe interval must be between {MIN_INTERVAL} and {MAX_INTERVAL} s, got {seconds}")
    return seconds


class TopN:
    """Keeps a stable set of the busiest instruments; everything else is summed into 'other'.

    An instrument joins the tracked set the first time it is in the top `n` of a sample (by wait time,
    or by count when the source has no timer) and then stays, so its series has no holes. The set is
    capped at `2 * n`; late newcomers beyond that are counted in 'other'.
    """

    def __init__(self, n: int = 10):
        self.n = n
        self.tracked: list[str] = []

    def update(self, deltas: Mapping[str, float]) -> list[str]:
        busiest = sorted((k for k, v in deltas.items() if v > 0), key=lambda k: -deltas[k])[: self.n]
        for k in busiest:
            if k not in self.tracked and len(self.tracked) < 2 * self.n:
                self.tracked.append(k)
        return self.tracked

