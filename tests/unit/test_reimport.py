"""Importing a session file whose sessions are already here: skipped with one line each (the same recording:
start, target, workload, configuration and first samples), unless a copy is asked for (`--again`)."""

import json
import sqlite3

from tunebench.cli import main
from tunebench.store.repo import Store
from tunebench.store.synthetic import record


def _run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_the_same_file_twice_is_imported_once(tmp_path):
    a = Store(tmp_path / "a.sqlite")
    sid = record(a, 20, 20)
    out = a.export_session(sid, tmp_path / "one.tbsession")
    b = Store(tmp_path / "b.sqlite")
    (new,) = b.import_sessions(out).ids
    again = b.import_sessions(out)  # used to be a second copy, silently
    assert again.ids == [] and again.skipped == [(sid, new)]
    assert again.skipped_lines() == [f"session {sid} is already here as {new}: skipped"]
    assert [s["id"] for s in b.list_sessions()] == [new]
    # renamed and retagged here, exported from here (tagged "imported", another ID): still the same recording
    b.update_session(new, name="renamed", tags="x")
    back = b.export_session(new, tmp_path / "back.tbsession")
    assert a.import_sessions(back).skipped == [(new, sid)]
    # asked for: a copy
    (copy,) = b.import_sessions(out, again=True).ids
    assert copy != new and len(b.list_sessions()) == 2
    # and once there are two, the oldest is the one named
    assert b.import_sessions(out).skipped == [(sid, new)]


def test_another_recording_with_the_same_start_is_not_taken_for_it(tmp_path):
    """Two sessions started in the same second on the same target with the same workload: their samples differ."""
    a = Store(tmp_path / "a.sqlite")
    first = record(a, 20, 20, seed=1)
    second = record(a, 20, 20, seed=2)
    assert a.get_session(first)["started_at"] == a.get_session(second)["started_at"]
    out = a.export_session(second, tmp_path / "two.tbsession")
    a.delete_session(second)
    (new,) = a.import_sessions(out).ids
    assert new not in (first, second)


def test_an_older_file_is_recognised_too(tmp_path):
    a = Store(tmp_path / "a.sqlite")
    sid = record(a, 10, 10)
    out = a.export_session(sid, tmp_path / "old.tbsession")
    with sqlite3.connect(out) as c:  # as Tunebench wrote it at schema 8 (no AUTOINCREMENT on sessions)
        c.execute("UPDATE meta SET value='8' WHERE key='schema_version'")
    c.close()
    assert a.import_sessions(out).skipped == [(sid, sid)]


def test_cli_skips_with_one_line_and_imports_a_copy_with_again(tmp_path, capsys):
    a = Store(tmp_path / "a.sqlite")
    sid = record(a, 20, 20)
    out = a.export_session(sid, tmp_path / "one.tbsession")
    a.close()
    db = str(tmp_path / "b.sqlite")
    rc, text, err = _run(capsys, "--db", db, "sessions", "import", str(out))
    assert rc == 0 and text.startswith("imported 1 session(s)") and not err
    new = Store(db).list_sessions()[0]["id"]
    rc, text, err = _run(capsys, "--db", db, "sessions", "import", str(out))
    assert rc == 0 and text.splitlines() == [f"session {sid} is already here as {new}: skipped"] and not err
    rc, text, _ = _run(capsys, "--db", db, "sessions", "import", str(out), "--json")
    assert rc == 0 and json.loads(text) == {"imported": [], "skipped": [{"file": sid, "here": new}]}
    assert len(Store(db).list_sessions()) == 1
    rc, text, _ = _run(capsys, "--db", db, "sessions", "import", str(out), "--again")
    assert rc == 0 and text.startswith("imported 1 session(s)")
    assert len(Store(db).list_sessions()) == 2


def test_a_pushed_session_keeps_its_own_tags(tmp_path):
    """Issue 46 item 11: `sessions push` tagged the team's copy "imported"; the copy is the same session, with its
    own tags (an import of a file is still tagged "imported")."""
    from tunebench.store.session_transfer import transfer_session

    a = Store(tmp_path / "a.sqlite")
    sid = record(a, 20, 20)
    a.update_session(sid, tags="baseline,nightly")
    team = Store(tmp_path / "team.sqlite")
    (new,) = transfer_session(a, team, sid).ids
    assert team.get_session(new, events=False)["tags"] == "baseline,nightly"
    out = a.export_session(sid, tmp_path / "one.tbsession")
    other = Store(tmp_path / "other.sqlite")
    (imported,) = other.import_sessions(out).ids
    assert "imported" in other.get_session(imported, events=False)["tags"].split(",")
