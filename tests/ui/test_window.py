"""The workbench window driven for real against the sandbox (pytest-qt, offscreen)."""

import json
import re
import struct
import subprocess
import sys

import pytest
from PySide6.QtCore import Qt
from tests.conftest import ROOT, run_cli

from tunebench.core.sweep import parse_spec
from tunebench.mysql.connect import open_connection, query_all
from tunebench.mysql.target import Target, conn_params

pytestmark = pytest.mark.integration


def spin_wait_delay(sandbox):
    conn = open_connection(conn_params(sandbox.target(), "socket"))
    try:
        return str(query_all(conn, "SELECT @@GLOBAL.innodb_spin_wait_delay")[0][0])
    finally:
        conn.close()


def test_add_and_test_a_target(window, qtbot, sandbox):
    pw = conn_params(sandbox.target(), "socket").password
    window.targets.add_target(Target(name="sandbox-tcp", host="127.0.0.1", port=sandbox.status().port,
                                      user="tunebench"), pw)
    assert window.targets.current_name() == "sandbox-tcp"
    window.targets.test_connection()
    qtbot.waitUntil(lambda: "mariadb" in window.targets.info.text(), timeout=15000)
    assert "performance_schema ON" in window.targets.info.text()
    # the password was used, never stored
    assert "password" not in json.dumps(window.store.get_target("sandbox-tcp").to_dict()).lower().replace(
        "password_file", "")


def test_run_flip_a_knob_and_stop(window, qtbot, sandbox):
    before = spin_wait_delay(sandbox)
    window.targets.list.setCurrentRow(0)
    w = window.workload
    w.workload.setCurrentText("oltp_point_select")
    w.threads.setText("1,2")
    w.step_seconds.setValue(60)  # far longer than the test: the run is under way when Stop is pressed
    w.editors["table_size"].setValue(10000)
    window.run_workload()
    qtbot.waitUntil(lambda: window.timeline.series.get("client.main.tps") is not None
                    and window.timeline.series["client.main.tps"].n >= 2, timeout=60000)

    def curve_points():
        curve = window.dashboard.panels[0].curves.get("client.main.tps")
        return 0 if curve is None or curve.getData()[0] is None else len(curve.getData()[0])

    qtbot.waitUntil(lambda: curve_points() >= 2, timeout=5000)  # the redraw timer has run since
    x, y = window.dashboard.panels[0].curves["client.main.tps"].getData()
    assert len(x) >= 2 and max(y) > 0
    assert window.stop_action.isEnabled() and not window.run_action.isEnabled()
    window.flip_knob("innodb_spin_wait_delay", "24")
    qtbot.waitUntil(lambda: any(m.kind == "knob" for m in window.timeline.markers), timeout=15000)
    qtbot.waitUntil(lambda: all(len(p.markers) == len(window.timeline.markers) for p in window.dashboard.panels),
                    timeout=5000)
    assert any(line.label is not None and "spin_wait_delay" in line.label.toPlainText()
               for line in window.dashboard.panels[0].markers)
    assert window.knobs.current["innodb_spin_wait_delay"].text() == "24"
    assert window.stop_action.isEnabled()  # still running: what ends it is the Stop below
    with qtbot.waitSignal(window.run_finished, timeout=60000) as finished:
        window.stop_run()
    outcome = finished.args[0]
    assert outcome.status == "stopped", outcome  # the user's Stop: neither "aborted" nor "completed"
    session = window.store.get_session(outcome.session_id)
    assert session["status"] == "stopped"
    knob = [e for e in session["events"] if e["kind"] == "knob"]
    assert knob and knob[0]["data"]["to"] == "24"
    assert spin_wait_delay(sandbox) == before  # the journal put it back
    assert not window.stop_action.isEnabled()


def test_a_knob_set_between_runs_is_journaled_marked_at_the_next_run_and_put_back(window, qtbot, sandbox):
    """Issue 46 item 4: Set was greyed out while idle. Set between runs changes the server now (journaled, owned by
    the window), the next run starts with it -- a marker at its start and "set before the run" in its rows -- and
    keeps it after its end; Restore all puts it back."""
    before = spin_wait_delay(sandbox)
    want = "31" if before != "31" else "33"
    window.targets.list.setCurrentRow(0)
    assert window.knobs.buttons[0].isEnabled() and not window.knobs.confirm_button.isEnabled()
    try:
        window.flip_knob("innodb_spin_wait_delay", want)
        qtbot.waitUntil(lambda: spin_wait_delay(sandbox) == want, timeout=15000)
        qtbot.waitUntil(lambda: window.knobs.current["innodb_spin_wait_delay"].text() == want, timeout=5000)
        assert "the next run starts with it" in window.knobs.result.text()
        pending = [r for r in window.store.journal_pending() if r["name"] == "innodb_spin_wait_delay"]
        assert len(pending) == 1 and pending[0]["original"] == before
        w = window.workload
        w.workload.setCurrentText("oltp_point_select")
        w.threads.setText("1")
        w.step_seconds.setValue(3)
        w.warmup_seconds.setValue(0)
        w.editors["table_size"].setValue(10000)
        with qtbot.waitSignal(window.run_finished, timeout=90000) as finished:
            window.run_workload()
        outcome = finished.args[0]
        assert outcome.status == "completed", outcome
        session = window.store.get_session(outcome.session_id)
        knob = [e for e in session["events"] if e["kind"] == "knob"]
        assert [e["label"] for e in knob] == [f"innodb_spin_wait_delay = {want} (set before the run)"], knob
        assert knob[0]["t"] <= min(st["started_at"] for st in session["steps"])
        row = session["summary"]["steps"][0]
        from tunebench.core.step_context import step_knobs

        assert step_knobs(session)[1].text() == f"innodb_spin_wait_delay={want} (set before the run)", row
        assert spin_wait_delay(sandbox) == want  # the run put back its own changes only
        window.knobs.restore_all.emit()
        qtbot.waitUntil(lambda: spin_wait_delay(sandbox) == before, timeout=15000)
        # the panel says it (it kept showing the value set, the "set between runs" text under it)
        qtbot.waitUntil(lambda: window.knobs.current["innodb_spin_wait_delay"].text() == before, timeout=5000)
        assert window.knobs.result.text() == f"innodb_spin_wait_delay put back to {before}"
        qtbot.waitUntil(lambda: not [r for r in window.store.journal_pending()
                                     if r["name"] == "innodb_spin_wait_delay"], timeout=5000)
    finally:
        window.controller.idle_knobs.restore()
    assert spin_wait_delay(sandbox) == before


def test_the_window_closed_under_a_run_ends_it_aborted_with_the_knob_back(window, qtbot, sandbox):
    """The README says a window that went away ends its run `aborted`; closing it mid-run recorded `stopped` (the
    Stop button's word, issue 43 item 14)."""
    before = spin_wait_delay(sandbox)
    window.targets.list.setCurrentRow(0)
    w = window.workload
    w.workload.setCurrentText("oltp_point_select")
    w.threads.setText("1")
    w.step_seconds.setValue(60)
    w.editors["table_size"].setValue(10000)
    window.run_workload()
    qtbot.waitUntil(lambda: window.timeline.series.get("client.main.tps") is not None
                    and window.timeline.series["client.main.tps"].n >= 1, timeout=60000)
    window.flip_knob("innodb_spin_wait_delay", "25")
    qtbot.waitUntil(lambda: any(m.kind == "knob" for m in window.timeline.markers), timeout=15000)
    sid = window.worker.session_id if hasattr(window.worker, "session_id") else None
    from PySide6.QtGui import QCloseEvent

    # the window's close handler, as closing it runs it (the widget itself is closed by qtbot like every other)
    window.closeEvent(QCloseEvent())  # the run is told, and waited for (its knobs go back first)
    sessions = window.store.list_sessions()
    session = window.store.get_session(sid or sessions[-1]["id"])
    assert session["status"] == "aborted", session["status"]
    assert spin_wait_delay(sandbox) == before


def test_sweep_grid_plan_and_saved_toml(window, qtbot, tmp_path, sandbox):
    sweep = window.sweep
    sweep.threads.setText("4,16,64")
    sweep.step_seconds.setValue(30)
    sweep.warmup_seconds.setValue(5)
    sweep.add_axis("innodb_flush_log_at_trx_commit", "1, 2")
    sweep.add_axis("innodb_doublewrite", "ON, OFF")
    qtbot.waitUntil(lambda: sweep.plan is not None and len(sweep.plan.configs) == 4, timeout=15000)
    assert sweep.summary.text().startswith("sweep sweep: 4 configuration(s) x 3 step(s)")
    assert ", 2 restart(s)," in sweep.summary.text().splitlines()[0]
    kinds = {sweep.grid.item(r, 0).text(): sweep.grid.item(r, 2).text() for r in range(sweep.grid.rowCount())}
    assert kinds == {"innodb_flush_log_at_trx_commit": "dynamic", "innodb_doublewrite": "restart"}
    path = tmp_path / "grid.toml"
    sweep.save(str(path))
    spec = parse_spec(path.read_text())
    assert dict(spec.axes) == {"innodb_flush_log_at_trx_commit": (1, 2), "innodb_doublewrite": ("ON", "OFF")}
    plan = json.loads(run_cli("sweep", str(path), "--plan", "--json").stdout)
    assert len(plan["configs"]) == 4 and plan["restarts"] == 2  # the CLI runs the same file
    sweep.add_axis("innodb_flush_log_at_trx_comit", "1")
    qtbot.waitUntil(lambda: "unknown variable" in [sweep.grid.item(r, 2).text()
                                                    for r in range(sweep.grid.rowCount())], timeout=5000)


def test_recipe_loads_into_the_grid(window, qtbot):
    sweep = window.sweep
    sweep.load_recipe("trx-commit-doublewrite")
    assert [n for n, _ in sweep.axes()] == ["innodb_doublewrite", "innodb_flush_log_at_trx_commit"]
    qtbot.waitUntil(lambda: sweep.summary.text().startswith("sweep trx-commit-doublewrite: 4 configuration(s)"),
                    timeout=15000)


def test_presentation_actions(window):
    assert window.full_action.shortcut().toString() == "F11"
    assert window.run_action.shortcut().toString() == "F5"
    window.toggle_theme()
    assert window.theme.name == "dark"
    # (set_appearance: A+ itself keeps a scale whose contents would not fit the offscreen 800x800 screen)
    window.set_appearance(window.theme, 1.5)
    assert window.dashboard._readout_size == pytest.approx(33)  # (drawn smaller when the bar is too narrow)
    assert window.dashboard.tps_label.font().pointSizeF() <= 33
    window.toggle_theme()


def test_demo_screenshot(sandbox, tmp_path):
    png = tmp_path / "demo.png"
    env = {"QT_QPA_PLATFORM": "offscreen"}
    import os
    out = subprocess.run([sys.executable, "-m", "tunebench", "gui", "--demo", "--screenshot", str(png)], cwd=ROOT,
                         env={**os.environ, **env}, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1600, 1000)
    assert "completed" in out.stderr


def sbtest_rows(sandbox) -> dict[str, int]:
    """What the server holds in schema tunebench: each sbtest table and its row count."""
    conn = open_connection(conn_params(sandbox.target(), "socket"))
    try:
        names = [r[0] for r in query_all(conn, "SELECT table_name FROM information_schema.tables "
                                               "WHERE table_schema = 'tunebench' AND table_name LIKE 'sbtest%'")]
        return {n: query_all(conn, f"SELECT COUNT(*) FROM tunebench.`{n}`")[0][0] for n in sorted(names)}
    finally:
        conn.close()


def test_prepare_and_cleanup_buttons(window, qtbot, sandbox):
    from tunebench.load.prepare import cleanup

    cleanup(conn_params(sandbox.target(), "socket", database="tunebench"), "tunebench")  # earlier tests' tables
    assert sbtest_rows(sandbox) == {}
    window.targets.list.setCurrentRow(0)
    w = window.workload
    w.workload.setCurrentText("oltp_point_select")
    w.editors["table_size"].setValue(2000)
    w.editors["tables"].setValue(2)
    qtbot.mouseClick(w.prepare_button, Qt.MouseButton.LeftButton)
    assert w.progress.isVisible() and not w.prepare_button.isEnabled() and not w.cleanup_button.isEnabled()
    assert w.progress_label.text() == "preparing 2 table(s) x 2,000 rows …"
    qtbot.waitUntil(w.prepare_button.isEnabled, timeout=60000)  # the work's end, success or failure, enables it
    assert re.fullmatch(r"prepared 2 table\(s\) x 2000 rows in tunebench \([0-9.]+ s\)", w.progress_label.text()), \
        w.progress_label.text()
    assert not w.progress.isVisible()
    assert sbtest_rows(sandbox) == {"sbtest1": 2000, "sbtest2": 2000}

    qtbot.mouseClick(w.cleanup_button, Qt.MouseButton.LeftButton)
    assert w.progress_label.text() == "cleaning up …" and not w.cleanup_button.isEnabled()
    qtbot.waitUntil(w.cleanup_button.isEnabled, timeout=60000)
    assert w.progress_label.text() == "dropped sbtest1, sbtest2 in tunebench"  # the line `tunebench cleanup` prints
    assert not w.progress.isVisible()
    assert sbtest_rows(sandbox) == {}


def test_prepare_shows_rows_and_cancel_keeps_only_whole_tables(window, qtbot, sandbox):
    from tunebench.load.prepare import cleanup

    cleanup(conn_params(sandbox.target(), "socket", database="tunebench"), "tunebench")
    window.targets.list.setCurrentRow(0)
    w = window.workload
    w.workload.setCurrentText("oltp_point_select")
    w.editors["table_size"].setValue(400000)
    w.editors["tables"].setValue(2)
    qtbot.mouseClick(w.prepare_button, Qt.MouseButton.LeftButton)
    assert w.cancel_button.isVisible()
    qtbot.waitUntil(lambda: w.progress.maximum() == 1000 and "rows/s" in w.progress_label.text(), timeout=30000)
    assert re.search(r"of 800,000 rows \(\d+ %\), [\d,]+ rows/s, \d+:\d\d left", w.progress_label.text())
    qtbot.mouseClick(w.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(w.prepare_button.isEnabled, timeout=60000)
    assert w.progress_label.text().startswith("prepare cancelled after "), w.progress_label.text()
    assert not w.cancel_button.isVisible() and not w.progress.isVisible()
    assert all(n == 400000 for n in sbtest_rows(sandbox).values())  # whole tables only, or none
    cleanup(conn_params(sandbox.target(), "socket", database="tunebench"), "tunebench")
