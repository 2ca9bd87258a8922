"""A recorded tune session, written with the store's own writer as `tunebench tune` writes one: its config's
"tune", the "trial" events (the first baseline, four trials, the A/B/A/B confirmation), the "tune" event and the
summary's "tune". Synthetic: named and tagged so, never a measurement."""

from __future__ import annotations

import numpy as np

from tunebench.core.interval import Event
from tunebench.run.tune import KnobRange, Trial, TuneResult, TuneSpec, result_text
from tunebench.store.repo import Store

T0 = 1_790_000_000.0
SPEC = TuneSpec((KnobRange.parse("innodb_io_capacity=200..20000:log"),), budget_seconds=60, trial_seconds=5,
                settle_seconds=1, warmup_seconds=2)
# n, value, TPS level, ended early, refused
TRIALS = [(1, "500", 1020.0, None, None), (2, "5000", 1200.0, None, None),
          (3, "20000", 400.0, "3 s under half the baseline's TPS (500)", None), (4, "300", None, None, "refused")]
BASE = 1000.0
CONFIRM = {"ratio": 1.18, "ci_low": 1.12, "ci_high": 1.24, "block": 2, "tps_a": 1000.0, "tps_b": 1180.0,
           "p99_a": 2.0, "p99_b": 1.7, "seconds": [10, 10], "values": {"innodb_io_capacity": "5000"}}


def record_tune(store: Store) -> tuple[int, TuneResult, dict[str, tuple[float, float]]]:
    """The session's ID, its TuneResult and each band's [t0, t1] in seconds from the session's start (keyed
    "baseline", "trial N", "confirm A1" ...)."""
    level: list[float] = [BASE] * 200
    spans: dict[str, tuple[float, float]] = {}
    events: list[Event] = [Event(T0, "step_start", "step 1: main=4")]
    events.append(Event(T0 + 9.2, "trial", "baseline: 1,000 TPS", {"n": 0, "baseline": True, "t0": T0 + 4,
                                                                    "t1": T0 + 9}))
    spans["baseline"] = (4.0, 9.0)
    trials: list[Trial] = []
    t = 10.0
    best = None
    for n, value, tps, early, error in TRIALS:
        trial = Trial(n, {"innodb_io_capacity": value} if not error else {}, {"innodb_io_capacity": value},
                      T0 + t, error=error)
        if error is None:
            seconds = 3 if early else 5
            trial.measure_from, trial.ended_at = T0 + t + 1, T0 + t + 1 + seconds
            for s in range(int(t), int(t) + 1 + seconds):
                level[s] = tps or BASE
            trial.tps, trial.baseline_tps, trial.seconds, trial.ended_early = tps, BASE, seconds, early
            trial.p99_ms, trial.baseline_p99_ms = 2000.0 / (tps or BASE), 2.0
            trial.objective = (tps or BASE) / BASE
            trial.ci_low, trial.ci_high = trial.objective - 0.04, trial.objective + 0.04
        if trial.objective is not None and not early:
            best = max(best or 0.0, trial.objective)
        trial.best_so_far = best
        t1 = trial.ended_at or T0 + t
        spans[f"trial {n}"] = (t, t1 - T0)
        # recorded once the baseline after it was measured, as the search does
        events.append(Event(t1 + 6.5, "trial", trial.line("tps"), {"n": n, "t0": T0 + t, "t1": t1,
                                                                  "trial": trial.to_dict()}))
        trials.append(trial)
        t = t1 - T0 + 8
    for k, side in enumerate("ABAB"):
        a, b = t + k * 6, t + k * 6 + 6
        for s in range(int(a) + 1, int(b) + 1):
            level[s] = 1180.0 if side == "B" else BASE
        spans[f"confirm {side}{k // 2 + 1}"] = (a, b)
        events.append(Event(T0 + b + 0.1, "trial", f"confirm {side}", {"n": 2, "confirm": side, "t0": T0 + a,
                                                                      "t1": T0 + b}))
    end = t + 24 + 2
    result = TuneResult(SPEC.to_dict(), {"innodb_io_capacity": "200"}, trials, best=2, confirm=dict(CONFIRM),
                        verdict="improvement", started_at=T0, ended_at=T0 + end)
    result.text = result_text(result)
    events.append(Event(T0 + end, "tune", result.text, {"tune": result.to_dict()}))
    config = {"groups": [{"name": "main", "workload": "oltp_point_select", "options": {}, "schedule": [4]}],
              "step_seconds": SPEC.step_seconds, "tune": SPEC.to_dict()}
    w = store.new_session(target="sandbox", transport="socket", engine="builtin", workload="oltp_point_select",
                          config=config, flavor="mariadb", version="10.11.19", started_at=T0)
    sid = w.start_step(0, T0, T0, {"threads": {"main": 4}, "config": 0, "step": 0, "knobs": {}})
    rng = np.random.default_rng(1)
    for s in range(int(end)):
        tps = level[s] * rng.normal(1, 0.01)
        w.add_samples(T0 + s + 1, {"client.main.tps": tps, "client.main.qps": tps,
                                   "client.main.lat.p95": 1.5, "client.main.lat.p99": 2000.0 / level[s],
                                   "client.main.threads": 4.0})
    for ev in events:
        w.add_event(ev)
    w.flush()
    step = {"step": 1, "config": 0, "group": "main", "threads": 4, "tps": float(np.mean(level[:int(end)])),
            "qps": 0.0, "lat_p95_ms": 1.5, "lat_p99_ms": 2.0, "cv": 0.05}
    w.end_step(sid, T0 + end, {"main": step})
    w.finish("completed", {"steps": [step], "tune": result.to_dict()}, ended_at=T0 + end)
    store.update_session(w.id, name="synthetic tune", tags="synthetic")
    return w.id, result, spans
