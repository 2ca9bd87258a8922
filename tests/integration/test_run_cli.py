"""The issue's must-show commands, run as a user would, through the CLI."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from tests.conftest import ROOT

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("engine", ["builtin", "sysbench"])
def test_run_point_select_json(sandbox, cli, engine):
    out = cli("run", "--workload", "oltp_point_select", "--threads", "1,4", "--step-seconds", "5",
              "--engine", engine, "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["engine"] == engine
    assert [s["threads"] for s in result["steps"]] == [1, 4]
    assert all(s["tps"] > 0 and s["qps"] > 0 and s["lat_p95_ms"] > 0 for s in result["steps"])
    assert all(s["errors"] == 0 for s in result["steps"])
    listed = json.loads(cli("sessions", "list", "--json").stdout)
    assert result["session_id"] in [s["id"] for s in listed]
    show = json.loads(cli("sessions", "show", str(result["session_id"]), "--json").stdout)
    # sysbench may drop its last report line when --time ends on the same second: 4 or 5 per step
    assert show["series"]["client.main.tps"]["points"] >= 8
    assert show["series"]["client.main.tps"]["min"] > 0


def test_tcp_transport_and_csv_export(sandbox, cli):
    out = cli("run", "--workload", "oltp_read_only", "--threads", "2", "--step-seconds", "3", "--transport",
              "tcp", "--json")
    assert out.returncode == 0, out.stderr
    sid = json.loads(out.stdout)["session_id"]
    csv_out = cli("sessions", "export", str(sid), "--format", "csv")
    header, *rows = csv_out.stdout.strip().splitlines()
    assert "client.main.tps" in header and "client.main.lat.p99" in header
    assert len(rows) >= 3
    assert "password" not in csv_out.stdout.lower()


def test_two_client_groups_at_once(sandbox, cli):
    out = cli("run", "--group", "reads=oltp_read_only:2,2", "--group", "updates=oltp_update_index:1,2",
              "--step-seconds", "3", "--json")
    assert out.returncode == 0, out.stderr
    steps = json.loads(out.stdout)["steps"]
    assert {(s["group"], s["threads"]) for s in steps} == {("reads", 2), ("updates", 1), ("updates", 2)}
    assert all(s["tps"] > 0 for s in steps)


def test_bad_target_inputs(sandbox, cli):
    cases = [
        (["--target", "mysql://root@127.0.0.1:1"], {}, "connection refused"),
        (["--target", f"mysql://tunebench@localhost?socket={sandbox.socket}"], {"MYSQL_PWD": "wrong"},
         "access denied for user 'tunebench'"),
        (["--target", "mysql://root@localhost?socket=/nonexistent/mysql.sock"], {}, "no server listening"),
    ]
    for extra, env, needle in cases:
        out = cli("run", "--workload", "oltp_point_select", "--step-seconds", "1", *extra, env=env)
        assert out.returncode != 0
        assert "Traceback" not in out.stderr
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and needle in lines[0], out.stderr


def test_malformed_workload_file_via_cli(sandbox, cli, tmp_path):
    bad = tmp_path / "broken.toml"
    bad.write_text("name = 'broken'\nevent = ['point_selects'\n")
    out = cli("run", "--workload", str(bad))
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "not valid TOML" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_kill_9_loses_at_most_the_last_second(sandbox, tmp_path):
    db = tmp_path / "kill.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "tunebench", "--db", str(db), "run", "--workload",
                             "oltp_point_select", "--threads", "2", "--step-seconds", "30"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                            env=dict(os.environ), start_new_session=True)
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 4 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "tps:" in line:
            seen += 1
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    con = sqlite3.connect(db)
    (status,) = con.execute("SELECT status FROM sessions").fetchone()
    (points,) = con.execute(
        "SELECT SUM(c.n) FROM sample_chunks c JOIN series s ON s.id=c.series_id WHERE s.name='client.main.tps'"
    ).fetchone()
    assert status == "running"  # it never got to finish
    assert points >= seen - 1


def test_make_run_without_display_runs_the_headless_demo(sandbox):
    """`make run` is `.venv/bin/tunebench` with no arguments; with no display it must say so in one line and
    run the demo to the end (it once died with AttributeError before the first step)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = subprocess.run([sys.executable, "-m", "tunebench"], capture_output=True, text=True, env=env,
                         timeout=240, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert [ln for ln in out.stderr.splitlines() if ln.startswith("no display")] == [
        "no display: running the headless demo instead (set DISPLAY, or QT_QPA_PLATFORM=offscreen)"]
    assert out.stdout.count("(completed), engine builtin") == 1
    assert out.stdout.count("(completed), engine sysbench") == 1
