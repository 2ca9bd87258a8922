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


def test_the_sandboxs_own_options_and_a_start_that_fails_leave_it_running(sandbox, cli):
    """Issue 29 item 8b: `--set innodb_page_size=4096` or `--set datadir=…` stopped the running sandbox and left it
    down with the override saved; `--set port=3306` was accepted (and status then reported the old port)."""
    before = sandbox.status()
    for option, says in (("port=3306", "the sandbox's own setting"), ("datadir=/tmp/elsewhere", "own setting"),
                         ("innodb-page-size=4096", "fixed when the sandbox's datadir is made"),
                         ("innodb_log_group_home_dir=/nonexistent", "running again with its previous settings")):
        out = cli("sandbox", "start", "--set", option)
        assert out.returncode == 2 and says in out.stderr, (option, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
        st = sandbox.status()
        assert st.running and st.port == before.port and st.overrides == before.overrides, (option, st)
    assert "innodb_log_group_home_dir" not in sandbox.cnf.read_text()


def test_ctrl_c_during_a_restart_waits_for_the_server(sandbox, tmp_path):
    """...and three SIGINTs 0.3 s apart during a restart left it down with the new option in its my.cnf: the
    restart finishes first (up, my.cnf and state agreeing), then the interrupt is taken."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from tests.conftest import ROOT, wait_until

    # (SIGINT as a terminal has it: a background job of a shell inherits it ignored, and Python keeps that)
    code = ("import signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "from pathlib import Path\nfrom tunebench.hosts.sandbox import SandboxServer\n"
            f"sb = SandboxServer(Path({str(sandbox.base)!r}))\nprint('restarting', flush=True)\n"
            "try:\n    sb.restart({'innodb_doublewrite': 'OFF'})\nexcept KeyboardInterrupt:\n"
            "    print('interrupted after', sb.status().running, flush=True)\n    sys.exit(130)\n")
    old_pid = sandbox.status().pid
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "restarting"
        # the old server is going: the restart is half-way, the moment a Ctrl-C used to leave it down
        wait_until(lambda: not Path(f"/proc/{old_pid}/cmdline").exists() or
                   not Path(f"/proc/{old_pid}/cmdline").read_bytes(), 60, "the old server to stop")
        for _ in range(3):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.05)
        out = proc.stdout.read()
        assert proc.wait(120) == 130 and "interrupted after True" in out, out
        st = sandbox.status()
        assert st.running and st.overrides == {"innodb_doublewrite": "OFF"}
        assert "innodb_doublewrite" in sandbox.cnf.read_text()
    finally:
        proc.kill()
        proc.stdout.close()
        sandbox.restart({})  # as the other tests find it, whatever happened here


def test_a_start_that_hangs_is_killed_and_started_again_and_a_hung_server_is_stopped(sandbox, monkeypatch):
    """MariaDB 10.11.19 stopped for good on its way up after a quick restart beside CPU hogs (its main thread waiting
    on a thread that never answered, SIGTERM never handled); the socket took connections all the same (its listen
    backlog), so the restart said it was up, and the next stop waited 300 s for a shutdown that never began. Here a
    server frozen (SIGSTOP) as it starts stands for that one: the start notices, kills it and starts again; and a
    stop of a frozen server kills it once it has not begun to shut down."""
    import os
    import signal
    import subprocess
    import time
    from pathlib import Path

    import tunebench.hosts.sandbox as sandbox_module

    monkeypatch.setattr(sandbox_module, "HUNG_SECONDS", 3.0)
    monkeypatch.setattr(sandbox_module, "STOP_SILENT_SECONDS", 2.0)
    real = subprocess.Popen
    frozen: list[int] = []

    def popen(argv, *args, **kwargs):
        proc = real(argv, *args, **kwargs)
        if not frozen and any(str(a).startswith("--defaults-file") for a in argv) and "--help" not in argv:
            os.kill(proc.pid, signal.SIGSTOP)  # stopped as it starts: no line in its log, no greeting
            frozen.append(proc.pid)
        return proc

    monkeypatch.setattr(sandbox_module.subprocess, "Popen", popen)
    try:
        st = sandbox.restart({})
        assert frozen and st.running and st.pid != frozen[0]
        assert not Path(f"/proc/{frozen[0]}").exists() or "Z" in Path(f"/proc/{frozen[0]}/stat").read_text().split()[2]
        assert f"the server (pid {frozen[0]}) hung during start-up" in sandbox.errlog.read_text()
        admin = admin_connect(sandbox.target())
        admin.close()
        # a server that never begins to shut down (frozen): stopped all the same, in seconds, not 300
        os.kill(st.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        assert not sandbox.stop().running
        assert time.monotonic() - t0 < 30
    finally:
        monkeypatch.undo()
        sandbox.start()
    assert sandbox.status().running


def test_the_sandboxs_server_has_only_the_environment_it_needs(sandbox):
    """Issue 43 item 4: the sandbox's mysqld inherited the whole environment of whoever started it (a store's
    password included). Its environment now holds the paths and the locale only (hosts/runner.py CHILD_ENV)."""
    from pathlib import Path

    from tunebench.hosts.runner import CHILD_ENV

    pid = sandbox.status().pid
    names = {item.split(b"=", 1)[0].decode() for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
             if item}
    assert names and all(n in CHILD_ENV or n.startswith("LC_") for n in names), sorted(names)
