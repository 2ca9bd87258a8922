"""Issue 18's drift guard on the real sandbox: a SET GLOBAL from outside Tunebench in the middle of a step is a
`drift` event naming the variable, a flag on that step and a warning in the Markdown report; the run's own knob
changes are not drift."""

import threading

import pytest
from tests.conftest import wait_until
from tests.integration.test_sweep import knob_values, store_for

from tunebench.load.engine import ClientGroup
from tunebench.load.workload import load_workload
from tunebench.mysql.connect import open_connection
from tunebench.mysql.target import conn_params
from tunebench.run.experiment import Experiment
from tunebench.run.spec import RunSpec

pytestmark = pytest.mark.integration


def _set_global(sandbox, name: str, value: str) -> None:
    conn = open_connection(conn_params(sandbox.target(), "socket"))
    try:
        conn.cursor().execute(f"SET GLOBAL {name} = {value}")
    finally:
        conn.close()


def test_an_outside_set_global_mid_step_is_drift(sandbox, cli):
    before = knob_values(sandbox)
    io = int(before.get("innodb_io_capacity") or 200)
    wl = load_workload("oltp_point_select")
    group = ClientGroup("main", wl, wl.options({"table_size": 2000}), (2, 2))
    store = store_for(sandbox)
    seconds: list[float] = []
    exp = Experiment(store, sandbox.target(), RunSpec(groups=(group,), step_seconds=4, probes=()),
                     on_interval=lambda iv: seconds.append(iv.t))
    notes: list[str] = []
    exp.on_note = notes.append

    def meddle():  # another client, 2 s into step 1; the run itself flips a knob in step 2 (not drift)
        wait_until(lambda: len(seconds) >= 2, 120, "2 s of step 1")
        _set_global(sandbox, "innodb_io_capacity", str(io + 123))
        wait_until(lambda: len(seconds) >= 6, 120, "2 s of step 2")
        exp.change_knob("innodb_spin_wait_delay", "7")

    th = threading.Thread(target=meddle)
    th.start()
    try:
        out = exp.run()
    finally:
        th.join()
        _set_global(sandbox, "innodb_io_capacity", str(io))
    assert out.status == "completed", out.error
    # nothing of the run outlives it: the server watch was restarted by the knob restore at the end, for ever
    assert [t.name for t in threading.enumerate() if t.name in ("server-watch", "profile")] == []
    session = store.get_session(out.session_id)
    drift = [e for e in session["events"] if e["kind"] == "drift"]
    assert len(drift) == 1, [e["label"] for e in drift]
    assert drift[0]["data"]["drift"] == [{"name": "innodb_io_capacity", "from": str(io), "to": str(io + 123)}]
    assert drift[0]["data"]["when"] == "during step 1"
    assert any("changed outside Tunebench" in n and "innodb_io_capacity" in n for n in notes)
    steps = session["steps"]
    assert steps[0]["summary"]["_drift"] == [f"innodb_io_capacity {io} → {io + 123}"]
    assert "_drift" not in steps[1]["summary"]  # its own flip of innodb_spin_wait_delay is not drift
    md = cli("sessions", "export", str(out.session_id), "--format", "md")
    assert md.returncode == 0, md.stderr
    assert "## Warning: server variables changed outside Tunebench" in md.stdout
    assert f"| during step 1 | innodb_io_capacity | {io} | {io + 123} |" in md.stdout
    assert knob_values(sandbox) == before
