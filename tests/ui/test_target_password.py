"""Issue 46 item 1: a target added with `tunebench target add` (no password stored; the keyring here is the fail
backend) gave "mine: mine: access denied ... (wrong password?)" as soon as it was selected, and the window never
asked. It asks, once, keeps the answer for the session (or the keyring), and reads the server with it."""

import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog

from tunebench.core.target import Target
from tunebench.mysql import target as target_mod
from tunebench.mysql.target import conn_params, typed_password

pytestmark = pytest.mark.integration


@pytest.fixture
def no_password_anywhere(monkeypatch, tmp_path):
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    monkeypatch.setattr(target_mod, "_keyring_password", lambda _t: None)
    monkeypatch.setattr(target_mod.Path, "home", lambda: tmp_path)  # no ~/.my.cnf
    monkeypatch.setattr(target_mod, "_SESSION_PASSWORDS", {})


def test_a_target_without_a_password_is_asked_for_it_once(win, qtbot, sandbox, no_password_anywhere):
    port = sandbox.status().port
    password = conn_params(sandbox.target(), "socket").password
    t = Target(name="mine", host="127.0.0.1", port=port, user="tunebench")
    win.store.save_target(t)
    win.targets.refresh()
    items = win.targets.list.findItems("mine", Qt.MatchFlag.MatchExactly)
    win.targets.list.setCurrentItem(items[0])
    dialog = win.targets.password_dialog
    assert dialog is not None and dialog.isVisible()
    assert "its password is asked for" in win.knobs.result.text()  # no "access denied" meanwhile
    win.run_workload()  # waits for the password: refused, said in the panel
    assert not win.controller.running() and "give its password" in win.workload.progress_label.text()
    dialog.password.setText(password)
    dialog.done(QDialog.DialogCode.Accepted)
    assert typed_password(t) == password and win.targets.password_dialog is None
    qtbot.waitUntil(lambda: "mariadb" in win.knobs.result.text().lower(), timeout=15000)
    assert "access denied" not in win.knobs.result.text()
    win.targets.list.setCurrentRow(0)
    win.targets.list.setCurrentItem(items[0])
    assert win.targets.password_dialog is None  # asked once per session
    win.targets.test_connection()
    qtbot.waitUntil(lambda: "performance_schema" in win.targets.info.text(), timeout=15000)
    assert win.targets.info.text().count("mine:") == 1
    assert os.environ.get("MYSQL_PWD") is None


def test_the_cli_tests_a_target_as_the_window_does(sandbox, cli, tmp_path):
    """`tunebench target test NAME` (the window's Test connection): the server in one line, or why not in one line
    naming the target once, exit 2."""
    from pathlib import Path

    from tunebench import paths
    from tunebench.store.repo import Store

    store = Store(paths.default_db_path())
    t = Target(name="mine", socket=sandbox.status().socket, user="tunebench",
               password_file=str(Path(sandbox.base) / "client.cnf"))
    store.save_target(t)
    store.close()
    out = cli("target", "test", "mine")
    assert out.returncode == 0 and out.stdout.startswith("mine: mariadb 10.11"), (out.stdout, out.stderr)
    bad = cli("target", "test", "nosuch", refused=True)
    assert bad.returncode == 2 and bad.stderr.strip() == "tunebench: error: unknown target 'nosuch'"
