"""Probe parsing and arithmetic, and the MySQL 8.0 branches against manual-shaped fixtures."""

import time

import numpy as np
import pytest

from tunebench.core.errors import ConfigError
from tunebench.core.probe import ProbeUnavailable, RateTracker, ServerClock, TopN, check_interval, parse_probe_list
from tunebench.hosts.telemetry import (
    HostCpuProbe,
    ProcessCpuProbe,
    cpu_percentages,
    parse_pid_stat,
    parse_proc_stat,
)
from tunebench.mysql.connect import ServerInfo
from tunebench.mysql.probes import (
    MetricsColumns,
    MetricsProbe,
    StatusProbe,
    WaitsProbe,
    mutex_instrument,
    parse_mutex_rows,
    parse_rwlock_metrics,
    parse_status,
    pfs_instrument,
    status_reading,
)
from unit.fake_mysql import FakeMySQL80, load_rows

PROC_STAT_1 = """cpu  1000 10 500 8000 100 5 5 20 0 0
cpu0 500 5 250 4000 50 3 2 10 0 0
cpu1 500 5 250 4000 50 2 3 10 0 0
intr 12345
ctxt 100000
btime 1700000000
processes 4000
procs_running 3
procs_blocked 1
"""
PROC_STAT_2 = """cpu  1100 10 560 8020 110 5 5 30 0 0
cpu0 550 5 280 4010 55 3 2 15 0 0
cpu1 550 5 280 4010 55 2 3 15 0 0
ctxt 101000
procs_running 5
procs_blocked 0
"""


def mysql_info(pfs: bool = False) -> ServerInfo:
    return ServerInfo("mysql", "8.0.36", "8.0.36", "MySQL Community Server - GPL", pfs, {})


# ---- /proc ---------------------------------------------------------------------------------------
def test_proc_stat_percentages_add_up_and_fold_nice_irq():
    a, b = parse_proc_stat(PROC_STAT_1), parse_proc_stat(PROC_STAT_2)
    assert a.ncpu == 2 and a.procs_running == 3 and a.ctxt == 100000
    pct = cpu_percentages(a, b)
    # deltas: user 100, system 60, idle 20, iowait 10, steal 10 -> total 200
    assert pct == {"user": 50.0, "system": 30.0, "iowait": 5.0, "steal": 5.0, "idle": 10.0}
    assert cpu_percentages(b, b) is None


def test_pid_stat_with_spaces_and_parentheses_in_the_name():
    text = "4242 (my (odd) proc) S 1 4242 4242 0 -1 4194560 500 0 0 0 1234 567 0 0 20 0 9 0 777 1000 2560 " \
           "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
    p = parse_pid_stat(text)
    assert (p.pid, p.comm, p.utime, p.stime, p.threads, p.starttime, p.rss_pages) == \
        (4242, "my (odd) proc", 1234, 567, 9, 777, 2560)


def _pid_stat(pid: int, utime: int, stime: int, start: int) -> str:
    return f"{pid} (proc) S 1 1 1 0 -1 0 0 0 0 0 {utime} {stime} 0 0 20 0 4 0 {start} 1000 100 0"


def test_process_cpu_counts_new_processes_from_their_start_and_detects_pid_reuse():
    files = {"/proc/uptime": "100.00 150.00", "/proc/10/stat": _pid_stat(10, 1000, 500, 50)}
    pids = {"client": [10]}
    probe = ProcessCpuProbe({"client": lambda: pids["client"]}, reader=files.__getitem__, ncpu=2, hz=100)
    probe.open()
    assert probe.read().gauges == {}  # the first sample is the base
    # 1 s later: pid 10 used 50+30 ticks; pid 11 started 0.5 s ago and used 20 ticks
    files.update({"/proc/uptime": "101.00 150.00", "/proc/10/stat": _pid_stat(10, 1050, 530, 50),
                  "/proc/11/stat": _pid_stat(11, 15, 5, 10050)})
    pids["client"] = [10, 11]
    g = probe.read().gauges
    assert g["proc.local.client.cpu"] == pytest.approx(100 * (80 + 20) / (100 * 2))
    assert g["proc.local.client.cpu.user"] == pytest.approx(100 * 65 / 200)
    assert g["proc.local.client.procs"] == 2
    # pid 10 exits and its number is reused by a process started after the last sample
    files.update({"/proc/uptime": "102.00 150.00", "/proc/10/stat": _pid_stat(10, 10, 10, 10150),
                  "/proc/11/stat": _pid_stat(11, 35, 5, 10050)})
    g = probe.read().gauges
    assert g["proc.local.client.cpu"] == pytest.approx(100 * (20 + 20) / 200)


def test_process_cpu_says_what_the_machine_spent_outside_every_role():
    """Other processes, the kernel's threads and steal: the share of the machine a measurement did not get."""
    stat = "cpu {u} 0 {s} {i} 0 0 0 {st} 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n"
    files = {"/proc/uptime": "100.00 150.00", "/proc/10/stat": _pid_stat(10, 1000, 500, 50),
             "/proc/20/stat": _pid_stat(20, 300, 100, 60), "/proc/stat": stat.format(u=5000, s=2000, i=9000, st=0)}
    probe = ProcessCpuProbe({"server": lambda: [20], "client": lambda: [10]}, reader=files.__getitem__, ncpu=2,
                            hz=100)
    probe.open()
    assert "proc.local.other.cpu" not in probe.read().gauges  # the first sample is the base
    # 1 s on 2 CPUs = 200 ticks: busy 150 (user 100, system 40, steal 10), idle 50; the roles used 100 + 30
    files.update({"/proc/uptime": "101.00 150.00", "/proc/10/stat": _pid_stat(10, 1080, 520, 50),
                  "/proc/20/stat": _pid_stat(20, 320, 110, 60), "/proc/stat": stat.format(u=5100, s=2040, i=9050,
                                                                                            st=10)})
    g = probe.read().gauges
    assert g["proc.local.client.cpu"] == pytest.approx(50.0) and g["proc.local.server.cpu"] == pytest.approx(15.0)
    assert g["proc.local.other.cpu"] == pytest.approx(100 * (150 - 130) / 200)


DISKSTATS = ("   8       0 sda 100 0 2000 50 200 0 4000 80 0 120 130 0 0 0 0\n"
             "   8       1 sda1 90 0 1800 40 190 0 3900 70 0 110 120 0 0 0 0\n"
             "   7       0 loop0 1 0 2 0 0 0 0 0 0 0 0\n")


def test_host_cpu_probe_first_sample_is_a_base():
    texts = {"/proc/stat": iter([PROC_STAT_1, PROC_STAT_1, PROC_STAT_2])}
    probe = HostCpuProbe("db1", reader=lambda p: next(texts[p]) if p in texts else DISKSTATS)
    assert "2 CPUs" in probe.open()
    assert "host.db1.cpu.user" not in probe.read().gauges
    r = probe.read()
    g = r.gauges
    assert g["host.db1.cpu.user"] == 50.0 and g["host.db1.cpu.busy"] == 85.0
    assert g["host.db1.procs_running"] == 5
    # whole disks only (not sda1, not loop0): IOPS and MB/s counters, % busy per disk
    assert r.counters["host.db1.disk.reads"] == 100 and r.counters["host.db1.disk.writes"] == 200
    assert r.counters["host.db1.disk.write_mb"] == 4000 * 512 / 1e6 and r.counters["host.db1.disk.sda.util"] == 12.0
    assert "host.db1.disk.sda1.util" not in r.counters


# ---- framework arithmetic ---------------------------------------------------------------------
def test_rates_skip_counter_resets():
    rt = RateTracker()
    assert rt.rates(10.0, {"q": 100}) == {}
    assert rt.rates(10.5, {"q": 600}) == {"q": 1000.0}
    assert rt.rates(11.5, {"q": 50}) == {}  # server restarted
    assert rt.rates(12.5, {"q": 150}) == {"q": 100.0}


def test_topn_keeps_a_stable_capped_set():
    top = TopN(2)
    assert top.update({"a": 5, "b": 3, "c": 1}) == ["a", "b"]
    assert top.update({"a": 0, "b": 0, "c": 9}) == ["a", "b", "c"]
    top.update({"d": 9, "e": 8})
    assert top.tracked == ["a", "b", "c", "d"]  # capped at 2n


def test_probe_list_and_interval_validation():
    assert parse_probe_list(None) is None and parse_probe_list("all") is None
    assert parse_probe_list("none") == ()
    assert parse_probe_list("status,cpu,status") == ("status", "cpu")
    with pytest.raises(ConfigError, match="unknown probe 'mutex'"):
        parse_probe_list("status,mutex")
    assert check_interval(0.25) == 0.25
    with pytest.raises(ConfigError):
        check_interval(0.1)


def test_waits_other_and_total_are_per_second_sums():
    probe = WaitsProbe(lambda: None, mysql_info(), top=1)
    probe.source = "pfs"
    base = {"mutex/a": {"count": 0.0, "ms": 0.0}, "mutex/b": {"count": 0.0, "ms": 0.0}}
    assert probe.reading(0.0, base).rates == {}
    r = probe.reading(2.0, {"mutex/a": {"count": 100.0, "ms": 8.0}, "mutex/b": {"count": 40.0, "ms": 2.0}})
    assert r.rates["waits.mutex/a.count"] == 50.0 and r.rates["waits.mutex/a.ms"] == 4.0
    assert "waits.mutex/b.count" not in r.rates
    assert r.rates["waits.other.count"] == 20.0 and r.rates["waits.other.ms"] == 1.0
    assert r.rates["waits.total.count"] == 70.0 and r.rates["waits.total.ms"] == 5.0


def test_instrument_names():
    assert pfs_instrument("wait/synch/mutex/innodb/log_sys_mutex") == "mutex/log_sys_mutex"
    assert pfs_instrument("wait/synch/sxlock/innodb/index_tree_rw_lock") == "sxlock/index_tree_rw_lock"
    assert mutex_instrument("rwlock: dict0dict.cc:2782") == "rwlock/dict0dict_cc:2782"
    assert mutex_instrument("sum rwlock: buf0buf.cc:1460") == "rwlock/buf0buf_cc:1460"
    assert mutex_instrument("LOG_SYS") == "mutex/LOG_SYS"


# ---- status --------------------------------------------------------------------------------------
def test_status_mariadb_history_and_checkpoint_from_status_vars():
    status = parse_status([("Questions", "10"), ("Threads_running", "3"), ("Innodb_history_list_length", "77"),
                           ("Innodb_checkpoint_age", "4096"), ("Binlog_snapshot_file", "")])
    r = status_reading(status)
    assert r.counters == {"server.questions": 10.0}
    assert r.gauges == {"server.threads_running": 3.0, "server.history_list_length": 77.0,
                        "server.checkpoint_age": 4096.0}


def test_status_mysql_8030_redo_lsns_and_history_from_metrics():
    fake = FakeMySQL80()
    probe = StatusProbe(fake.connect, mysql_info())
    desc = probe.open()
    assert "trx_rseg_history_len" in desc  # fallback for the history length only
    r = probe.read()
    assert r.gauges["server.checkpoint_age"] == 82330112 - 80232960
    assert r.gauges["server.history_list_length"] == 1187
    assert r.counters["server.innodb_os_log_fsyncs"] == 120


def test_status_old_mysql_falls_back_to_metrics_checkpoint_age():
    status = {"Questions": 1.0}
    r = status_reading(status, {"log_lsn_current": 5000.0, "log_lsn_last_checkpoint": 1000.0,
                                "log_lsn_checkpoint_age": 0.0})
    assert r.gauges["server.checkpoint_age"] == 4000.0


def test_status_without_process_privilege_still_works():
    fake = FakeMySQL80(process_privilege=False)
    probe = StatusProbe(fake.connect, mysql_info())
    assert "history list length/checkpoint age unavailable (the account lacks the PROCESS privilege)" in probe.open()
    assert probe.read().gauges["server.checkpoint_age"] > 0


def test_status_is_read_between_two_readings_of_the_servers_clock_in_one_round_trip():
    fake = FakeMySQL80()
    probe = StatusProbe(fake.connect, mysql_info())
    assert probe.open().startswith("SHOW GLOBAL STATUS between readings of the server's clock, ")
    fake.log.clear()
    sent = time.time()
    r = probe.read()
    assert sent <= r.at <= time.time()
    # the status and the history list length (INNODB_METRICS on 8.0) in the same trip, between the two clocks
    clock = "SELECT UNIX_TIMESTAMP(SYSDATE(6))"
    assert fake.log[0] == clock and fake.log[1] == "SHOW GLOBAL STATUS" and fake.log[-1] == clock
    assert len(fake.log) == 4 and "INNODB_METRICS" in fake.log[2]
    assert r.counters == status_reading(parse_status(fake.status.items())).counters


def test_a_server_that_refuses_multi_statements_is_read_one_by_one_at_the_reads_midpoint():
    """A proxy may refuse several statements in one packet: the status is read as before, said so, no `at`."""
    fake = FakeMySQL80()
    fake.multi = False
    probe = StatusProbe(fake.connect, mysql_info())
    assert probe.open().startswith("SHOW GLOBAL STATUS, ")
    r = probe.read()
    assert r.at is None and r.counters["server.com_commit"] >= 0
    assert fake.log[-2] == "SHOW GLOBAL STATUS" and "INNODB_METRICS" in fake.log[-1]
    assert not any("SYSDATE" in sql for sql in fake.log)


def test_a_servers_clock_maps_reads_to_their_instant_when_the_way_there_or_back_waits():
    """A server 7.3 s ahead; each request and each answer waits 0-400 ms for CPU on the way half the time (a busy
    machine), the server takes 1-30 ms: the read's midpoint is off by ~100 ms on average, the server's instant mapped
    through the offset of the read with the least time outside the server by a few ms at most."""
    rng = np.random.default_rng(5)
    clock = ServerClock()
    mid_err, mapped_err = [], []
    for i in range(200):
        sent = 1000.0 + i
        there, back = rng.uniform(0, 0.4, size=2) * (rng.random(2) < 0.5)
        took = rng.uniform(0.001, 0.03)
        true = sent + there + took / 2  # the middle of the server's work
        answered = sent + there + took + back
        t = clock.instant(true - took / 2 + 7.3, true + took / 2 + 7.3, sent, answered)
        assert sent <= t <= answered
        if i >= 20:
            mid_err.append(abs((sent + answered) / 2 - true))
            mapped_err.append(abs(t - true))
    assert np.mean(mid_err) > 0.05 and max(mapped_err) < 0.005, (np.mean(mid_err), max(mapped_err))


def test_a_server_on_this_machine_reads_this_clock_however_every_read_waits():
    """The suite's busy machine: every read of a short run waited 100-400 ms one way (no quick read to take the offset
    from), and the estimated offset put the status probe's instants ~0.2 s off: its Questions 2 % off the engine's
    count of the same seconds. A server on this machine reads the same clock: its instant is its own."""
    rng = np.random.default_rng(7)
    guessed, same = ServerClock(), ServerClock(same_clock=True)
    guessed_err, same_err = [], []
    for i in range(15):
        sent = 1000.0 + i
        there, back = (rng.uniform(0.1, 0.4), 0.0) if i % 2 else (0.0, rng.uniform(0.1, 0.4))
        took = rng.uniform(0.001, 0.03)
        s1 = sent + there
        answered = s1 + took + back
        true = s1 + took / 2
        guessed_err.append(abs(guessed.instant(s1, s1 + took, sent, answered) - true))
        same_err.append(abs(same.instant(s1, s1 + took, sent, answered) - true))
    assert max(same_err) < 1e-9 and np.mean(guessed_err) > 0.03, (max(same_err), np.mean(guessed_err))


def test_a_servers_instant_is_kept_inside_the_read():
    """A wrong offset (the server's clock stepped) never puts a read's instant outside its own round trip."""
    clock = ServerClock()
    assert clock.instant(5000.1, 5000.1, 100.0, 100.2) == pytest.approx(100.1)  # 4,900 s ahead
    assert clock.instant(5010.1, 5010.1, 101.0, 101.2) == pytest.approx(101.2)  # its clock jumped 9 s ahead
    assert clock.instant(4990.0, 4990.0, 102.0, 102.5) == pytest.approx(102.0)  # and 21 s back


# ---- MySQL waits branches --------------------------------------------------------------------------
def test_metrics_columns_by_flavor():
    assert MetricsColumns.detect(["NAME", "COUNT", "STATUS"]).enabled_col == "STATUS"
    assert MetricsColumns.detect(["NAME", "COUNT", "ENABLED"]).enabled_col == "ENABLED"
    assert MetricsColumns.is_enabled("enabled") and MetricsColumns.is_enabled(1)
    assert not MetricsColumns.is_enabled("disabled") and not MetricsColumns.is_enabled("0")
    with pytest.raises(ProbeUnavailable):
        MetricsColumns.detect(["NAME", "COUNT"])


def test_parse_show_engine_innodb_mutex_fixture():
    parsed = parse_mutex_rows(tuple(r) for r in load_rows("show_engine_innodb_mutex_8.0.txt"))
    assert parsed["mutex/LOG_SYS"] == {"count": 44.0, "spins": 0.0}
    assert parsed["rwlock/buf0buf_cc:1460"] == {"count": 2.0}
    assert len(parsed) == 7


def test_parse_rwlock_metrics_fixture():
    rows = [(r[0], r[2]) for r in load_rows("innodb_metrics_8.0.txt")]
    parsed = parse_rwlock_metrics(rows)
    assert parsed == {
        "rwlock_s": {"count": 40.0, "spin_waits": 1052.0, "spin_rounds": 9821.0},
        "rwlock_x": {"count": 17.0, "spin_waits": 311.0, "spin_rounds": 3320.0},
        "rwlock_sx": {"count": 1.0, "spin_waits": 12.0, "spin_rounds": 201.0},
    }


def test_mysql_without_pfs_uses_innodb_metrics_rwlocks():
    fake = FakeMySQL80()
    fake.clock = lambda: 1000.0
    probe = WaitsProbe(fake.connect, mysql_info(pfs=False))
    assert probe.open().startswith("INNODB_METRICS innodb_rwlock")
    fake.clock = lambda: 1001.0  # the base was read by open(); one second later on the server's clock
    fake.metrics["innodb_rwlock_s_spin_waits"]["count"] += 500
    r = probe.read()
    assert r.rates["waits.rwlock_s.spin_waits"] == 500.0
    probe.close()
    assert not probe.pending_restore()


def test_mysql_show_engine_mutex_enables_latch_monitor_and_puts_it_back():
    fake = FakeMySQL80()
    for name in list(fake.metrics):
        if name.startswith("innodb_rwlock"):
            del fake.metrics[name]  # a build without them: the third source is used
    before = fake.monitor_state()
    fake.clock = lambda: 1000.0
    probe = WaitsProbe(fake.connect, mysql_info(pfs=False))
    assert "SHOW ENGINE INNODB MUTEX ('latch' monitor enabled" in probe.open()
    assert fake.metrics["latch"]["status"] == "enabled"
    fake.mutex_rows = load_rows("show_engine_innodb_mutex_8.0_later.txt")
    fake.clock = lambda: 1001.0
    r = probe.read()
    assert r.rates["waits.mutex/LOG_SYS.count"] == 100.0 and r.rates["waits.mutex/LOG_SYS.spins"] == 10.0
    assert r.rates["waits.total.count"] == 100 + 1 + 3 + 20
    probe.close()
    assert fake.monitor_state() == before


def test_mysql_waits_unavailable_without_process_is_one_clear_reason():
    fake = FakeMySQL80(process_privilege=False)
    probe = WaitsProbe(fake.connect, mysql_info(pfs=False))
    with pytest.raises(ProbeUnavailable) as exc:
        probe.open()
    msg = str(exc.value)
    assert msg.startswith("performance_schema is OFF") and "lacks the PROCESS privilege" in msg


def test_metrics_probe_enables_disabled_counters_and_restores_them():
    fake = FakeMySQL80()
    before = fake.monitor_state()
    probe = MetricsProbe(fake.connect, mysql_info())
    desc = probe.open()
    assert "STATUS column" in desc and "enabled 2 for the session" in desc
    r = probe.read()
    assert r.gauges["innodb.trx_rseg_history_len"] == 1187 and r.counters["innodb.lock_deadlocks"] == 3
    probe.close()
    assert fake.monitor_state() == before


def test_metrics_probe_without_super_records_what_is_enabled():
    fake = FakeMySQL80(super_privilege=False)
    before = fake.monitor_state()
    probe = MetricsProbe(fake.connect, mysql_info())
    desc = probe.open()
    assert "left disabled (no privilege)" in desc
    assert "innodb.trx_rw_commits" not in probe.read().counters
    probe.close()
    assert fake.monitor_state() == before


def test_table_sizes_from_the_tablespaces_of_the_run_schema():
    """MySQL 8.0 has INNODB_TABLESPACES (MariaDB and 5.7: INNODB_SYS_TABLESPACES); partitions add up."""
    from types import SimpleNamespace

    from tunebench.mysql.probes.tables import TablesProbe

    probe = TablesProbe(FakeMySQL80().connect, SimpleNamespace(flavor="mysql"), "tb")
    assert probe.open() == "information_schema.INNODB_TABLESPACES: 3 table(s) of schema tb, 109.0 MB"
    r = probe.read()
    assert r.gauges == {"table.purchases_index1.mb": 94.0, "table.purchases_index2.mb": 12.0, "table.t.mb": 3.0,
                        "table.total.mb": 109.0}
    assert not r.counters and not r.rates


def test_rows_read_on_mysql_comes_from_innodb_rows_read():
    """MySQL has no Rows_read: the rows/query efficiency column said n/a on every MySQL session."""
    mysql = status_reading({"Questions": 10.0, "Innodb_rows_read": 200.0})
    assert mysql.counters["server.rows_read"] == 200.0
    mariadb = status_reading({"Questions": 10.0, "Rows_read": 150.0, "Innodb_rows_read": 90.0})
    assert mariadb.counters["server.rows_read"] == 150.0  # MariaDB's own count (all engines) wins


def test_a_reading_whose_instant_is_uncertain_ends_no_rate():
    """A status read a starved server took 1.7 s over, stamped at its middle: the second before it came out 0.15x
    and the one after 3.8x the engine's count. Such a reading is neither a rate nor a base now: the next certain one
    spans both seconds, at the right rate."""
    tracker = RateTracker()
    assert tracker.rates(100.0, {"q": 0.0}) == {}
    assert tracker.rates(101.0, {"q": 1000.0}, uncertainty=0.01) == {"q": 1000.0}
    # really read at 102.0 (2,000), stamped 101.15 with half a 1.7-s span of uncertainty: no rate
    assert tracker.rates(101.15, {"q": 2000.0}, uncertainty=0.85) == {}
    assert tracker.rates(103.0, {"q": 3000.0}, uncertainty=0.01) == {"q": pytest.approx(1000.0)}
