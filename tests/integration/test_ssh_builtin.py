"""The builtin engine on SSH client hosts (load/remote_builtin.py) against the real sshd on 127.0.0.1 and the real
sandbox: its numbers checked with the server's own counters, its hosts' seconds merged, what a host lacks said."""

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from tests.conftest import ROOT, wait_for_load, wait_until

from server_clock import ServerCounters
from server_leaks import descendants
from tunebench import paths
from tunebench.core.probe import name_part
from tunebench.core.schedule import OpenLoop
from tunebench.hosts.ssh import SshRunner, parse_ssh_url
from tunebench.load.engine import ClientGroup
from tunebench.load.prepare import prepare
from tunebench.load.remote_builtin import RemoteBuiltinEngine
from tunebench.load.workload import load_workload
from tunebench.mysql.target import conn_params
from tunebench.store.repo import Store

pytestmark = pytest.mark.integration  # the real sshd and the sandbox

APP = str(ROOT / "app")
# the client host is this machine: its Tunebench is this checkout's, run by this interpreter
PYTHON = f"PYTHONPATH={APP} {sys.executable}"



@pytest.fixture
def tcp_params(sandbox):
    params = conn_params(sandbox.target(), "tcp", database="tunebench")
    wl = load_workload("oltp_read_write")
    opts = wl.options({"table_size": 10000})
    prepare(params, "tunebench", opts, 10000)
    return params, wl, opts


def _runner(sshd, host="127.0.0.1"):
    return SshRunner(parse_ssh_url(sshd.url(host)), key_files=[sshd.key])


def _remote_workers_left(sshd):
    """The remote workers this session's sshd started (an xdist neighbour's sshd may be running its own)."""
    out = subprocess.run(["pgrep", "-f", "tunebench.load.remote_workers"], capture_output=True, text=True)
    below = descendants(sshd.proc.pid)
    return [int(p) for p in out.stdout.split() if int(p) in below]


def test_remote_builtin_tps_agrees_with_com_commit_per_step(tcp_params, trusted):
    """Two client hosts (two names of this machine), oltp_read_write: the merged TPS of each step is the server's
    Com_commit over the same seconds within 3 %, the threads split 2+1 then 2+2 over the hosts, each host's own
    seconds recorded, and no remote worker left afterwards."""
    params, wl, opts = tcp_params
    group = ClientGroup("main", wl, opts, (3, 4))
    host_samples = []
    engine = RemoteBuiltinEngine(params, [group], [_runner(trusted), _runner(trusted, "localhost")], python=PYTHON,
                                 workers=1, host_sink=lambda t, v: host_samples.append((t, v)))
    engine.open()
    try:
        # the server's password reached the hosts on the channel: on no command line, in no environment
        pids = _remote_workers_left(trusted)
        assert len(pids) >= 2 and params.password
        for pid in pids:
            for part in ("cmdline", "environ"):
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    assert params.password.encode() not in f.read(), (pid, part)
        for threads in (3, 4):
            # Com_commit at the engine's own second edges (tests/server_clock.py): the hosts count on its clock
            with ServerCounters(params, engine=engine) as clock:
                hists = engine.run_step({"main": threads}, 9, clock.sink, threading.Event())
            # the best-bracketed edges (tests/server_clock.py) over at least 6 s: over 3 s an edge's events in flight
            # and late replies were the whole 3 % (559 vs 540 beside a loaded suite)
            first, last = clock.window(min_intervals=6)
            server = clock.over(first, last)
            client = clock.client(first, last)
            assert len(clock.intervals) >= 4 and server > 50, (threads, len(clock.intervals), server)
            assert abs(client - server) / server < 0.03, (threads, client, server)
            assert {iv.threads for iv in clock.intervals} == {threads}
            assert hists["main"] is not None and hists["main"].total > 0  # histograms merged over the hosts
            assert all(iv.lat_ms.get("p95") for iv in clock.intervals)
    finally:
        engine.close()
    a, b = (f"client.main@{name_part(f'{h}:{trusted.port}')}" for h in ("127.0.0.1", "localhost"))
    last = host_samples[-1][1]
    assert last[f"{a}.threads"] == 2 and last[f"{b}.threads"] == 2
    assert last[f"{a}.tps"] > 0 and last[f"{b}.tps"] > 0
    wait_until(lambda: not _remote_workers_left(trusted), 15, "the remote workers to be gone")


def test_remote_builtin_open_loop_rate_is_served_over_the_hosts(tcp_params, trusted):
    """A rate (open loop) split over two hosts: what comes due is that rate, not twice it nor half, and the server
    commits what the hosts say they did. Whether the server keeps up is the machine's: beside a loaded suite it
    committed 111/s of the 150 asked, and the hosts' backlog grew by what it could not take. Fixed arrivals: the count
    of a Poisson stream's 7 s at 150/s has a standard deviation of 32, and the tolerance below (5 % + 8) is 1.9 of them
    (two clean-clone runs came out 1,115 and 1,119 due of 1,050); the split between the hosts is the same for both."""
    params, wl, opts = tcp_params
    group = ClientGroup("main", wl, opts, (4,), rates=(150.0,))
    engine = RemoteBuiltinEngine(params, [group], [_runner(trusted), _runner(trusted, "localhost")], python=PYTHON,
                                 workers=1)
    engine.open()
    try:
        with ServerCounters(params, engine=engine) as clock:
            engine.run_step({"main": 4}, 8, clock.sink, threading.Event(), rates={"main": OpenLoop(150.0, "fixed")})
    finally:
        engine.close()
    ivs = clock.intervals
    assert all(iv.rate == 150.0 for iv in ivs)
    first, last = 1, len(ivs) - 1
    seconds = last - first + 1
    done = clock.client(first, last)
    # due over the seconds = started (done, give or take the 4 in flight) + the backlog's growth + those skipped; and
    # the backlog the connections' first second left, dropped in the measured seconds (the engine tells the hosts
    # after it merged that second): 107 of it once, where it came out 940 of 1,050 due when it was left out
    due = done + (ivs[last].backlog or 0) - (ivs[first - 1].backlog or 0) + sum(iv.skipped + iv.dropped
                                                                                 for iv in ivs[first:])
    assert abs(due - 150 * seconds) <= 0.05 * 150 * seconds + 8, (due, done, [iv.backlog for iv in ivs],
                                                                   [iv.dropped for iv in ivs])
    server = clock.over(first, last)
    assert abs(done - server) <= 0.03 * server + 8, (done, server)
    if max(iv.backlog or 0 for iv in ivs) < 5:  # kept up: the server committed the rate
        assert abs(server / seconds - 150) / 150 < 0.1, server / seconds


def _run(cli, sshd, *hosts, python=PYTHON, threads="2", seconds="4", extra=()):
    args = ["run", "--workload", "oltp_point_select", "--threads", threads, "--step-seconds", seconds,
            "--engine", "builtin", "--table-size", "10000", "--ssh-key", sshd.key, "--json",
            "--remote-python", python, *extra]
    for h in hosts:
        args += ["--client-host", h]
    return cli(*args)


# Open loop at 300/s where the load's speed is not what is tested (a client host's steps and series recorded, a lost
# host's gap and its next step there): with closed loops the three tests below used 56-63 CPU s, remote workers
# included, 21-24 so (issue 41). (The per-test CPU account misses the remote workers: sshd reaps them, and its
# total lands on the session's last test when sshd stops.)
RATE = ("--rate", "300")


def test_cli_run_with_the_builtin_engine_on_a_client_host(sandbox, cli, trusted):
    out = _run(cli, trusted, trusted.url(), threads="2,3", extra=RATE)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert [s["threads"] for s in result["steps"]] == [2, 3]
    assert all(s["tps"] > 0 for s in result["steps"])
    series = Store(paths.default_db_path()).series(result["session_id"])
    host = f"client.main@{name_part(f'127.0.0.1:{trusted.port}')}"
    assert series[f"{host}.threads"].v.max() == 3 and series[f"{host}.tps"].v.mean() > 0
    wait_until(lambda: not _remote_workers_left(trusted), 15, "the remote workers to be gone")


@pytest.mark.parametrize(("python", "said"), [
    ("/nonexistent/python3.11", "no /nonexistent/python3.11 there"),
    (f"{sys.executable} -S", "cannot import tunebench"),  # no site-packages: no Tunebench there
])
def test_a_client_host_without_python_or_tunebench_is_one_line_and_exit_2(sandbox, cli, trusted, python, said):
    before = len(Store(paths.default_db_path()).list_sessions())
    out = _run(cli, trusted, trusted.url(), python=python)
    assert out.returncode == 2, out.stderr[-1500:]
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("tunebench: error")]
    assert len(errors) == 1 and said in errors[0] and f"127.0.0.1:{trusted.port}" in errors[0], out.stderr
    assert "Traceback" not in out.stderr
    assert len(Store(paths.default_db_path()).list_sessions()) == before  # nothing run, no session


def _sshd_sessions(sshd):
    out = subprocess.run(["pgrep", "-P", str(sshd.proc.pid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


@pytest.mark.parametrize("when", ["mid-step", "before-the-first-measured-second"])
def test_a_lost_client_host_is_a_gap_then_the_next_step_runs_there_again(sandbox, trusted, when):
    """Lost mid-step or in step 1's warm-up (before its first measured second: the step then has no second at
    all - it used to fail the whole run with "step 1 produced no intervals"): a gap, the step incomplete, the
    next step run there again, and no raw protocol line in what is said."""
    warmup = ["--warmup-seconds", "6"] if when != "mid-step" else []
    proc = subprocess.Popen([sys.executable, "-m", "tunebench", "run", "--workload", "oltp_point_select",
                             "--threads", "2,2", "--step-seconds", "6", "--engine", "builtin", "--table-size",
                             "10000", "--ssh-key", trusted.key, "--client-host", trusted.url(), "--remote-python",
                             PYTHON, *warmup, *RATE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env=dict(os.environ))
    wait_for_load(proc, lines=3 if when == "mid-step" else 1)
    for pid in _sshd_sessions(trusted):  # the connection's sshd processes die: the connection drops
        os.kill(pid, signal.SIGKILL)
    _rest, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err[-2000:]  # incomplete
    assert f"gap: client host 127.0.0.1:{trusted.port} lost" in err and '__tuple__' not in err, err[-2000:]
    store = Store(paths.default_db_path())
    session = store.get_session(store.list_sessions()[-1]["id"])
    assert session["status"] == "incomplete"
    steps = session["summary"]["steps"]
    assert steps[0].get("incomplete") is True
    assert steps[1]["tps"] > 0 and not steps[1].get("incomplete")  # started again there for step 2
    wait_until(lambda: not _remote_workers_left(trusted), 30, "the remote workers to be gone after the run")
