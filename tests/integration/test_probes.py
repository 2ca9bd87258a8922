"""Issue 3's must-show: probes on the real sandbox, on the engine's clock, leaving the server as found."""

import itertools
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import SERVERS, _run_in_process, run_cli, server_under_test

from tunebench.mysql.connect import open_connection
from tunebench.mysql.target import conn_params, read_option_file_password
from tunebench.store.repo import Store

pytestmark = pytest.mark.integration
INSTR = ("wait/synch/mutex/innodb/%", "wait/synch/rwlock/innodb/%", "wait/synch/sxlock/innodb/%")


def _rows(params, sql, args=(), columns=None):
    """The rows; with `columns`, only those of these columns the result has (by name)."""
    conn = open_connection(params)
    try:
        cur = conn.cursor()
        cur.execute(sql, args)
        rows = list(cur.fetchall()) if cur.with_rows else []
        if columns:
            names = [d[0].upper() for d in cur.description]
            keep = [names.index(c) for c in columns if c in names]
            rows = [tuple(r[i] for i in keep) for r in rows]
        cur.close()
        return rows
    finally:
        conn.close()


def probe_settings(params):
    """Everything the probes may change: PFS instruments and consumers, InnoDB monitor counters."""
    where = " OR ".join(["NAME LIKE %s"] * len(INSTR))
    return {
        "instruments": _rows(params, f"SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments "
                                     f"WHERE {where} ORDER BY NAME", INSTR),
        "consumers": _rows(params, "SELECT NAME, ENABLED FROM performance_schema.setup_consumers ORDER BY NAME"),
        # the enabled column is ENABLED on MariaDB, STATUS on MySQL 8+
        "monitors": _rows(params, "SELECT * FROM information_schema.INNODB_METRICS ORDER BY NAME", columns=(
            "NAME", "ENABLED", "STATUS")),
    }


def _amount(series, name, t_from, t_to, edges: str | None = None, grid=None):
    """How many (queries, ...) a per-second rate series counts in [t_from, t_to]: each sample is the rate over
    the time since the one before it, weighted by how much of that time lies in the span. Two series sampled
    at different offsets (the engine's seconds, the probe's seconds) are compared over exactly one span.
    `edges`: the series of where each of the engine's seconds really ended (client.<g>.edge_ms, ms after its
    nominal end: late on a busy machine, and a tick counts from one take to the next).
    `grid`: the probe's read instants when a series may skip some (a digest's series starts when it enters the
    top N, and has no sample when its row was reset): a sample's rate is over the time since the probe's read
    before it, not since that series' own sample before it."""
    d = series[name]
    t, v = np.asarray(d.t, float), np.asarray(d.v, float)
    if edges is not None:
        e = series[edges]
        assert np.array_equal(np.asarray(e.t, float), t), (len(e.t), len(t))
        t = t + np.asarray(e.v, float) / 1000.0
    start = np.concatenate(([t[0] - 1.0], t[:-1]))
    if grid is not None:
        g = np.asarray(grid, float)
        at = np.searchsorted(g, t)
        assert np.array_equal(g[at], t), name
        start = np.where(at > 0, g[np.maximum(at - 1, 0)], t - 1.0)
    overlap = np.clip(np.minimum(t, t_to) - np.maximum(start, t_from), 0, None)
    return float(np.sum(v * overlap))


def _steady(series, name, t_from, t_to):
    d = series[name]
    keep = (d.t >= t_from) & (d.t <= t_to)
    return d.v[keep]


@pytest.fixture(scope="module", params=SERVERS)
def rw16(request, sandbox, kit_sandboxes):
    """One oltp_read_write run at 16 threads with every probe, shared by the checks below, on each server
    (MariaDB 10.11, MySQL 9, MariaDB 11.8).

    Half the InnoDB mutex instruments are switched off first, so the run has something to enable and
    put back; the sandbox is returned to its own settings afterwards. A 16-s step: beside the suite at load 27
    a 10-s one left 6 probe readings in its 7 steady seconds, too few for the 5-s spans compared below.
    """
    server = server_under_test(request.param, sandbox, kit_sandboxes)
    admin = conn_params(server.sandbox.target(), "socket")
    _rows(admin, "UPDATE performance_schema.setup_instruments SET ENABLED='NO', TIMED='NO' "
                 "WHERE NAME LIKE 'wait/synch/mutex/innodb/%%' AND NAME > 'wait/synch/mutex/innodb/m'")
    before = probe_settings(admin)
    out = run_cli("run", *server.args, "--workload", "oltp_read_write", "--threads", "16", "--step-seconds", "16",
                  "--table-size", "10000", "--json")
    after = probe_settings(admin)
    _rows(admin, "UPDATE performance_schema.setup_instruments SET ENABLED='YES', TIMED='YES' "
                 "WHERE NAME LIKE 'wait/synch/mutex/innodb/%%'")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    return {"result": result, "stderr": out.stderr, "before": before, "after": after,
            "sid": result["session_id"], "server": server}


def test_rw16_records_waits_cpu_processes_and_server_counters(rw16, cli):
    show = json.loads(cli("sessions", "show", str(rw16["sid"]), "--json").stdout)
    series = show["series"]
    waits = {n: s for n, s in series.items() if n.startswith("waits.") and n.endswith(".count")}
    assert len(waits) >= 5 and series["waits.total.count"]["max"] > 0 and series["waits.total.ms"]["max"] > 0
    assert any(s["mean"] > 0 for n, s in waits.items() if n not in ("waits.total.count", "waits.other.count"))
    for state in ("user", "system", "iowait", "steal", "idle"):
        assert f"host.local.cpu.{state}" in series
    assert series["host.local.cpu.busy"]["mean"] > 20
    # mariadbd, and the builtin engine's worker processes: each found and measured. Their shares of the machine
    # follow what else runs (a busy suite gave the client 3.7 %); the client's work per statement does not: the
    # engine uses a sizeable fraction of the server's CPU, never next to nothing (a probe that lost the workers)
    assert series["proc.local.server.cpu"]["mean"] > 1
    assert series["proc.local.client.cpu"]["mean"] > 0.1 * series["proc.local.server.cpu"]["mean"]
    assert series["server.threads_running"]["max"] >= 2
    assert series["server.threads_connected"]["max"] >= 16
    for name in ("server.questions", "server.com_commit", "server.handler_read_key", "server.history_list_length",
                 "server.checkpoint_age", "innodb.lock_row_lock_waits", "innodb.trx_rseg_history_len"):
        assert name in series, name
    kinds = {n: s["kind"] for n, s in series.items()}
    assert kinds["server.questions"] == "rate" and kinds["server.threads_running"] == "gauge"
    assert kinds["waits.total.count"] == "rate" and kinds["host.local.cpu.user"] == "gauge"
    # each probe said what it uses, once, in the session's events
    probe_events = [e for e in show["events"] if e["kind"] == "probe"]
    assert sorted(e["data"]["probe"] for e in probe_events) == ["cpu", "metrics", "proc", "status", "tables", "waits"]
    assert not [e for e in show["events"] if e["kind"] in ("probe_unavailable", "probe_error")]


def test_server_questions_agree_with_engine_qps(rw16):
    store = Store(Path(os.environ["TUNEBENCH_HOME"]) / "sessions.sqlite")
    series = store.series(rw16["sid"])
    session = store.get_session(rw16["sid"])
    store.close()
    step = session["steps"][0]
    # steady state: skip the first two seconds and the last one of the step
    lo, hi = step["started_at"] + 3, step["ended_at"] - 1.5
    qps = _steady(series, "client.main.qps", lo, hi)
    questions = _steady(series, "server.questions", lo, hi)
    assert len(qps) >= 5 and len(questions) >= 5
    # totals over one span, not means of differently offset seconds (those drifted 3-5 % under machine load). The
    # server's Questions counts the statements that failed too (a deadlock, MariaDB 11.8's snapshot-isolation
    # conflicts: 1.4 % of the statements beside a CPU hog); the engine's QPS, as sysbench's, only those that completed,
    # and each failure is one of its errors
    # Over the span of the steady seconds (at least 5 s) whose two ends are a probe reading and an engine second's
    # edge nearest each other for its length: a span cut inside a second prorates that second, and where the rate
    # swings (16 threads beside the suite's other workers, load 16) the two series' prorated seconds differed by
    # 2.2 % of a 14-s total. Which seconds are compared is chosen, the tolerance is what it was
    # (tests/server_clock.py does the same for the TPS truth tests).
    reads = np.asarray(series["server.questions"].t, float)
    reads = reads[(reads >= lo) & (reads <= hi)]
    ends = np.asarray(series["client.main.qps"].t, float) + np.asarray(series["client.main.edge_ms"].v, float) / 1000
    apart = {float(r): float(np.min(np.abs(ends - r))) for r in reads}
    # (at least three quarters of the steady seconds: a short span makes the clocks' own offsets weigh more; 5 s
    # spans gave 3.3 %)
    spans = [(a, b) for a in apart for b in apart if b - a >= max(5.0, 0.75 * (reads[-1] - reads[0]))]
    assert spans, (lo, hi, reads)
    first, last = min(spans, key=lambda ab: (apart[ab[0]] + apart[ab[1]]) / (ab[1] - ab[0]))
    parts = {name: _amount(series, name, first, last, edges="client.main.edge_ms")
             for name in ("client.main.qps", "client.main.errors")}
    server = _amount(series, "server.questions", first, last)
    ratio = server / sum(parts.values())
    seen = {name: list(zip(series[name].t, series[name].v, strict=True))
            for name in ("server.questions", "client.main.qps", "client.main.errors")}
    assert abs(ratio - 1) < 0.02, (ratio, server, parts, (first, last), seen, rw16["stderr"][-2000:])
    # and per second on the shared clock, not just on average: each of the probe's seconds against what the engine
    # counted over that same second (its seconds and the probe's are not in phase: pairing them by index compared
    # each with the one before once a probe's sample fell just inside the span, 16 % apart on a busy machine)
    probe_t = series["server.questions"].t

    def ratio_over(a: float, b: float) -> float:
        engine = sum(_amount(series, name, a, b, edges="client.main.edge_ms")
                     for name in ("client.main.qps", "client.main.errors"))
        server = _amount(series, "server.questions", a, b)
        # a second the engine counted nothing in (the machine stalled it): as far off as can be, unless the server
        # counted nothing either
        return server / engine if engine > 0 else (1.0 if server == 0 else math.inf)

    per_second = [ratio_over(a, b) for a, b in itertools.pairwise(probe_t) if a >= lo and b <= hi]
    # Each probe reading's instant is trusted to RateTracker.UNCERTAIN_SHARE of its interval (a reading less certain
    # is folded into the next), so one second's count may be off by that much at each of its two edges: the median
    # second within twice that (and the in-flight statements' 5 %). A quiet machine gives medians of 0.5-2 %,
    # eight CPU hogs 2-5 %; a CI run at load 15 gave 0.20 against the 0.1 this once asked (seconds of 0.55 and
    # 1.64 beside each other: one edge's reading late by ~0.4 s of a 1-s interval).
    from tunebench.core.probe import RateTracker

    bound = 2 * RateTracker.UNCERTAIN_SHARE + 0.05
    assert len(per_second) >= 4 and np.median(np.abs(np.asarray(per_second) - 1)) < bound, per_second


def test_settings_are_put_back_exactly(rw16):
    assert rw16["before"] == rw16["after"]
    desc = rw16["result"]["probes"]
    assert desc["waits"]["ok"] and "enabled for the session" in desc["waits"]["detail"]
    assert desc["metrics"]["ok"] and "enabled" in desc["metrics"]["detail"]


def test_csv_export_has_every_series(rw16, cli):
    show = json.loads(cli("sessions", "show", str(rw16["sid"]), "--json").stdout)
    out = cli("sessions", "export", str(rw16["sid"]), "--format", "csv")
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.strip().splitlines()
    cols = header.split(",")
    assert cols[:2] == ["elapsed_s", "t"]
    assert set(cols[2:]) == set(show["series"])
    assert len(rows) >= 10
    # one row per second on the timeline
    elapsed = [int(r.split(",")[0]) for r in rows]
    assert elapsed == sorted(set(elapsed))


def test_sysbench_engine_client_cpu_follows_new_processes(sandbox, cli):
    # open loop at 1,000/s: what is tested is that each step's new sysbench is found and measured, not the load's
    # speed. Its sysbench read 2-3.5 % of the machine a second (quiet; closed loop 11.5-23.5 %), four to seven times
    # the 0.5 % asked below, and a process that needs little gets it beside a busy suite; the closed loop cost 12.1
    # CPU s for the test, this 2.6 (issue 41)
    out = cli("run", "--engine", "sysbench", "--workload", "oltp_point_select", "--threads", "1,2", "--rate", "1000",
              "--step-seconds", "3", "--probes", "proc,status", "--json")
    assert out.returncode == 0, out.stderr
    sid = json.loads(out.stdout)["session_id"]
    show = json.loads(cli("sessions", "show", str(sid), "--json").stdout)
    assert show["series"]["proc.local.client.cpu"]["max"] > 0.5
    assert not any(n.startswith(("waits.", "host.", "innodb.")) for n in show["series"])
    # both steps saw a sysbench process (each step starts a new one)
    store = Store(Path(sandbox.base).parent / "sessions.sqlite")
    series, session = store.series(sid), store.get_session(sid)
    store.close()
    # seen in each step: a probe that lost the process (the first step's sysbench gone) reads 0 for the second. Not
    # how much CPU it got: beside the suite's other workers (load 16) the second step's sysbench had 4 % and 2 %
    # of a core where 5 was asked (that asked the machine to be quiet)
    for step in session["steps"]:
        cpu = _steady(series, "proc.local.client.cpu", step["started_at"] + 1, step["ended_at"])
        assert cpu.max() > 0.5, cpu


def test_no_process_privilege_run_works_and_says_so_once(sandbox, cli):
    admin = conn_params(sandbox.target(), "socket")
    _rows(admin, "CREATE USER IF NOT EXISTS 'tb_limited'@'localhost' IDENTIFIED BY 'limited-pw-1'")
    _rows(admin, "GRANT ALL ON tunebench.* TO 'tb_limited'@'localhost'")
    url = f"mysql://tb_limited@localhost/tunebench?socket={sandbox.socket}"
    # open loop at 300/s: what is tested is what the probes say without PROCESS, not the load's speed (a closed
    # loop took both cores for the step: 4.9-8 CPU s for the test, issue 41)
    out = cli("run", "--target", url, "--workload", "oltp_point_select", "--threads", "2", "--step-seconds", "3",
              "--rate", "300", "--json", env={"MYSQL_PWD": "limited-pw-1"})
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("probe ")]
    assert len([ln for ln in lines if ln.startswith("probe metrics unavailable")]) == 1
    assert any("PROCESS privilege" in ln for ln in lines)
    assert len([ln for ln in lines if ln.startswith("probe waits unavailable")]) == 1
    assert len(lines) == 2, lines
    assert "Traceback" not in out.stderr
    described = json.loads(out.stdout)["probes"]["tables"]  # table sizes without PROCESS: InnoDB's estimates
    assert described["ok"] and "information_schema.TABLES" in described["detail"] and "PROCESS" in described["detail"]
    result = json.loads(out.stdout)
    assert result["steps"][0]["tps"] > 0
    assert not result["probes"]["metrics"]["ok"] and result["probes"]["status"]["ok"]
    show = json.loads(cli("sessions", "show", str(result["session_id"]), "--json").stdout)
    assert "server.questions" in show["series"] and "host.local.cpu.user" in show["series"]
    assert len([e for e in show["events"] if e["kind"] == "probe_unavailable"]) == 2
    doctor = json.loads(cli("doctor", "--json", "--target", url, env={"MYSQL_PWD": "limited-pw-1"}).stdout)
    assert doctor["probes"]["available"]["metrics"]["ok"] is False
    assert doctor["probes"]["available"]["status"]["ok"] is True


def test_server_without_performance_schema(cli):
    from tunebench.hosts.sandbox import SandboxServer

    base = Path(tempfile.mkdtemp(prefix="tb-nopfs-"))
    sb = SandboxServer(base / "sandbox")
    try:
        sb.start({"performance_schema": "OFF"})
        t = sb.target()
        env = {"MYSQL_PWD": read_option_file_password(Path(t.password_file))}
        url = f"mysql://{t.user}@localhost/tunebench?socket={t.socket}"
        # open loop at 300/s: what is tested is the waits probe's one line, not the load's speed (issue 41)
        out = cli("run", "--target", url, "--workload", "oltp_point_select", "--threads", "2", "--rate", "300",
                  "--step-seconds", "2", "--table-size", "1000", "--json", env=env)
        assert out.returncode == 0, out.stderr
        lines = [ln for ln in out.stderr.splitlines() if ln.startswith("probe ")]
        assert lines == ["probe waits unavailable: performance_schema is OFF (static on MariaDB: restart the "
                         "server with performance_schema=ON)"]
        doctor = cli("doctor", "--target", url, env=env)
        assert "waits     UNAVAILABLE: performance_schema is OFF" in doctor.stdout
    finally:
        sb.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_doctor_lists_probes_on_the_sandbox(sandbox, cli):
    out = cli("doctor", "--json")
    report = json.loads(out.stdout)
    assert report["probes"]["target"] == "sandbox"
    assert all(p["ok"] for p in report["probes"]["available"].values()), report["probes"]


def test_probes_none_and_bad_probe_names(sandbox, cli):
    # open loop at 300/s: what is tested is which series are recorded, not the load's speed (issue 41)
    out = cli("run", "--workload", "oltp_point_select", "--threads", "1", "--step-seconds", "2", "--probes", "none",
              "--rate", "300", "--json")
    assert out.returncode == 0, out.stderr
    show = json.loads(cli("sessions", "show", str(json.loads(out.stdout)["session_id"]), "--json").stdout)
    assert all(n.startswith("client.") for n in show["series"])
    # refused before anything runs: in this process (tests/conftest.py _run_in_process: main(), its stderr and exit
    # status), not two more processes of 1.4 CPU s each (issue 41)
    bad = _run_in_process(("run", "--workload", "oltp_point_select", "--probes", "status,mutexes"))
    assert bad.returncode == 2 and bad.stderr.strip() == \
        "tunebench: error: unknown probe 'mutexes'; choose from status, waits, metrics, tables, cpu, proc, " \
        "statements, profile, all or none"
    bad = _run_in_process(("run", "--workload", "oltp_point_select", "--probe-interval", "0.01"))
    assert bad.returncode == 2 and "probe interval must be between 0.25 and 60" in bad.stderr
