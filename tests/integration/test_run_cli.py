"""The issue's must-show commands, run as a user would, through the CLI."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import ROOT, _run_in_process

from tunebench.store.repo import Store

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


def test_bad_target_inputs(sandbox, cli, monkeypatch):
    cases = [
        (["--target", "mysql://root@127.0.0.1:1"], {}, "connection refused"),
        (["--target", f"mysql://tunebench@localhost?socket={sandbox.socket}"], {"MYSQL_PWD": "wrong"},
         "access denied for user 'tunebench'"),
        (["--target", "mysql://root@localhost?socket=/nonexistent/mysql.sock"], {}, "no server listening"),
    ]
    # the first as a user runs it; the others, refused before anything runs, in this process (tests/conftest.py
    # _run_in_process: main(), its stderr and exit status): 1.4 CPU s less each than a new process (issue 41)
    for i, (extra, env, needle) in enumerate(cases):
        args = ("run", "--workload", "oltp_point_select", "--step-seconds", "1", *extra)
        if i == 0:
            out = cli(*args, env=env)
        else:
            with monkeypatch.context() as m:
                for k, v in env.items():
                    m.setenv(k, v)
                out = _run_in_process(args)
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and needle in lines[0], out.stderr


def test_malformed_workload_file_via_cli(sandbox, cli, tmp_path):
    bad = tmp_path / "broken.toml"
    bad.write_text("name = 'broken'\nevent = ['point_selects'\n")
    out = cli("run", "--workload", str(bad))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "not valid TOML" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_kill_9_loses_at_most_the_last_second(sandbox, tmp_path):
    db = tmp_path / "kill.sqlite"
    # open loop at 300/s: what is tested is what the store keeps of a killed run, not the load's speed (a closed
    # loop took both cores until the kill, issue 41)
    proc = subprocess.Popen([sys.executable, "-m", "tunebench", "--db", str(db), "run", "--workload",
                             "oltp_point_select", "--threads", "2", "--rate", "300", "--step-seconds", "30"],
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
    con.close()
    # what the killed run's probes switched on is journaled in its own store: put back from there (it stayed
    # on for the next tests, whose default store's `restore` cannot see it)
    back = subprocess.run([sys.executable, "-m", "tunebench", "--db", str(db), "restore"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert back.returncode == 0, back.stderr
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


def measured_threads(store, sid, step):
    """The threads series over a recorded step's measured window (its seconds from measure_from to its end)."""
    threads = store.series(sid, ["client.main.threads"])["client.main.threads"]
    return [v for t, v in zip(threads.t, threads.v, strict=True)
            if step["measure_from"] <= t - 1 and t <= step["ended_at"]]


def test_a_step_is_measured_once_its_connections_are_open(sandbox, sandbox_params, cli):
    """sysbench starts its clock once its threads have connected; the builtin engine measured from the step's
    start, connections opening or not: a step of 16 users that could open a few was summed as 16 threads. Now
    the seconds before the connections are open (or stop opening) are on the timeline, not in the step, the
    step's window starts after them, and it says how many ran. The user's connection limit also took the
    server watch's reconnection: the step was called incomplete and the run failed on a server that answered.
    Room freed in the account once the step is measured does not change its concurrency: the connections that did
    not open wait for the next step."""
    import dataclasses

    from tunebench.mysql.connect import open_connection, query_all

    admin = open_connection(dataclasses.replace(sandbox_params, database=None))
    fillers: list = []
    try:
        query_all(admin, "CREATE DATABASE IF NOT EXISTS tunebench")
        query_all(admin, "DROP USER IF EXISTS 'tb_ramp'@'localhost'")
        # room for the 16 and Tunebench's own at the run's capacity check (issue 29 item 3: an account limit that
        # cannot hold them is refused before the run); then, with the run held (SIGSTOP) once its probes are
        # open, 14 more connections of the account take that room: the load opens what is left
        query_all(admin, "CREATE USER 'tb_ramp'@'localhost' IDENTIFIED BY 'ramp-pw-1' WITH MAX_USER_CONNECTIONS 30")
        query_all(admin, "GRANT ALL ON tunebench.* TO 'tb_ramp'@'localhost'")
        run = subprocess.Popen([sys.executable, "-m", "tunebench", "run", "--workload", "oltp_point_select",
                                "--threads", "16", "--step-seconds", "3", "--engine", "builtin", "--probes", "status",
                                "--json", "--target", f"mysql://tb_ramp@localhost?socket={sandbox.socket}"],
                               cwd=ROOT, env={**os.environ, "MYSQL_PWD": "ramp-pw-1"}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        # the run's own connections (the lock, then the watch and the probe) come after its capacity check and
        # before its load: at three of the account's, the check is done and the load not yet connected
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and run.poll() is None:
            held = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'tb_ramp'"
            if query_all(admin, held)[0][0] >= 3:
                run.send_signal(signal.SIGSTOP)
                mine = dataclasses.replace(sandbox_params, user="tb_ramp", password="ramp-pw-1", database=None)
                fillers = [open_connection(mine) for _ in range(14)]
                run.send_signal(signal.SIGCONT)
                break
            time.sleep(0.01)
        # once the ramp's note says how many opened, the fillers go: the account has room again, and the
        # connections that did not open must stay out of this step (they joined it, retrying each second: a step
        # said to run 13 ran 14 from its second measured second in a busy run)
        err: list[str] = []
        for line in run.stderr:
            err.append(line)
            if "connections open after" in line:
                break
        for c in fillers:
            c.close()
        fillers = []
        rest_out, rest_err = run.communicate(timeout=300)
        out = subprocess.CompletedProcess(run.args, run.returncode, rest_out, "".join(err) + rest_err)
    finally:
        for c in fillers:
            c.close()
        query_all(admin, "DROP USER IF EXISTS 'tb_ramp'@'localhost'")
        admin.close()
    assert out.returncode == 0, out.stderr
    assert "incomplete" not in out.stderr and "not answering" not in out.stderr, out.stderr
    result = json.loads(out.stdout)
    step = result["steps"][0]
    assert "threads_running" in step, (step, out.stderr[-3000:])
    ran = step["threads_running"]  # "12/16" in the table
    assert 0 < ran < 16 and step["seconds"] == 3 and step["tps"] > 0, step
    assert f"{ran:g} of 16 connections open after" in out.stderr and "the others did not open" in out.stderr
    store = Store(Path(sandbox.base).parent / "sessions.sqlite")
    full = store.get_session(result["session_id"])
    st = full["steps"][0]
    assert st["summary"]["_ramp"]["seconds"] >= 3 and st["summary"]["_ramp"]["open"] == ran
    assert st["measure_from"] >= st["started_at"] + 3
    ramp = [e for e in full["events"] if e["kind"] == "ramp"]
    assert len(ramp) == 1 and "of 16 connections open after" in ramp[0]["label"]
    # every second of the step's window ran the connections that could open; the ramp's seconds are before it
    inside = measured_threads(store, result["session_id"], st)
    assert len(inside) == 3 and set(inside) == {ran}


def test_every_measured_second_ran_the_steps_connections(sandbox, cli):
    """A step's measured seconds are at its full concurrency, from the first (not while connections open)."""
    out = cli("run", "--workload", "oltp_point_select", "--threads", "1,32", "--step-seconds", "3",
              "--engine", "builtin", "--probes", "status", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    store = Store(Path(sandbox.base).parent / "sessions.sqlite")
    full = store.get_session(result["session_id"])
    for st, asked in zip(full["steps"], (1, 32), strict=True):
        inside = measured_threads(store, result["session_id"], st)
        assert len(inside) >= 3 and set(inside) == {float(asked)}, (asked, inside)
