"""A synthetic recorded session, written with the store's own writer, for the replay benchmark and the
GUI tests: the series names, kinds, noise and events of a real run, at any length.

Not measurements: the session is named and tagged 'synthetic' so it is never mistaken for one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tunebench.core.interval import Event
from tunebench.core.verdict import series_names as verdict_series
from tunebench.core.verdict import verdict_event
from tunebench.store.repo import Store

WAITS = ["rwlock/index_tree_rw_lock", "rwlock/lock_latch", "rwlock/trx_rseg_latch", "rwlock/fil_space_latch",
         "mutex/buf_pool_mutex", "mutex/log_sys_mutex", "sxlock/dict_operation_lock", "mutex/purge_sys_pq_mutex"]


def series_names(n_series: int) -> list[str]:
    names = ["client.main.tps", "client.main.qps", "client.main.lat.p95", "client.main.lat.p99",
             "client.main.threads", "server.questions", "server.threads_running", "host.local.cpu.user",
             "host.local.cpu.system", "host.local.cpu.iowait", "proc.local.server.cpu", "proc.local.client.cpu"]
    names += [f"waits.{w}.ms" for w in WAITS] + [f"waits.{w}.count" for w in WAITS] + ["waits.other.ms",
                                                                                       "table.total.mb"]
    k = 0
    while len(names) < n_series:
        names.append(f"server.counter_{k:03d}")
        k += 1
    return names[:n_series]


def record(store: Store, seconds: int, n_series: int = 200, t0: float = 1_790_000_000.0, steps: int = 2,
           knob_at: float | None = None, tps: float = 10_000.0, seed: int = 0, verdict: bool = False,
           busy: Mapping[int, Mapping[str, Any]] | None = None) -> int:
    """Write a session of `seconds` at 1 Hz over `n_series` series in `steps` equal steps, with a knob
    flip (innodb_flush_log_at_trx_commit 1 -> 2, +15 % TPS after it) at `knob_at` seconds; returns its ID.
    With `verdict`, the flip's A/B verdict event too, computed from the stored series as a run does; `busy`: step
    number -> its busy seconds as a run's summary keeps them (`_busy`, core/busy.py)."""
    rng = np.random.default_rng(seed)
    names = series_names(n_series)
    knob_at = seconds * 0.75 if knob_at is None else knob_at
    x = np.arange(seconds, dtype=np.float64)
    level = tps * np.where(x >= knob_at, 1.15, 1.0)
    step_len = seconds / steps
    threads = 4 * 4 ** np.floor(x / step_len)
    cols: dict[str, np.ndarray] = {}
    for i, name in enumerate(names):
        if name.endswith((".tps", ".qps")) or name == "server.questions":
            v = level * rng.normal(1, 0.03, seconds)
        elif ".lat." in name:
            v = threads / level * 1000 * (1.8 if name.endswith("p95") else 2.6) * rng.normal(1, 0.05, seconds)
        elif name.endswith(".threads"):
            v = threads
        elif name.startswith("waits."):
            v = np.abs(rng.normal(40.0 / (1 + i % 9), 5, seconds)) * threads / 4
        elif name.startswith(("host.", "proc.")):
            v = np.clip(rng.normal(35, 4, seconds), 0, 100)
        elif name.startswith("table."):  # the data set on disk, growing
            v = 250.0 + 0.02 * x
        else:
            v = np.abs(rng.normal(1000.0 * (1 + i % 17), 50 + i, seconds))
        cols[name] = v
    matrix = np.column_stack([cols[n] for n in names])
    jitter = rng.uniform(-0.003, 0.003, seconds)
    w = store.new_session(target="sandbox", transport="socket", engine="builtin", workload="oltp_point_select",
                          config={"groups": [{"name": "main", "workload": "oltp_point_select", "options": {},
                                              "schedule": sorted({int(t) for t in threads})}],
                                  "step_seconds": int(step_len)}, flavor="mariadb", version="10.11.19",
                          started_at=t0)
    w.snapshot_variables({"innodb_flush_log_at_trx_commit": "1", "innodb_buffer_pool_size": "134217728"})
    step_ids = []
    for k in range(steps):
        start = t0 + k * step_len
        sid = w.start_step(k, start, start, {"threads": {"main": int(threads[int(k * step_len)])}, "config": 0,
                                             "step": k, "knobs": {}})
        w.add_event(Event(start, "step_start", f"step {k + 1}: main={int(threads[int(k * step_len)])}"))
        step_ids.append(sid)
    w.add_event(Event(t0 + knob_at, "knob", "innodb_flush_log_at_trx_commit = 2",
                      {"name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2"}))
    for s in range(seconds):
        w.add_samples(t0 + s + 1 + jitter[s], dict(zip(names, matrix[s].tolist(), strict=True)))
        if s % 60 == 59:
            w.flush()
        if s % 3600 == 3599:
            w.compact()
    w.flush()
    if verdict:
        k = min(int(knob_at // step_len), steps - 1)
        stored = {n: (d.t, d.v) for n, d in store.series(w.id, verdict_series("main", names)).items()}
        w.add_event(verdict_event(stored, "main", {"name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2"},
                                  t0 + k * step_len - 0.5, t0 + knob_at, t0 + (k + 1) * step_len, 0,
                                  t0 + (k + 1) * step_len))
    summary_steps = []
    for k, sid in enumerate(step_ids):
        lo, hi = int(k * step_len), int((k + 1) * step_len)
        step = {"step": k + 1, "config": 0, "group": "main", "threads": int(threads[lo]),
                "tps": float(cols["client.main.tps"][lo:hi].mean()),
                "qps": float(cols["client.main.qps"][lo:hi].mean()),
                "lat_p95_ms": float(cols["client.main.lat.p95"][lo:hi].mean()),
                "lat_p99_ms": float(cols["client.main.lat.p99"][lo:hi].mean()), "cv": 0.03}
        w.end_step(sid, t0 + hi, {"main": step, **({"_busy": dict(busy[k + 1])} if busy and k + 1 in busy else {})})
        summary_steps.append(step)
    w.finish("completed", {"steps": summary_steps}, ended_at=t0 + seconds)
    store.update_session(w.id, name=f"synthetic {seconds} s x {n_series} series", tags="synthetic")
    return w.id
