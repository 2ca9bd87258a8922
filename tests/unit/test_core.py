import numpy as np

from tunebench.core.histogram import LatencyHistogram
from tunebench.core.interval import Interval
from tunebench.core.stats import summarize


def test_histogram_percentiles_and_merge():
    a, b = LatencyHistogram(), LatencyHistogram()
    a.add_ns(np.full(90, 100_000))  # 0.1 ms
    b.add_ns(np.full(10, 10_000_000))  # 10 ms
    a.merge(b)
    assert a.total == 100
    assert 0.099 <= a.percentile_ms(50) <= 0.102
    assert 9.9 <= a.percentile_ms(99) <= 10.0
    assert a.max_ms == 10.0


def test_interval_series_names():
    iv = Interval(t=1.0, group="main", threads=4, tps=10, qps=200, reads=140, writes=40, other=20,
                  lat_ms={"p95": 1.5, "p99": None})
    s = iv.series()
    assert s["client.main.tps"] == 10 and s["client.main.lat.p95"] == 1.5
    assert "client.main.lat.p99" not in s
    assert "client.main.edge_ms" not in s  # an engine that does not know where its second ended says nothing
    late = Interval(t=1.0, group="main", threads=4, tps=10, qps=200, reads=140, writes=40, other=20, edge=1.25)
    assert late.series()["client.main.edge_ms"] == 250.0


def test_summary_cv_and_means():
    ivs = [Interval(t=i, group="g", threads=2, tps=v, qps=2 * v, reads=v, writes=0, other=v,
                    lat_ms={"p95": 1.0}) for i, v in enumerate([90, 100, 110])]
    s = summarize("g", 2, ivs)
    assert s.tps == 100 and s.qps == 200 and s.tps_median == 100
    assert abs(s.cv - np.std([90, 100, 110]) / 100) < 1e-9
    assert s.lat_p95_ms == 1.0


def test_a_step_that_ran_fewer_connections_says_so_in_its_table():
    """The threads column said 4 for a step whose user could open 2 connections: it says 2/4."""
    from tunebench.cli.output import steps_table
    from tunebench.run.records import StepResult
    from tunebench.run.session import steps_json

    ivs = [Interval(float(t), "main", 2, 100.0, 1000.0, 1000.0, 0.0, 0.0) for t in range(5)]
    full = [Interval(float(t), "main", 4, 100.0, 1000.0, 1000.0, 0.0, 0.0) for t in range(5)]
    rows = steps_json([StepResult(0, (summarize("main", 4, ivs),), 0), StepResult(1, (summarize("main", 4, full),), 0)])
    assert rows[0]["threads_running"] == 2 and "threads_running" not in rows[1]
    table = steps_table(rows).splitlines()
    assert table[2].split()[2] == "2/4" and table[3].split()[2] == "4"


def test_a_step_done_before_a_whole_second_shows_its_work_not_zero():
    """iiBench with a small max_rows: 100,000 rows in 0.7 s, and the table said 0.00 TPS, 0 rows/s. The step's
    figures come from the connections' own counts over the time they took, marked and said under the table."""
    from tunebench.cli.output import steps_table

    step = {"step": 1, "group": "main", "threads": 2, "tps": 0.0, "qps": 0.0, "lat_p95_ms": None, "lat_p99_ms": None,
            "cv": None, "errors": 0.0, "seconds": 0, "headline": 0.0, "headline_label": "rows/s",
            "finished": {"transactions": 100, "headline": 100_000.0, "seconds": 0.732}}
    lines = steps_table([step]).splitlines()
    cells = lines[2].split()
    assert cells[3] == f"{100 / 0.732:.2f}" and cells[4] == "-" and cells[5] == f"{100_000 / 0.732:.0f}"
    assert cells[-1] == "0.7†"
    assert lines[3].startswith("† step 1 main: every connection reached its max_rows after 0.7 s")
    # a step measured over whole seconds keeps its own figures, even when it also ended by max_rows
    measured = dict(step, tps=120.0, qps=120.0, headline=120_000.0, seconds=3,
                    finished={"transactions": 400, "headline": 400_000.0, "seconds": 3.4})
    row = steps_table([measured]).splitlines()[2].split()
    assert row[3] == "120.00" and row[5] == "120000" and row[-1] == "3"


def test_a_rate_under_one_per_second_is_never_said_as_zero():
    """A live rate change to 0.01/s read "10,000,000 → 0/s" (issue 43 item 18)."""
    from tunebench.core.display import rate_text

    assert [rate_text(x) for x in (0.01, 0.015, 1.5, 10.25, 100, 1500, 10_000_000)] == \
        ["0.01", "0.015", "1.5", "10.2", "100", "1,500", "10,000,000"]
