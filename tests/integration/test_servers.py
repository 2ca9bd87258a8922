"""Issue 27's must-show: MySQL 9.x, MariaDB 11.8 and the system's MariaDB 10.11 as real sandboxes side by side,
a run and a knob sweep on MySQL, and a sweep with a server axis over the three."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tunebench.mysql.connect import global_status, open_connection, query_all
from tunebench.store.repo import Store

pytestmark = pytest.mark.integration
COM = ("Com_select", "Com_insert", "Com_update", "Com_delete", "Com_begin", "Com_commit", "Com_rollback")


def _store() -> Store:
    return Store(Path(os.environ["TUNEBENCH_HOME"]) / "sessions.sqlite")


@pytest.fixture
def mysql(sandbox, kit_sandboxes):
    from tests.conftest import server_under_test

    return server_under_test("mysql-9", sandbox, kit_sandboxes)


@pytest.fixture
def all_three(sandbox, kit_sandboxes):
    from tests.conftest import SERVERS, server_under_test

    return [server_under_test(name, sandbox, kit_sandboxes) for name in SERVERS]


def _globals(server, names):
    conn = open_connection(server.params(None))
    try:
        row = query_all(conn, "SELECT " + ", ".join(f"@@GLOBAL.{n}" for n in names))[0]
    finally:
        conn.close()
    return dict(zip(names, (str(v) for v in row), strict=True))


def test_servers_list_has_three_flavors_and_versions(all_three, cli):
    out = cli("servers", "list", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    versions = {(r["flavor"], ".".join(r["version"].split(".")[:2])) for r in rows.values()}
    assert {("mariadb", "10.11"), ("mariadb", "11.8")} <= versions
    assert any(f == "mysql" and v.startswith("9.") for f, v in versions), versions
    kits = [r for r in rows.values() if r["source"].startswith("debian ")]
    assert len(kits) >= 2 and all(r["loader"] and Path(r["path"]).exists() for r in kits)
    # every server a sandbox of its own: distinct datadirs and ports, all three running now
    running = [r["sandbox"] for r in rows.values() if r["sandbox"]["running"]]
    assert len(running) >= 3
    assert len({s["datadir"] for s in running}) == len(running) and len({s["port"] for s in running}) == len(running)


def test_run_on_mysql_is_sysbenchs_mix_by_the_servers_counters(mysql, cli):
    prep = cli("prepare", *mysql.args, "--workload", "oltp_read_write", "--table-size", "10000", timeout=300)
    assert prep.returncode == 0, prep.stderr  # (the loader's INSERTs are not the run's)
    conn = open_connection(mysql.params(None))
    try:
        before = global_status(conn, COM)
        out = cli("run", *mysql.args, "--workload", "oltp_read_write", "--table-size", "10000", "--threads", "2",
                  "--step-seconds", "3", "--probes", "status,waits", "--json", timeout=300)
        after = global_status(conn, COM)
    finally:
        conn.close()
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "completed", out.stderr
    assert result["server"]["flavor"] == "mysql" and result["server"]["version"].startswith("9."), result["server"]
    session = _store().get_session(result["session_id"])
    assert (session["flavor"], session["version"][:2]) == ("mysql", "9.")
    d = {k: after[k] - before[k] for k in COM}
    trx = d["Com_commit"]
    # each of the 2 connections may stop inside its last transaction when the step ends (one event apiece, then
    # rolled back); the probes' own SELECTs (waits from performance_schema) count too: the load's are 14 per
    # transaction
    assert trx > 100 and 0 <= d["Com_begin"] - trx <= 2 and d["Com_rollback"] <= 2, d
    assert 14 * trx <= d["Com_select"] < 14 * trx + 200, (d, trx)
    for name, per_trx in (("Com_update", 2), ("Com_delete", 1), ("Com_insert", 1)):
        assert 0 <= d[name] - per_trx * trx <= 2 * per_trx, (name, d, trx)
    names = _store().series_names(result["session_id"])
    assert any(n.startswith("waits.") for n in names), names  # PFS is on by default on MySQL


def test_thread_concurrency_sweep_on_mysql_is_applied_and_put_back(mysql, cli):
    """The seeds' knob, absent on MariaDB 10.11; InnoDB moves innodb_thread_sleep_delay itself while a limit is
    set (it was left at 0 after the sweep): journaled with the knob and put back too."""
    watched = ("innodb_thread_concurrency", "innodb_thread_sleep_delay")
    before = _globals(mysql, watched)
    out = cli("sweep", "thread-concurrency", *mysql.args, "--threads", "16", "--step-seconds", "3",
              "--warmup-seconds", "1", "--json", timeout=400)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "completed"
    applied = {c["label"]: c["applied"] for c in result["configs"]}
    assert [a.get("innodb_thread_concurrency") for a in applied.values()] == ["0", "8", "16"], applied
    assert _globals(mysql, watched) == before
    events = _store().get_session(result["session_id"])["events"]
    assert not [e for e in events if e["kind"] == "drift"], [e["label"] for e in events if e["kind"] == "drift"]


def test_a_server_axis_sweep_runs_each_server_into_one_session(all_three, cli, tmp_path):
    spec = tmp_path / "versions.toml"
    # open loop at 100/s: what is tested is the server axis (one session, ratios and their verdicts, what else
    # differed), not the throughput; closed loop its 24 s of load made this test cost 21-26 CPU s, now 12-15
    # (issue 41)
    spec.write_text('name = "versions"\nworkload = "oltp_read_write"\nthreads = [1, 4]\nrates = [100]\n'
                    'step_seconds = 3\nwarmup_seconds = 1\n[options]\ntable_size = 5000\n'
                    '[axes]\nserver = ["mariadb-10.11", "mariadb-11.8", "mysql-9"]\n')
    plan = json.loads(cli("sweep", str(spec), "--plan", "--json").stdout)
    assert [c.get("server", "")[:8] for c in plan["configs"]] == ["mariadb-", "mariadb-", "mysql-9."]
    out = cli("sweep", str(spec), "--json", timeout=600)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "completed"
    assert len(result["configs"]) == 3 and len(result["steps"]) == 6
    assert all(s["tps"] > 0 for s in result["steps"])
    assert [c["server"] for c in result["configs"]] == [c["server"] for c in plan["configs"]]
    versions = [s["version"] for s in result["servers"]]
    assert [v.split(".")[0] for v in versions] == ["10", "11", "9"]
    report = cli("sessions", "export", str(result["session_id"]), "--format", "md").stdout
    for c in result["configs"]:
        assert f"server={c['server']}" in report
    assert "3 servers" in report.splitlines()[0]
    # ratios to the first server, at each thread count
    ratio_rows = [r for r in result["ratios"] if r["config"] != result["baseline"]]
    assert len(ratio_rows) == 2 and all(len(r["steps"]) == 2 for r in ratio_rows)
    # every pair was judged from the stored seconds (the later servers' seconds were missing: no interval)
    assert all("verdict" in st for r in ratio_rows for st in r["steps"]), ratio_rows
    # what else differed (issue 44): MySQL 9.7 runs with GTIDs on (9.5's new default), a bigger redo log and
    # performance_schema, the MariaDBs without -- unfair, said in --json, the report and the run's notes
    differed = result["differed"]
    assert differed["unfair"] and len(differed["sides"]) == 3, differed
    gtid = next(w for w in differed["warnings"] if w.startswith("GTID: "))
    assert "gtid_mode=ON on mysql 9." in gtid, gtid
    assert "## What else differed between the servers" in report and f"**Unfair:** {gtid}" in report
    assert f"unfair comparison, {gtid}" in out.stderr
    # the sessions list names every server
    row = next(r for r in json.loads(cli("sessions", "list", "--json").stdout) if r["id"] == result["session_id"])
    assert row["server"].count(" + ") == 2, row


def test_an_aligned_server_axis_runs_every_server_with_the_first_ones_settings(mysql, sandbox, cli, tmp_path):
    """Issue 44 item 2: `align = true` gives MariaDB 10.11 what MySQL 9.7 (the first server) runs with -- its binary
    log and sync_binlog, performance_schema, redo size -- says so, and the comparison has nothing unfair left in
    what was aligned; the MariaDB sandbox is as it was afterwards."""
    from tests.conftest import ServerUnderTest

    names = ("log_bin", "sync_binlog", "performance_schema", "character_set_server")
    maria = ServerUnderTest("mariadb-10.11", sandbox, [])
    before = _globals(maria, names)
    overrides = sandbox.status().overrides
    spec = tmp_path / "aligned.toml"
    # open loop at 100/s: what is tested is the alignment and the put-back, not the throughput (13 CPU s closed
    # loop, 7-9 now: issue 41)
    spec.write_text('name = "aligned"\nworkload = "oltp_point_select"\nthreads = [2]\nrates = [100]\n'
                    'step_seconds = 3\nwarmup_seconds = 1\nalign = true\n[options]\ntable_size = 2000\n'
                    '[axes]\nserver = ["mysql-9", "mariadb-10.11"]\n')
    # MySQL 9.7 with its binary log on, synced at each commit (`sandbox start --server mysql-9 --set log_bin=ON
    # --set sync_binlog=1`): what the MariaDB gets
    kit = mysql.sandbox.status()
    mysql.sandbox.start({**kit.overrides, "log_bin": "binlog", "sync_binlog": "1"}, kit.cpus)
    try:
        out = cli("sweep", str(spec), "--json", timeout=600)
    finally:
        mysql.sandbox.start(kit.overrides, kit.cpus)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    (aligned,) = result["aligned"]
    assert aligned["server"].startswith("mariadb-10.11") and aligned["reference"].startswith("mysql-9"), aligned
    assert aligned["set"]["log_bin"] == "ON" and str(aligned["set"]["sync_binlog"]) == "1", aligned
    assert f"aligned {aligned['server']} with {aligned['reference']}: log_bin=ON" in out.stderr
    assert any(x.startswith("gtid_mode=ON (no such variable") for x in aligned["not_aligned"]), aligned
    differed = result["differed"]
    assert not any(w.startswith(("binary log", "performance_schema", "doublewrite", "redo"))
                   for w in differed["warnings"]), differed["warnings"]
    assert "log_bin" not in {d["name"] for d in differed["differences"]}
    # put back: the MariaDB sandbox runs with its own settings again
    assert _globals(maria, names) == before and sandbox.status().overrides == overrides


def test_a_server_axis_stops_the_sandboxes_it_started_and_runs_mariadb_10_5(sandbox, kit_sandboxes, cli, tmp_path):
    """Issue 46 item 6: a versions sweep left the servers it started running, unsaid; it stops them. Issue 44
    item 5: MariaDB 10.5 (bullseye's kit) on the version axis."""
    from tunebench.hosts.kits import resolve_server
    from tunebench.hosts.sandbox import SandboxServer

    old = SandboxServer.for_server(resolve_server("mariadb-10.5"))
    if old.status().running:
        old.stop()
    spec = tmp_path / "old.toml"
    # open loop at 100/s: what is tested is the 10.5 part and the stop, not the throughput (8-9 CPU s closed loop,
    # 5-7 now: issue 41)
    spec.write_text('name = "old"\nworkload = "oltp_point_select"\nthreads = [2]\nrates = [100]\nstep_seconds = 3\n'
                    'warmup_seconds = 1\n[options]\ntable_size = 2000\n'
                    '[axes]\nserver = ["mariadb-10.11", "mariadb-10.5"]\n')
    out = cli("sweep", str(spec), "--json", timeout=600)
    # the 10.11 step may be incomplete on a stalled machine (CI at load ~9: the server not answering for 9.8 s
    # while the whole machine stood) -- said, exit 1; what this test is about is the 10.5 part and the stop
    stalled = out.returncode == 1 and "step 1 incomplete: the server did not answer" in out.stderr
    assert out.returncode == 0 or stalled, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert [s["version"].split(".")[:2] for s in result["servers"]] == [["10", "11"], ["10", "5"]]
    assert result["steps"][-1]["tps"] > 0 and (stalled or result["steps"][0]["tps"] > 0), result["steps"]
    assert "step 2 incomplete" not in out.stderr, out.stderr[-3000:]
    assert not old.status().running and f"{old.target_name} stopped (this sweep started it)" in out.stderr, \
        out.stderr[-2000:]
    assert sandbox.status().running  # the one it found running stays
