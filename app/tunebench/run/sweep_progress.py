"""A sweep's results as they arrive: the run's plan and its StepResults so far, turned into the tables the CLI
prints (core/results.py `sweep_tables`, the one implementation), the configuration x threads grid, the time
left by the plan, and which differences are within the steps' own noise. Qt-free: the window's view reads it.
"""

from __future__ import annotations

import bisect
import json
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tunebench.core.busy import BUSY_PCT, busy_mask, other_series
from tunebench.core.confdiff import ConfigDiff, compare, server_sides
from tunebench.core.error_codes import codes_text
from tunebench.core.interval import Event, Interval
from tunebench.core.results import phase_rows, sweep_tables
from tunebench.core.stats import StepSummary
from tunebench.core.sweep import RESTART_SECONDS, ConfigPlan, GroupSpec, PhaseSpec, Plan, SweepSpec
from tunebench.run.records import StepResult
from tunebench.run.session import phases_json, steps_json


@dataclass(frozen=True, slots=True)
class Cell:
    """One configuration at one concurrency (the main client group), as measured."""

    tps: float
    p95_ms: float | None
    cv: float | None
    best: bool
    headline: tuple[str, float] | None = None  # the family's figure beside TPS: ("NOPM", 9540.0), ("rows/s", …)
    seconds: int | None = None  # the seconds its figures are over
    ramp: int = 0  # leading seconds below the steady level, left out
    flipped: int = 0  # live knob changes during the step: its figures mix the values
    errors: float = 0.0
    error_codes: str = ""  # the errors by server error code, as said (core/error_codes.py)


@dataclass(frozen=True, slots=True)
class Row:
    idx: int
    label: str
    baseline: bool
    cells: Mapping[int, Cell]  # threads -> cell; missing while the step has not run
    best: Mapping[str, Any] | None  # the table's best point: threads, tps, qps, lat_p95_ms
    measuring: float | None = None  # the column of the step under way in this configuration (threads or rate)


@dataclass(frozen=True, slots=True)
class Progress:
    done: int  # steps ended
    total: int  # steps planned
    elapsed: float  # seconds since the first step started
    remaining: float | None  # seconds left by the plan's estimate; None when it is over


class SweepProgress:
    """A live sweep (`start(plan)`, then `add_step` / `add_event` as the run reports them) or a recorded one
    (`show_session`). `tables()` is what `sessions export --format md` prints from, for the steps so far."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.plan: Plan | None = None
        self.results: list[StepResult] = []
        self.applied: dict[int, dict[str, str]] = {}
        self.started_at: float | None = None  # the first step's start
        self.step_started_at: float | None = None  # the running step's start
        self.running_config: int | None = None  # and its configuration
        self.running_threads: int | None = None  # and its main group's threads
        self.ended_at: float | None = None  # the last step's end
        self.name = ""
        # a recorded session: its steps and events on its clock, and the replay head (seconds from its start)
        self.recorded: list[tuple[float, StepResult | Event]] | None = None
        self.t0 = 0.0
        self.head: float | None = None
        self._upto = -1  # how many of `recorded` the head has passed
        # the run's own tables once it has ended (the session summary's): with the configuration pairs' A/B
        # verdicts, which need the per-second TPS as stored
        self.final: dict[str, Any] | None = None
        self._summary: dict[str, Any] | None = None
        # live: the main group's per-second TPS of the running step, and of each step ended (step number ->
        # its measured seconds), so the ratio table carries its A/B verdict as soon as a step has ended
        self._seconds: list[tuple[float, float]] = []
        self._measure_from: float | None = None
        self._step_number: int | None = None
        self.per_second: dict[int, list[float]] = {}
        self._other: dict[str, list[tuple[float, float]]] = {}  # proc.<host>.other.cpu samples (core/busy.py)
        self.servers: list[tuple[str, Mapping[str, Any] | None]] = []  # a server axis's servers, as they started

    # -- input --
    def start(self, plan: Plan) -> None:
        self.clear()
        self.plan, self.name = plan, plan.spec.name

    def add_step(self, result: StepResult) -> None:
        if self.plan is not None:
            self.results.append(result)

    def add_interval(self, iv: Interval) -> None:
        """A second of the live run: the main group's TPS is kept while a step is measured."""
        if self.plan is None or self._measure_from is None or not self.plan.spec.groups:
            return
        if iv.group == self.plan.spec.groups[0].name:
            self._seconds.append((iv.t, iv.tps))

    def add_samples(self, t: float, values: Mapping[str, float]) -> None:
        """A probe sample: the hosts' other CPU, for the busy seconds a step's verdicts leave out."""
        if self.plan is None:
            return
        for n in other_series(values):
            self._other.setdefault(n, []).append((t, float(values[n])))

    def add_event(self, ev: Event) -> None:
        if self.plan is None:
            return
        data: Mapping[str, Any] = ev.data
        if ev.kind == "server":
            self.servers += [side for _i, side in server_sides([{"kind": ev.kind, "data": data}])]
        elif ev.kind == "config":
            self.applied[int(data.get("config", 0))] = dict(data.get("knobs") or {})
        elif ev.kind == "step_start":
            self.started_at = ev.t if self.started_at is None else self.started_at
            self.step_started_at = ev.t
            self.running_config = int(data.get("config", 0))
            threads = data.get("threads") or {}
            self.running_threads = threads.get(self.plan.spec.groups[0].name) if self.plan.spec.groups else None
            self._step_number = data.get("step")
            self._measure_from = ev.t + self.plan.spec.warmup_seconds
            self._seconds = []
        elif ev.kind == "ramp" and self._measure_from is not None:
            # the step's connections opened: its measured seconds start here
            self._measure_from = float(data.get("measure_from", self._measure_from))
        elif ev.kind == "step_end":
            if self._step_number is not None and self._measure_from is not None:
                # the seconds wholly inside the measured window, as core.verdict.step_window takes them
                lo, hi = self._measure_from, ev.t
                kept = [(t, v) for t, v in self._seconds if t - 1.0 >= lo and t <= hi]
                busy_pct = getattr(self.plan.spec, "busy_pct", BUSY_PCT)
                if kept and self._other and busy_pct is not None:  # less the busy seconds, as the run's tables
                    other = {n: (np.array([x[0] for x in xs]), np.array([x[1] for x in xs]))
                             for n, xs in self._other.items()}
                    busy = busy_mask(other, np.array([t for t, _v in kept]), busy_pct)
                    kept = [tv for tv, b in zip(kept, busy, strict=True) if not b]
                self.per_second[int(self._step_number)] = [v for _t, v in kept]
            self._seconds, self._measure_from, self._step_number = [], None, None
            self.ended_at, self.step_started_at, self.running_config, self.running_threads = ev.t, None, None, None

    def finish(self, details: Mapping[str, Any]) -> None:
        """The run ended: its tables (RunOutcome.details, the same as the session summary) from now on."""
        if self.plan is not None and details.get("configs"):
            self.final = {k: details[k] for k in ("configs", "baseline", "best_to_best", "ratios", "restarts_planned",
                                                  "knee")
                          if k in details}

    def show_session(self, session: Mapping[str, Any]) -> bool:
        """A recorded sweep session, whole (`seek` then shows it as it was at a point of its replay). False when
        it is not a sweep, or has no tables (still running, or killed before it ended)."""
        self.clear()
        summary = session.get("summary") or {}
        sweep = (session.get("config") or {}).get("sweep")
        if not sweep or not (summary.get("configs") or summary.get("phases")):
            return False
        # The plan as far as the session keeps it: the spec as written and the configurations that ran (the
        # summary's), so the tables come from sweep_tables over the steps as they did live. A phase plan's
        # summary has its phases instead (no configuration x threads tables): its configurations from its steps.
        if summary.get("configs"):
            configs = tuple(ConfigPlan(c["idx"], c["knobs"], {}, c["transport"], c["engine"], c["cpus"],
                                       c["repeat"], server=c.get("server")) for c in summary["configs"])
        else:
            ran = {int(st["config"].get("config", 0)): st["config"].get("knobs") or {}
                   for st in session.get("steps", [])}
            configs = tuple(ConfigPlan(i, ran[i], {}, sweep.get("transport"), sweep.get("engine", "builtin"), None)
                            for i in sorted(ran))
        plan = Plan(spec_of(sweep), configs, int(sweep.get("restarts_planned", 0)),
                    float(sweep.get("estimated_seconds", 0)), int(summary.get("baseline", 0)))
        self.t0 = float(session["started_at"])
        timeline: list[tuple[float, StepResult | Event]] = []
        for st in session.get("steps", []):
            if st.get("summary") is None or st.get("ended_at") is None:
                continue
            summary_of = st["summary"]
            summaries = tuple(StepSummary.from_dict(v) for k, v in summary_of.items() if not k.startswith("_"))
            timeline.append((float(st["ended_at"]), StepResult(st["idx"], summaries, st["config"].get("config", 0),
                                                                incomplete="_incomplete" in summary_of,
                                                                efficiency=summary_of.get("_efficiency") or {},
                                                                phase=summary_of.get("_phase"),
                                                                action=summary_of.get("_action"),
                                                                finished=summary_of.get("_ended"))))
        for e in session.get("events", []):
            if e["kind"] in ("config", "step_start", "step_end", "server"):
                timeline.append((float(e["t"]), Event(e["t"], e["kind"], e["label"], e["data"])))
        # at one time, the step's end event before its result (as the run sends them)
        timeline.sort(key=lambda item: (item[0], isinstance(item[1], StepResult)))
        self.recorded = timeline
        self._summary = dict(summary)
        self.seek(float("inf"), plan)
        return True

    def seek(self, head: float, plan: Plan | None = None) -> bool:
        """A recorded session as it was `head` seconds after its start: the steps ended by then. False when
        that is what it showed already (the same steps and events: only the clock moved)."""
        if self.recorded is None:
            return False
        recorded, t0, plan, summary = self.recorded, self.t0, plan or self.plan, self._summary
        assert plan is not None
        upto = bisect.bisect_right([t - t0 for t, _item in recorded], head)
        at = min(head, (recorded[-1][0] - t0) if recorded else 0.0)
        if upto == self._upto and plan is self.plan:
            self.head = at
            return False
        self.clear()
        self.start(plan)
        self.recorded, self.t0, self._summary, self._upto = recorded, t0, summary, upto
        for _t, item in recorded[:upto]:
            if isinstance(item, StepResult):
                self.add_step(item)
            else:
                self.add_event(item)
        self.head = at
        if summary is not None and len(self.results) == sum(isinstance(i, StepResult) for _t, i in recorded):
            self.finish(summary)  # every step: the summary's tables, verdicts included
        return True

    # -- output --
    @property
    def active(self) -> bool:
        return self.plan is not None

    def now(self) -> float:
        """The clock the progress reads: a replay's head, else the wall clock."""
        return self.t0 + self.head if self.head is not None else time.time()

    def differed(self) -> ConfigDiff | None:
        """A server axis with two or more servers started so far: what else differed between them."""
        return compare(self.servers) if len(self.servers) > 1 else None

    def tables(self) -> dict[str, Any]:
        if self.final is not None:
            return self.final
        # a phase plan's steps are phases, not a concurrency curve of its one configuration (its table: Markdown)
        if self.plan is None or self.plan.spec.phases:
            return {"configs": [], "baseline": 0, "best_to_best": [], "ratios": []}
        return sweep_tables(self.plan, steps_json(self.results), self.applied, self.per_second)

    @property
    def by_rate(self) -> bool:
        """A sweep whose steps are rates (open loop, rates = [...]): the grid's columns are its rates."""
        return self.plan is not None and len(self.plan.spec.groups[0].rates) > 1

    def column(self, step: Mapping[str, Any]) -> Any:
        """A step's column in the grid: its threads, or its rate in a sweep over rates."""
        return step.get("rate") if self.by_rate else step["threads"]

    def threads(self) -> list[Any]:
        """The columns: the main group's concurrency steps (planned, or those measured), or its rates."""
        if self.plan is not None:
            spec = self.plan.spec.groups[0]
            return sorted(set(spec.rates)) if self.by_rate else sorted(set(spec.threads))
        return sorted({st["threads"] for c in self.tables()["configs"] for st in c["steps"]})

    def rows(self) -> list[Row]:
        """Every planned configuration (a recorded one: those that ran), its steps so far and best point."""
        tables = self.tables()
        ran = {c["idx"]: c for c in tables["configs"]}
        planned = ([(c.idx, c.label()) for c in self.plan.configs] if self.plan is not None
                   else [(c["idx"], c["label"]) for c in tables["configs"]])
        rows = []
        for idx, label in planned:
            c = ran.get(idx)
            best = c["best"] if c else None
            cells = {self.column(st): Cell(st["tps"], st["lat_p95_ms"], st["cv"],
                                           not self.by_rate and best is not None and st["threads"] == best["threads"],
                                         (st["headline_label"], st["headline"])
                                         if st.get("headline_label") and st.get("headline") is not None else None,
                                         st.get("seconds"), int(st.get("steady_skipped") or 0),
                                         int(st.get("flipped") or 0), float(st.get("errors") or 0.0),
                                         codes_text(st.get("error_codes")))
                     for st in (c["steps"] if c else [])}
            measuring: float | None = self.running_threads if idx == self.running_config else None
            if self.by_rate and measuring is not None and self.plan is not None:  # the running step's rate
                rates = self.plan.spec.groups[0].rates
                done = sum(1 for r in self.results if r.config == idx)
                measuring = rates[min(done, len(rates) - 1)]
            rows.append(Row(idx, label, idx == tables["baseline"], cells, best, measuring))
        return rows

    @property
    def phased(self) -> bool:
        """A phase plan (iiBench's l.i0, l.x, l.i1, qr100 ...): its steps are phases, shown as a per-phase table."""
        return self.plan is not None and bool(self.plan.spec.phases)

    def phases(self) -> list[dict[str, Any]]:
        """The per-phase table (core/results.phase_rows, what the Markdown report prints) for the phases ended so
        far, then a row per phase not ended yet: {"phase", "step", "config", "state": "running" or "planned"}."""
        if not self.phased or self.plan is None:
            return []
        spec = self.plan.spec
        done = phase_rows(phases_json(self.results), steps_json(self.results))
        ended = {r.idx for r in self.results}
        running = (int(self._step_number) - 1 if self._step_number is not None else None)
        for cfg in self.plan.configs:
            for i, ph in enumerate(spec.phases):
                idx = cfg.idx * spec.steps + i
                if idx not in ended:
                    done.append({"phase": ph.name, "step": idx + 1, "config": cfg.idx,
                                 "state": "running" if idx == running else "planned"})
        done.sort(key=lambda r: r["step"])
        return done

    def efficiency(self) -> list[tuple[str, int, float, dict[str, Any]]]:
        """(configuration, threads, TPS, per-operation costs) of the main group's steps ended so far, in the order
        they ran: what explains a knob's effect, side by side (core/efficiency.py)."""
        labels = {c.idx: c.label() for c in self.plan.configs} if self.plan is not None else {}
        out = []
        for r in self.results:
            if not r.summaries:
                continue
            main = r.summaries[0]
            eff = r.efficiency.get(main.group)
            if eff:
                out.append((labels.get(r.config, f"configuration {r.config + 1}"), main.threads, main.tps, eff))
        return out

    def progress(self, now: float) -> Progress:
        if self.plan is None:
            return Progress(0, 0, 0.0, None)
        plan, spec = self.plan, self.plan.spec
        total = len(plan.configs) * spec.steps
        done = len(self.results)
        if done >= total:
            return Progress(done, total, (self.ended_at or now) - (self.started_at or now), None)
        # The plan's own arithmetic (make_plan) for the work left, so that it starts at the plan's estimate: the
        # steps not ended, a cool-down per configuration not finished, the restarts of those not started (and
        # the one back at the end); less what the running step has had already.
        per_step = spec.warmup_seconds + spec.step_seconds
        steps_of: dict[int, int] = defaultdict(int)
        for r in self.results:
            steps_of[r.config] += 1
        started = set(steps_of) | ({self.running_config} if self.running_config is not None else set())
        unfinished = [c for c in plan.configs if steps_of[c.idx] < spec.steps]
        cooldowns = len(unfinished)
        restarts = sum(c.restart for c in unfinished if c.idx not in started)
        restarts += plan.restarts - sum(c.restart for c in plan.configs)  # back to the original settings
        remaining = (total - done) * per_step + cooldowns * spec.cooldown_seconds + restarts * RESTART_SECONDS
        if self.step_started_at is not None:
            remaining -= min(per_step, now - self.step_started_at)
        elapsed = now - self.started_at if self.started_at is not None else 0.0
        return Progress(done, total, elapsed, max(0.0, remaining))

    # -- noise --
    def spread(self, config: int, threads: int) -> float | None:
        """The relative spread of one point: its step's CV (per-second TPS), or with repeats the spread
        between the repeats of the same configuration at that concurrency ((max - min) / mean), the larger."""
        tables = self.tables()
        by_idx = {c["idx"]: c for c in tables["configs"]}
        c = by_idx.get(config)
        if c is None:
            return None
        tps_of: dict[str, list[float]] = defaultdict(list)
        for other in tables["configs"]:
            for st in other["steps"]:
                if st["threads"] == threads:
                    tps_of[_same_configuration(other)].append(st["tps"])
        cv = next((st["cv"] for st in c["steps"] if st["threads"] == threads), None)
        repeats = tps_of.get(_same_configuration(c), [])
        between = ((max(repeats) - min(repeats)) / (sum(repeats) / len(repeats))
                   if len(repeats) > 1 and sum(repeats) > 0 else None)
        known = [v for v in (cv, between) if v is not None]
        return max(known) if known else None

    def within_noise(self, ratio: float | None, a: tuple[int, int], b: tuple[int, int]) -> bool:
        """Is `ratio` (point a over point b, each (config, threads)) closer to 1 than either point's spread?"""
        if ratio is None:
            return False
        spreads = [s for s in (self.spread(*a), self.spread(*b)) if s is not None]
        return bool(spreads) and abs(ratio - 1.0) < max(spreads)


def spec_of(d: Mapping[str, Any]) -> SweepSpec:
    """A sweep spec back from SweepSpec.to_dict() (what a session's config keeps)."""
    return SweepSpec(
        d["name"], tuple(GroupSpec(g["name"], g["workload"], tuple(g["threads"]), g.get("options", {}),
                                   tuple(g.get("rates", ()))) for g in d["groups"]),
        {k: tuple(v) for k, v in d["axes"].items()}, d["step_seconds"], d["warmup_seconds"],
        d.get("cooldown_seconds", 0), d.get("repeats", 1), d.get("order", "listed"), d.get("seed", 1),
        d.get("reset_data", False), d.get("engine", "builtin"), d.get("transport"), d.get("baseline", {}),
        d.get("description", ""), d.get("schema", "tunebench"), d.get("source", ""),
        tuple(d.get("optional_axes", ())), d.get("arrival", "poisson"), d.get("latency_limit_ms"),
        d.get("slo_p99_ms"), tuple(PhaseSpec(p["name"], p.get("action")) for p in d.get("phases", ())),
        None if d.get("busy_threshold", BUSY_PCT) == "off" else float(d.get("busy_threshold", BUSY_PCT)))


def _same_configuration(c: Mapping[str, Any]) -> str:
    """What a configuration is, its repeat number aside."""
    return json.dumps([c["knobs"], c["transport"], c["engine"], c["cpus"], c.get("server")], sort_keys=True,
                      default=str)
