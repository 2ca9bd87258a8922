"""run/tasks.py against the real sandbox: server facts, prepare and cleanup as the CLI and the window run them."""

from __future__ import annotations

import pytest

from tunebench.core.errors import TargetError
from tunebench.mysql.connect import open_connection, query_all
from tunebench.mysql.target import Target, conn_params
from tunebench.run.tasks import data_request, prepare_data, read_server_facts

pytestmark = pytest.mark.integration


def test_server_facts_of_the_sandbox(sandbox):
    facts = read_server_facts(sandbox.target(), ["innodb_spin_wait_delay", "innodb_buffer_pool_size", "nope"])
    assert facts.target == "sandbox" and facts.flavor == "mariadb"
    assert facts.version == sandbox.status().version
    assert facts.missing == ("nope",)
    spin = facts.knobs["innodb_spin_wait_delay"]
    assert spin.dynamic and spin.current == facts.variables["innodb_spin_wait_delay"]
    assert set(facts.knobs) == {"innodb_spin_wait_delay", "innodb_buffer_pool_size"}
    assert facts.label.startswith("sandbox: ") and "MariaDB" in facts.label


def test_server_facts_name_an_unreachable_target():
    with pytest.raises(TargetError, match=r"^gone: cannot connect"):
        read_server_facts(Target("gone", socket="/nonexistent/mysqld.sock"), password="")


def test_prepare_then_cleanup(sandbox):
    target, lines = sandbox.target(), []
    request = data_request("oltp_point_select", {"tables": 2, "table_size": 30}, schema="tb_tasks", threads=2)
    done = prepare_data(target, request, progress=lines.append)
    assert (done.action, done.target, done.tables, done.rows_per_table) == ("prepare", "sandbox", 2, 30)
    assert done.summary == f"prepared 2 table(s) x 30 rows in tb_tasks ({done.seconds} s)"
    assert any("Creating table 'sbtest2'" in ln for ln in lines)
    conn = open_connection(conn_params(target, None))
    try:
        assert query_all(conn, "SELECT COUNT(*) FROM tb_tasks.sbtest2")[0][0] == 30
        conn.cursor().execute("CREATE TABLE tb_tasks.mine (id INT)")  # not Tunebench's: left alone
    finally:
        conn.close()
    again = prepare_data(target, request)
    assert again.tables == 0  # the tables are there, of this shape
    gone = prepare_data(target, data_request(None, cleanup=True, schema="tb_tasks"))
    assert gone.dropped == ("sbtest1", "sbtest2") and gone.left_alone == ("mine",) and gone.tables == 2
    assert gone.summary == "dropped sbtest1, sbtest2 in tb_tasks; left alone (not created by Tunebench): mine"
    assert gone.to_dict() == {"schema": "tb_tasks", "dropped": ["sbtest1", "sbtest2"], "left_alone": ["mine"]}
    conn = open_connection(conn_params(target, None))
    try:
        conn.cursor().execute("DROP DATABASE tb_tasks")
    finally:
        conn.close()


def test_prepare_reports_rows_and_a_cancel_leaves_whole_tables_only(sandbox):
    """Rows/s and time left while it loads; a cancel mid-way keeps sbtest1 (whole, registered) and drops the
    half-loaded sbtest2 and the untouched sbtest3: a next prepare makes them again, nothing to clean by hand."""
    import threading

    target, seen, cancel = sandbox.target(), [], threading.Event()
    request = data_request("oltp_point_select", {"tables": 3, "table_size": 60000}, schema="tb_cancel", threads=1)

    def on_rows(p):
        seen.append(p)
        if p.done >= 70000:  # a few thousand rows into sbtest2
            cancel.set()

    done = prepare_data(target, request, on_rows=on_rows, cancel=cancel)
    assert done.cancelled and done.tables == 1 and done.dropped == ("sbtest2", "sbtest3")
    assert done.summary.startswith("prepare cancelled after ") and "1 whole table(s) kept" in done.summary
    assert done.to_dict()["cancelled"] is True
    assert [p.done for p in seen] == sorted(p.done for p in seen) and seen[-1].total == 180000
    assert all(p.rate > 0 and p.eta is not None for p in seen[1:])
    assert "rows/s" in seen[-1].line() and "left" in seen[-1].line()
    conn = open_connection(conn_params(target, None))
    try:
        tables = sorted(r[0] for r in query_all(
            conn, "SELECT table_name FROM information_schema.tables WHERE table_schema='tb_cancel'"))
        assert tables == ["sbtest1", "tunebench_tables"]
        assert query_all(conn, "SELECT COUNT(*) FROM tb_cancel.sbtest1")[0][0] == 60000
        assert [r[0] for r in query_all(conn, "SELECT table_name FROM tb_cancel.tunebench_tables")] == ["sbtest1"]
    finally:
        conn.close()
    again = prepare_data(target, data_request("oltp_point_select", {"tables": 3, "table_size": 100},
                                              schema="tb_cancel", threads=2))
    assert not again.cancelled and again.tables == 3  # another shape: all three made, none refused
    prepare_data(target, data_request(None, cleanup=True, schema="tb_cancel"))
    conn = open_connection(conn_params(target, None))
    try:
        conn.cursor().execute("DROP DATABASE tb_cancel")
    finally:
        conn.close()


def test_cli_prepare_ctrl_c_cancels_cleanly(sandbox, cli):
    """`tunebench prepare` off a terminal prints plain progress lines; the first Ctrl-C cancels: exit 130, the
    outcome line, and no half-loaded table left (so the next prepare is not refused)."""
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    proc = subprocess.Popen([sys.executable, "-m", "tunebench", "prepare", "--workload", "oltp_point_select",
                             "--tables", "2", "--table-size", "400000", "--schema", "tb_ctrl_c"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        while not any("rows/s" in ln for ln in lines):
            lines.append(proc.stdout.readline())
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, out
    assert "\r" not in "".join(lines) + out
    assert "prepare cancelled after" in out and "half-loaded dropped" in out
    conn = open_connection(conn_params(sandbox.target(), None))
    try:
        tables = [r[0] for r in query_all(
            conn, "SELECT table_name FROM information_schema.tables WHERE table_schema='tb_ctrl_c'")]
        registered = [r[0] for r in query_all(conn, "SELECT table_name FROM tb_ctrl_c.tunebench_tables")]
        assert sorted(tables) == sorted([*registered, "tunebench_tables"])  # only whole, registered tables
        conn.cursor().execute("DROP DATABASE tb_ctrl_c")
    finally:
        conn.close()


def test_stop_while_a_run_prepares_its_data_cancels_the_prepare(sandbox):
    """The window's Stop (and the CLI's first Ctrl-C) during a run's automatic prepare used to wait for the whole
    load and then run the steps: now the load stops, its half-made table goes, and the run ends "stopped" with
    no session and nothing changed."""
    from tests.integration.test_sweep import knob_values, store_for

    from tunebench.load.engine import ClientGroup
    from tunebench.load.workload import load_workload
    from tunebench.run.experiment import Experiment
    from tunebench.run.spec import RunSpec

    before = knob_values(sandbox)
    wl = load_workload("oltp_point_select")
    group = ClientGroup("main", wl, wl.options({"table_size": 2_000_000}), (2,))
    store = store_for(sandbox)
    exp = None

    def note(line: str) -> None:
        if line.startswith("Inserting") and exp is not None:
            exp.request_stop(by_user=True)

    exp = Experiment(store, sandbox.target(), RunSpec(groups=(group,), schema="tb_stopprep", step_seconds=5,
                                                       probes=()), on_note=note)
    out = exp.run()
    assert (out.status, out.session_id, out.steps) == ("stopped", None, ())
    conn = open_connection(conn_params(sandbox.target(), None))
    try:
        tables = query_all(conn, "SELECT table_name FROM information_schema.tables WHERE table_schema='tb_stopprep'")
        assert [t[0] for t in tables] == ["tunebench_tables"]  # sbtest1 was half-made: dropped
        conn.cursor().execute("DROP DATABASE tb_stopprep")
    finally:
        conn.close()
    assert knob_values(sandbox) == before
