"""What else differed between the sides of a comparison (issue 44 item 1): the server configurations normalised,
the performance-relevant differences first, the unfair ones said in one line."""

from tunebench.core.confdiff import compare, same_value, session_sides
from tunebench.core.results import markdown

MYSQL = {"log_bin": "ON", "sync_binlog": "1", "binlog_format": "ROW", "innodb_flush_log_at_trx_commit": "1",
         "innodb_buffer_pool_size": "134217728", "version": "9.7.0", "datadir": "/var/lib/a/", "gtid_mode": "OFF",
         "transaction_isolation": "REPEATABLE-READ", "innodb_redo_log_capacity": "104857600",
         "character_set_server": "utf8mb4", "innodb_doublewrite": "ON", "server_uuid": "x-1", "port": "3307",
         "socket": "/tmp/a.sock", "performance_schema": "ON", "innodb_io_capacity": "200"}
MARIADB = {"log_bin": "OFF", "sync_binlog": "0", "binlog_format": "MIXED", "innodb_flush_log_at_trx_commit": "1",
           "innodb_buffer_pool_size": "134217728", "version": "10.11.14-MariaDB", "datadir": "/var/lib/b/",
           "tx_isolation": "REPEATABLE-READ", "innodb_log_file_size": "100663296", "character_set_server": "utf8mb4",
           "innodb_doublewrite": "1", "server_uuid": "y-2", "port": "3308", "socket": "/tmp/b.sock",
           "performance_schema": "OFF", "innodb_io_capacity": "200"}


def test_the_binary_log_difference_is_unfair_and_said_in_one_line():
    d = compare([("mysql 9.7.0", MYSQL), ("mariadb 10.11.14", MARIADB)])
    assert "binary log: log_bin=ON, sync_binlog=1, binlog_format=ROW on mysql 9.7.0; log_bin=OFF on " \
           "mariadb 10.11.14" in d.warnings
    assert "performance_schema: performance_schema=ON on mysql 9.7.0; performance_schema=OFF on " \
           "mariadb 10.11.14" in d.warnings
    names = [x.name for x in d.differences]
    assert names[:3] == ["log_bin", "sync_binlog", "binlog_format"]  # the binary log first, log_bin leading
    # identities, paths, the version and the same setting under two names are no difference
    for same in ("server_uuid", "port", "socket", "datadir", "version", "transaction_isolation", "innodb_doublewrite",
                 "innodb_io_capacity"):
        assert same not in names, same
    # 100M of redo against 96M: listed, not unfair (a size differs materially beyond a quarter)
    assert "redo log size" in names and not any(w.startswith("redo") for w in d.warnings)
    assert d.unfair and d.to_dict()["unfair"] is True
    assert d.to_dict()["differences"][0] == {"name": "log_bin", "topic": "binary log", "unfair": True,
                                             "values": {"mysql 9.7.0": "ON", "mariadb 10.11.14": "OFF"}}


def test_the_same_settings_are_no_difference_and_a_binlog_off_everywhere_hides_its_settings():
    other = {**MARIADB, "sync_binlog": "1", "binlog_format": "ROW"}  # no side writes a binary log
    d = compare([("a", MARIADB), ("b", other)])
    assert d.differences == [] and d.warnings == []
    assert d.lines() == ["what else differed: nothing in the servers' configurations (a, b)"]


def test_a_buffer_pool_twice_the_size_is_unfair():
    d = compare([("a", MARIADB), ("b", {**MARIADB, "innodb_buffer_pool_size": str(1 << 30)})])
    assert d.warnings == ["buffer pool: innodb_buffer_pool_size=128M on a; innodb_buffer_pool_size=1G on b"]


def test_gtid_on_one_side_only_is_unfair():
    d = compare([("mysql", {**MYSQL, "gtid_mode": "ON"}), ("mariadb", MARIADB)])
    assert any(w == "GTID: gtid_mode=ON on mysql; gtid_mode=(none) on mariadb" for w in d.warnings), d.warnings


def test_values_normalise():
    assert same_value("ON", "1") and same_value("off", "0") and same_value("134217728", "134217728.000000")
    assert same_value("REPEATABLE-READ", "repeatable-read")
    assert not same_value("1", "2") and not same_value("ON", None) and not same_value("O_DIRECT", "fsync")


def test_a_session_without_its_variables_says_it_is_not_known():
    d = compare([("a", MARIADB), ("b", None)])
    assert d.lines() == ["what else differed: not known (b: no server variables recorded)"] and not d.unfair


def test_a_server_axis_session_lists_every_server_and_the_report_says_what_differed():
    events = [{"t": 1.0, "kind": "server", "label": "server mysql 9.7.0",
               "data": {"flavor": "mysql", "version": "9.7.0", "index": 0, "variables": MYSQL}},
              {"t": 9.0, "kind": "server", "label": "server mariadb 10.11.14",
               "data": {"flavor": "mariadb", "version": "10.11.14", "index": 1, "variables": MARIADB}}]
    session = {"id": 7, "workload": "oltp_read_write", "target": "sandbox", "flavor": "mysql", "version": "9.7.0",
               "engine": "builtin", "transport": "socket", "status": "completed", "variables": MYSQL,
               "events": events, "steps": [], "summary": {"steps": []}, "config": {}}
    assert [label for label, _v in session_sides(session)] == ["mysql 9.7.0", "mariadb 10.11.14"]
    text = markdown(session)
    assert "## What else differed between the servers" in text
    assert "> **Unfair:** binary log: log_bin=ON, sync_binlog=1, binlog_format=ROW on mysql 9.7.0; log_bin=OFF on " \
           "mariadb 10.11.14" in text
    # an older session (the first server's variables in the session, the others' not recorded)
    old = {**session, "events": [{**events[1], "data": {"flavor": "mariadb", "version": "10.11.14"}}]}
    assert session_sides(old) == [("mysql 9.7.0", MYSQL), ("mariadb 10.11.14", None)]
    assert "not known" in markdown(old)


def test_the_sessions_list_names_every_server_of_a_server_axis():
    from tunebench.core.sessions import browse_row

    session = {"id": 3, "started_at": 0.0, "ended_at": 60.0, "target": "sandbox", "flavor": "mariadb",
               "version": "10.11.19", "workload": "oltp_read_write", "engine": "builtin", "status": "completed",
               "steps": [], "events": [],
               "summary": {"servers": [{"flavor": "mariadb", "version": "10.11.19"},
                                       {"flavor": "mysql", "version": "9.7.0"},
                                       {"flavor": "mariadb", "version": "11.8.3"}]}}
    row = browse_row(session)
    assert row["server"] == "mariadb 10.11.19 + mysql 9.7.0 + mariadb 11.8.3"
    assert row["knobs"] == "server"  # the varied axis, not "no knob"


def test_alignment_takes_the_references_settings_where_the_server_has_them():
    from tunebench.run.align import alignment

    a = alignment("mariadb-10.11", MARIADB, "mysql-9", MYSQL)
    assert a.knobs == {"log_bin": "ON", "sync_binlog": "1", "binlog_format": "ROW", "innodb_log_file_size": "104857600",
                       "performance_schema": "ON"}
    assert a.cannot == ["gtid_mode=OFF (no such variable on mariadb-10.11)"] or a.cannot == [], a.cannot
    # the other way round: MySQL without its binary log; a reference without one aligns none of its settings
    b = alignment("mysql-9", MYSQL, "mariadb-10.11", MARIADB)
    assert b.knobs == {"log_bin": "OFF", "innodb_redo_log_capacity": "100663296", "performance_schema": "OFF"}
    assert "aligned mysql-9 with mariadb-10.11: log_bin=OFF" in b.text()


def test_align_needs_a_server_axis():
    import pytest

    from tunebench.core.errors import ConfigError
    from tunebench.core.sweep import parse_spec, write_spec

    with pytest.raises(ConfigError, match="align = true aligns the servers of a server axis"):
        parse_spec('workload = "oltp_point_select"\nthreads = [1]\nalign = true\n[axes]\n'
                   'innodb_spin_wait_delay = [4]\n')
    spec = parse_spec('workload = "oltp_point_select"\nthreads = [1]\nalign = true\n[axes]\n'
                      'server = ["mariadb-10.11", "mysql-9"]\n')
    assert spec.align is True and spec.to_dict()["align"] is True
    assert parse_spec(write_spec(spec)).align is True  # the window's writer keeps it


def test_sandbox_set_log_bin_follows_the_sweep_axis_rule():
    """Issue 46 item 13: `sandbox start --set log_bin=ON` wrote `log_bin = ON`, and the binary logs were named
    ON.000001; the sweep axis maps ON to `log_bin = binlog`. One rule now."""
    from tunebench.cli.targets import set_overrides

    assert set_overrides(["log_bin=ON", "sync_binlog=1"]) == {"log_bin": "binlog", "sync_binlog": "1"}
    assert set_overrides(["log_bin=ON", "log_bin=OFF"]) == {"skip_log_bin": None}
    assert set_overrides(["skip-name-resolve"]) == {"skip-name-resolve": None}
