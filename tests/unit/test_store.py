import sqlite3

import pytest

from tunebench.core.errors import StoreError
from tunebench.core.interval import Event, Interval
from tunebench.mysql.target import Target
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
