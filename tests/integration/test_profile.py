"""Issue 18's CPU profile probe on the sandbox: a step of oltp_read_write under `--probes status,profile` yields
the server's top functions per window (series profile.mysqld.*) and the step's folded stacks (kernel symbols at
least: Debian's mariadbd is stripped), `sessions profile` prints them and draws the flame graph, and no perf
process outlives the run. Without perf: one line, the other probes go on."""

import json
import os
import subprocess

import pytest

pytestmark = pytest.mark.integration


def perf_processes() -> list[str]:
    out = subprocess.run(["pgrep", "-a", "-x", "perf"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if "tb-perf-" in ln]


def test_a_step_yields_a_profile(sandbox, cli, tmp_path):
    out = cli("run", "--workload", "oltp_read_write", "--threads", "4", "--step-seconds", "12", "--table-size",
              "10000", "--probes", "status,profile", "--json", timeout=240)
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
    top = json.loads(cli("sessions", "profile", str(sid), "--step", "1", "--top", "5", "--json").stdout)
    assert top[0]["step"] == 1 and len(top[0]["top"]) >= 5
    graph = tmp_path / "flame.svg"
    drawn = cli("sessions", "profile", str(sid), "--step", "1", "--svg", str(graph))
    assert drawn.returncode == 0 and graph.read_text().startswith("<svg")
    assert perf_processes() == []


def test_without_perf_the_other_probes_go_on(sandbox, cli):
    env = {"PATH": "/nonexistent:" + ":".join(p for p in os.environ["PATH"].split(":")
                                              if not os.path.exists(os.path.join(p, "perf")))}
    out = cli("run", "--workload", "oltp_point_select", "--threads", "2", "--step-seconds", "3", "--table-size",
              "10000", "--probes", "status,profile", "--json", env=env, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["status"] == "completed"
    assert "perf not found" in json.dumps(result["probes"])
    assert [ln for ln in out.stderr.splitlines() if "perf not found" in ln] != []
    assert "Traceback" not in out.stderr
