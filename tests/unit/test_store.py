import sqlite3

import pytest

from tunebench.core.errors import StoreError
from tunebench.core.interval import Event, Interval
from tunebench.core.target import Target
from tunebench.store.repo import Store


def _iv(t, tps):
    return Interval(t=t, group="main", threads=4, tps=tps, qps=tps * 20, reads=tps * 14, writes=tps * 4,
                    other=tps * 2, lat_ms={"p50": 1.0, "p95": 2.0, "p99": 3.0, "max": 4.0})


def test_roundtrip_and_compaction(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    w = store.new_session(target="sandbox", transport="socket", engine="builtin", workload="oltp_read_write",
                          config={"x": 1}, flavor="mariadb", version="10.11.19")
    w.snapshot_variables({"innodb_flush_log_at_trx_commit": "1", "wsrep_sst_auth_password": "secret"})
    for i in range(10):
        w.add_interval(_iv(1000.0 + i, 100 + i))
        w.flush()
    w.compact()
    w.add_event(Event(1003.0, "knob", "flip"))
    w.finish("completed", {"steps": []})
    s = store.get_session(w.id)
    assert s["status"] == "completed" and s["flavor"] == "mariadb"
    assert "wsrep_sst_auth_password" not in s["variables"]
    assert s["events"][0]["label"] == "flip"
    series = store.series(w.id)
    tps = series["client.main.tps"]
    assert list(tps.v) == [100 + i for i in range(10)] and tps.kind == "rate"
    assert series["client.main.lat.p95"].kind == "gauge"


def test_targets_never_hold_passwords(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.save_target(Target("prod", host="db1", port=3306, user="bench"))
    assert store.get_target("prod").host == "db1"
    cols = [r[1] for r in sqlite3.connect(tmp_path / "s.sqlite").execute("PRAGMA table_info(targets)")]
    assert not any("pass" in c and c != "password_file" for c in cols)


def test_corrupt_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a valid SQLite file"):
        Store(bad)


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(path).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="newer Tunebench"):
        Store(path)


def test_locked_file_is_one_clear_error(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(path).close()
    locker = sqlite3.connect(path, timeout=0)
    locker.execute("PRAGMA locking_mode=EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="locked"):
            Store(path).list_sessions()
    finally:
        locker.rollback()
        locker.close()


def _recorded(store, seconds=120, t0=1_700_000_000.0):
    import numpy as np

    w = store.new_session(target="sandbox", transport="socket", engine="builtin", workload="oltp_point_select",
                          config={"groups": []}, flavor="mariadb", version="10.11.19")
    w.snapshot_variables({"innodb_flush_log_at_trx_commit": "1"})
    rng = np.random.default_rng(1)
    for i in range(seconds):
        t = t0 + i + float(rng.uniform(-0.004, 0.004))
        w.add_samples(t, {"server.questions": 25000.0 + float(rng.normal(0, 300)), "server.threads_running": 5.0})
        if i % 10 == 9:
            w.flush()
    w.add_event(Event(t0 + 60.5, "knob", "innodb_flush_log_at_trx_commit 1 -> 2"))
    w.finish("completed", {"steps": [{"tps": 1234.5}]})
    return w.id


def test_samples_keep_microseconds_and_seven_digits(tmp_path):
    import numpy as np

    from tunebench.store.samples import decode_chunk, encode_chunk

    t = 1_700_000_000.0 + np.cumsum(np.random.default_rng(2).uniform(0.99, 1.01, 5000))
    v = np.random.default_rng(3).normal(25_000, 400, 5000)
    ts, vs = encode_chunk(t, v)
    t2, v2 = decode_chunk("z1", len(t), ts, vs)
    assert np.max(np.abs(t2 - t)) <= 1e-6  # to the microsecond (float64 at 1.7e9 s resolves 0.24 us)
    assert np.max(np.abs(v2 - v) / np.abs(v)) < 1e-7
    assert len(ts) + len(vs) < 0.5 * 16 * len(t)  # raw float64 pairs are 16 bytes a point


def test_export_and_import_a_session_file(tmp_path):
    a = Store(tmp_path / "a.sqlite")
    sid = _recorded(a)
    a.update_session(sid, name="trx commit 1 vs 2", tags="demo,2026", notes="flip at 60 s")
    out = a.export_session(sid, tmp_path / "one.tbsession")
    with pytest.raises(StoreError, match="exists"):
        a.export_session(sid, out)
    b = Store(tmp_path / "empty.sqlite")
    assert b.list_sessions() == []
    (new_id,) = b.import_sessions(out).ids
    got, want = b.get_session(new_id), a.get_session(sid)
    for key in ("name", "notes", "workload", "flavor", "summary", "variables", "events", "status"):
        assert got[key] == want[key], key
    assert got["tags"] == "demo,2026,imported"  # an imported session says so
    sa, sb = a.series(sid), b.series(new_id)
    assert sorted(sa) == sorted(sb)
    assert (sa["server.questions"].v == sb["server.questions"].v).all()
    assert (sa["server.questions"].t == sb["server.questions"].t).all()


def test_importing_a_corrupt_file_changes_nothing(tmp_path):
    b = Store(tmp_path / "b.sqlite")
    sid = _recorded(b, seconds=5)
    bad = tmp_path / "bad.tbsession"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a Tunebench session file"):
        b.import_sessions(bad)
    with pytest.raises(StoreError, match="no such file"):
        b.import_sessions(tmp_path / "missing.tbsession")
    assert [s["id"] for s in b.list_sessions()] == [sid]


def test_schema_2_store_is_migrated_and_its_raw_chunks_still_read(tmp_path):
    import struct

    path = tmp_path / "old.sqlite"
    store = Store(path)
    sid = _recorded(store, seconds=3)
    store.close()
    with sqlite3.connect(path) as c:  # rewrite it as schema 2 wrote it: raw float64, no codec column
        c.execute("DELETE FROM sample_chunks")
        c.execute("ALTER TABLE sample_chunks DROP COLUMN codec")
        series_id = c.execute("SELECT id FROM series WHERE name='server.questions'").fetchone()[0]
        c.execute("INSERT INTO sample_chunks(series_id,t_first,t_last,n,ts,vs) VALUES (?,?,?,?,?,?)",
                  (series_id, 10.0, 11.0, 2, struct.pack("<2d", 10.0, 11.0), struct.pack("<2d", 1.5, 2.5)))
        c.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    store = Store(path)
    d = store.series(sid)["server.questions"]
    assert list(d.t) == [10.0, 11.0] and list(d.v) == [1.5, 2.5]


def test_schema_3_store_gains_target_db_host(tmp_path):
    path = tmp_path / "v3.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as c:
        c.execute("ALTER TABLE targets DROP COLUMN db_host")
        c.execute("INSERT INTO targets(name, host, port, user) VALUES ('prod', 'db1', 3306, 'bench')")
        c.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    store = Store(path)
    assert store.get_target("prod").db_host is None
    store.save_target(Target("prod", host="db1", port=3306, user="bench", db_host="ssh://me@db1"))
    assert store.get_target("prod").db_host == "ssh://me@db1"


def _file_state(path):
    import hashlib

    siblings = sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name))
    return path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest(), siblings


@pytest.mark.parametrize("wal", [False, True])
def test_import_of_another_applications_file_writes_nothing_into_it(tmp_path, wal):
    other = tmp_path / "contacts.sqlite"
    with sqlite3.connect(other) as c:
        if wal:
            c.execute("PRAGMA journal_mode=WAL")
        c.execute("CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT)")
    before = _file_state(other)
    b = Store(tmp_path / "b.sqlite")
    with pytest.raises(StoreError, match="not a Tunebench session file"):
        b.import_sessions(other)
    with pytest.raises(StoreError, match="another application"):
        Store(other)  # nor as --db
    assert _file_state(other) == before


def test_import_of_an_empty_file_writes_nothing_into_it(tmp_path):
    empty = tmp_path / "empty.tbsession"
    empty.write_bytes(b"")
    before = _file_state(empty)
    with pytest.raises(StoreError, match=r"not a Tunebench session file \(empty\)"):
        Store(tmp_path / "b.sqlite").import_sessions(empty)
    assert _file_state(empty) == before and empty.stat().st_size == 0


@pytest.mark.parametrize(("sql", "message"), [
    ("UPDATE sessions SET config = '{not json'", "damaged"),  # JSONDecodeError before
    ("UPDATE events SET data = CAST(X'7B22FF22' AS TEXT)", "cannot import"),  # flipped bytes: bad UTF-8
    ("UPDATE sample_chunks SET vs = X'00FF00FF'", "damaged"),  # zlib.error
])
def test_import_of_a_damaged_session_file_is_all_or_nothing(tmp_path, sql, message):
    src = tmp_path / "two.tbsession"
    a = Store(src)
    _recorded(a, seconds=5)
    _recorded(a, seconds=5)
    a.close()
    with sqlite3.connect(src) as c:  # the second session is the damaged one; the file leaves WAL mode
        c.execute("PRAGMA journal_mode=DELETE")
        table = sql.split()[1]
        c.execute(f"{sql} WHERE rowid IN (SELECT max(rowid) FROM {table})")
    c.close()
    before = _file_state(src)
    b = Store(tmp_path / "b.sqlite")
    with pytest.raises(StoreError, match=message):
        b.import_sessions(src)
    assert b.list_sessions() == []  # not the first session either
    assert _file_state(src) == before


def test_import_of_an_older_schema_migrates_a_copy_not_the_file(tmp_path):
    a = Store(tmp_path / "a.sqlite")
    out = a.export_session(_recorded(a, seconds=3), tmp_path / "old.tbsession")
    with sqlite3.connect(out) as c:
        c.execute("ALTER TABLE targets DROP COLUMN restart_command")
        c.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
        c.execute("PRAGMA journal_mode=DELETE")
    before = _file_state(out)
    b = Store(tmp_path / "b.sqlite")
    assert len(b.import_sessions(out).ids) == 1
    assert _file_state(out) == before


def test_deleting_sessions_shrinks_the_file(tmp_path, cli):
    from tunebench.store.synthetic import record

    path = tmp_path / "s.sqlite"
    store = Store(path)
    keep = record(store, 60, 40)
    gone = [record(store, 600, 100, seed=i) for i in range(3)]
    store.close()
    size = path.stat().st_size
    for sid in gone:
        out = cli("--db", str(path), "sessions", "delete", str(sid))
        assert out.returncode == 0, out.stderr
    assert "compacted" in out.stdout
    assert path.stat().st_size < size / 2
    assert [s["id"] for s in Store(path).list_sessions()] == [keep]


def test_no_shrink_while_a_run_writes(tmp_path):
    from tunebench.store.synthetic import record

    store = Store(tmp_path / "s.sqlite")
    sid = record(store, 600, 100)
    writer = store.new_session(target="sandbox", engine="builtin", workload="w")  # 'running'
    store.delete_session(sid)
    assert store.shrink() is False
    writer.finish("completed")
    assert store.shrink() is True


@pytest.mark.parametrize("change", ["UPDATE meta SET value = 'x' WHERE key = 'schema_version'",
                                    "UPDATE meta SET value = '-1' WHERE key = 'schema_version'",
                                    "UPDATE meta SET value = '0' WHERE key = 'schema_version'",
                                    "DELETE FROM meta WHERE key = 'schema_version'"])
def test_a_store_whose_schema_version_is_no_version_is_refused_and_left_as_it_is(tmp_path, change):
    """Issue 43 item 17: a version that is not an integer gave a traceback on every command; a missing or negative
    one was silently re-stamped and migrated (the file changed)."""
    db = tmp_path / "s.sqlite"
    Store(db).close()
    con = sqlite3.connect(db)
    con.execute(change)
    con.commit()
    con.close()
    before = db.read_bytes()
    with pytest.raises(StoreError, match="schema version is missing or not a version number"):
        Store(db)
    assert db.read_bytes() == before
