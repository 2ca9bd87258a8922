"""Targets: the sandbox first, then every other server's sandbox (sandbox:NAME: the kits, `tunebench servers`),
then saved targets; add, delete, test a connection, start/stop the selected sandbox."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.errors import ConfigError
from tunebench.core.target import SSL_MODES
from tunebench.hosts.sandbox import SandboxServer, other_sandboxes
from tunebench.mysql.target import Target, remember_password, resolve_password, save_to_keyring, typed_password
from tunebench.run.tasks import read_server_facts
from tunebench.store.repo import Store
from tunebench.ui.tasks import TaskRunner

SANDBOX = "sandbox"


class PasswordDialog(QDialog):
    """A saved target's password, asked once per session when nothing else gives it (no keyring entry, password
    file, $MYSQL_PWD or ~/.my.cnf): kept in memory for this session, or in the system keyring if asked."""

    def __init__(self, target: Target, parent: QWidget | None = None):
        super().__init__(parent)
        self.target = target
        self.setWindowTitle(f"Password for {target.name}")
        self.password = QLineEdit()
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.keyring = QCheckBox("keep it in the system keyring (else for this session only)")
        form = QFormLayout(self)
        form.addRow(QLabel(f"{target.user}@{target.address()} ({target.name}): no password is stored for it"))
        form.addRow("Password", self.password)
        form.addRow(self.keyring)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)


class TargetDialog(QDialog):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Add target")
        form = QFormLayout(self)
        self.name = QLineEdit()
        self.host = QLineEdit("127.0.0.1")
        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.port.setValue(3306)
        self.socket = QLineEdit()
        self.socket.setPlaceholderText("optional UNIX socket path")
        self.user = QLineEdit("root")
        self.schema = QLineEdit()
        self.password = QLineEdit()
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.password.setPlaceholderText("kept in memory for this session")
        self.keyring = QCheckBox("remember in the system keyring (never in Tunebench's files)")
        self.db_host = QLineEdit()
        self.db_host.setPlaceholderText("optional: ssh://user@dbhost — CPU, disks, mysqld over SSH")
        self.ssh_key = QLineEdit()
        self.ssh_key.setPlaceholderText("optional: private key file (else agent, ~/.ssh)")
        self.option_file = QLineEdit()
        self.option_file.setPlaceholderText("static knobs: e.g. /etc/mysql/mariadb.conf.d/99-tunebench.cnf")
        self.restart_command = QLineEdit()
        self.restart_command.setPlaceholderText("static knobs: e.g. sudo systemctl restart mariadb")
        self.ssl_mode = QComboBox()
        self.ssl_mode.addItems(list(SSL_MODES))
        self.ssl_mode.setCurrentText("PREFERRED")  # as the mysql client
        self.ssl_ca = QLineEdit()
        self.ssl_ca.setPlaceholderText("VERIFY_CA and up: the CA that signed the server's certificate")
        self.ssl_cert = QLineEdit()
        self.ssl_cert.setPlaceholderText("optional: client certificate (with its key)")
        self.ssl_key = QLineEdit()
        self.ssl_key.setPlaceholderText("optional: the client certificate's private key")
        self.public_key = QCheckBox("Without TLS: take the server's RSA public key (caching_sha2_password)")
        self.public_key.setToolTip("the mysql client's --get-server-public-key; the key is not verified: prefer TLS")
        for label, w in (("Name", self.name), ("Host", self.host), ("Port", self.port), ("Socket", self.socket),
                         ("User", self.user), ("Schema", self.schema), ("Password", self.password),
                         ("", self.keyring), ("DB host (SSH)", self.db_host), ("SSH key", self.ssh_key),
                         ("Option file", self.option_file), ("Restart command", self.restart_command),
                         ("TLS (ssl-mode)", self.ssl_mode), ("TLS CA", self.ssl_ca), ("TLS certificate", self.ssl_cert),
                         ("TLS key", self.ssl_key), ("", self.public_key)):
            form.addRow(label, w)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def target(self) -> Target:
        name = self.name.text().strip()
        if not name or name == SANDBOX or name.startswith(SANDBOX + ":"):
            raise ConfigError("a target needs a name other than 'sandbox' or 'sandbox:NAME'")
        db_host = self.db_host.text().strip() or None
        option_file = self.option_file.text().strip() or None
        restart = self.restart_command.text().strip() or None
        if db_host:
            from tunebench.hosts.ssh import parse_ssh_url

            parse_ssh_url(db_host)
        if (option_file or restart) and not (db_host and option_file and restart):
            raise ConfigError("a restart method needs all three: DB host, option file and restart command")
        target = Target(name=name, socket=self.socket.text().strip() or None,
                        host=self.host.text().strip() or None, port=self.port.value(),
                        user=self.user.text().strip() or "root", schema=self.schema.text().strip() or None,
                        db_host=db_host, ssh_key=self.ssh_key.text().strip() or None, option_file=option_file,
                        restart_command=restart, ssl_mode=self.ssl_mode.currentText(),
                        ssl_ca=self.ssl_ca.text().strip() or None, ssl_cert=self.ssl_cert.text().strip() or None,
                        ssl_key=self.ssl_key.text().strip() or None,
                        get_server_public_key=self.public_key.isChecked())
        target.check_tls()
        return target


class TargetsPanel(QWidget):
    target_changed = Signal(str)
    target_ready = Signal(str)  # the sandbox started or stopped: what the target answers has changed
    message = Signal(str)

    def __init__(self, store: Store, sandbox: SandboxServer, tasks: TaskRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self.store, self.sandbox, self.tasks = store, sandbox, tasks
        layout = QVBoxLayout(self)
        self.list = QListWidget()
        layout.addWidget(self.list, 1)
        row = QHBoxLayout()
        self.add_button = QPushButton("Add…")
        self.delete_button = QPushButton("Delete")
        self.test_button = QPushButton("Test connection")
        for b in (self.add_button, self.delete_button, self.test_button):
            row.addWidget(b)
        layout.addLayout(row)
        sb_row = QHBoxLayout()
        self.sandbox_label = QLabel()
        self.sandbox_button = QPushButton()
        sb_row.addWidget(self.sandbox_label, 1)
        sb_row.addWidget(self.sandbox_button)
        layout.addLayout(sb_row)
        self.info = QLabel("")
        self.info.setWordWrap(True)
        layout.addWidget(self.info)
        self.add_button.clicked.connect(self.add_dialog)
        self.delete_button.clicked.connect(self._on_delete)
        self.test_button.clicked.connect(self.test_connection)
        self.sandbox_button.clicked.connect(self.toggle_sandbox)
        self.list.currentTextChanged.connect(self.target_changed.emit)
        self.list.currentTextChanged.connect(self._on_current_changed)
        self._others: dict[str, SandboxServer] = {}
        self.password_dialog: PasswordDialog | None = None  # open while a target's password is being asked
        self.refresh()
        self._update_sandbox()

    def refresh(self) -> None:
        current = self.list.currentItem().text() if self.list.currentItem() else SANDBOX
        self.list.clear()
        self.list.addItem(SANDBOX)
        self._others = {sb.target_name: sb for sb in other_sandboxes()}
        for name in self._others:
            self.list.addItem(name)
        for t in self.store.list_targets():
            self.list.addItem(t.name)
        items = self.list.findItems(current, Qt.MatchFlag.MatchExactly)
        self.list.setCurrentRow(self.list.row(items[0]) if items else 0)

    def current_name(self) -> str:
        item = self.list.currentItem()
        return item.text() if item else SANDBOX

    def selected_sandbox(self) -> SandboxServer:
        """The sandbox the Start/Stop button acts on: the selected one, else the default."""
        return self._others.get(self.current_name(), self.sandbox)

    def current_target(self) -> Target:
        name = self.current_name()
        if name == SANDBOX or name in self._others:
            sb = self.selected_sandbox()
            if not sb.status().running:
                raise ConfigError(f"the {name} server is stopped: start it first")
            return sb.target()
        t = self.store.get_target(name)
        if t is None:
            raise ConfigError(f"unknown target {name!r}")
        return t

    def add_dialog(self) -> None:
        """Ask for a server to add (its password goes to memory or the keyring, never to the store)."""
        dialog = TargetDialog(self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        try:
            t = dialog.target()
        except ConfigError as exc:
            self.message.emit(str(exc))
            return
        if dialog.password.text():
            remember_password(t, dialog.password.text())
            if dialog.keyring.isChecked() and (why := save_to_keyring(t, dialog.password.text())):
                self.message.emit(f"{t.name}: password kept for this session only: {why}")
        self.store.save_target(t)
        self.refresh()
        items = self.list.findItems(t.name, Qt.MatchFlag.MatchExactly)  # sorted by name: not always the last
        self.list.setCurrentRow(self.list.row(items[0]) if items else 0)

    def add_target(self, t: Target, password: str | None = None) -> None:
        if password is not None:
            remember_password(t, password)
        self.store.save_target(t)
        self.refresh()
        items = self.list.findItems(t.name, Qt.MatchFlag.MatchExactly)  # sorted by name: not always the last
        self.list.setCurrentRow(self.list.row(items[0]) if items else 0)

    def _on_current_changed(self, _name: str) -> None:
        self._update_sandbox()
        self.ask_password()

    def needs_password(self, name: str | None = None) -> Target | None:
        """The saved target (the current one by default) when nothing gives its password yet: not typed this
        session, no password file, $MYSQL_PWD, keyring entry or ~/.my.cnf. None for a sandbox or a target that
        has one."""
        name = name or self.current_name()
        if name == SANDBOX or name in self._others:
            return None
        t = self.store.get_target(name)
        if t is None or t.password_file or typed_password(t) is not None:
            return None
        return t if resolve_password(t, prompt=False) == "" else None

    def ask_password(self) -> PasswordDialog | None:
        """Ask for the current target's password when it needs one (once per session and target: a dialog
        cancelled is not asked again on selection; Run or Test connection ask again). The facts, a run, a test
        then use it."""
        t = self.needs_password()
        if t is None or self.password_dialog is not None:
            return None
        dialog = PasswordDialog(t, self)
        self.password_dialog = dialog

        def done(result: int) -> None:
            self.password_dialog = None
            if result != QDialog.DialogCode.Accepted:
                self.info.setText(f"{t.name}: no password given; Test connection or Run asks again")
                return
            remember_password(t, dialog.password.text())
            if dialog.keyring.isChecked() and (why := save_to_keyring(t, dialog.password.text())):
                self.message.emit(f"{t.name}: password kept for this session only: {why}")
            self.info.setText(f"{t.name}: password kept for this session" if not dialog.keyring.isChecked()
                              else f"{t.name}: password given")
            self.target_ready.emit(t.name)  # what it answers can be read now

        dialog.finished.connect(done)
        dialog.open()  # window-modal, without a nested event loop
        return dialog

    def _on_delete(self) -> None:
        name = self.current_name()
        if name != SANDBOX and name not in self._others:
            self.store.delete_target(name)
            self.refresh()

    def test_connection(self) -> None:
        try:
            target = self.current_target()
        except ConfigError as exc:
            self.info.setText(str(exc))
            return
        if self.needs_password() is not None:  # asked first; the test follows the answer (target_ready)
            self.ask_password()
            return
        self.info.setText(f"connecting to {target.name} …")
        self.tasks.submit("test-connection", lambda: read_server_facts(target),
                          lambda f: self.info.setText(f.connection_line),
                          # the error names the target once ("mine: mine: access denied" named it twice)
                          lambda m: self.info.setText(m if m.startswith(f"{target.name}:") else f"{target.name}: {m}"))

    def _update_sandbox(self) -> None:
        sb = self.selected_sandbox()
        st = sb.status()
        if st.running:
            self.sandbox_label.setText(f"{sb.target_name}: {st.flavor} {st.version}, port {st.port}")
            self.sandbox_button.setText("Stop sandbox")
        else:
            self.sandbox_label.setText(f"{sb.target_name}: stopped")
            self.sandbox_button.setText("Start sandbox")
        self.sandbox_button.setEnabled(True)

    def use_sandbox(self) -> None:
        """The sandbox as the target, started if it is not running."""
        self.list.setCurrentRow(0)
        if not self.sandbox.status().running:
            self.toggle_sandbox()

    def toggle_sandbox(self) -> None:
        sb = self.selected_sandbox()
        running = sb.status().running
        self.sandbox_button.setEnabled(False)
        self.sandbox_label.setText(f"{sb.target_name}: stopping …" if running else f"{sb.target_name}: starting …")

        def done(_r: object) -> None:
            self._update_sandbox()
            self.target_ready.emit(sb.target_name)

        def failed(message: str) -> None:
            self.message.emit(message)
            self._update_sandbox()

        self.tasks.submit("sandbox", sb.stop if running else sb.start, done, failed)
