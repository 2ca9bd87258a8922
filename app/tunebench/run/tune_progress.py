"""What the window shows of a tune (run/tune.py), live or replayed: its trials as they end, the first baseline,
the result once the search has ended, and the leader so far. The Tune results view and stage mode draw it.

Live, trials come from the run's Trial records and the result from its "tune" event (the RunOutcome's "tune"
too); replayed, from the session's summary ("tune"), each trial shown once the play head passes the time its
"trial" event was recorded, as live showed it then.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tunebench.core.tune import confirm_text
from tunebench.run.tune import Trial, TuneResult, size_text


def _values(values: Mapping[str, Any]) -> str:
    """innodb_buffer_pool_size=1G, innodb_io_capacity=2000 (as the result's words write values)."""
    out = []
    for k, v in values.items():
        try:
            x = float(v)
        except (TypeError, ValueError):
            out.append(f"{k}={v}")
            continue
        out.append(f"{k}={size_text(x) if math.isfinite(x) else v}")
    return ", ".join(out)


def counts(t: Trial) -> bool:
    """Does the trial count for the best? (measured, not ended early, not refused) — as the search judges."""
    return t.objective is not None and not t.ended_early and not t.error


class TuneProgress:
    """One tune's state on screen. `at` values are seconds on the timeline's clock (replay: since its start)."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.active = False  # a tune is on screen (running, ended, or replayed)
        self.running = False
        self.spec: dict[str, Any] = {}
        self.originals: dict[str, Any] = {}
        self.trials: list[Trial] = []
        self.known: list[float] = []  # per trial: when it became known (replay's head shows it from then)
        self.result: TuneResult | None = None
        self.result_at = math.inf
        self.head: float | None = None  # replay: the play head (None: everything known so far)
        self.version = 0

    def _changed(self) -> None:
        self.version += 1

    # -- live --
    def start(self, spec: Mapping[str, Any]) -> None:
        self.clear()
        self.active = self.running = True
        self.spec = dict(spec)
        self._changed()

    def add_trial(self, trial: Trial, at: float = 0.0) -> None:
        self.trials.append(trial)
        self.known.append(at)
        self._changed()

    def add_event(self, kind: str, data: Mapping[str, Any], at: float = 0.0) -> None:
        """A run's event: its "tune" event carries the result (the trials come as Trial records)."""
        if kind == "tune" and isinstance(data.get("tune"), Mapping):
            self.set_result(data["tune"], at)

    def set_result(self, tune: Mapping[str, Any], at: float = 0.0) -> None:
        """The search's TuneResult.to_dict(): its trials are the authoritative list from here on."""
        try:
            result = TuneResult.from_dict(tune)
        except TypeError:  # a damaged summary: what the trials said stays
            return
        known = dict(zip((t.n for t in self.trials), self.known, strict=True))
        self.result, self.result_at = result, at
        self.spec = dict(result.spec) or self.spec
        self.originals = dict(result.originals)
        self.trials = list(result.trials)
        self.known = [known.get(t.n, at) for t in self.trials]
        self.active = True
        self._changed()

    def finished(self, details: Mapping[str, Any]) -> None:
        """The run ended: its outcome's "tune" when the search got as far as its first baseline."""
        self.running = False
        if isinstance(details.get("tune"), Mapping) and self.result is None:
            self.set_result(details["tune"])
        self._changed()

    # -- replay --
    def load_session(self, session: Mapping[str, Any], t0: float) -> bool:
        """A recorded session: True when it is a tune's (its summary's "tune", else its config's and its "trial"
        events, when the run was killed before the summary was written)."""
        self.clear()
        summary = session.get("summary") or {}
        config = session.get("config") or {}
        tune = summary.get("tune") if isinstance(summary, Mapping) else None
        spec = config.get("tune") if isinstance(config, Mapping) else None
        if not isinstance(tune, Mapping) and not isinstance(spec, Mapping):
            return False
        self.active = True
        self.spec = dict(spec) if isinstance(spec, Mapping) else {}
        events: Sequence[Mapping[str, Any]] = session.get("events") or ()
        for e in events:
            data = e.get("data") or {}
            if e.get("kind") == "trial" and isinstance(data.get("trial"), Mapping):
                try:
                    trial = Trial.from_dict(data["trial"])
                except TypeError:
                    continue
                self.add_trial(trial, float(e.get("t") or t0) - t0)
            elif e.get("kind") == "tune":
                self.result_at = float(e.get("t") or t0) - t0
        if isinstance(tune, Mapping):
            self.set_result(tune, self.result_at if math.isfinite(self.result_at) else -math.inf)
        self.head = math.inf
        self._changed()
        return True

    def replay_to(self, x: float) -> None:
        """The play head moved: a change (a new version) only when that shows another trial or the result."""
        before = (len(self.shown()), self.shown_result() is None)
        self.head = x
        if (len(self.shown()), self.shown_result() is None) != before:
            self._changed()

    # -- what is shown --
    def shown(self) -> list[Trial]:
        """The trials known at the play head (live: all)."""
        if self.head is None:
            return list(self.trials)
        return [t for t, at in zip(self.trials, self.known, strict=True) if at <= self.head]

    def shown_result(self) -> TuneResult | None:
        if self.result is None or (self.head is not None and self.result_at > self.head):
            return None
        return self.result

    @property
    def objective(self) -> str:
        return str(self.spec.get("objective", "tps"))

    def leader(self) -> Trial | None:
        """The best trial so far among those shown (as the search picks the one to confirm)."""
        valid = [t for t in self.shown() if counts(t)]
        return max(valid, key=lambda t: t.objective or 0.0, default=None)

    def table(self) -> list[list[str]]:
        """TuneResult.table_rows of the trials shown; before the result, the leader marked "best so far"."""
        result = self.shown_result()
        r = TuneResult(self.spec, self.originals, trials=self.shown(), best=result.best if result else None)
        rows = r.table_rows()
        for row, t in zip(rows, r.trials, strict=True):
            if not t.values and t.asked:  # refused: what it asked for (the server set nothing)
                row[1] = f"{_values(t.asked)} (asked)"
        lead = self.leader() if result is None else None
        if lead is not None:
            for row, t in zip(rows, r.trials, strict=True):
                if t.n == lead.n:
                    row[-1] = ", ".join(x for x in ("best so far", row[-1]) if x)
        return rows

    def planned(self) -> int | None:
        n = self.spec.get("planned_trials")
        return int(n) if isinstance(n, int | float) and math.isfinite(n) else None

    def status_text(self) -> str:
        """One line: where the search is, or its result."""
        result = self.shown_result()
        if result is not None:
            return result.text or "the search ended"
        shown = self.shown()
        planned = self.planned()
        lead = self.leader()
        where = f"{len(shown)} of about {planned} trials" if planned else f"{len(shown)} trials"
        if not shown:
            where = "warming up, then the first baseline" if self.running else "no trial yet"
        best = f"; best so far {lead.objective:.2f}x ({_values(lead.values)})" if lead and lead.objective else ""
        return f"tune: {where}{best}"

    def stage_text(self) -> str:
        """The stage's large readout: the leader so far, then the confirmed result."""
        result = self.shown_result()
        if result is not None:
            best, c = result.best_trial(), result.confirm
            if best is not None and c:
                word = "improvement" if result.improved else "no clear improvement"
                return f"{word}: {confirm_text(c)} ({_values(best.values)})"
            return "no clear improvement"
        lead = self.leader()
        if lead is None or lead.objective is None:
            return "best so far: — (no trial measured yet)"
        return f"best so far: {lead.objective:.2f}x ({_values(lead.values)})"
