"""Busy seconds on a real run (core/busy.py): beside two CPU hogs, a step says how many of its seconds other
processes took the machine, in its JSON row, under the table and in the report."""

import json
import subprocess
import sys

import pytest

from tunebench.cli.output import steps_table

pytestmark = pytest.mark.integration


def test_a_run_beside_cpu_hogs_counts_its_busy_seconds(sandbox, cli):
    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
    try:
        out = cli("run", "--workload", "oltp_point_select", "--threads", "2", "--step-seconds", "4",
                  "--probes", "proc", "--json")
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert out.returncode == 0, out.stderr
    step = json.loads(out.stdout)["steps"][0]
    busy = step["busy"]
    # two processes that never sleep, on this machine's cores: other processes had far more than 10 % of it
    assert busy["host"] == "local" and busy["of"] >= 3 and busy["seconds"] >= busy["of"] - 1, busy
    assert busy["other_pct"] > 20, busy
    line = f"step 1: busy {busy['seconds']} of {busy['of']} s: {busy['other_pct']:.0f} % of the CPU used by other"
    assert line in steps_table(json.loads(out.stdout)["steps"])
    # and the report, from the session as stored
    md = cli("sessions", "export", str(json.loads(out.stdout)["session_id"]), "--format", "md")
    assert md.returncode == 0, md.stderr
    assert "## Busy seconds" in md.stdout
    assert f"| 1 | {busy['seconds']} of {busy['of']} | {busy['other_pct']:.0f} % | local |" in md.stdout
