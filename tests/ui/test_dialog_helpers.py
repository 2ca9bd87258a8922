"""Issue 46 item 12: export dialogs opened in the current directory (the git checkout); they open where the user
last saved, else in their documents. The notes editor wraps its lines."""

from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QPlainTextEdit, QWidget

from tunebench.ui.dialog_helpers import NotesDialog, save_path, start_dir


def test_a_save_dialog_opens_where_the_user_last_saved(qtbot, tmp_path, monkeypatch):
    window = QWidget()
    qtbot.addWidget(window)
    window.settings = QSettings(str(tmp_path / "gui.ini"), QSettings.Format.IniFormat)
    asked = []
    chosen = tmp_path / "exports" / "session-3.svg"
    chosen.parent.mkdir()
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        lambda _w, _title, where, _filters: (asked.append(where), (str(chosen), ""))[1])
    first = start_dir(window)
    assert first != Path.cwd() and first.is_dir()  # documents (or home), never where Tunebench was started
    assert save_path(window, "Export", "session-3.svg", "SVG (*.svg)") == str(chosen)
    assert Path(asked[0]) == first / "session-3.svg"
    save_path(window, "Export", "session-4.svg", "SVG (*.svg)")
    assert Path(asked[1]) == chosen.parent / "session-4.svg"  # where the last one went


def test_the_notes_editor_wraps_its_lines(qtbot):
    dialog = NotesDialog(None, "Notes", "Notes of session 1", "x " * 400)
    qtbot.addWidget(dialog)
    assert dialog.editor.lineWrapMode() == QPlainTextEdit.LineWrapMode.WidgetWidth
    assert dialog.text() == "x " * 400
