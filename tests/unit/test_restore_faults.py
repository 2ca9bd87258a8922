"""Issue 43 item 8: the restore at the end of a run (and at every start) raised a traceback when the server failed
between two rows: reading the server's facts (`introspect`, `describe_knobs`) was outside the per-row try. Each row
now fails on its own, said, and stays for `tunebench restore`."""

from __future__ import annotations

import mysql.connector

from tunebench.core.target import Target
from tunebench.run import tuning
from tunebench.store.repo import Store


def test_a_server_gone_before_the_facts_are_read_fails_each_row_and_raises_nothing(tmp_path, monkeypatch):
    store = Store(tmp_path / "s.sqlite")
    target = Target(name="lab", socket="/tmp/nowhere.sock")
    ids = [store.journal_add(session_id=None, target=target, name=n, kind="dynamic", original=v, owner_pid=1,
                             owner_start="1") for n, v in (("innodb_io_capacity", "200"), ("sync_binlog", "1"))]

    def gone(_conn):
        raise mysql.connector.errors.OperationalError(msg="Lost connection to server during query")

    monkeypatch.setattr(tuning, "introspect", gone)
    rows = store.journal_pending()
    out = tuning._restore_dynamic(store, object(), target, rows)
    assert [(d["name"], d["state"]) for d in out] == [("innodb_io_capacity", "failed"), ("sync_binlog", "failed")]
    assert all("Lost connection" in d["message"] for d in out)
    assert sorted(r["id"] for r in store.journal_pending(failed=True)) == sorted(ids)  # both stay for `restore`
    store.close()


def test_a_server_lost_between_two_result_sets_is_a_connector_error():
    """A probe's thread died with a traceback on the terminal when the server was killed mid-run (clean-clone run,
    test_faults): the C extension's cursor let _mysql_connector.MySQLInterfaceError out of nextset(), which is no
    mysql.connector.Error, so the probe's `except` missed it. It is an OperationalError now, which every reader of
    the server handles."""
    import _mysql_connector
    import pytest

    from tunebench.mysql.connect import query_sets

    class Cursor:
        with_rows = True

        def execute(self, *_a):
            pass

        def fetchall(self):
            return [(1,)]

        def nextset(self):
            raise _mysql_connector.MySQLInterfaceError("Lost connection to MySQL server during query")

        def close(self):
            pass

    class Conn:
        def cursor(self):
            return Cursor()

    with pytest.raises(mysql.connector.errors.OperationalError, match="Lost connection"):
        query_sets(Conn(), (("SELECT 1", ()), ("SELECT 2", ())))
