"""The wall clock of an instant of CLOCK_MONOTONIC, read so that a preemption does not move it."""

from __future__ import annotations

import time

CLOCK_PAIR_NS = 200_000  # the widest bracket (monotonic, wall, monotonic) trusted to read the two clocks together


def wall_at(mono_ns: int) -> float:
    """The wall-clock time of CLOCK_MONOTONIC instant `mono_ns`. The two clocks are read in a bracket (monotonic,
    wall, monotonic), again if the thread was preempted in it (a busy machine: a reporter preempted between two
    plain reads put a second's edge 150 ms early); the tightest of a few brackets."""
    width, at = -1, 0.0
    for _ in range(8):
        m0 = time.monotonic_ns()
        wall = time.time()
        m1 = time.monotonic_ns()
        if width < 0 or m1 - m0 < width:
            width, at = m1 - m0, wall - ((m0 + m1) / 2 - mono_ns) / 1e9
        if width <= CLOCK_PAIR_NS:
            break
    return at


def clock_pair() -> tuple[float, float]:
    """(time.monotonic(), time.time()) of one instant."""
    mono_ns = time.monotonic_ns()
    return mono_ns / 1e9, wall_at(mono_ns)
