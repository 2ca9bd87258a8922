"""Small dialogs the window shares: file dialogs that open where the user last saved (or in their documents, never
the directory Tunebench was started from: a git checkout), and a notes editor whose lines wrap."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, QStandardPaths
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFileDialog, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from tunebench import paths

LAST_DIR = "files/last_dir"


def _settings(widget: QWidget) -> QSettings:
    """The window's settings (a test's own file), else the user's gui.ini."""
    found = getattr(widget.window(), "settings", None)
    if isinstance(found, QSettings):
        return found
    return QSettings(str(paths.data_dir() / "gui.ini"), QSettings.Format.IniFormat)


def start_dir(widget: QWidget) -> Path:
    """Where a file dialog opens: the folder of the last file saved or opened, if it is still there; else the
    user's documents; else their home."""
    last = _settings(widget).value(LAST_DIR)
    if isinstance(last, str) and last and Path(last).is_dir():
        return Path(last)
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    if docs and Path(docs).is_dir():
        return Path(docs)
    return Path.home()


def remember(widget: QWidget, path: str) -> None:
    if path:
        _settings(widget).setValue(LAST_DIR, str(Path(path).resolve().parent))


def save_path(widget: QWidget, title: str, name: str, filters: str) -> str:
    """A save dialog with `name` proposed in start_dir(); the path chosen ('' when cancelled), its folder
    remembered."""
    path, _ = QFileDialog.getSaveFileName(widget, title, str(start_dir(widget) / name), filters)
    remember(widget, path)
    return path


def open_path(widget: QWidget, title: str, filters: str) -> str:
    path, _ = QFileDialog.getOpenFileName(widget, title, str(start_dir(widget)), filters)
    remember(widget, path)
    return path


class NotesDialog(QDialog):
    """A session's notes: several lines, wrapped at the editor's width (QInputDialog's multi-line text did not
    wrap: a long line ran out of sight)."""

    def __init__(self, parent: QWidget | None, title: str, label: str, text: str):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.editor = QPlainTextEdit(text)
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(label))
        layout.addWidget(self.editor, 1)
        layout.addWidget(buttons)
        self.resize(560, 320)

    def text(self) -> str:
        return self.editor.toPlainText()
