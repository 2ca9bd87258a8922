"""What a step ran with and which of its seconds it used: every table row of a step says so.

A step's TPS is the mean of its measured seconds, with the knob values in effect then. Two things hide behind a
bare number: a knob flipped live before the step (the step ran with the new value, not the configuration's) or
during it (its later part ran with another value), and seconds left out of the mean (the ramp-up the steady-state
detector cut, seconds without a server). Both come from the session as stored (its steps and events), so the
CLI, the report and the window say the same for a session recorded before this was written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ALTERNATING_RUN = 4  # flips of one knob back and forth, from this many on, are said as one entry
SWEEP_EVENT_WINDOW = 2.0  # a knob event this close before its "config" event is the configuration being applied


@dataclass(frozen=True, slots=True)
class Flip:
    at: float  # seconds into the step's measured window
    name: str
    before: str
    after: str

    def text(self) -> str:
        return f"{self.name} {self.before} → {self.after} at {self.at:.0f} s"


def flip_texts(flips: Sequence[Flip]) -> list[str]:
    """Each flip, except that a run of ALTERNATING_RUN or more of one knob between the same two values (a Confirm's
    blocks, a speaker's A/B/A/B) is one entry: "innodb_flush_log_at_trx_commit 2 ↔ 1 x6 at 36-131 s"."""
    out: list[str] = []
    i = 0
    while i < len(flips):
        f = flips[i]
        j = i + 1
        while j < len(flips) and flips[j].name == f.name and (flips[j].before, flips[j].after) == \
                ((f.before, f.after) if (j - i) % 2 == 0 else (f.after, f.before)):
            j += 1
        if j - i >= ALTERNATING_RUN:
            out.append(f"{f.name} {f.before} ↔ {f.after} x{j - i} at {f.at:.0f}-{flips[j - 1].at:.0f} s")
        else:
            out += [g.text() for g in flips[i:j]]
        i = j
    return out


@dataclass(frozen=True, slots=True)
class StepKnobs:
    """The knobs Tunebench had set when a step's measured seconds began, and those flipped during them."""

    values: Mapping[str, str] = field(default_factory=dict)  # name -> value in effect
    live: frozenset[str] = frozenset()  # of those, the ones set live (not by the step's configuration)
    flips: tuple[Flip, ...] = ()
    window: float = 0.0  # the measured window's length, seconds
    before: frozenset[str] = frozenset()  # of `values`, those set between runs, before this run (the knob panel)

    def text(self, configured: bool = True) -> str:
        """'innodb_flush_log_at_trx_commit=2 (set live)', 'as configured; innodb_… 1 → 2 at 14 s of 30'.
        `configured=False`: the configuration's own values are said elsewhere (a sweep's label); only what
        differs from it."""
        shown = [f"{k}={v}" + (" (set live)" if k in self.live else " (set before the run)" if k in self.before
                                else "") for k, v in self.values.items()
                 if configured or k in self.live or k in self.before]
        head = ", ".join(shown) or ("as configured" if configured else "")
        if not self.flips:
            return head
        # one clock for a flip everywhere (the step row, the verdict, Events): seconds into the step's measured ones
        flips = "; ".join(flip_texts(self.flips)) + f" of {self.window:.0f} measured"
        return f"{head}; {flips}" if head else flips

    @property
    def mixed(self) -> bool:
        """Did part of the step run with other values than the rest?"""
        return bool(self.flips)


@dataclass(frozen=True, slots=True)
class StepSeconds:
    """How many of its measured window's seconds a step's figures are over, and why the others are not."""

    window: int  # seconds between the step's measured start and its end
    used: int  # the seconds its mean is over
    ramp: int = 0  # leading seconds below the steady level, left out (core.stats.steady_start)
    down: int = 0  # seconds without a server
    unreported: int = 0  # seconds no report came for (a worker or client host lost)

    def reasons(self) -> list[str]:
        out = []
        if self.ramp:
            out.append(f"{self.ramp} s ramp-up below the steady level")
        if self.down:
            out.append(f"{self.down} s without a server")
        if self.unreported:
            out.append(f"{self.unreported} s not reported")
        return out

    def text(self) -> str:
        """'30 s', or '23 of 30 s (7 s ramp-up below the steady level left out)'."""
        reasons = self.reasons()
        if not reasons:
            return f"{self.used} s"
        return f"{self.used} of {self.window} s ({'; '.join(reasons)} left out)"

    def short(self) -> str:
        """'30', or '23/30*' (a table column; the reasons in a note)."""
        return str(self.used) if not self.reasons() else f"{self.used}/{self.window}*"


def _applied_by_config(ev: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> bool:
    name = (ev.get("data") or {}).get("name")
    return any(c["kind"] == "config" and 0 <= float(c["t"]) - float(ev["t"]) <= SWEEP_EVENT_WINDOW
               and name in ((c.get("data") or {}).get("knobs") or {}) for c in events)


def _text(v: Any) -> str:
    return "?" if v is None else str(v)


def step_knobs(session: Mapping[str, Any]) -> dict[int, StepKnobs]:
    """Step number (1-based) -> what it ran with, replaying the session's knob, configuration and restore
    events in time order up to each step's measured window and through it."""
    events = sorted((e for e in session.get("events") or () if e.get("kind") in ("knob", "config", "restore")),
                    key=lambda e: float(e["t"]))
    values: dict[str, str] = {}
    live: set[str] = set()
    before_run: set[str] = set()
    out: dict[int, StepKnobs] = {}
    k = 0
    steps = sorted((st for st in session.get("steps") or () if st.get("measure_from") is not None),
                   key=lambda st: float(st["measure_from"]))

    def apply(e: Mapping[str, Any]) -> tuple[str, str, str] | None:
        """The event into `values`; a live flip returned as (name, from, to)."""
        data = e.get("data") or {}
        if e["kind"] == "config":
            for name, value in (data.get("knobs") or {}).items():
                values[str(name)] = _text(value)
                live.discard(str(name))
                before_run.discard(str(name))
            return None
        name = str(data.get("name") or "")
        if not name:
            return None
        if e["kind"] == "restore":
            values.pop(name, None)
            live.discard(name)
            before_run.discard(name)
            return None
        before = values.get(name, _text(data.get("from")))
        values[name] = _text(data.get("to"))
        if data.get("before_run"):  # set between runs, found set as this run started (run/idle_knobs.py)
            live.discard(name)
            before_run.add(name)
            return None
        before_run.discard(name)
        if _applied_by_config(e, events):
            live.discard(name)
            return None
        live.add(name)
        return name, before, values[name]

    for st in steps:
        start = float(st["measure_from"])
        end = float(st["ended_at"]) if st.get("ended_at") is not None else float("inf")
        while k < len(events) and float(events[k]["t"]) < start:
            apply(events[k])
            k += 1
        at_start = StepKnobs(dict(values), frozenset(live & set(values)), before=frozenset(before_run & set(values)))
        flips = []
        while k < len(events) and float(events[k]["t"]) <= end:
            flip = apply(events[k])
            if flip is not None:
                flips.append(Flip(float(events[k]["t"]) - start, *flip))
            k += 1
        window = end - start if end != float("inf") else 0.0
        out[int(st["idx"]) + 1] = StepKnobs(at_start.values, at_start.live, tuple(flips), window, at_start.before)
    return out


def step_seconds(step: Mapping[str, Any], group: str) -> StepSeconds | None:
    """A stored step's seconds for one client group (None: the step has not ended, or has no such group)."""
    summary = step.get("summary") or {}
    g = summary.get(group)
    if g is None or step.get("ended_at") is None or step.get("measure_from") is None or "seconds" not in g:
        return None  # not ended, or a summary that never counted its seconds: nothing to say, not "0 of 60"
    window = max(0, round(float(step["ended_at"]) - float(step["measure_from"])))
    used = int(g.get("seconds") or 0)
    ramp = int(g.get("steady_skipped") or 0)
    down = round(float((summary.get("_incomplete") or {}).get("server_down_seconds") or 0))
    # the window's last second can fall either side of its end (stamps are taken at a second's end): 1 s of slack
    unreported = window - used - ramp - down
    return StepSeconds(window, used, ramp, down, unreported if unreported > 1 else 0)


def step_notes(session: Mapping[str, Any]) -> dict[tuple[int, str], tuple[StepKnobs, StepSeconds | None]]:
    """(step number, group) -> what the step ran with and its seconds, for every ended step and group."""
    knobs = step_knobs(session)
    out = {}
    for st in session.get("steps") or ():
        number = int(st["idx"]) + 1
        for group in (st.get("summary") or {}):
            if not group.startswith("_"):
                out[(number, group)] = (knobs.get(number, StepKnobs()), step_seconds(st, group))
    return out


def note_lines(notes: Mapping[tuple[int, str], tuple[StepKnobs, StepSeconds | None]],
               groups: Iterable[str] | None = None) -> list[str]:
    """The steps whose figures need a word: a knob flipped during or before them, or seconds left out."""
    wanted = set(groups) if groups is not None else None
    lines = []
    for (number, group), (knobs, seconds) in sorted(notes.items()):
        if wanted is not None and group not in wanted:
            continue
        parts = []
        if knobs.live or knobs.flips:
            parts.append("ran with " + knobs.text())
        if seconds is not None and seconds.reasons():
            parts.append("figures over " + seconds.text())
        if parts:
            lines.append(f"step {number} {group}: " + "; ".join(parts))
    return lines
