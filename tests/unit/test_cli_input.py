"""Bad input that needs no server: one clear line, non-zero exit, no traceback."""

import pytest


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "--workload", "oltp_point_select", "--threads", "0"], "--threads values must be >= 1"),
        (["run", "--workload", "oltp_point_select", "--threads", "a,b"], "comma-separated list"),
        (["run", "--workload", "nope"], "unknown workload 'nope'; available: "),
        (["run", "--workload", "oltp_point_select", "--engine", "jmeter"], "unknown engine 'jmeter'"),
        (["run", "--workload", "oltp_point_select", "-o", "rand_type=wobbly"], "rand_type"),
        (["run", "--workload", "oltp_point_select", "--target", "nosuch"], "unknown target 'nosuch'"),
        (["sessions", "show", "999"], "no session 999"),
    ],
)
def test_one_clear_line(cli, args, needle):
    out = cli(*args)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("tunebench: error:") and needle in lines[0]
