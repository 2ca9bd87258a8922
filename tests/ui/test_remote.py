"""The window with client hosts over SSH (a real sshd on 127.0.0.1), and the explicit trust dialog."""

import pytest
from PySide6.QtWidgets import QMessageBox

from tunebench.core.probe import name_part
from tunebench.hosts.ssh import tunebench_known_hosts


@pytest.mark.integration
def test_workload_on_a_client_host_from_the_window(window, qtbot, sandbox, sshd, monkeypatch):
    kh = tunebench_known_hosts()
    kh.unlink(missing_ok=True)
    monkeypatch.setenv("HOME", str(sshd.root))  # no ~/.ssh here: the key comes from ~/.ssh/config below
    (sshd.root / ".ssh").mkdir(exist_ok=True)
    (sshd.root / ".ssh" / "config").write_text(f"Host 127.0.0.1\n  IdentityFile {sshd.key}\n")
    window.targets.list.setCurrentRow(0)
    w = window.workload
    w.workload.setCurrentText("oltp_point_select")
    w.engine.setCurrentText("sysbench")
    w.threads.setText("2")
    w.rate.setText("500")  # open loop: the client host's series are tested, not its speed (a closed loop: 2 CPUs)
    w.step_seconds.setValue(4)
    w.editors["table_size"].setValue(10000)
    w.client_hosts.setText(sshd.url())
    # first: an unknown host key. The run fails with one message and the window offers to trust it.
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or QMessageBox.StandardButton.Yes)
    with qtbot.waitSignal(window.run_finished, timeout=60000) as first:
        window.run_workload()
    outcome = first.args[0]  # a RunOutcome whose error says what and where, as data
    assert outcome.status == "failed" and outcome.error.kind == "host_key_unknown"
    assert outcome.error.host.startswith("ssh://") and outcome.error.host.endswith(f"@127.0.0.1:{sshd.port}")
    assert asked and sshd.url() in asked[0]
    qtbot.waitUntil(lambda: kh.is_file() and f"[127.0.0.1]:{sshd.port}" in kh.read_text(), timeout=15000)
    # then the run goes: the client host's own series beside the group's
    with qtbot.waitSignal(window.run_finished, timeout=60000, raising=False) as second:
        window.run_workload()
    if not second.signal_triggered:
        raise AssertionError([window.log.item(i).text() for i in range(window.log.count())])
    assert second.args[0].status == "completed", second.args[0]
    host = f"client.main@{name_part(f'127.0.0.1:{sshd.port}')}.tps"
    assert window.timeline.series["client.main.tps"].n >= 2 and window.timeline.series[host].n >= 2
    kh.unlink()


def test_target_dialog_takes_a_db_host_and_its_restart_method(qtbot):
    import pytest

    from tunebench.core.errors import ConfigError
    from tunebench.ui.targets_panel import TargetDialog

    d = TargetDialog()
    qtbot.addWidget(d)
    d.name.setText("prod")
    d.db_host.setText("ssh://me@db1:2222")
    d.option_file.setText("/etc/mysql/mariadb.conf.d/99-tunebench.cnf")
    with pytest.raises(ConfigError, match="needs all three"):
        d.target()
    d.restart_command.setText("sudo systemctl restart mariadb")
    t = d.target()
    assert (t.db_host, t.restart_command) == ("ssh://me@db1:2222", "sudo systemctl restart mariadb")
    d.db_host.setText("db1 with spaces")
    with pytest.raises(ConfigError, match="not an SSH host"):
        d.target()


def test_target_dialog_takes_tls_settings(qtbot):
    """Issue 28: the mysql client's --ssl-mode and its files, PREFERRED by default, checked together."""
    from tunebench.core.errors import ConfigError
    from tunebench.ui.targets_panel import TargetDialog

    d = TargetDialog()
    qtbot.addWidget(d)
    d.name.setText("prod")
    assert d.target().ssl_mode == "PREFERRED"
    d.ssl_mode.setCurrentText("VERIFY_CA")
    with pytest.raises(ConfigError, match="needs --ssl-ca"):
        d.target()
    d.ssl_ca.setText("/etc/mysql/ca.pem")
    t = d.target()
    assert (t.ssl_mode, t.ssl_ca, t.ssl_cert) == ("VERIFY_CA", "/etc/mysql/ca.pem", None)
    d.ssl_cert.setText("/etc/mysql/client.pem")
    with pytest.raises(ConfigError, match="go together"):
        d.target()


@pytest.mark.integration
def test_client_hosts_are_kept_per_target(window, sandbox):
    from tunebench.mysql.target import Target

    window.targets.list.setCurrentRow(0)
    window.workload.client_hosts.setText("ssh://me@client1, ssh://me@client2")
    window.targets.add_target(Target(name="other", host="127.0.0.1", port=sandbox.status().port), "x")
    assert window.targets.current_name() == "other" and window.workload.client_hosts.text() == ""
    window.targets.list.setCurrentRow(0)
    assert window.workload.client_hosts.text() == "ssh://me@client1, ssh://me@client2"
    assert window.workload.client_host_urls() == ("ssh://me@client1", "ssh://me@client2")


def test_welcome_once_on_an_empty_store_and_the_about_box(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from tunebench.store.repo import Store
    from tunebench.ui.main_window import MainWindow

    store = Store(tmp_path / "empty.sqlite")
    w = MainWindow(store, settings=QSettings(str(tmp_path / "gui.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    dlg = w.maybe_welcome()
    assert dlg is not None and not dlg.isModal() and "sandbox" in dlg.findChildren(type(dlg.sandbox_button))[0].text()
    dlg.recipe_button.click()
    assert [n for n, _ in w.sweep.axes()] == ["innodb_doublewrite", "innodb_flush_log_at_trx_commit"]
    assert w.maybe_welcome() is None  # once
    about = w.show_about()
    for key in ("Tunebench", "Qt", "PySide6", "pyqtgraph", "mysql-connector-python", "server"):
        assert f"{key}: " in about.text
    assert "C extension" in about.info["mysql-connector-python"]
    store.close()
