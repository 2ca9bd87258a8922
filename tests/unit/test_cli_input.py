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
        # issue 31: open loop
        (["run", "--workload", "oltp_point_select", "--rate", "abc"], "--rate wants a comma-separated list"),
        (["run", "--workload", "oltp_point_select", "--rate", "0"], "rates must be from 0.01"),
        (["run", "--workload", "oltp_point_select", "--rate", "nan"], "rates must be from 0.01"),
        (["run", "--workload", "oltp_point_select", "--latency-limit", "5"], "--latency-limit needs a rate"),
        (["run", "--workload", "oltp_point_select", "--threads", "1,2,3", "--rate", "1,2"], "2 rates for 3 steps"),
        (["run", "--workload", "oltp_point_select", "--rate", "10", "--latency-limit", "-1"],
         "--latency-limit must be above 0"),
        (["run", "--group", "g=oltp_point_select:2@x"], "--rate wants a comma-separated list"),
        (["sweep", "trx-commit-doublewrite", "--slo-p99", "5", "--plan"], "--slo-p99 needs a sweep over rates"),
        # issue 43 item 15: a second rate ran on for minutes without a search; session-only variables aborted late
        (["tune", "--workload", "oltp_point_select", "--knob", "innodb_io_capacity=100..200", "--rate", "100,200"],
         "--rate: a tune runs at one rate, got 100,200"),
        (["tune", "--workload", "oltp_point_select", "--knob", "sql_log_bin=0,1"], "sql_log_bin is a session variable"),
    ],
)
def test_one_clear_line(refused_cli, args, needle):
    out = refused_cli(*args)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("tunebench: error:") and needle in lines[0]


def test_sessions_file_export_import_and_edits(cli, tmp_path):
    from tunebench.store.repo import Store
    from tunebench.store.synthetic import record

    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    store = Store(a)
    sid = record(store, 20, 20)
    store.close()
    assert cli("--db", str(a), "sessions", "rename", str(sid), "trx commit flip").returncode == 0
    assert cli("--db", str(a), "sessions", "tag", str(sid), "demo,stage").returncode == 0
    out = tmp_path / "s.tbsession"
    no_file = cli("--db", str(a), "sessions", "export", str(sid), "--format", "sqlite")
    assert no_file.returncode == 2 and "--output" in no_file.stderr
    assert cli("--db", str(a), "sessions", "export", str(sid), "--format", "sqlite", "-O", str(out)).returncode == 0
    imported = cli("--db", str(b), "sessions", "import", str(out))
    assert imported.returncode == 0 and "imported 1 session(s)" in imported.stdout
    listed = cli("--db", str(b), "sessions", "list", "--json")
    (row,) = __import__("json").loads(listed.stdout)
    assert row["name"] == "trx commit flip" and row["tags"] == "demo,stage,imported"  # marked as imported
    bad = cli("--db", str(b), "sessions", "import", str(tmp_path / "a.sqlite-missing"))
    assert bad.returncode == 2 and "no such file" in bad.stderr and "Traceback" not in bad.stderr
    assert cli("--db", str(b), "sessions", "delete", "1").returncode == 0
    assert "no session 1" in cli("--db", str(b), "sessions", "show", "1").stderr


def test_target_add_refuses_to_overwrite_without_replace(cli, tmp_path):
    db = str(tmp_path / "s.sqlite")
    assert cli("--db", db, "target", "add", "prod", "--host", "db1").returncode == 0
    again = cli("--db", db, "target", "add", "prod", "--host", "db2", "--port", "3307")
    assert again.returncode == 2 and "exists; give --replace" in again.stderr
    assert "db1" in cli("--db", db, "target", "list").stdout
    assert cli("--db", db, "target", "add", "prod", "--host", "db2", "--replace").returncode == 0
    assert "db2" in cli("--db", db, "target", "list").stdout
    bad_port = cli("--db", db, "target", "add", "x", "--host", "h", "--port", "99999")
    assert bad_port.returncode == 2 and bad_port.stderr.count("\n") == 1 and "1 to 65535" in bad_port.stderr


def test_a_reader_that_stops_reading_is_no_traceback(tmp_path):
    """Issue 43 item 18: `tunebench ... --json | head` ended in a BrokenPipeError traceback. The pipe's reader is
    gone before the command writes: exit 141 (as a shell says SIGPIPE), nothing on stderr."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # the reader is gone
    proc = subprocess.run([sys.executable, "-m", "tunebench", "--db", str(tmp_path / "s.sqlite"), "workloads",
                           "--json"], stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(write)
    assert proc.returncode == 141 and proc.stderr == "", proc.stderr


def test_json_output_is_json_whatever_a_session_holds():
    """Issue 43 item 17: a NaN or an infinity read from a store was written as a bare NaN (no JSON reader takes it)."""
    import json
    import math

    from tunebench.cli.output import json_text

    text = json_text({"tps": math.nan, "steps": [{"p99": math.inf, "n": 3}], "ratio": -math.inf, "ok": 1.5})
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c}")) == {
        "tps": None, "steps": [{"p99": None, "n": 3}], "ratio": None, "ok": 1.5}


@pytest.mark.parametrize(("axis", "said"), [
    ('innodb_io_capacity = ["nan", "200"]', "'nan' is not a number a variable can take"),
    ('sql_log_bin = ["0", "1"]', "sql_log_bin is a session variable"),
])
def test_a_sweep_plan_refuses_axes_no_server_would_take(refused_cli, tmp_path, axis, said):
    """`sweep --plan` (no server asked) printed a plan over NaN and over a session-only variable (issue 43 item 15)."""
    f = tmp_path / "s.toml"
    f.write_text(f'workload = "oltp_point_select"\nthreads = [2]\nstep_seconds = 5\n[axes]\n{axis}\n')
    out = refused_cli("--db", str(tmp_path / "x.sqlite"), "sweep", str(f), "--plan")
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and said in lines[0], out.stderr
    assert not out.stdout.strip()
