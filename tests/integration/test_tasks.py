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
