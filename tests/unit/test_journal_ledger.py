"""Issue 43 item 1: a restore acts only on journal rows this machine wrote, as it wrote them, still pending by its own
account (store/ledger.py). A store is a file or a database others can write: a row made, changed or set back to
pending there is shown by `tunebench restore`, never acted on."""

from __future__ import annotations

import json
import sqlite3

from tunebench.core.target import Target
from tunebench.store.location import this_host
from tunebench.store.repo import Store

TARGET = Target(name="lab", socket="/tmp/nowhere/mysqld.sock", user="root")


def _journal(store: Store, name: str = "innodb_flush_log_at_trx_commit", original: str = "1") -> int:
    row = store.journal_add(session_id=None, target=TARGET, name=name, kind="dynamic", original=original,
                            owner_pid=999_999, owner_start="1")
    assert row is not None
    return row


def test_only_rows_written_here_as_written_are_pending(tmp_path):
    db = tmp_path / "s.sqlite"
    store = Store(db)
    mine = _journal(store)
    assert [r["id"] for r in store.journal_pending()] == [mine]
    con = sqlite3.connect(db)
    # a row crafted in the file: this machine's name, a dead owner, a local socket, the knob's original '0'
    con.execute("INSERT INTO knob_journal (session_id, target, target_name, name, kind, original, state, owner_pid,"
                " owner_start, host, created_at) VALUES (NULL, ?, 'victim', 'innodb_flush_log_at_trx_commit',"
                " 'dynamic', '0', 'pending', 999998, '1', ?, 1.0)",
                (json.dumps(Target(name="victim", socket="/tmp/v/mysqld.sock", user="root").to_dict()), this_host()))
    con.commit()
    assert [r["id"] for r in store.journal_pending()] == [mine]
    assert [r["target_name"] for r in store.journal_unvouched()] == ["victim"]
    # this machine's own row changed in the file: its original, then its target
    con.execute("UPDATE knob_journal SET original = '0' WHERE id = ?", (mine,))
    con.commit()
    assert store.journal_pending() == []
    con.execute("UPDATE knob_journal SET original = '1', target_name = 'victim' WHERE id = ?", (mine,))
    con.commit()
    assert store.journal_pending() == []
    con.execute("UPDATE knob_journal SET target_name = 'lab' WHERE id = ?", (mine,))
    con.commit()
    assert [r["id"] for r in store.journal_pending()] == [mine]  # as written again: vouched for
    # restored here, then set back to pending in the file: not acted on again
    store.journal_mark(mine, "restored")
    con.execute("UPDATE knob_journal SET state = 'pending' WHERE id = ?", (mine,))
    con.commit()
    assert store.journal_pending() == []
    con.close()
    store.close()


def test_a_failed_row_stays_vouched_and_a_discarded_one_does_not(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    a, b = _journal(store, "innodb_io_capacity", "200"), _journal(store, "innodb_spin_wait_delay", "6")
    store.journal_mark(a, "discarded")
    store.journal_mark(b, "failed", "privilege revoked")
    con = sqlite3.connect(tmp_path / "s.sqlite")
    con.execute("UPDATE knob_journal SET state = 'pending'")
    con.commit()
    con.close()
    assert [r["id"] for r in store.journal_pending()] == [b]
    store.close()


def test_another_user_or_machine_has_another_ledger(tmp_path, monkeypatch):
    """The ledger is the data dir's: a store copied to a machine (or a home) that did not write the row vouches
    for nothing in it."""
    store = Store(tmp_path / "s.sqlite")
    _journal(store)
    store.close()
    monkeypatch.setenv("TUNEBENCH_HOME", str(tmp_path / "elsewhere"))
    store = Store(tmp_path / "s.sqlite")
    # another machine's id (the same hostname): not this machine's row at all
    assert store.journal_pending() == [] and store.journal_unvouched() == []
    with sqlite3.connect(tmp_path / "s.sqlite") as c:  # the row made to name this machine (its id is no secret)
        c.execute("UPDATE knob_journal SET machine = ?", (store.machine,))
    c.close()
    assert store.journal_pending() == [] and len(store.journal_unvouched()) == 1  # shown, never acted on
    store.close()


def test_two_machines_of_one_hostname_never_take_each_others_sessions(tmp_path, monkeypatch):
    """One shared store, two machines both named like this one: a session running on A (its process alive there,
    a pid that means nothing here) was marked interrupted by B's next start (issue 43 item 13). Machines are told
    apart by a made-once id now: B leaves it; A itself, its process gone, marks it."""
    import subprocess
    import sys

    from sqlalchemy.orm import Session as OrmSession

    from tunebench.store.models import SessionRow

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no process has here
    monkeypatch.setenv("TUNEBENCH_HOME", str(tmp_path / "machine-a"))
    a = Store(tmp_path / "shared.sqlite")
    with OrmSession(a.engine) as s:
        row = SessionRow(started_at=1.79e9, status="running", target="t", transport="socket", engine="builtin",
                         workload="w", config="{}", owner_pid=dead.pid, owner_start="1", host=this_host(),
                         machine=a.machine)
        s.add(row)
        s.commit()
        sid = row.id
    monkeypatch.setenv("TUNEBENCH_HOME", str(tmp_path / "machine-b"))
    b = Store(tmp_path / "shared.sqlite")
    assert b.machine != a.machine and b.host == a.host
    assert b.mark_orphans() == [] and b.get_session(sid, events=False)["status"] == "running"
    monkeypatch.setenv("TUNEBENCH_HOME", str(tmp_path / "machine-a"))
    again = Store(tmp_path / "shared.sqlite")
    assert again.machine == a.machine  # made once, kept
    assert again.mark_orphans() == [sid]
