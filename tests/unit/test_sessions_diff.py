"""`tunebench sessions diff A B` (issue 18 part 3) on recorded sessions: waits per transaction, counters,
efficiency, side by side; bad input is one line."""

import json

import numpy as np
import pytest
from tests.conftest import run_cli

from tunebench.core.diff import STATEMENTS, Side, diff, ratio, text
from tunebench.store.repo import Store
from tunebench.store.synthetic import record


def side(label, tps, lock_ms, fsyncs):
    t = np.arange(10) + 101.0
    series = {"client.main.tps": (t, np.full(10, tps)), "waits.rwlock/lock_latch.ms": (t, np.full(10, lock_ms)),
              "waits.rwlock/lock_latch.count": (t, np.full(10, lock_ms / 2)),
              "server.innodb_data_fsyncs": (t, np.full(10, fsyncs)), "server.connections": (t, np.zeros(10))}
    kinds = dict.fromkeys(series, "rate")
    return Side(label, series, kinds, 100.0, 110.0, "main", {})


def test_waits_and_counters_per_transaction():
    a, b = side("A", 1000.0, 800.0, 1000.0), side("B", 2000.0, 200.0, 10.0)
    out = diff(a, b)
    waits = {r.name: (r.a, r.b) for r in out["waits per transaction"]}
    assert waits["lock_latch (rwlock) µs"] == pytest.approx((800.0, 100.0))  # 0.8 ms -> 0.1 ms per transaction
    assert next(iter(waits)) == "lock_latch (rwlock) µs"
    counters = {r.name: (r.a, r.b) for r in out["server counters per transaction"]}
    assert counters == {"server.innodb_data_fsyncs": pytest.approx((1.0, 0.005))}  # a zero counter is not listed
    eff = {r.name: (r.a, r.b) for r in out["efficiency"]}
    assert eff["InnoDB fsync/commit"] == pytest.approx((1.0, 0.005))  # no Com_commit: a transaction is a commit


def test_the_cli_diffs_two_sessions(tmp_path):
    store = Store(tmp_path / "sessions.sqlite")
    first = record(store, 60, n_series=40, seed=1)
    second = record(store, 60, n_series=40, seed=2, tps=15_000.0)
    store.close()
    env = {"TUNEBENCH_HOME": str(tmp_path)}
    out = run_cli("sessions", "diff", str(first), str(second), "--step", "2", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"A: session {first} step 2 (oltp_point_select, main=16)\n"
                                 f"B: session {second} step 2 (oltp_point_select, main=16)")
    assert "waits per transaction:" in out.stdout and "efficiency:" in out.stdout
    data = json.loads(run_cli("sessions", "diff", str(first), str(second), "--json", env=env).stdout)
    assert data["waits per transaction"] and data["a"].startswith(f"session {first} step ")
    for args, line in ((["diff", str(first)], "sessions diff A B needs two session IDs"),
                       (["diff", str(first), "x"], "a session ID is a number, not 'x'"),
                       (["diff", str(first), str(second), "--step", "9"],
                        f"session {first} has no finished step 9 (it has 1, 2)")):
        bad = run_cli("sessions", *args, env=env)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr
        assert line in bad.stderr, bad.stderr


def test_the_cli_diff_defaults_to_the_same_threads_on_both_sides(tmp_path):
    """Issue 30 item 7: each session's best step was diffed, 16 threads against 64."""
    from tunebench.core.diff import StepChoice, default_pair

    store = Store(tmp_path / "sessions.sqlite")
    first = record(store, 60, n_series=40, seed=1)  # 4, 16 threads: best 16
    second = record(store, 60, n_series=40, seed=2, steps=3)  # 4, 16, 64: best 64
    store.close()
    env = {"TUNEBENCH_HOME": str(tmp_path)}
    out = run_cli("sessions", "diff", str(first), str(second), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"A: session {first} step 2 (oltp_point_select, main=16)\n"
                                 f"B: session {second} step 2 (oltp_point_select, main=16)")
    same = run_cli("sessions", "diff", str(second), str(second), env=env)  # one session: its best and another
    assert same.returncode == 0 and f"B: session {second} step 3 " in same.stdout, same.stderr
    # a sweep: the baseline configuration's step at the best step's threads
    steps = [StepChoice(1, 4, 0, "a", 100.0), StepChoice(2, 16, 0, "a", 300.0), StepChoice(3, 4, 1, "b", 150.0),
             StepChoice(4, 16, 1, "b", 400.0), StepChoice(5, 16, 2, "c", 350.0)]
    assert default_pair(steps) == (2, 4)
    assert default_pair(steps, baseline=2) == (5, 4)
    assert default_pair(steps[:1]) is None and default_pair(steps, []) is None


def stmt_side(label, select_calls, select_us, texts):
    t = np.arange(10) + 101.0
    series = {"client.main.tps": (t, np.full(10, 100.0)),
              "stmt.aaaaaaaaaaaa.calls": (t, np.full(10, select_calls)),
              "stmt.aaaaaaaaaaaa.lat_us": (t, np.full(10, select_us)),
              "stmt.aaaaaaaaaaaa.rows_examined": (t, np.full(10, 1.0)),
              "stmt.bbbbbbbbbbbb.calls": (t, np.full(10, 100.0)),
              "stmt.bbbbbbbbbbbb.lat_us": (t, np.full(10, 2000.0)),
              "stmt.total.calls": (t, np.full(10, select_calls + 100.0)),
              "stmt.total.lat_us": (t, np.full(10, (select_calls * select_us + 100 * 2000.0) / (select_calls + 100)))}
    kinds = {n: "gauge" if n.endswith(("lat_us", "rows_examined")) else "rate" for n in series}
    return Side(label, series, kinds, 100.0, 110.0, "main", {}, texts)


def test_statements_calls_and_latency_side_by_side_with_their_ratio():
    texts = {"aaaaaaaaaaaa": "SELECT c FROM sbtest1 WHERE id = ?", "bbbbbbbbbbbb": "COMMIT"}
    a, b = stmt_side("A", 1000.0, 50.0, texts), stmt_side("B", 3000.0, 25.0, {})
    out = diff(a, b)
    rows = {r.name: r for r in out[STATEMENTS]}
    # the most time first: COMMIT (200 ms/s on each side) before the select (50 then 75 ms/s)
    assert next(iter(rows)) == "COMMIT calls/s"
    sel = rows["SELECT c FROM sbtest1 WHERE id = ? calls/s"]
    assert (sel.a, sel.b) == pytest.approx((1000.0, 3000.0)) and ratio(sel) == "3.00x"
    lat = rows["SELECT c FROM sbtest1 WHERE id = ? µs/call"]
    assert (lat.a, lat.b) == pytest.approx((50.0, 25.0)) and lat.detail.startswith("SELECT c FROM sbtest1")
    assert (rows["all statements calls/s"].a, rows["all statements calls/s"].b) == pytest.approx((1100.0, 3100.0))
    assert "SELECT c FROM sbtest1 WHERE id = ? calls/s" in text(a, b, out)
    assert "3.00x" in text(a, b, out)
    # sessions without the probe: no statements section
    assert STATEMENTS not in diff(side("A", 1.0, 1.0, 1.0), side("B", 1.0, 1.0, 1.0))
