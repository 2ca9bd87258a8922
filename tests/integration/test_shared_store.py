"""A session store on a server database shared by several machines: a PostgreSQL (Debian's package) and a MariaDB
that is not the sandbox under test, both started here on private directories and loopback ports.

Two runs at once into one store, a store that goes away mid-run and comes back (every second the run printed is
there), one that stays away past the bound (the run stops, the server put back), a store of the previous schema
migrated, push and pull, and the bad inputs (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from sqlalchemy import create_engine, inspect, text
from tests.conftest import ROOT, run_cli, server_under_test, wait_until

from store_servers import MariaDBStore, PostgresStore
from tunebench.store.models import SCHEMA_VERSION
from tunebench.store.repo import Store

pytestmark = pytest.mark.integration

LIVE = re.compile(r"^\[\s*(\d+)s \] main thds: \d+ tps: ([\d.]+) ")


@pytest.fixture(scope="module")
def pg():
    server = PostgresStore()
    yield server
    server.close()


@pytest.fixture(scope="module")
def mstore(tmp_path_factory):
    server = MariaDBStore(tmp_path_factory.mktemp("mstore"))
    yield server
    server.close()


@pytest.fixture(params=["postgresql", "mariadb"])
def shared(request, pg, mstore):
    """(URL, environment with its password) of each kind of server store, emptied for the test. (Both servers
    asked for here: a module's server started inside a test would be taken for one the test left running.)"""
    server = pg if request.param == "postgresql" else mstore
    url = server.url()
    env = {"TUNEBENCH_DB_PASSWORD": server.password}
    _empty(url, server.password)
    return url, env


def _engine(url: str, password: str):
    from sqlalchemy.engine import make_url

    return create_engine(make_url(url).set(password=password))


def _empty(url: str, password: str) -> None:
    engine = _engine(url, password)
    with engine.begin() as c:
        if c.dialect.name == "postgresql":
            c.execute(text("DROP SCHEMA public CASCADE"))
            c.execute(text("CREATE SCHEMA public"))
        else:
            tables = inspect(c).get_table_names()
            c.execute(text("SET FOREIGN_KEY_CHECKS=0"))
            for t in tables:
                c.execute(text(f"DROP TABLE `{t}`"))
            c.execute(text("SET FOREIGN_KEY_CHECKS=1"))
    engine.dispose()


def _tables(url: str, password: str) -> set[str]:
    engine = _engine(url, password)
    with engine.connect() as c:
        found = set(inspect(c).get_table_names())
    engine.dispose()
    return found


def _run(url: str, env: dict[str, str], *args: str) -> subprocess.Popen:
    import os

    # an open loop at 300/s: these tests are about the store (what it keeps, however the run goes), not the load's
    # speed; at full speed each run took both cores for its seconds
    return subprocess.Popen([sys.executable, "-m", "tunebench", "--db", url, "run", "--workload", "oltp_point_select",
                             "--threads", "2", "--rate", "300", "--probes", "none", *args], cwd=ROOT,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **env})


def _here(monkeypatch, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """`tunebench ARGS` with `env` added to the environment, as a process. (Run in this process for issue 41, one of
    these left a PostgreSQL connection open: its ResourceWarning failed a later test on the same worker of a clean
    clone, not traced yet. A process's exit closes what it opened.)"""
    return run_cli(*args, env=env)


def _store(url: str, env: dict[str, str], monkeypatch) -> Store:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return Store(url)


def _seconds(store: Store) -> int:
    """Seconds of client.main.tps in the newest session of the store."""
    ids = [s["id"] for s in store.list_sessions()]
    data = store.series(ids[-1], ["client.main.tps"]).get("client.main.tps") if ids else None
    return 0 if data is None else len(data.v)


def _live_seconds(out: str) -> list[float]:
    return [float(m.group(2)) for line in out.splitlines() if (m := LIVE.match(line))]


def test_two_runs_at_once_into_one_store_then_list_by_machine(shared, sandbox, kit_sandboxes, monkeypatch):
    """Two machines (named by TUNEBENCH_HOSTNAME) record into one store at once, against two servers."""
    url, env = shared
    other = server_under_test("mariadb-11.8", sandbox, kit_sandboxes)
    first = _run(url, {**env, "TUNEBENCH_HOSTNAME": "lab-a"}, "--step-seconds", "4")
    second = _run(url, {**env, "TUNEBENCH_HOSTNAME": "lab-b"}, "--step-seconds", "4", *other.args)
    outs = [p.communicate(timeout=120) for p in (first, second)]
    for p, (_out, err) in zip((first, second), outs, strict=True):
        assert p.returncode == 0, err[-3000:]
    listed = _here(monkeypatch, env, "--db", url, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    assert sorted((s["host"], s["status"]) for s in sessions) == [("lab-a", "completed"), ("lab-b", "completed")]
    # the two overlapped in time: they were written at once, not one after the other
    a, b = sorted(sessions, key=lambda s: s["host"])
    assert a["started_at"] < b["ended_at"] and b["started_at"] < a["ended_at"]
    only = json.loads(_here(monkeypatch, env, "--db", url, "sessions", "list", "--json", "--host", "lab-b").stdout)
    assert [s["id"] for s in only] == [b["id"]]
    text_list = _here(monkeypatch, env, "--db", url, "sessions", "list").stdout
    assert "lab-a" in text_list and "lab-b" in text_list
    # every second each run printed is in the store, to the printed hundredth
    store = _store(url, env, monkeypatch)
    for (out, _err), s in zip(outs, (a, b), strict=True):
        printed = _live_seconds(out)
        stored = store.series(s["id"], ["client.main.tps"])["client.main.tps"].v
        assert len(printed) >= 4 and len(stored) == len(printed)
        assert stored == pytest.approx(printed, abs=0.006)
    store.close()


def test_a_store_that_goes_away_mid_run_and_comes_back_loses_nothing(pg, sandbox, monkeypatch):
    url, env = pg.url(), {"TUNEBENCH_DB_PASSWORD": pg.password}
    _empty(url, pg.password)
    proc = _run(url, env, "--step-seconds", "12")
    store = _store(url, env, monkeypatch)
    try:

        wait_until(lambda: _seconds(store) >= 3, 60, "three seconds in the store")
        store.close()
        pg.stop()
        time.sleep(4)  # the run goes on meanwhile: what it would write stays in its memory
        pg.start()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-3000:]
    assert "is unreachable" in err and "keeping the samples in memory" in err and "nothing was lost" in err, err
    assert "Traceback" not in err
    session = store.list_sessions()[-1]
    assert session["status"] == "completed"
    tps = store.series(session["id"], ["client.main.tps"])["client.main.tps"]
    printed = _live_seconds(out)
    assert len(printed) >= 12 and len(tps.v) == len(printed)
    assert tps.v == pytest.approx(printed, abs=0.006)
    assert float(max(b - a for a, b in zip(tps.t[:-1], tps.t[1:], strict=True))) < 1.5  # no hole
    store.close()


def _probe_side_state(sandbox):
    from tunebench.mysql.connect import admin_connect, query_all

    conn = admin_connect(sandbox.target())
    try:
        return (sorted(query_all(conn, "SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments "
                                       "WHERE NAME LIKE 'wait/synch/%/innodb/%'")),
                sorted(query_all(conn, "SELECT NAME, ENABLED FROM performance_schema.setup_consumers")))
    finally:
        conn.close()


def test_a_store_away_past_the_bound_stops_the_run_in_one_line_and_puts_the_server_back(pg, sandbox, monkeypatch):
    url, env = pg.url(), {"TUNEBENCH_DB_PASSWORD": pg.password, "TUNEBENCH_STORE_HOLD": "40"}
    _empty(url, pg.password)
    before = _probe_side_state(sandbox)
    import os

    proc = subprocess.Popen([sys.executable, "-m", "tunebench", "--db", url, "run", "--workload",
                             "oltp_point_select", "--threads", "2", "--rate", "300", "--step-seconds", "60",
                             "--probes", "waits"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env})
    store = _store(url, env, monkeypatch)
    try:

        wait_until(lambda: _seconds(store) >= 2, 60, "two seconds in the store")
        store.close()
        pg.stop()
        started = time.monotonic()
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        if pg.proc is None:
            pg.start()
    assert proc.returncode == 2, err[-3000:]
    assert time.monotonic() - started < 30  # it stopped then, not when its 60 s step was over
    errors = [ln for ln in err.splitlines() if ln.startswith("tunebench: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err[-3000:]
    assert "unreachable for" in errors[0] and "held in memory, the bound ($TUNEBENCH_STORE_HOLD=40)" in errors[0]
    assert "put back from its memory" in err, err[-3000:]
    assert _probe_side_state(sandbox) == before  # the server was put back although the store was gone


def test_a_store_of_the_previous_schema_is_migrated(shared, monkeypatch):
    """A schema 9 server store (as the previous schema had it: no host columns) gains them; its sessions say '-'."""
    url, env = shared
    store = _store(url, env, monkeypatch)
    sid = store.new_session(target="t", engine="builtin", workload="w").id
    store.close()
    engine = _engine(url, env["TUNEBENCH_DB_PASSWORD"])
    with engine.begin() as c:  # back to schema 9
        c.execute(text("ALTER TABLE sessions DROP COLUMN host"))
        c.execute(text("ALTER TABLE knob_journal DROP COLUMN host"))
        c.execute(text("UPDATE meta SET value = '9' WHERE \"key\" = 'schema_version'" if c.dialect.name ==
                       "postgresql" else "UPDATE meta SET value = '9' WHERE `key` = 'schema_version'"))
    engine.dispose()
    # the migration happens in whatever opens the store: here, `sessions list`
    listed = _here(monkeypatch, env, "--db", url, "sessions", "list")
    assert listed.returncode == 0, listed.stderr
    row = next(ln for ln in listed.stdout.splitlines() if ln.split()[0] == str(sid))
    assert row.split()[4] == "-"  # id, date, time, status, host
    assert json.loads(_here(monkeypatch, env, "--db", url, "sessions", "list", "--json", "--host", "-").stdout)[0][
        "id"] == sid
    store = _store(url, env, monkeypatch)
    assert store.list_sessions()[0]["host"] is None
    with store.engine.connect() as c:
        assert c.execute(text("SELECT value FROM meta")).scalar() == str(SCHEMA_VERSION)
    store.close()


def test_push_and_pull_copy_a_whole_session(shared, tmp_path, monkeypatch):
    from tunebench.store.synthetic import record

    url, env = shared
    local = tmp_path / "mine.sqlite"
    sid = record(Store(local), 30, 20, knob_at=20)
    pushed = _here(monkeypatch, env, "--db", str(local), "sessions", "push", str(sid), "--to", url)
    assert pushed.returncode == 0, pushed.stderr
    assert "copied into" in pushed.stdout
    again = _here(monkeypatch, env, "--db", str(local), "sessions", "push", str(sid), "--to", url)
    assert again.returncode == 0 and "already in" in again.stdout  # not twice
    there = _store(url, env, monkeypatch)
    (theirs,) = there.list_sessions()
    other = tmp_path / "theirs.sqlite"
    pulled = _here(monkeypatch, env, "--db", str(other), "sessions", "pull", str(theirs["id"]), "--from", url)
    assert pulled.returncode == 0, pulled.stderr
    back = Store(other)
    mine, copied = Store(local).get_session(sid), back.get_session(back.list_sessions()[0]["id"])
    for key in ("started_at", "ended_at", "workload", "target", "summary", "config", "host"):
        assert copied[key] == mine[key], key
    assert copied["steps"] == mine["steps"] and copied["events"] == mine["events"]
    a, b = Store(local).series(sid), back.series(copied["id"])
    assert a.keys() == b.keys() and all((a[k].t == b[k].t).all() and (a[k].v == b[k].v).all() for k in a)
    there.close()


def _one_line(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 2, (out.returncode, out.stderr)
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def test_bad_store_urls_are_one_line_and_write_nothing(pg, mstore, tmp_path, monkeypatch):
    _empty(pg.url(), pg.password)
    env = {"TUNEBENCH_DB_PASSWORD": pg.password}
    secret = "s3cr3t-in-url"
    line = _one_line(run_cli("--db", f"postgresql+psycopg://tb:{secret}@127.0.0.1:{pg.port}/tunebench", "sessions",
                             "list", env=env))
    assert "password is refused" in line and secret not in line
    # in the query string too (issue 43 item 3: accepted for both dialects, and echoed in error lines)
    for url in (f"postgresql+psycopg://tb@127.0.0.1:{pg.port}/tunebench?password={secret}",
                f"postgresql+psycopg://tb@127.0.0.1:{pg.port}/tunebench?sslmode=prefer&PassWord={secret}",
                f"mysql+mysqlconnector://tb@127.0.0.1:{mstore.port}/tunebench?passwd={secret}"):
        line = _one_line(_here(monkeypatch, env, "--db", url, "sessions", "list"))
        assert "password is refused" in line and secret not in line, line
    line = _one_line(_here(monkeypatch, env, "--db", f"oracle://tb@127.0.0.1:{pg.port}/tunebench", "sessions",
                           "list"))
    assert "unknown store dialect 'oracle'" in line
    line = _one_line(_here(monkeypatch, {"TUNEBENCH_DB_PASSWORD": "wrong"}, "--db", pg.url(), "sessions", "list"))
    assert "refused the login" in line and "wrong" not in line
    line = _one_line(run_cli("--db", mstore.url(), "sessions", "list", env={"TUNEBENCH_DB_PASSWORD": "wrong"}))
    assert "refused the login" in line
    closed = pg.url().replace(f":{pg.port}/", ":1/")
    line = _one_line(_here(monkeypatch, env, "--db", closed, "sessions", "list"))
    assert "is unreachable" in line and "Connection refused" in line
    assert _tables(pg.url(), pg.password) == set()  # nothing written by any of them
    # a newer Tunebench's store: refused before a table is made or a row changed
    _here(monkeypatch, env, "--db", pg.url(), "sessions", "list")
    engine = _engine(pg.url(), pg.password)
    with engine.begin() as c:
        c.execute(text("UPDATE meta SET value = '99'"))
        c.execute(text("DROP TABLE knob_journal"))
    line = _one_line(_here(monkeypatch, env, "--db", pg.url(), "sessions", "list"))
    assert "newer Tunebench (schema 99" in line
    assert "knob_journal" not in _tables(pg.url(), pg.password)
    with engine.begin() as c:  # and another application's database: not a table added
        c.execute(text("DROP SCHEMA public CASCADE"))
        c.execute(text("CREATE SCHEMA public"))
        c.execute(text("CREATE TABLE orders (id int)"))
    engine.dispose()
    line = _one_line(_here(monkeypatch, env, "--db", pg.url(), "sessions", "list"))
    assert "tables of another application (orders)" in line
    assert _tables(pg.url(), pg.password) == {"orders"}
    line = _one_line(_here(monkeypatch, env, "--db", str(tmp_path / "x.sqlite"), "sessions", "push", "1"))
    assert "needs --to" in line


def _trx_commit(sandbox) -> str:
    from tunebench.mysql.connect import open_connection, query_all
    from tunebench.mysql.target import conn_params

    conn = open_connection(conn_params(sandbox.target(), "socket"))
    try:
        return str(query_all(conn, "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit")[0][0])
    finally:
        conn.close()


def test_a_crafted_journal_row_in_a_shared_store_changes_no_server(pg, sandbox, monkeypatch):
    """Issue 43 item 1: a row written into a shared PostgreSQL store by someone else (this machine's name, state
    pending, a dead owner, the local sandbox's socket, innodb_flush_log_at_trx_commit original '0') made a plain
    `sessions list` here SET the knob ("restored ... left changed by an interrupted run"). Only rows this machine's
    ledger vouches for are acted on (store/ledger.py): the crafted one is shown by `restore`, and the server keeps
    its value."""
    from tunebench.store.location import this_host

    url, env = pg.url(), {"TUNEBENCH_DB_PASSWORD": pg.password}
    _empty(url, pg.password)
    # the store's tables made
    assert _here(monkeypatch, env, "--db", url, "sessions", "list").returncode == 0
    before = _trx_commit(sandbox)
    crafted = "2" if before == "0" else "0"
    engine = _engine(url, pg.password)
    with engine.begin() as c:
        c.execute(text("INSERT INTO knob_journal (session_id, target, target_name, name, kind, original, state, "
                       "owner_pid, owner_start, host, created_at) VALUES (NULL, :target, :name, "
                       "'innodb_flush_log_at_trx_commit', 'dynamic', :original, 'pending', 999999, '1', :host, "
                       ":at)"), {"target": json.dumps(sandbox.target().to_dict()), "name": sandbox.target().name,
                                 "original": crafted, "host": this_host(), "at": time.time() - 60})
    engine.dispose()
    listed = run_cli("--db", url, "sessions", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "restored" not in listed.stderr and _trx_commit(sandbox) == before, listed.stderr
    out = run_cli("--db", url, "restore", env=env)
    assert out.returncode == 0, out.stderr
    assert "left alone (not written by this machine's Tunebench" in out.stdout, out.stdout
    assert "innodb_flush_log_at_trx_commit" in out.stdout and _trx_commit(sandbox) == before


def test_a_store_frozen_15_s_mid_run_loses_no_probe_sample(pg, sandbox, monkeypatch):
    """Issue 43 item 7: a store frozen 15 s (SIGSTOP of PostgreSQL and its backends) lost 13-15 s of every probe
    series, the run said `completed` and blamed the probe ("a read took 14.2 s"): the writer held its lock across
    the network commit, and the probe threads waited on it to hand their samples over. Now a flush takes the
    samples out and writes them without the lock: every probe series has every second, and "nothing was lost" is
    true. The freeze comes once the run is recording, so it meets the next flush whatever its timing (a flush
    every second; one blocked in its commit or in connecting for the whole 15 s)."""
    import os
    import signal

    url, env = pg.url(), {"TUNEBENCH_DB_PASSWORD": pg.password}
    _empty(url, pg.password)
    proc = subprocess.Popen([sys.executable, "-m", "tunebench", "--db", url, "run", "--workload", "oltp_point_select",
                             "--threads", "2", "--rate", "300", "--step-seconds", "30", "--probes", "status"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env})
    store = _store(url, env, monkeypatch)
    frozen = False
    try:
        wait_until(lambda: _seconds(store) >= 5, 60, "five seconds in the store")
        store.close()
        pg.signal_all(signal.SIGSTOP)  # every backend too (each a session of its own)
        frozen = True
        time.sleep(15)
        pg.signal_all(signal.SIGCONT)
        frozen = False
        _out, err = proc.communicate(timeout=120)
    finally:
        if frozen:
            pg.signal_all(signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-3000:]
    assert "nothing was lost" in err and "a read took" not in err, err[-3000:]
    session = store.list_sessions()[-1]
    assert session["status"] == "completed"
    names = [n for n in store.series_names(session["id"]) if n.startswith("server.")]
    assert len(names) >= 3, names
    series = store.series(session["id"], names)
    tps = store.series(session["id"], ["client.main.tps"])["client.main.tps"]
    # the machine may stop the whole process for seconds (load 12 on 2 CPUs: 3.4 s once, the load's TPS at 0 the
    # same seconds): the probes say so, and that gap is the machine's; the store's freeze alone costs no second
    stalls = [float(x) for x in re.findall(r"this process was stopped for at least (\d+(?:\.\d+)?) s", err)]
    for name in names:  # every second of the run, the frozen ones too
        t = series[name].t
        inside = t[(t >= tps.t[0]) & (t <= tps.t[-1])]
        gaps = np.diff(inside)
        said = sum(stalls)
        assert len(inside) >= len(tps.t) - 2 - said and gaps.max() < 1.6 + said, (
            name, len(inside), len(tps.t), gaps.max(), inside[np.argmax(gaps)] - tps.t[0], err[-3000:])
    store.close()


def test_a_refused_server_store_keeps_no_connection_open(pg, monkeypatch):
    """A server store refused when it is opened (a newer Tunebench's, another application's tables) closes its
    connection there and then: it stayed open until the interpreter's exit (psycopg's warning then), one more for each
    refusal in a long-lived process such as the window."""
    from tunebench.core.errors import StoreError

    _empty(pg.url(), pg.password)
    monkeypatch.setenv("TUNEBENCH_DB_PASSWORD", pg.password)
    Store(pg.url()).close()  # this Tunebench's store, made
    engine = _engine(pg.url(), pg.password)

    def others() -> int:
        with engine.connect() as c:
            return int(c.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                      "AND pid <> pg_backend_pid()")).scalar_one())

    try:
        base = others()
        with engine.begin() as c:
            c.execute(text("UPDATE meta SET value = '99'"))
        with pytest.raises(StoreError, match="newer Tunebench"):
            Store(pg.url())
        assert others() == base
        with engine.begin() as c:
            c.execute(text("DROP SCHEMA public CASCADE"))
            c.execute(text("CREATE SCHEMA public"))
            c.execute(text("CREATE TABLE orders (id int)"))
        with pytest.raises(StoreError, match="another application"):
            Store(pg.url())
        assert others() == base
    finally:
        engine.dispose()
