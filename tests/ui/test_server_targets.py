"""Every server is a sandbox target in the window: the kits' sandboxes listed after the default one, each
started, tested and stopped from the targets panel (issue 27)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from tests.conftest import server_under_test

pytestmark = pytest.mark.integration


def test_each_servers_sandbox_is_a_target(window, qtbot, sandbox, kit_sandboxes):
    mysql = server_under_test("mysql-9", sandbox, kit_sandboxes).sandbox
    window.targets.refresh()
    names = [window.targets.list.item(i).text() for i in range(window.targets.list.count())]
    assert names[0] == "sandbox"
    assert mysql.target_name in names and any(n.startswith("sandbox:mariadb-11.8") for n in names), names
    window.targets.list.setCurrentRow(names.index(mysql.target_name))
    assert window.targets.sandbox_label.text().startswith(f"{mysql.target_name}: mysql 9.")
    assert window.targets.current_target().socket == str(mysql.socket)
    window.targets.test_connection()
    qtbot.waitUntil(lambda: "mysql 9." in window.targets.info.text().lower(), timeout=20000)
    # a sandbox target cannot be deleted; the default one is still the first
    window.targets.delete_button.click()
    assert window.targets.list.findItems(mysql.target_name, Qt.MatchFlag.MatchExactly)
    window.targets.list.setCurrentRow(0)
    assert window.targets.sandbox_label.text().startswith("sandbox: mariadb 10.11")
