"""The window's side of the run seam and its one task runner (no server needed)."""

import threading

import pytest

from tunebench.core.errors import TargetError
from tunebench.run.records import RunError, RunOutcome


def test_a_task_of_a_kind_supersedes_the_running_one(qtbot):
    from tunebench.ui.tasks import TaskRunner

    runner = TaskRunner()
    release = threading.Event()
    got = []
    runner.submit("facts", lambda: release.wait(10) and "old", got.append)
    runner.submit("facts", lambda: "new", got.append)
    qtbot.waitUntil(lambda: got == ["new"], timeout=5000)
    release.set()  # the old call ends now: nothing of it reaches the window
    qtbot.waitUntil(lambda: not runner.busy("facts"), timeout=5000)
    qtbot.wait(100)
    assert got == ["new"]


def test_every_exception_comes_back_as_one_message_and_nothing_stays_busy(qtbot, capsys):
    import mysql.connector

    from tunebench.ui.tasks import TaskRunner

    runner = TaskRunner()
    failed: list[str] = []
    done: list[object] = []

    def bug():
        return {}["missing"]

    def driver():
        raise mysql.connector.errors.InterfaceError("2013: Lost connection to MySQL server during query")

    runner.submit("a", lambda: (_ for _ in ()).throw(TargetError("server down")), done.append, failed.append)
    runner.submit("b", bug, done.append, failed.append)
    runner.submit("c", driver, done.append, failed.append)
    qtbot.waitUntil(lambda: len(failed) == 3, timeout=5000)
    assert not done and not any(runner.busy(k) for k in "abc")
    assert "server down" in failed
    assert any(m.startswith("unexpected error (KeyError") for m in failed)  # a bug says it is one
    assert any("Lost connection" in m for m in failed)
    assert "KeyError" in capsys.readouterr().err  # and its traceback is on stderr


def test_progress_lines_arrive_on_the_gui_thread_before_the_result(qtbot):
    from PySide6.QtCore import QThread

    from tunebench.ui.tasks import TaskRunner

    runner = TaskRunner()
    seen: list[tuple[str, bool]] = []
    gui = QThread.currentThread()

    def work(progress):
        for i in range(3):
            progress(f"line {i}")
        return "done"

    runner.submit("prepare", work, lambda r: seen.append((r, QThread.currentThread() is gui)),
                  on_progress=lambda line: seen.append((line, QThread.currentThread() is gui)))
    qtbot.waitUntil(lambda: len(seen) == 4, timeout=5000)
    assert seen == [("line 0", True), ("line 1", True), ("line 2", True), ("done", True)]


def test_the_window_offers_trust_from_the_error_kind_not_its_text(win, qtbot, monkeypatch):
    """The outcome's RunError says host_key_unknown and where; the sentence may say anything."""
    from PySide6.QtWidgets import QMessageBox

    asked: list[str] = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or QMessageBox.StandardButton.No)
    outcome = RunOutcome("failed", None, error=RunError("host_key_unknown", "la clé est inconnue",
                                                        "ssh://ops@10.0.0.9:2222"))
    with qtbot.waitSignal(win.run_finished, timeout=5000):
        win.controller._on_finished(outcome)
    assert len(asked) == 1 and "ssh://ops@10.0.0.9:2222" in asked[0]
    # any other failure: its line, and no dialog
    with qtbot.waitSignal(win.run_finished, timeout=5000):
        win.controller._on_finished(RunOutcome("failed", None, error=RunError("target", "unknown host key?")))
    assert len(asked) == 1
    log = [win.log.item(i).text() for i in range(win.log.count())]
    assert "unknown host key?" in log


def test_a_run_that_cannot_reach_its_server_ends_with_one_typed_outcome(win, qtbot, tmp_path):
    """Through the real child process: an unreachable target (127.0.0.1, a closed port)."""
    from conftest import _free_port
    from tunebench.load.engine import ClientGroup
    from tunebench.load.workload import load_workload
    from tunebench.mysql.target import Target
    from tunebench.run.child import RunRequest
    from tunebench.run.spec import RunSpec

    wl = load_workload("oltp_read_only")
    spec = RunSpec(groups=(ClientGroup("main", wl, wl.options({}), (1,)),), step_seconds=1)
    target = Target("nowhere", host="127.0.0.1", port=_free_port(), user="root")
    with qtbot.waitSignal(win.run_finished, timeout=60000) as finished:
        assert win.controller.start_run(RunRequest(str(tmp_path / "s.sqlite"), target, spec, password=""))
    outcome = finished.args[0]
    assert isinstance(outcome, RunOutcome)
    assert outcome.status == "failed" and outcome.error.kind == "target" and outcome.session_id is None
    assert not win.stop_action.isEnabled() and win.run_action.isEnabled()


@pytest.mark.qt_no_exception_capture
def test_an_exception_in_a_slot_is_said_in_the_window(win, qtbot, monkeypatch):
    """Qt only prints an exception raised in a slot; the window says it in one line (a bug that hung the
    responsiveness bench went unseen that way)."""
    import sys

    from PySide6.QtCore import QTimer

    from tunebench.ui.app import report_slot_errors

    printed: list[type] = []
    monkeypatch.setattr(sys, "excepthook", lambda kind, exc, tb: printed.append(kind))
    report_slot_errors(win)
    QTimer.singleShot(0, lambda: {}["missing"])
    qtbot.waitUntil(lambda: printed == [KeyError], timeout=5000)
    log = [win.log.item(i).text() for i in range(win.log.count())]
    assert any(line.startswith("unexpected error (KeyError") for line in log), log
