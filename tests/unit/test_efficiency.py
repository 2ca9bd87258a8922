"""Per-operation efficiency (core/efficiency.py) on series whose answer is known."""

import numpy as np
import pytest

from tunebench.core.efficiency import step_efficiency


def per_second(values, t0=100.0):
    return np.arange(len(values)) + t0 + 1.0, np.asarray(values, dtype=float)


def test_ratios_of_totals_over_the_same_seconds():
    series = {
        "client.main.tps": per_second([1000.0] * 10),
        "client.main.qps": per_second([20000.0] * 10),
        "proc.local.server.cpu": per_second([150.0] * 10),  # 1.5 CPUs
        "host.local.ctxt": per_second([50000.0] * 10),
        "host.local.disk.write_mb": per_second([4.0] * 10),
        "server.com_commit": per_second([1000.0] * 10),
        "server.innodb_data_fsyncs": per_second([250.0] * 9),  # the probe's last read not stored yet
        "server.innodb_os_log_written": per_second([2_000_000.0] * 10),
        "server.questions": per_second([21000.0] * 10),
        "server.rows_read": per_second([42000.0] * 10),
    }
    eff = step_efficiency(series, "main", 100.0, 110.0)
    assert eff["cpu_us_per_trx"] == pytest.approx(1500.0)
    assert eff["cpu_us_per_query"] == pytest.approx(75.0)
    assert eff["cs_per_trx"] == pytest.approx(50.0)
    assert eff["kb_written_per_trx"] == pytest.approx(4.096)
    assert eff["fsyncs_per_commit"] == pytest.approx(0.25)  # 9 seconds over the same 9, not over 10
    assert eff["redo_bytes_per_commit"] == pytest.approx(2000.0)
    assert eff["rows_read_per_query"] == pytest.approx(2.0)
    assert eff["kb_read_per_trx"] is None  # not recorded: n/a, never a made-up number


def test_a_step_without_client_queries_has_no_efficiency():
    """Issue 29 item 3: no load connection opened, yet "rows/q 174.5" from the probes' own queries."""
    series = {"client.main.tps": per_second([0.0] * 10), "client.main.qps": per_second([0.0] * 10),
              "server.questions": per_second([2.0] * 10), "server.rows_read": per_second([349.0] * 10),
              "proc.local.server.cpu": per_second([3.0] * 10)}
    assert set(step_efficiency(series, "main", 100.0, 110.0).values()) == {None}


def test_client_processes_are_not_the_server():
    series = {"client.main.tps": per_second([100.0] * 5), "proc.local.client.cpu": per_second([90.0] * 5)}
    assert step_efficiency(series, "main", 100.0, 105.0)["cpu_us_per_trx"] is None


def test_the_insert_benchmarks_own_per_row_and_per_query_figures():
    """iiBench reports per row inserted (MariaDB: Handler_write, MySQL: Innodb_rows_inserted) and per query."""
    series = {
        "client.ins.tps": per_second([50.0] * 10),  # 50 INSERTs of 1000 rows a second
        "client.ins.qps": per_second([50.0] * 10),
        "proc.local.server.cpu": per_second([100.0] * 10),  # one CPU
        "host.local.disk.write_mb": per_second([10.0] * 10),
        "host.local.disk.read_mb": per_second([2.0] * 10),
        "server.handler_write": per_second([50_000.0] * 10),
    }
    eff = step_efficiency(series, "ins", 100.0, 110.0)
    assert eff["cpu_us_per_insert"] == pytest.approx(20.0)  # 1 s of CPU over 50,000 rows
    assert eff["kb_written_per_insert"] == pytest.approx(10 * 1024 / 50_000)
    assert eff["kb_read_per_query"] == pytest.approx(2 * 1024 / 50)
    series["server.innodb_rows_inserted"] = per_second([25_000.0] * 10)  # InnoDB's own counter first
    assert step_efficiency(series, "ins", 100.0, 110.0)["cpu_us_per_insert"] == pytest.approx(40.0)
    read_only = {"client.ro.tps": per_second([10.0] * 5), "proc.local.server.cpu": per_second([50.0] * 5)}
    assert step_efficiency(read_only, "ro", 100.0, 105.0)["cpu_us_per_insert"] is None
