"""The insert benchmark's phases (workloads/recipes/iibench-phases.toml) end to end on the real sandbox, at a
small scale: each phase a step with its summary, the index build timed and its indexes there afterwards, the load
ended by max_rows, and the `data` column as varied as the reference's generator makes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import ROOT

from tunebench.core.results import phase_cells
from tunebench.mysql.connect import open_connection, query_all
from tunebench.mysql.target import conn_params
from tunebench.run.sweep_progress import SweepProgress

pytestmark = pytest.mark.integration
SCHEMA = "tb_iib_phases"
ROWS = 20_000


@pytest.fixture
def phases(sandbox, cli, tmp_path):
    text = (ROOT / "workloads/recipes/iibench-phases.toml").read_text()
    text = text.replace("max_rows = 1000000", f"max_rows = {ROWS}").replace("step_seconds = 60", "step_seconds = 4")
    assert f"max_rows = {ROWS}" in text
    spec = tmp_path / "phases.toml"
    spec.write_text(text)
    yield spec
    cli("cleanup", "--schema", SCHEMA)
    conn = open_connection(conn_params(sandbox.target(), None))
    try:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
    finally:
        conn.close()


def test_the_phases_run_as_steps_with_their_summaries(sandbox, cli, phases: Path):
    out = cli("sweep", str(phases), "--schema", SCHEMA, "--json", "--probes", "status")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "completed"
    assert [p["phase"] for p in result["phases"]] == ["l.i0", "l.x", "l.i1", "qr100", "qp100"]
    by_phase = {}
    for s in result["steps"]:
        by_phase.setdefault(s["phase"], {})[s["group"]] = s
    # each load phase's own groups, and only those
    assert {k: sorted(v) for k, v in by_phase.items()} == {"l.i0": ["load"], "l.i1": ["ins"], "qr100": ["bg", "qr"],
                                                           "qp100": ["bg", "qp"]}
    # the loads ended by max_rows, each with its rows over its time (a load of under a second has one second
    # of its own: its rows counted from the step's start)
    for phase, group in (("l.i0", "load"), ("l.i1", "ins")):
        done = by_phase[phase][group]["finished"]
        assert ROWS <= done["headline"] <= ROWS + 1000 and 0 < done["seconds"] < 4
    assert by_phase["qr100"]["qr"]["tps"] > 0 and by_phase["qp100"]["qp"]["tps"] > 0
    assert by_phase["qr100"]["bg"]["rate"] == 10 and by_phase["qr100"]["bg"]["lat_p99_ms"] > 0
    build = result["phases"][1]["action"]
    assert build["action"] == "create_indexes" and build["done"] and 0 < build["seconds"] < 60
    assert build["indexes"] == ["marketsegment", "registersegment", "pdc"]

    show = json.loads(cli("sessions", "show", str(result["session_id"]), "--json").stdout)
    starts = [e for e in show["events"] if e["kind"] == "step_start"]
    ends = [e for e in show["events"] if e["kind"] == "step_end"]
    # the phase's name where the plots' step marker shows it (after the colon)
    assert [e["label"] for e in starts] == ["step 1: l.i0 load=1", "step 2: l.x create_indexes", "step 3: l.i1 ins=1",
                                            "step 4: qr100 bg=1, qr=1", "step 5: qp100 bg=1, qp=1"]
    # the index build on the timeline: its start and end, the end carrying how long it took
    built = next(e for e in ends if (e.get("data") or {}).get("action") == "create_indexes")
    assert built["data"]["seconds"] == build["seconds"]
    assert built["t"] - starts[1]["t"] == pytest.approx(build["seconds"], abs=0.5)

    sessions_md = cli("sessions", "export", str(result["session_id"]), "--format", "md")
    assert "## Phases" in sessions_md.stdout and "| l.x | create_indexes |" in sessions_md.stdout
    # the window's results dock, replaying it: the same per-phase table as the report, from the steps as stored
    replayed = SweepProgress()
    assert replayed.show_session(show) and replayed.phased
    table = [line for line in sessions_md.stdout.split("## Phases")[1].splitlines()
             if line.startswith(("| l", "| q"))]
    assert ["| " + " | ".join(phase_cells(r)) + " |" for r in replayed.phases()] == table and len(table) == 7

    conn = open_connection(conn_params(sandbox.target(), None, database=SCHEMA))
    try:
        indexes = {r[0] for r in query_all(conn, "SELECT DISTINCT index_name FROM information_schema.statistics "
                                                 "WHERE table_schema = %s AND table_name = 'purchases_index1'",
                                           (SCHEMA,))}
        (ids,) = query_all(conn, "SELECT MIN(transactionid), MAX(transactionid), COUNT(*) FROM purchases_index1")
        # BINARY: the values as made (the table's collation folds case, and base64 has both)
        (variety,) = query_all(conn, "SELECT COUNT(*), COUNT(DISTINCT BINARY data) FROM purchases_index1 WHERE "
                                     f"transactionid > {ROWS + 1000} AND transactionid <= {2 * ROWS}")
    finally:
        conn.close()
    assert indexes == {"PRIMARY", "purchases_index1_marketsegment", "purchases_index1_registersegment",
                       "purchases_index1_pdc"}
    # l.i0 stopped at max_rows (one connection: at most one INSERT of 1,000 past it), l.i1 inserted as many again
    # and deleted as many (the table kept its size); the background inserts and deletes after it balance too
    _lo, hi, count = (int(v) for v in ids)
    assert ROWS <= count <= ROWS + 1000 and hi >= 2 * ROWS
    # l.i1's rows (l.i0's were deleted by it): 3 random base64 characters of a 4 MiB pool per value, as the
    # reference's, give 96 % distinct in 19,000 rows (64^3 values); the 16 KB pool gave ~52 % (12,384 offsets)
    rows, distinct = (int(v) for v in variety)
    assert rows > 15_000 and distinct / rows > 0.9
