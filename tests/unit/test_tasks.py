"""run/tasks.py without a server: spec building as `tunebench run` does it, prepare requests, server facts."""

from __future__ import annotations

import pytest

from tunebench.core.errors import ConfigError, TunebenchError
from tunebench.load.engine import ClientGroup
from tunebench.load.workload import load_workload
from tunebench.mysql.target import Target
from tunebench.run import tasks
from tunebench.run.experiment import RunSpec
from tunebench.run.tasks import (
    DataOutcome,
    GroupRequest,
    build_run_spec,
    data_request,
    parse_group,
    parse_option_items,
    parse_threads,
    read_server_facts,
)


def test_threads_parse_like_the_cli_option():
    assert parse_threads("1,4, 16,") == (1, 4, 16)
    for text, needle in (("0", ">= 1"), ("", ">= 1"), ("a,b", "comma-separated"), ("1.5", "comma-separated"),
                         ("100001", "<= 100000")):
        with pytest.raises(ConfigError, match=needle):
            parse_threads(text)


def test_option_items_and_group_text():
    assert parse_option_items(["tables=2", " table_size = 10 ", "x=a=b"]) == {"tables": "2", "table_size": "10",
                                                                               "x": "a=b"}
    with pytest.raises(ConfigError, match="NAME=VALUE"):
        parse_option_items(["noequals"])
    assert parse_group(" w = oltp_insert :1,2") == GroupRequest("w", "oltp_insert", "1,2")
    with pytest.raises(ConfigError, match="NAME=WORKLOAD"):
        parse_group("bad")


def test_spec_is_what_the_run_command_built():
    spec = build_run_spec("oltp_point_select", {"tables": 2, "table_size": "100"}, "1,4", engine="sysbench",
                          step_seconds=3, warmup_seconds=1, transport="tcp", groups=["w=oltp_read_only:2"],
                          probes="status,cpu")
    wl, ro = load_workload("oltp_point_select"), load_workload("oltp_read_only")
    opts = {"tables": 2, "table_size": "100"}
    want = RunSpec(groups=(ClientGroup("main", wl, wl.options(opts), (1, 4)),
                           ClientGroup("w", ro, ro.options(opts), (2,))),
                   engine="sysbench", step_seconds=3, warmup_seconds=1, transport="tcp", probes=("status", "cpu"))
    assert spec == want


def test_spec_from_the_window_panel_values():
    """The window: counts already parsed, a second workload sharing only the table shape of the first."""
    spec = build_run_spec("oltp_read_write", {"tables": 3, "table_size": 50, "range_size": 7}, (2, 8),
                          groups=[GroupRequest("oltp_insert", "oltp_insert", (1,))], group_options="shape",
                          client_hosts=(), transport="socket")
    main, second = spec.groups
    assert main.options["range_size"] == 7 and main.schedule == (2, 8)
    assert second.schedule == (1,) and second.options["tables"] == 3 and second.options["table_size"] == 50
    assert spec.probes is None and spec.schema == "tunebench"


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"workload": None}, "give --workload NAME"),
    ({"workload": "nope"}, "unknown workload 'nope'"),
    ({"threads": "0"}, ">= 1"),
    ({"threads": (0,)}, "thread counts must be >= 1"),
    ({"engine": "jmeter"}, "unknown engine 'jmeter'"),
    ({"options": {"rand_type": "wobbly"}}, "rand_type"),
    ({"probes": "bogus"}, "bogus"),
    ({"schema": "mysql"}, "system schema"),
    ({"client_hosts": ("ssh://u@h",), "remote_python": " "}, "--remote-python is empty"),
    ({"groups": ["main=oltp_point_select:1"]}, "unique"),
    ({"groups": [GroupRequest("w", "oltp_insert", (1,))], "options": {"tables": 2}, "group_options": "all",
      "workload": None}, None),
])
def test_spec_errors_are_one_config_error(kwargs, needle):
    args = {"workload": "oltp_point_select", "options": {}, "threads": "1", **kwargs}
    if needle is None:  # a run of only extra groups is fine
        assert build_run_spec(args.pop("workload"), args.pop("options"), args.pop("threads"), **args).groups
        return
    with pytest.raises(TunebenchError, match=needle):
        build_run_spec(args.pop("workload"), args.pop("options"), args.pop("threads"), **args)


def test_data_request_checks_before_any_server():
    req = data_request("oltp_point_select", {"tables": "3", "table_size": 20})
    assert (req.what, req.rows, req.schema, req.cleanup, req.threads) == ("3 table(s) x 20 rows", 20, "tunebench",
                                                                          False, 4)
    assert req.busy_text == "preparing 3 table(s) x 20 rows …"
    # the window passes a group's options as already resolved: resolving again changes nothing
    assert data_request(req.workload, req.options).options == req.options
    assert data_request(None, cleanup=True, schema="sys").busy_text == "cleaning up …"  # cleanup may tidy sys
    with pytest.raises(ConfigError, match="system schema"):
        data_request("oltp_point_select", schema="sys")
    with pytest.raises(ConfigError, match="prepare needs --workload"):
        data_request(None)
    with pytest.raises(ConfigError, match="invalid schema"):
        data_request(None, cleanup=True, schema="a-b")
    insert = data_request("oltp_insert", {"auto_inc": "off", "table_size": 99})
    assert insert.rows == 0  # sysbench prepares oltp_insert's tables empty without auto_inc


def test_a_data_set_bigger_than_the_free_disk_is_refused_with_the_numbers(tmp_path):
    """Each family's estimate of its data set against the datadir filesystem's free space (a local server's)."""
    from tunebench.run.tasks import DiskSpace, check_data_fits, datadir_space

    GB = 1024**3
    estimates = {}
    for name, given in (("tpcc", {"scale": 100_000}), ("tpcc", {"scale": 10}), ("oltp_read_write",
                        {"table_size": 10_000_000}), ("oltp_insert", {"auto_inc": "off", "table_size": 10**9}),
                        ("dbstress_ro", {"objects": 10**6}), ("iibench", {"initial_rows": 10**6})):
        wl = load_workload(name)
        estimates[name, tuple(given.items())] = wl.family.data_bytes(wl, wl.options(given))
    tpcc_huge, tpcc_10, sbtest_10m, insert_empty, dbstress_1m, iibench_1m = estimates.values()
    assert 9_000 * GB < tpcc_huge < 11_000 * GB and 0.9 * GB < tpcc_10 < 1.1 * GB  # ~100 MB a warehouse
    assert 2 * GB < sbtest_10m < 3 * GB and insert_empty == 0  # sysbench's 10M rows: ~2.4 GB
    assert 1 * GB < dbstress_1m < 4 * GB and 0.05 * GB < iibench_1m < 0.5 * GB
    tpcc = load_workload("tpcc")
    huge = tpcc.options({"scale": 100_000})
    with pytest.raises(ConfigError, match=r"^100000 warehouse\(s\) x 1 table set\(s\) needs about 9\.5 TB on the "
                                          r"server's disk and the filesystem of its datadir \(/srv/db\) has 50\.0 GB "
                                          r"free: choose a smaller data set$"):
        check_data_fits(tpcc, huge, DiskSpace("/srv/db", 50 * GB))
    check_data_fits(tpcc, tpcc.options({"scale": 10}), DiskSpace("/srv/db", 50 * GB))  # fits
    check_data_fits(tpcc, huge, None)  # a remote server's disk: not known here, not refused
    assert datadir_space(str(tmp_path), local=False) is None
    assert datadir_space(str(tmp_path / "nope"), local=True) is None
    here = datadir_space(str(tmp_path), local=True)
    assert here is not None and here.path == str(tmp_path) and here.free > 0


def test_data_outcome_json_is_the_commands():
    p = DataOutcome("prepare", "sandbox", "tb", 2, 10, 0.5, "prepared ...", rows=20)
    assert p.to_dict() == {"schema": "tb", "tables_created": 2, "rows_per_table": 10, "rows": 20, "rows_per_s": 40,
                           "seconds": 0.5, "cancelled": False, "dropped": []}
    c = DataOutcome("cleanup", "sandbox", "tb", 1, 0, 0.1, "dropped ...", ("sbtest1",), ("mine",))
    assert c.to_dict() == {"schema": "tb", "dropped": ["sbtest1"], "left_alone": ["mine"]}


class _Conn:
    closed = False

    def cursor(self):
        return _Cursor()

    def close(self):
        self.closed = True


class _Cursor:
    with_rows = True

    def execute(self, sql, args=()):
        assert sql == "SHOW GLOBAL VARIABLES"

    def fetchall(self):
        return [("version", "10.11.6-MariaDB"), ("version_comment", "Debian 12"), ("performance_schema", "ON"),
                ("innodb_spin_wait_delay", "4"), (b"max_connections", b"151")]

    def close(self):
        pass


def test_server_facts_ask_only_for_what_the_server_has(monkeypatch):
    conn, asked = _Conn(), []
    monkeypatch.setattr(tasks, "open_connection", lambda params, name: conn)
    monkeypatch.setattr(tasks, "describe_knobs", lambda c, info, names: asked.extend(names) or {n: n for n in names})
    facts = read_server_facts(Target("t1", socket="/nonexistent.sock"),
                              ["max_connections", "no_such_knob", "bad name;", "max_connections"], password="")
    assert conn.closed
    assert asked == ["max_connections"]  # a name the server lacks (or a malformed one) is never sent
    assert facts.missing == ("no_such_knob", "bad name;")
    assert (facts.target, facts.flavor, facts.version, facts.performance_schema) == ("t1", "mariadb", "10.11.6", True)
    assert facts.values(["max_connections", "nope"]) == {"max_connections": "151"}
    assert facts.label == "t1: 10.11.6-MariaDB"
    assert facts.info.variables is facts.variables


def test_each_family_has_a_schema_of_its_own_by_default(tmp_path):
    """Issue 29 item 6: dbSTRESS-like's history1 and TPC-C's history1 shared the default schema."""
    assert data_request("dbstress_ro").schema == "tunebench_dbstress"
    assert data_request("tpcc").schema == "tunebench_tpcc"
    assert data_request("iibench").schema == "tunebench_iibench"
    assert data_request("oltp_read_only").schema == "tunebench"
    assert data_request("tpcc", schema="mine").schema == "mine"
    script = tmp_path / "my-tpcc.lua"
    script.write_text("function prepare() end\nfunction event() end\n")
    assert data_request(None, lua=str(script)).schema == "tunebench_lua_my_tpcc"
    assert build_run_spec("tpcc", {}, "1").schema == "tunebench_tpcc"
    assert build_run_spec("oltp_point_select", {}, "1", schema="x").schema == "x"
    every = data_request(None, cleanup=True)
    assert every.every_default and every.schema == "tunebench"
    assert not data_request(None, cleanup=True, schema="tunebench").every_default
    window_cleanup = data_request("tpcc", cleanup=True)  # the window's Cleanup: the workload's own schema
    assert window_cleanup.schema == "tunebench_tpcc" and not window_cleanup.every_default


def test_a_prepare_that_leaves_other_data_is_a_failure(monkeypatch):
    """...and a prepare that reported success over tables of another shape let the run go on: the data is checked
    after every prepare as the run would need it."""
    from tunebench.core.errors import WorkloadError
    from tunebench.core.target import ConnParams

    wl = load_workload("tpcc")
    family = type(wl.family)
    monkeypatch.setattr(family, "missing_data", lambda *_a, **_k: "TPC-C-like data not prepared in x (history1 is "
                                                                  "of another shape)")
    monkeypatch.setattr(family, "prepare", lambda *_a, **_k: {"cancelled": False, "dropped": []})
    spec = build_run_spec("tpcc", {}, "1", schema="x")
    with pytest.raises(WorkloadError, match=r"did not leave the data the workload needs: .*history1 is of another"):
        tasks.ensure_data(ConnParams("u", "p", socket="/nowhere"), spec, lambda _m: None)
