"""Stage mode's F1-F6 presets reach the run with the right knob name and value, survive a QSettings round
trip, and the hotkey card is on screen in stage mode (the Events dock is hidden there)."""

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt

from tunebench.store.repo import Store
from tunebench.ui.stage import DEFAULT_PRESETS, parse_presets, read_presets, write_presets


class FakeWorker:
    """What the window asks of a run when a knob flips; answers like the child process does."""

    def __init__(self):
        self.calls: list[tuple[str, str]] = []
        self.values = {"innodb_flush_log_at_trx_commit": "1", "innodb_spin_wait_delay": "4"}

    ended = False

    def running(self) -> bool:
        return True

    def change_knob(self, name, value, on_done, on_failed):
        self.calls.append((name, value))
        if name not in self.values:
            on_failed(f"unknown server variable {str(name).lower()!r} on mariadb 10.11")
            return
        old, self.values[name] = self.values[name], value
        on_done({"name": name, "from": old, "to": value})

    def mark(self, _label):
        return False

    def stop(self, by_user=True):
        pass


@pytest.fixture
def win(qtbot, tmp_path):
    from tunebench.ui.main_window import MainWindow

    store = Store(tmp_path / "sessions.sqlite")
    settings = QSettings(str(tmp_path / "gui.ini"), QSettings.Format.IniFormat)
    write_presets(settings, [("innodb_flush_log_at_trx_commit", "2"), ("innodb_spin_wait_delay", "96")])
    settings.sync()
    w = MainWindow(store, settings=settings)
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    w.show()
    yield w
    w.controller.worker = None
    w.stage.set(False)
    store.close()


def test_presets_round_trip_through_a_fresh_qsettings(tmp_path):
    presets = [("innodb_flush_log_at_trx_commit", "2"), ("innodb_spin_wait_delay", "96"),
               ("innodb_adaptive_hash_index", "OFF")]
    path = str(tmp_path / "gui.ini")
    s = QSettings(path, QSettings.Format.IniFormat)
    write_presets(s, presets)
    s.sync()
    assert read_presets(QSettings(path, QSettings.Format.IniFormat)) == presets
    # one entry, and a hand-edited line, come back as a string from QSettings
    s.setValue("stage/presets", "sync_binlog=0")
    s.sync()
    assert read_presets(QSettings(path, QSettings.Format.IniFormat)) == [("sync_binlog", "0")]
    assert parse_presets("sync_binlog=0, innodb_spin_wait_delay = 6") == [("sync_binlog", "0"),
                                                                          ("innodb_spin_wait_delay", "6")]
    assert read_presets(QSettings(str(tmp_path / "empty.ini"), QSettings.Format.IniFormat)) == \
        parse_presets(DEFAULT_PRESETS)


def test_f1_f2_flip_the_presets_and_the_keys_are_on_screen(win, qtbot):
    fake = FakeWorker()
    win.controller.worker = fake
    win.stage.set(True, full_screen=False)
    help_card = win.stage.help
    assert help_card.isVisible()
    text = help_card.text()
    for key, knob in (("F1", "innodb_flush_log_at_trx_commit = 2"), ("F2", "innodb_spin_wait_delay = 96"),
                      ("F7", "mark"), ("F8", "play/pause"), ("Esc", "leave stage")):
        assert f"<b>{key}</b>" in text and knob in text
    # inside the window, clear of its edges
    geo = help_card.geometry()
    assert win.rect().contains(geo) and geo.width() > 300
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    qtbot.keyClick(win, Qt.Key.Key_F1)
    qtbot.waitUntil(lambda: len(fake.calls) == 1, timeout=5000)
    qtbot.keyClick(win, Qt.Key.Key_F2)
    qtbot.waitUntil(lambda: len(fake.calls) == 2, timeout=5000)
    assert fake.calls == [("innodb_flush_log_at_trx_commit", "2"), ("innodb_spin_wait_delay", "96")]
    assert "innodb_spin_wait_delay 4 → 96" in help_card.text()  # what the key did, where the speaker looks
    assert win.knobs.current["innodb_spin_wait_delay"].text() == "96"
    win.stage.set(False)
    log = [win.log.item(i).text() for i in range(win.log.count())]
    assert not [line for line in log if "unknown server variable" in line], log
    assert not help_card.isVisible()


def test_h_shows_the_keys_again(win, qtbot):
    win.stage.set(True, full_screen=False)
    win.stage.help.hide()
    h = next(a for a in win.stage.actions if a.shortcut().toString() == "H")
    h.trigger()
    assert win.stage.help.isVisible() and "F7" in win.stage.help.text()


def test_default_presets_are_knobs_the_server_has(qtbot, tmp_path):
    """Issue 30 item 11: the default F5/F6 set innodb_thread_concurrency, which MariaDB 10.11 lacks: an error on
    stage. The defaults come from the server's own variables; a user's preset for a knob it lacks is off and left off
    the card."""
    from tunebench.ui.main_window import MainWindow
    from tunebench.ui.stage import default_presets

    mariadb = {"innodb_flush_log_at_trx_commit", "innodb_spin_wait_delay", "innodb_adaptive_hash_index",
               "innodb_io_capacity", "sync_binlog"}
    assert [n for n, _v in default_presets(mariadb)] == ["innodb_flush_log_at_trx_commit"] * 2 + \
        ["innodb_spin_wait_delay"] * 2 + ["innodb_adaptive_hash_index"] * 2
    assert "innodb_thread_concurrency" in {n for n, _v in default_presets(mariadb | {"innodb_thread_concurrency"})}
    store = Store(tmp_path / "sessions.sqlite")
    w = MainWindow(store, settings=QSettings(str(tmp_path / "gui.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    try:
        w.stage.set_server_variables(mariadb)
        w.stage.set(True, full_screen=False)
        text = w.stage.help.text()
        assert "innodb_thread_concurrency" not in text and "innodb_adaptive_hash_index = ON" in text
        assert "<b>F6</b>" in text
        w.stage.set(False)
        # the user's own presets stay theirs: one for a knob the server lacks is not offered
        custom = QSettings(str(tmp_path / "own.ini"), QSettings.Format.IniFormat)
        write_presets(custom, [("innodb_thread_concurrency", "8"), ("innodb_spin_wait_delay", "96")])
        w2 = MainWindow(store, settings=custom)
        qtbot.addWidget(w2)
        w2.stage.set_server_variables(mariadb)
        keys = {a.shortcut().toString(): a.text() for a in w2.stage.actions}
        assert "F1" not in keys and keys["F2"] == "innodb_spin_wait_delay = 96"
    finally:
        store.close()


def test_gui_stage_without_a_replay_enters_stage_mode(qtbot, tmp_path, monkeypatch):
    """Issue 30 item 10: `tunebench gui --stage` opened the normal window (its keys did nothing)."""
    from PySide6.QtWidgets import QApplication

    from tunebench.ui import app as ui_app

    seen = {}

    def exec_once() -> int:
        w = next(x for x in QApplication.topLevelWidgets() if type(x).__name__ == "MainWindow" and x.isVisible())
        seen["stage"] = w.stage.on
        seen["keys"] = all(a.isEnabled() for a in w.stage.actions)
        w.stage.set(False)
        w.close()
        return 0

    monkeypatch.setattr(QApplication, "exec", staticmethod(exec_once))
    # a home under the session's (short: the sandbox it starts needs a socket path under 108 bytes, and an xdist
    # worker's tmp_path is 11 characters longer), where the session's check for stray servers still looks
    home = Path(os.environ["TUNEBENCH_HOME"]) / "gui-stage"
    monkeypatch.setenv("TUNEBENCH_HOME", str(home))
    assert ui_app.run_gui(tmp_path / "s.sqlite", stage=True) == 0
    assert seen == {"stage": True, "keys": True}
