"""The knob panel shows the current target's values (read off the GUI thread) as soon as it is ready or
changes: after the sandbox starts, after a switch to another target, and as the combos' current entries."""

import pytest

from tunebench.mysql.connect import open_connection, query_all
from tunebench.mysql.target import Target, conn_params

pytestmark = pytest.mark.integration


def server_value(sandbox, name):
    conn = open_connection(conn_params(sandbox.target(), "socket"))
    try:
        return str(query_all(conn, f"SELECT @@GLOBAL.{name}")[0][0])
    finally:
        conn.close()


def set_global(sandbox, name, value):
    conn = open_connection(conn_params(sandbox.target(), "socket"))
    try:
        conn.cursor().execute(f"SET GLOBAL {name} = {value}")
    finally:
        conn.close()


def shown(window, name):
    return window.knobs.current[name].text(), window.knobs.editors[name].currentText()


def test_values_after_the_sandbox_starts_and_after_a_target_switch(window, qtbot, sandbox):
    knob = "innodb_spin_wait_delay"
    original = server_value(sandbox, knob)
    window.targets.list.setCurrentRow(0)
    qtbot.waitUntil(lambda: shown(window, knob) == (original, original), timeout=15000)
    # the sandbox stopped and started again from the window (the welcome's "Use the sandbox" does the same)
    window.targets.toggle_sandbox()
    qtbot.waitUntil(lambda: window.targets.sandbox_button.text() == "Start sandbox", timeout=60000)
    qtbot.waitUntil(lambda: window.knobs.current[knob].text() == "—", timeout=5000)
    window.targets.toggle_sandbox()
    qtbot.waitUntil(lambda: window.targets.sandbox_button.text() == "Stop sandbox", timeout=60000)
    qtbot.waitUntil(lambda: shown(window, knob) == (server_value(sandbox, knob),) * 2, timeout=15000)
    # a value no preset has: shown as the combo's current entry, not the first preset
    set_global(sandbox, knob, 7)
    try:
        pw = conn_params(sandbox.target(), "socket").password
        window.targets.add_target(Target(name="nowhere", host="127.0.0.1", port=1, user="tunebench"), pw)
        assert window.targets.current_name() == "nowhere"
        # nothing of the sandbox is shown for a target that does not answer
        qtbot.waitUntil(lambda: "nowhere" in window.knobs.result.text() or "127.0.0.1" in window.knobs.result.text(),
                        timeout=30000)
        assert window.knobs.current[knob].text() == "—"
        window.targets.list.setCurrentRow(0)
        qtbot.waitUntil(lambda: shown(window, knob) == ("7", "7"), timeout=15000)
        assert window.knobs.current["innodb_thread_concurrency"].text() == "n/a"  # MariaDB 10.6+ has none
    finally:
        set_global(sandbox, knob, original)
