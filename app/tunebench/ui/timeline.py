"""The dashboard's data: growing numpy buffers per series, and the markers (steps, knob changes).

Data arrive as they come (signals from the run); the plots read these buffers on a redraw timer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tunebench.core.busy import BUSY_PCT, other_series
from tunebench.core.interval import Event, Interval
from tunebench.core.verdict import event_verdict


class SeriesBuffer:
    def __init__(self, capacity: int = 1024):
        self.t = np.empty(capacity)
        self.v = np.empty(capacity)
        self.n = 0

    def append(self, t: float, v: float) -> None:
        if self.n == len(self.t):
            self.t = np.resize(self.t, 2 * self.n)
            self.v = np.resize(self.v, 2 * self.n)
        self.t[self.n] = t
        self.v[self.n] = v
        self.n += 1

    @classmethod
    def of(cls, t: np.ndarray, v: np.ndarray) -> SeriesBuffer:
        """A buffer over recorded arrays (replay): `n` then says how much of them is shown."""
        buf = cls(0)
        buf.t, buf.v, buf.n = t, v, len(t)
        return buf

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        return self.t[: self.n], self.v[: self.n]

    def last(self) -> float | None:
        return float(self.v[self.n - 1]) if self.n else None


@dataclass(frozen=True, slots=True)
class Marker:
    t: float
    kind: str  # step | knob | mark | restart | verdict | drift | ramp (measured from here) | config (a sweep
    # configuration: a band until the next) | trial (a tune's trial, baseline or confirmation segment: a band
    # from `t` to `end`)
    label: str
    known: float | None = None  # when it became known, if later than `t` (a verdict: its step's end)
    end: float | None = None  # a span's end (a tune's trial: a band from `t` to here)
    short: str = ""  # a span's name on its band ("trial 3", "baseline", "confirm A")

    @property
    def shown_at(self) -> float:
        """From when a replay shows it: a verdict drawn at its change only once its step has ended, as live."""
        return self.t if self.known is None else max(self.t, self.known)


MARKER_KINDS = {"step_start": "step", "knob": "knob", "mark": "mark", "restart": "restart", "config": "config",
                "verdict": "verdict", "drift": "drift", "ramp": "ramp",
                # an open-loop rate changed live: a change on the timeline drawn like a knob's, its label placed after
                # the knob changes' (a flip's label with its verdict stays when rate changes crowd the top row)
                "rate": "rate",
                "trial": "trial"}


def is_marker(ev: Event) -> bool:
    """Does the event get a line on the plots? A step's measuring start (`ramp`) only when its connections took
    more than the second they open in, or did not all open: one after every step's line would be clutter."""
    data: Mapping[str, Any] = ev.data  # as the run wrote it: numbers where the kind says
    if ev.kind == "ramp":
        return float(data.get("seconds", 0)) > 1 or int(data.get("open", 0)) < int(data.get("asked", 0))
    return ev.kind in MARKER_KINDS


def marker_of(ev: Event, t0: float) -> Marker:
    """An event's marker on seconds since `t0`. A verdict is known at its step's end but drawn at its change
    (`data["at"]`), with its short text."""
    data: Mapping[str, Any] = ev.data  # as the run wrote it: numbers where the kind says
    if ev.kind == "verdict":
        v = event_verdict(data)
        return Marker(float(data.get("at", ev.t)) - t0, "verdict", v.short_text() if v else "no verdict", ev.t - t0)
    if ev.kind == "ramp":  # where the step's measured seconds begin
        opened, asked = int(data.get("open", 0)), int(data.get("asked", 0))
        return Marker(ev.t - t0, "ramp", f"measured: {asked} open after {data.get('seconds')} s" if opened >= asked
                      else f"measured with {opened} of {asked} connections")
    if ev.kind == "drift":  # the names on the plot; the values are in the Events line
        names = [str(d.get("name")) for d in data.get("drift") or ()]
        return Marker(ev.t - t0, "drift", "changed outside Tunebench: " + ", ".join(names))
    if ev.kind == "trial":
        return trial_marker(ev, t0)
    return Marker(ev.t - t0, MARKER_KINDS[ev.kind], ev.label)


def trial_name(data: Mapping[str, Any]) -> str:
    """A tune's "trial" event's band name: "baseline", "confirm A"/"confirm B", or "trial N"."""
    if data.get("baseline"):
        return "baseline"
    if data.get("confirm") in ("A", "B"):
        return f"confirm {data['confirm']}"
    return f"trial {_number(data.get('n'), 0):.0f}"


def _number(v: Any, default: float) -> float:
    """A number the run wrote, or `default` when the stored value is none (a damaged or hand-edited row)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return default
    return x if math.isfinite(x) else default


def trial_marker(ev: Event, t0: float) -> Marker:
    """A tune's trial (or baseline, or confirmation segment): a band over its seconds [t0, t1], shown once its
    event came (the trial's end, after the baseline that judges it), its full line as the tooltip."""
    data: Mapping[str, Any] = ev.data
    start = _number(data.get("t0"), ev.t)
    end = max(start, _number(data.get("t1"), start))
    return Marker(start - t0, "trial", ev.label, ev.t - t0, end - t0, trial_name(data))


class Timeline:
    """Every series of the current run, on seconds since its start."""

    def __init__(self) -> None:
        self.t0: float | None = None
        self.series: dict[str, SeriesBuffer] = {}
        self.markers: list[Marker] = []
        self.version = 0  # bumps on every change: the redraw timer skips when nothing is new
        self.x_max = 0.0  # the latest time of any sample
        self.head: float | None = None  # replay: where the play head is (None: live)
        self.end = 0.0  # replay: the last time of the session
        self.all_markers: list[Marker] = []
        self.statements: dict[str, str] = {}  # statement digest -> its text (the statements probe's events)
        self._groups: set[str] = set()
        self._per_t: dict[float, dict[str, tuple[float, float]]] = {}
        # per client group, its family's headline figure (trx type, factor, label): TPC-C's NOPM, iiBench's
        # rows/s; groups without one read TPS
        self.headlines: dict[str, tuple[str, float, str]] = {}

    def clear(self) -> None:
        version = self.version
        self.__init__()  # type: ignore[misc]
        self.version = version + 1  # never back to a number a view has drawn: a view compares versions only

    def _x(self, t: float) -> float:
        if self.t0 is None:
            self.t0 = t - 1.0
        return t - self.t0

    def add(self, t: float, values: dict[str, float]) -> None:
        x = self._x(t)
        self.x_max = max(self.x_max, x)
        for name, v in values.items():
            buf = self.series.get(name)
            if buf is None:
                buf = self.series[name] = SeriesBuffer()
            buf.append(x, v)
        self.version += 1

    def add_interval(self, iv: Interval) -> None:
        self.add(iv.t, iv.series())
        self._groups.add(iv.group)
        # several client groups: a total line once every group has reported that second
        seen = self._per_t.setdefault(iv.t, {})
        seen[iv.group] = (iv.tps, iv.qps)
        if len(self._groups) > 1 and len(seen) == len(self._groups):
            del self._per_t[iv.t]
            self.add(iv.t, {"client.total.tps": sum(v[0] for v in seen.values()),
                            "client.total.qps": sum(v[1] for v in seen.values())})
        for t in [t for t in self._per_t if t < iv.t - 5]:  # a group that skipped a second
            del self._per_t[t]

    def add_event(self, ev: Event) -> Marker | None:
        self._keep_text(ev)
        if not is_marker(ev):
            return None
        self._x(ev.t)
        assert self.t0 is not None
        m = marker_of(ev, self.t0)
        self.markers.append(m)
        self.version += 1
        return m

    def _keep_text(self, ev: Event) -> None:
        if ev.kind == "statement" and isinstance(ev.data.get("digest"), str):
            self.statements[str(ev.data["digest"])] = str(ev.data.get("text") or "")
            self.version += 1

    # -- replay: recorded arrays with a play head --
    def load(self, t0: float, series: dict[str, tuple[np.ndarray, np.ndarray]], events: list[Event]) -> None:
        """A whole recorded session; `seek` then shows it up to a point, like live at that moment."""
        self.clear()
        self.t0 = t0
        self.series = {name: SeriesBuffer.of(t - t0, v) for name, (t, v) in series.items()}
        # in the order a replay shows them (a verdict when its step ended), so the markers shown at any head
        # are the first ones of the list, as live adds them
        self.all_markers = sorted((marker_of(ev, t0) for ev in events if is_marker(ev)),
                                  key=lambda m: (m.shown_at, m.t))
        for ev in events:
            self._keep_text(ev)
        self.end = max([float(b.t[-1]) for b in self.series.values() if len(b.t)]
                       + [m.shown_at for m in self.all_markers] + [0.0])
        self.seek(self.end)

    def seek(self, x: float) -> None:
        """Show everything up to `x` seconds from the start, nothing after. The version moves only when that
        shows another sample or marker (at 1x, nine moves of the head in ten do not): the views redraw then."""
        changed = False
        for buf in self.series.values():
            n = int(np.searchsorted(buf.t, x, side="right"))
            changed |= n != buf.n
            buf.n = n
        markers = [m for m in getattr(self, "all_markers", []) if m.shown_at <= x]
        changed |= len(markers) != len(self.markers) or self.head is None
        self.markers = markers
        self.x_max = x
        self.head = x
        if changed:
            self.version += 1

    def names(self, prefix: str, suffix: str = "") -> list[str]:
        return sorted(n for n in self.series if n.startswith(prefix) and n.endswith(suffix))

    def busy_spans(self, threshold: float = BUSY_PCT) -> list[tuple[float, float]]:
        """The busy seconds shown so far (core/busy.py: some host's other processes over `threshold` % of its
        CPU in a probe sample), merged into spans (start, end) on this timeline's x; the same cut as the curves."""
        cached = getattr(self, "_busy", None)
        if cached is not None and cached[0] == (self.version, threshold):
            return cached[1]
        xs: list[np.ndarray] = []
        for name in other_series(self.series):
            x, v = self.series[name].view()
            xs.append(np.asarray(x, dtype=np.float64)[np.nan_to_num(np.asarray(v, dtype=np.float64)) > threshold])
        ends = np.unique(np.round(np.concatenate(xs), 3)) if xs else np.array([])
        spans: list[tuple[float, float]] = []
        for end in ends:  # each sample covers the second before it
            start = float(end) - 1.0
            if spans and start <= spans[-1][1] + 0.5:
                spans[-1] = (spans[-1][0], float(end))
            else:
                spans.append((start, float(end)))
        self._busy = ((self.version, threshold), spans)
        return spans

    def last(self, name: str) -> float | None:
        buf = self.series.get(name)
        return buf.last() if buf else None

    def headline(self, group: str) -> tuple[str, float | None]:
        """The group's headline figure now, as (label, value): its family's (NOPM, rows/s) from the rate of the
        headline's transaction type (the group's TPS when the family reports no types), else TPS."""
        head = self.headlines.get(group)
        if head is None:
            return "TPS", self.last(f"client.{group}.tps")
        trx, factor, label = head
        rate = self.last(f"client.{group}.trx.{trx}.tps")
        if rate is None and not self.names(f"client.{group}.trx."):
            rate = self.last(f"client.{group}.tps")
        return label, None if rate is None else rate * factor
