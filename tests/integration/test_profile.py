"""Issue 18's CPU profile probe on the sandbox: a step of oltp_read_write under `--probes status,profile` yields
the server's top functions per window (series profile.mysqld.*) and the step's folded stacks (kernel symbols at
least: Debian's mariadbd is stripped), the load generator's likewise (profile.client.*), `sessions profile` prints
them and draws the flame graph, and no perf process outlives the run. A step's stacks are its own: the window in
progress is cut at the step's end. Without perf: one line, the other probes go on."""

import json
import os
import re
import subprocess

import pytest

from server_leaks import not_of_another_session

pytestmark = pytest.mark.integration


def perf_processes() -> list[str]:
    """perf processes this test session started (a neighbouring xdist worker may be profiling its own server)."""
    out = subprocess.run(["pgrep", "-a", "-x", "perf"], capture_output=True, text=True).stdout
    lines = [ln for ln in out.splitlines() if "tb-perf-" in ln]
    mine = set(not_of_another_session(int(ln.split()[0]) for ln in lines))
    return [ln for ln in lines if int(ln.split()[0]) in mine]


def test_a_step_yields_a_profile(each_server, cli, tmp_path):
    """On each server; a kit's server runs through its own loader, its process found all the same."""
    server = each_server
    out = cli("run", *server.args, "--workload", "oltp_read_write", "--threads", "4", "--step-seconds", "12",
              "--table-size", "10000", "--probes", "status,profile", "--json", timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["status"] == "completed"
    sid = result["session_id"]
    show = json.loads(cli("sessions", "show", str(sid), "--json").stdout)
    profile_series = [n for n in show["series"] if n.startswith("profile.mysqld.")]
    assert profile_series, sorted(show["series"])[:20]
    folded = show["steps"][0]["summary"]["_profile"]
    assert sum(folded.values()) > 50
    assert any("[k] " in stack for stack in folded)  # kernel symbols resolve
    # Debian's servers are stripped (MySQL keeps its exported names): said once, with what the nameless frames
    # count as, named after the server's own binary
    binary = "mysqld" if server.flavor == "mysql" else "mariadbd"
    stripped = [ln for ln in out.stderr.splitlines() if "has no symbols (stripped)" in ln]
    assert len(stripped) == 1 and f"'{binary} [unknown]'" in stripped[0], out.stderr[-2000:]
    assert any("stripped" in e["label"] for e in show["events"] if e["kind"] == "note")
    # the load generator's processes are profiled in the same perf: their own series and stacks
    assert [n for n in show["series"] if n.startswith("profile.client.")]
    assert sum(show["steps"][0]["summary"]["_profile_client"].values()) > 20
    client_top = json.loads(cli("sessions", "profile", str(sid), "--of", "client", "--json").stdout)
    assert client_top[0]["samples"] > 20
    top = json.loads(cli("sessions", "profile", str(sid), "--step", "1", "--top", "5", "--json").stdout)
    assert top[0]["step"] == 1 and len(top[0]["top"]) >= 5
    graph = tmp_path / "flame.svg"
    drawn = cli("sessions", "profile", str(sid), "--step", "1", "--svg", str(graph))
    assert drawn.returncode == 0 and graph.read_text().startswith("<svg")
    assert perf_processes() == []


def test_without_perf_the_other_probes_go_on(sandbox, cli):
    env = {"PATH": "/nonexistent:" + ":".join(p for p in os.environ["PATH"].split(":")
                                              if not os.path.exists(os.path.join(p, "perf")))}
    # open loop at 300/s: what is tested is the one line and the other probes going on, not the load's speed (a
    # closed loop took both cores for the step, issue 41)
    out = cli("run", "--workload", "oltp_point_select", "--threads", "2", "--rate", "300", "--step-seconds", "3",
              "--table-size", "10000", "--probes", "status,profile", "--json", env=env, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["status"] == "completed"
    assert "perf not found" in json.dumps(result["probes"])
    assert [ln for ln in out.stderr.splitlines() if "perf not found" in ln] != []
    assert "Traceback" not in out.stderr


# Alone, after the rest of the suite (Makefile): it counts perf's samples of one busy server second at 99 Hz, which
# needs the server to get the CPU a machine not shared with the suite's other workers gives (beside them: 16, not
# the > 20 this asks).
@pytest.mark.solo
def test_a_steps_stacks_are_its_own(sandbox, sandbox_params):
    """The window in progress when a step ends is cut there: what the load did after that lands in the next
    step, not in this one (before the cut, a 5 s window was counted in the step it ended in)."""
    import dataclasses
    import threading
    import time

    from tunebench.hosts.profile import ProfileProbe

    pid = sandbox.status().pid
    probe = ProfileProbe({"mysqld": lambda: [pid]}, window=5.0)
    probe.open()
    try:
        time.sleep(1.5)  # mid-window
        t0 = time.monotonic()
        assert probe.cut()
        assert time.monotonic() - t0 < 2.0
        probe.take_folded()
        done = threading.Event()

        def busy():  # server work after the cut
            from tunebench.load.driver import open_session

            s = open_session(dataclasses.replace(sandbox_params, database=None))
            while not done.is_set():
                s.query(b"SELECT BENCHMARK(200000, MD5('x'))")
            s.close()
        t = threading.Thread(target=busy)
        t.start()
        time.sleep(1.0)
        done.set()
        t.join()
        assert probe.cut()
        after = probe.take_folded()
        busy_samples = sum(after.get("mysqld", {}).values())
        assert busy_samples > 20  # the busy second, sampled at 99 Hz
        # nothing carried over: the busy second's samples were taken above (carried over, they would come again,
        # all of them). Between two cuts a moment apart only what the server's own threads did then can land:
        # clean-clone runs found 1-4 samples of InnoDB's background threads waking after the burst
        # (pthread_cond_signal -> futex_wake; io_uring_enter), against the busy second's 60-99
        assert probe.cut()
        left = sum(probe.take_folded().get("mysqld", {}).values())
        assert left <= max(2, busy_samples // 10), (left, busy_samples)
    finally:
        probe.close()
    assert perf_processes() == []


def test_a_sweep_profiles_every_step(sandbox, cli, tmp_path):
    """Issue 30 item 16: a sweep with the profile asked for keeps a profile for each of its steps, as a single run
    does; across a restart too (innodb_doublewrite is static on MariaDB 10.11: the server's pid changes)."""
    spec = tmp_path / "sweep.toml"
    spec.write_text('workload = "oltp_read_only"\nthreads = [4]\nstep_seconds = 4\nwarmup_seconds = 0\n'
                    '[options]\ntable_size = 10000\n[axes]\ninnodb_doublewrite = ["ON", "OFF"]\n')
    out = cli("sweep", str(spec), "--probes", "status,proc,profile", "--json", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["status"] == "completed" and result["restarts"] >= 1
    assert_every_step_profiled(result["session_id"], out.stderr, cli)


def assert_every_step_profiled(sid, notes, cli):
    """Each step of session `sid` keeps the server's folded stacks, but a step whose last perf window the run said
    came too late (a machine so loaded that perf took over 10 s to hand its window in: seen here with the load
    average at 14 on 2 CPUs): that one step, named in the run's own notes, and never the first and the last both."""
    show = json.loads(cli("sessions", "show", str(sid), "--json").stdout)
    steps = show["steps"]
    assert len(steps) == 2
    late = {int(m) for m in re.findall(r"CPU profile's last window of step (\d+) came too late", notes)}
    unprofiled = {i + 1 for i, s in enumerate(steps) if not s["summary"].get("_profile")}
    assert unprofiled <= late and len(unprofiled) < len(steps), ([sorted(s["summary"]) for s in steps], notes[-3000:])
    cpu = server_cpu_seconds(sid, cli)
    for i, s in enumerate(steps):
        if i + 1 not in unprofiled:
            # the server's CPU while perf recorded: its windows cover part of the step (the gaps while `perf
            # script` runs are wide on a loaded machine: 94 samples for 5.4 CPU s of a step beside the suite)
            covered = s["summary"]["_profile_seconds"] / (s["ended_at"] - s["started_at"])
            assert covered > 0, (s["summary"]["_profile_seconds"], s["started_at"], s["ended_at"])
            assert_samples_cover(sum(s["summary"]["_profile"].values()), cpu[i] * min(covered, 1.0))
    listed = json.loads(cli("sessions", "profile", str(sid), "--json").stdout)
    assert [p["step"] for p in listed] == [i + 1 for i in range(len(steps)) if i + 1 not in unprofiled]
    assert perf_processes() == []


def server_cpu_seconds(sid, cli) -> list[float]:
    """The CPU seconds the server's process used in each step of session `sid`, from the run's own `proc` probe
    (proc.<host>.server.cpu: % of all CPUs, one point a second)."""
    data = json.loads(cli("sessions", "export", str(sid), "--format", "json").stdout)
    (name,) = [n for n in data["series"] if n.startswith("proc.") and n.endswith(".server.cpu")]
    t, v = data["series"][name]["t"], data["series"][name]["v"]
    ncpu = os.cpu_count() or 1
    out = []
    for s in data["steps"]:
        end = s["ended_at"] if s.get("ended_at") is not None else float("inf")
        out.append(sum(x for ti, x in zip(t, v, strict=True) if s["started_at"] <= ti <= end) * ncpu / 100.0)
    return out


def assert_samples_cover(samples: int, cpu_seconds: float) -> None:
    """perf samples every CPU at 99 Hz, so the server gets ~99 samples per second of its own CPU time while perf
    records: a step's stacks hold at least a fifth of what the server's CPU time in the step gives, and some (a
    step of load is never without the server's stacks). Whatever CPU the machine let the server have: a fixed
    count (> 50) failed where the server got little (25 samples, CI). perf records in 5 s windows and runs
    `perf script` between them, so a loaded machine widens the gaps: 99-101/s quiet, 76-97/s beside three CPU
    hogs, 38/s (17/s once) beside the suite's four workers (load average ~10) -- hence `cpu_seconds` is the
    server's CPU while perf recorded (the step's `_profile_seconds`)."""
    print(f"profile: {samples} samples for {cpu_seconds:.2f} server CPU s ({samples / max(cpu_seconds, 1e-9):.0f}/s)")
    assert samples > 0 and samples >= 0.2 * 99 * cpu_seconds, (samples, cpu_seconds)
