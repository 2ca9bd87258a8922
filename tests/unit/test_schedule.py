"""Issue 31: the open-loop schedule. Latency from the intended start on a simulated server whose service times are
known matches queueing theory; the latency limit skips what is already too late; the backlog is counted and the
warm-up's dropped."""

import numpy as np
import pytest

from tunebench.core.schedule import Schedule


def simulate(sched: Schedule, servers: int, service_ns, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A pool of `servers` connections on a virtual clock: each, when free, claims the next due transaction,
    starts it at max(free, due) and is busy for its service time. (latency from the intended start, service)."""
    free = [0] * servers
    lat, svc = np.empty(n), np.empty(n)
    for i in range(n):
        k = min(range(servers), key=free.__getitem__)
        c = sched.claim(free[k])
        start = max(free[k], c.due_ns)
        d = service_ns(i)
        free[k] = start + d
        lat[i], svc[i] = free[k] - c.due_ns, d
    return lat, svc


def test_md1_mean_latency_is_the_pollaczek_khinchine_figure():
    """M/D/1 (Poisson arrivals, 1 ms service, one connection) at utilisation 0.8: mean wait in queue
    Wq = rho / (2 mu (1 - rho)) = 2 ms, so the mean latency from the intended start is 3 ms; the service time is
    1 ms throughout. 200,000 transactions: the standard error of the mean is ~0.3 %, the tolerance 3 %."""
    sched = Schedule(800.0, "poisson", seed=7)
    lat, svc = simulate(sched, 1, lambda _i: 1_000_000, 200_000)
    assert np.mean(lat) / 1e6 == pytest.approx(3.0, rel=0.03)
    assert np.all(svc == 1_000_000)
    # the M/D/1 queue is empty at an arrival with probability 1 - rho: that share waits not at all
    assert np.mean(lat == 1_000_000) == pytest.approx(0.2, abs=0.01)


def test_mm1_latency_is_exponential():
    """M/M/1 (exponential service, mean 1 ms) at rho 0.5: the time in system is exponential with mean
    1 / (mu - lambda) = 2 ms, so its p99 is 2 ms x ln(100) = 9.2 ms."""
    rng = np.random.default_rng(3)
    service = rng.exponential(1e6, 200_000).astype(np.int64)
    lat, _svc = simulate(Schedule(500.0, "poisson", seed=11), 1, lambda i: int(service[i]), 200_000)
    assert np.mean(lat) / 1e6 == pytest.approx(2.0, rel=0.03)
    assert np.percentile(lat, 99) / 1e6 == pytest.approx(2.0 * np.log(100), rel=0.06)


def test_fixed_arrivals_are_evenly_spaced_and_the_rate_is_kept():
    sched = Schedule(1000.0, "fixed", start_ns=5_000_000_000)
    due = [sched.claim(0).due_ns for _ in range(1000)]
    assert due[0] == 5_000_000_000 and np.all(np.diff(due) == 1_000_000)
    poisson = Schedule(2000.0, "poisson", seed=1)
    times = np.array([poisson.claim(0).due_ns for _ in range(100_000)])
    assert 100_000 / (times[-1] / 1e9) == pytest.approx(2000.0, rel=0.01)


def test_a_stall_builds_a_backlog_and_the_limit_skips_what_is_too_late():
    """A server frozen for 2 s at 1,000/s: 2,000 transactions due and not started, the oldest 2 s late; with a
    100 ms latency limit the free connection skips those already later than it and counts them."""
    sched = Schedule(1000.0, "fixed", start_ns=0, latency_limit_ns=100_000_000)
    assert sched.backlog(0) == (1, 0.0)
    n, lag = sched.backlog(2_000_000_000)
    assert n == 2001 and lag == pytest.approx(2000.0)
    c = sched.claim(2_000_000_000)
    assert c.skipped == 1900 and 2_000_000_000 - c.due_ns <= 100_000_000
    assert sched.skipped == 1900


def test_the_warm_up_backlog_is_dropped_not_carried_over():
    sched = Schedule(1000.0, "fixed", start_ns=0)
    for _ in range(10):
        sched.claim(0)
    assert sched.reset(1_000_000_000) == 991  # due by then, never started
    assert sched.backlog(1_000_000_000) == (0, 0.0)
    assert sched.claim(1_000_000_000).due_ns > 1_000_000_000


def test_a_frozen_server_at_a_high_rate_does_not_draw_without_bound():
    import tunebench.core.schedule as schedule

    sched = Schedule(1e6, "fixed", start_ns=0)
    old = schedule.BACKLOG_LIMIT
    schedule.BACKLOG_LIMIT = 50_000
    try:
        n, _lag = sched.backlog(10_000_000_000)  # 10 s frozen at a million a second
    finally:
        schedule.BACKLOG_LIMIT = old
    assert sched.overflow and 50_000 <= n < 200_000


def test_the_cli_table_and_the_report_give_an_open_loop_step_its_own_figures():
    from tunebench.cli.output import steps_table
    from tunebench.core.results import open_loop_report

    step = {"step": 1, "group": "main", "threads": 8, "tps": 1540.0, "qps": 1540.0, "lat_p95_ms": 900.0,
            "lat_p99_ms": 1500.0, "cv": 0.1, "errors": 0, "seconds": 10, "rate": 2000.0, "lat_p50_ms": 40.0,
            "lat_max_ms": 2100.0, "service_p50_ms": 0.2, "service_p95_ms": 0.5, "service_p99_ms": 1.0,
            "late": 12, "skipped": 300}
    table = steps_table([step])
    assert "queue wait included" in table
    line = table.splitlines()[-1]
    assert line.split()[:4] == ["1", "main", "2,000", "1,540"] and line.endswith("RATE NOT SERVED")
    report = "\n".join(open_loop_report([step]))
    assert ("| 1 | main | 2,000 | 1,540 (not served) | 40.00 | 900.00 | 1,500.00 | 2,100.00 | 0.20 | 0.50 | 1.00 | "
            "12 | 300 |") in report
    assert open_loop_report([{k: v for k, v in step.items() if k != "rate"}]) == []


def test_the_backlog_is_what_was_due_and_not_started_at_the_edge_however_late_it_is_read():
    """A reporter that woke after a catch-up read the backlog then (0) and under-counted what came due before the
    next window (a clean clone: 1,111 due in 7 s of a 150/s rate over client hosts, 1,050 asked). The schedule
    keeps the backlog as of each second's edge at the first claim after it (the compiled loop's queue the same, in
    C: tests/integration/test_open_loop.py)."""
    from tunebench.core.schedule import SECOND_NS

    sched = Schedule(100.0, "fixed", start_ns=0)
    sched.grid(0, 0)
    for _ in range(51):  # the first half second's 51 (due at 0, 0.01, ..., 0.50 s) claimed on time
        sched.claim(int(0.5 * SECOND_NS))
    # the machine stalls: nothing claimed until 1.4 s, then the 90 due by then are claimed at once
    for _ in range(90):
        sched.claim(int(1.4 * SECOND_NS))
    assert sched.backlog(int(1.4 * SECOND_NS)) == (0, 0.0)  # what a late reader saw
    n, lag = sched.backlog(int(1.4 * SECOND_NS), SECOND_NS)  # as of the edge at 1 s
    assert n == 50 and lag == pytest.approx(490.0)  # due at 0.51-1.00 s, the oldest 490 ms late
    assert sched.backlog(int(2.5 * SECOND_NS), 2 * SECOND_NS)[0] == 60  # no claim since 1.4 s: as now, at 2 s
