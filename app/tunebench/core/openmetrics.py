"""A run's live series as Prometheus sees them: the families, their names and labels, and the exposition text
(OpenMetrics 1.0.0, or Prometheus text 0.0.4 for a scraper that asks for text/plain). No I/O here.

One timeline: every per-second value is exposed with its own timestamp (the time the store gives it), and each
scraper is handed every second it has not had yet (up to KEEP_SECONDS back), so what Prometheus holds is the
store's series itself, second for second, whatever the scrape interval or its phase. A scraper is told apart by
its address and User-Agent. State (the step, the knobs) is exposed without a timestamp: its series goes stale
the moment it changes.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from tunebench.core.interval import LATENCY_KEYS, Event, Interval

KEEP_SECONDS = 120  # the seconds kept per series for a scraper that comes late (a 15 s or 60 s scrape interval)
MAX_SCRAPERS = 16  # scrapers remembered (address + User-Agent); the oldest is forgotten beyond
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_UNSAFE = re.compile(r"[^a-zA-Z0-9_]+")
QUANTILES = {"p50": "0.5", "p95": "0.95", "p99": "0.99", "max": "1"}
SESSION_LABELS = ("session", "workload", "target", "host")

Type = Literal["gauge", "counter", "info"]


@dataclass(frozen=True, slots=True)
class Family:
    name: str  # without _total / _info
    type: Type
    help: str
    unit: str = ""


@dataclass(frozen=True, slots=True)
class LiveReading:
    """One probe reading as a live endpoint needs it: the values the store gets, each series' kind ("rate": a
    per-second rate of something cumulative, "gauge"), and the cumulative counters as the server or host reports
    them (SHOW GLOBAL STATUS, /proc) behind the rates."""

    t: float
    values: Mapping[str, float]
    kinds: Mapping[str, str]
    counters: Mapping[str, float] = field(default_factory=dict)


CLIENT = {
    "tps": Family("tunebench_client_tps", "gauge", "transactions per second of the client group, the last second"),
    "qps": Family("tunebench_client_qps", "gauge", "queries per second of the client group, the last second"),
    "threads": Family("tunebench_client_threads", "gauge", "connections of the client group running the load"),
    "errors": Family("tunebench_client_errors_per_second", "gauge", "errors per second of the client group"),
    "reconnects": Family("tunebench_client_reconnects_per_second", "gauge", "reconnects per second of the group"),
}
LATENCY = Family("tunebench_client_latency_seconds", "gauge",
                 "transaction latency of the client group over the last second, by quantile (1: the maximum)",
                 "seconds")
STEP = Family("tunebench_step", "info", "the step running now: its number, client threads and configuration")
KNOB = Family("tunebench_knob_value", "gauge", "a numeric server variable as Tunebench last set or read it back")
KNOB_CHANGES = Family("tunebench_knob_change", "counter",
                      "server variable changes Tunebench made in this session (a Grafana annotation: its increase)")


def metric_name(text: str) -> str:
    """A dotted series name part as a metric name part: odd characters become '_'."""
    return _UNSAFE.sub("_", text).strip("_") or "_"


def escape(value: str) -> str:
    """A label value as both formats write it: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def number(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v)) if not float(v).is_integer() or abs(v) >= 1e15 else str(int(v))


def probe_family(name: str, kind: str, counter: bool) -> tuple[Family, dict[str, str]] | None:
    """The family and labels of a probe series (`server.questions`, `host.H.cpu.user`, `waits.I.count`, ...);
    None for series with a name per function or statement (the CPU profile's, the statements'): too many."""
    parts = name.split(".")
    labels: dict[str, str] = {}
    if parts[0] == "host" and len(parts) >= 3:
        labels["measured_host"], rest = parts[1], parts[2:]
        base = "host_" + "_".join(rest)
    elif parts[0] == "proc" and len(parts) >= 4:
        labels["measured_host"], labels["role"], rest = parts[1], parts[2], parts[3:]
        base = "proc_" + "_".join(rest)
    elif parts[0] == "waits" and len(parts) >= 3:
        labels["instrument"] = ".".join(parts[1:-1])
        base = "waits_" + parts[-1]
    elif parts[0] == "table" and len(parts) >= 3:
        labels["table"] = ".".join(parts[1:-1])
        base = "table_" + parts[-1]
    elif parts[0] in ("server", "metrics") and len(parts) >= 2:
        base = "_".join(parts)
    else:
        return None  # profile.*, statements.*, client.G@HOST.* (the group's merged seconds are exposed)
    base = "tunebench_" + metric_name(base)
    if counter:
        return Family(base, "counter", f"{name} as the server or host counts it (cumulative)"), labels
    if kind == "rate":
        return Family(base + "_per_second", "gauge", f"{name} per second over the last sample"), labels
    return Family(base, "gauge", f"{name}, the last sample"), labels


def knob_number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip().upper()
        if text in ("ON", "TRUE"):
            return 1.0
        if text in ("OFF", "FALSE"):
            return 0.0
        try:
            return float(text)
        except ValueError:
            return None
    return None


LabelKey = tuple[tuple[str, str], ...]


class LiveMetrics:
    """The live state of the run(s) an endpoint serves; fed from the run's callbacks (any thread), read by the
    HTTP server's thread."""

    def __init__(self, keep: int = KEEP_SECONDS) -> None:
        self._lock = threading.Lock()
        self.keep = keep
        self.session: dict[str, str] = {}
        self._families: dict[str, Family] = {}
        # family name -> labels -> the (t, value) points kept
        self._points: dict[str, dict[LabelKey, deque[tuple[float, float]]]] = {}
        self._state: dict[str, dict[LabelKey, float]] = {}  # without timestamps: step, knobs
        self._cursors: OrderedDict[str, dict[tuple[str, LabelKey], float]] = OrderedDict()
        self.newest = 0.0  # the latest sample's time
        self.scrapes = 0

    # -- feeding
    def start_session(self, labels: Mapping[str, str]) -> None:
        """A new session: the previous one's series go (their samples are in Prometheus already)."""
        with self._lock:
            self.session = {k: str(labels.get(k, "")) for k in SESSION_LABELS}
            self._points.clear()
            self._state.clear()
            self._families.clear()
            self.newest = 0.0

    def end_session(self) -> None:
        """The run ended: its state (the step, the knobs) is no longer true; its seconds stay to be scraped."""
        with self._lock:
            self._state.clear()

    def _add(self, fam: Family, labels: Mapping[str, str], t: float, v: float) -> None:
        if not math.isfinite(t):
            return
        self._families.setdefault(fam.name, fam)
        key = tuple(sorted(labels.items()))
        points = self._points.setdefault(fam.name, {}).setdefault(key, deque(maxlen=self.keep))
        if points and t <= points[-1][0]:
            return  # never out of order
        points.append((t, float(v)))
        self.newest = max(self.newest, t)

    def interval(self, iv: Interval) -> None:
        values = {"tps": iv.tps, "qps": iv.qps, "threads": float(iv.threads), "errors": iv.errors,
                  "reconnects": iv.reconnects}
        with self._lock:
            for key, fam in CLIENT.items():
                self._add(fam, {"group": iv.group}, iv.t, values[key])
            for key in LATENCY_KEYS:
                ms = iv.lat_ms.get(key)
                if ms is not None:
                    self._add(LATENCY, {"group": iv.group, "quantile": QUANTILES[key]}, iv.t, ms / 1000.0)

    def reading(self, r: LiveReading) -> None:
        with self._lock:
            for name, v in r.counters.items():
                found = probe_family(name, "rate", True)
                if found is not None:
                    self._add(found[0], found[1], r.t, v)
            for name, v in r.values.items():
                if name in r.counters:
                    continue  # its cumulative value is exposed: rate() makes the per-second one
                found = probe_family(name, r.kinds.get(name, "gauge"), False)
                if found is not None:
                    self._add(found[0], found[1], r.t, v)

    def event(self, ev: Event) -> None:
        data = ev.data
        with self._lock:
            if ev.kind == "step_start":
                threads = data.get("threads")
                threads_text = ",".join(f"{g}={n}" for g, n in threads.items()) if isinstance(threads, dict) else ""
                config = data.get("config")
                self._state[STEP.name] = {(("config", str(int(config) + 1) if isinstance(config, int) else ""),
                                           ("step", str(data.get("step", ""))),
                                           ("threads", threads_text)): 1.0}
                self._families.setdefault(STEP.name, STEP)
            elif ev.kind == "step_end":
                self._state.pop(STEP.name, None)
            elif ev.kind == "knob" and isinstance(data.get("name"), str):
                name = str(data["name"])
                self._set_knob(name, data.get("to"))
                counts = self._state.setdefault(KNOB_CHANGES.name, {})
                key = (("name", name),)
                counts[key] = counts.get(key, 0.0) + 1.0
                self._families.setdefault(KNOB_CHANGES.name, KNOB_CHANGES)
            elif ev.kind == "restore" and isinstance(data.get("name"), str):
                self._set_knob(str(data["name"]), data.get("original", data.get("value")))

    def _set_knob(self, name: str, value: object) -> None:
        v = knob_number(value)
        gauges = self._state.setdefault(KNOB.name, {})
        if v is None:
            gauges.pop((("name", name),), None)  # not a number (a path, a list): not a gauge
            return
        gauges[(("name", name),)] = v
        self._families.setdefault(KNOB.name, KNOB)

    # -- reading
    def render(self, openmetrics: bool = True, scraper: str | None = None) -> str:
        """The exposition text. `scraper` (who scrapes): hand it only the seconds it has not had yet (the newest
        always), counted as had at once; None: the newest second of each series."""
        text, commit = self.render_pending(openmetrics, scraper)
        commit()
        return text

    def render_pending(self, openmetrics: bool = True,
                       scraper: str | None = None) -> tuple[str, Callable[[], None]]:
        """The exposition text, and what to call once the scraper really has it (the body written): only then
        does its cursor move, so a scrape that fails on the way loses no second (issue 43 item 21). The points are
        copied under the lock and formatted outside it: the run's callbacks never wait for the text."""
        with self._lock:
            since_of: dict[tuple[str, LabelKey], float] = {}
            if scraper is not None:
                since_of = dict(self._cursors.get(scraper, {}))
            self.scrapes += 1
            base = tuple((k, v) for k, v in self.session.items() if v)
            families = {name: self._families[name] for name in self._families}
            taken: dict[str, list[tuple[LabelKey, list[tuple[float, float]]]]] = {}
            for name, by_key in self._points.items():
                rows = []
                for key, points in by_key.items():
                    if not points:
                        continue
                    since = since_of.get((name, key))
                    if scraper is None:
                        new = [points[-1]]
                    elif since is None or points[0][0] > since:
                        new = list(points)
                    else:  # from the newest back to the first not had yet
                        new = []
                        for p in reversed(points):
                            if p[0] <= since:
                                break
                            new.append(p)
                        new.reverse()
                        new = new or [points[-1]]
                    rows.append((key, new))
                taken[name] = rows
            state = {name: dict(values) for name, values in self._state.items()}
        moved: dict[tuple[str, LabelKey], float] = {}
        lines: list[str] = []
        for name in sorted(families):
            fam = families[name]
            sample = name + ("_total" if fam.type == "counter" else "_info" if fam.type == "info" else "")
            rows_text: list[str] = []
            for key, new in sorted(taken.get(name, []), key=lambda kv: kv[0]):
                for t, v in new:
                    stamp = f"{t:.3f}" if openmetrics else str(round(t * 1000))
                    rows_text.append(f"{sample}{label_text((*base, *key))} {number(v)} {stamp}")
                moved[(name, key)] = new[-1][0]
            for key, v in sorted(state.get(name, {}).items()):
                rows_text.append(f"{sample}{label_text((*base, *key))} {number(v)}")
            if not rows_text:
                continue
            if openmetrics:
                lines.append(f"# TYPE {name} {fam.type}")
                if fam.unit:
                    lines.append(f"# UNIT {name} {fam.unit}")
                lines.append(f"# HELP {name} {help_text(fam.help)}")
            else:  # 0.0.4 has no info nor unit: an info is a gauge of 1
                lines.append(f"# HELP {sample} {help_text(fam.help)}")
                lines.append(f"# TYPE {sample} {'gauge' if fam.type == 'info' else fam.type}")
            lines += rows_text
        if openmetrics:
            lines.append("# EOF")
        text = "\n".join(lines) + "\n"

        def commit() -> None:
            if scraper is None:
                return
            with self._lock:
                cursor = self._cursors.pop(scraper, {})
                for k, t in moved.items():
                    cursor[k] = max(cursor.get(k, t), t)
                self._cursors[scraper] = cursor
                while len(self._cursors) > MAX_SCRAPERS:
                    self._cursors.popitem(last=False)
        return text, commit

    def behind(self) -> bool:
        """Whether some scraper has not had the newest second yet (the run's end waits a moment for it)."""
        with self._lock:
            if not self._cursors or self.newest == 0.0:
                return False
            return any(max(c.values(), default=0.0) < self.newest for c in self._cursors.values())


def label_text(labels: Iterable[tuple[str, str]]) -> str:
    items = [f'{k}="{escape(v)}"' for k, v in labels]
    return "{" + ",".join(items) + "}" if items else ""


def help_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def wants_openmetrics(accept: str | None) -> bool:
    """Content negotiation: OpenMetrics when the scraper lists it (Prometheus 2.x does, first), else text 0.0.4."""
    return bool(accept) and "application/openmetrics-text" in (accept or "")
