"""The About box (every version a bug report needs) and the first-run welcome."""

from __future__ import annotations

import platform
import sys
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal, qVersion
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from tunebench import __version__, paths
from tunebench.core.errors import TunebenchError

if TYPE_CHECKING:
    pass

SAMPLE_RECIPE = "trx-commit-doublewrite"


def versions(server: str | None = None) -> dict[str, str]:
    import mysql.connector
    import paramiko
    import pyqtgraph
    import PySide6
    import sqlalchemy

    from tunebench.load.driver import driver_mode
    from tunebench.load.hotloop import loop_mode

    return {
        "Tunebench": __version__ + (" (bundle)" if getattr(sys, "frozen", False) else ""),
        "Python": platform.python_version(),
        "Qt": qVersion(),
        "PySide6": PySide6.__version__,
        "pyqtgraph": pyqtgraph.__version__,
        "SQLAlchemy": sqlalchemy.__version__,
        "mysql-connector-python": f"{mysql.connector.__version__} ({driver_mode()})",
        "builtin engine": loop_mode(),
        "paramiko": paramiko.__version__,
        "server": server or "(not connected)",
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "Qt platform": QApplication.platformName() if QApplication.instance() else "-",
        "data": str(paths.data_dir()),
    }


class AboutDialog(QDialog):
    def __init__(self, server: str | None, parent: Any = None):
        super().__init__(parent)
        self.setWindowTitle("About Tunebench")
        self.info = versions(server)
        self.text = "\n".join(f"{k}: {v}" for k, v in self.info.items())
        view = QTextBrowser()
        view.setPlainText(self.text)
        copy = QPushButton("Copy for a bug report")
        copy.clicked.connect(lambda: QApplication.clipboard().setText(self.text))
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(copy)
        row.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>Tunebench</b>: a workbench for MySQL-family performance engineers"))
        layout.addWidget(view)
        layout.addLayout(row)
        self.resize(560, 380)


def sandbox_offer() -> str:
    """What the sandbox would use here: one paragraph, from the machine itself."""
    from tunebench.hosts.sandbox import SandboxServer

    sb = SandboxServer()
    try:
        binary = sb.binary()
        server = f"{binary.flavor} {binary.version} ({binary.path})"
    except TunebenchError as exc:
        return f"No server binary found for a sandbox: {exc}"
    return (f"The sandbox is a private {server} that Tunebench starts itself, in {sb.base}, listening on a "
            "socket and on 127.0.0.1 only. Nothing is installed and no system server is touched; every knob "
            "a run changes is put back.")


class WelcomeDialog(QDialog):
    """Shown once, on a first start with an empty store; never modal (a headless demo never sees it). Its
    buttons only say what the user chose; the window acts on it."""

    use_sandbox = Signal()
    add_server = Signal()
    load_recipe = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Welcome to Tunebench")
        self.setModal(False)
        text = QLabel(
            "<p><b>Tunebench</b> runs sysbench-identical load against MySQL, Percona Server or MariaDB, "
            "records everything on one 1-second timeline, and lets you flip knobs while it runs.</p>"
            f"<p>{sandbox_offer()}</p>"
            "<p>Or add an existing server (its password is asked for, kept in memory or the system keyring, "
            f"never in Tunebench's files). A sample sweep, <i>{SAMPLE_RECIPE}</i>, is one click away.</p>")
        text.setWordWrap(True)
        self.sandbox_button = QPushButton("Use the sandbox")
        self.add_button = QPushButton("Add an existing server…")
        self.recipe_button = QPushButton("Load the sample sweep")
        close = QPushButton("Close")
        self.sandbox_button.clicked.connect(self._sandbox)
        self.add_button.clicked.connect(self._add)
        self.recipe_button.clicked.connect(self._recipe)
        close.clicked.connect(self.accept)
        row = QHBoxLayout()
        for b in (self.sandbox_button, self.add_button, self.recipe_button, close):
            row.addWidget(b)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addLayout(row)
        self.resize(640, 260)

    def _sandbox(self) -> None:
        self.use_sandbox.emit()
        self.accept()

    def _add(self) -> None:
        self.add_server.emit()
        self.accept()

    def _recipe(self) -> None:
        self.load_recipe.emit(SAMPLE_RECIPE)
        self.accept()
