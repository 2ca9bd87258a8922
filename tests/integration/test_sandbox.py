import json

import pytest

from tunebench.mysql.connect import admin_connect, introspect

pytestmark = pytest.mark.integration


def test_sandbox_is_private_and_pfs_on(sandbox):
    st = sandbox.status()
    assert st.running and st.port not in (0, 3306)
    assert st.socket.startswith(str(sandbox.base))
    info = introspect(admin_connect(sandbox.target()))
    assert info.flavor in ("mariadb", "mysql", "percona")
    assert info.performance_schema
    assert info.variables["datadir"].rstrip("/") == str(sandbox.datadir)


def test_both_transports_connect(sandbox):
    for transport in ("socket", "tcp"):
        conn = admin_connect(sandbox.target(), transport=transport)
        cur = conn.cursor()
        cur.execute("SELECT 1")
        assert cur.fetchall() == [(1,)]
        conn.close()


def test_restart_with_override_then_back(sandbox):
    sandbox.restart({"innodb_buffer_pool_size": "256M"})
    v = introspect(admin_connect(sandbox.target())).variables["innodb_buffer_pool_size"]
    assert int(v) == 256 * 1024 * 1024
    sandbox.restart({})
    v = introspect(admin_connect(sandbox.target())).variables["innodb_buffer_pool_size"]
    assert int(v) == 512 * 1024 * 1024


def test_cli_sandbox_status_json(sandbox, cli):
    out = cli("sandbox", "status", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["running"] and data["port"] == sandbox.status().port


def test_doctor_reports_driver_and_sysbench(sandbox, cli):
    out = cli("doctor", "--json")
    data = json.loads(out.stdout)
    assert data["driver"]["c_extension"] is True, "C extension must load (pinned 9.5-9.7)"
    assert data["sysbench"]["version"].startswith("1.")
    assert data["servers"] and data["sandbox"]["running"]
    assert out.returncode == 0, data["problems"]
