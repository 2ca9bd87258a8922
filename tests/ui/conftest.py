"""GUI tests run offscreen, against the real sandbox, with a private settings file."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import gc

import pytest


@pytest.fixture(autouse=True)
def _collect_garbage_between_tests():
    """Free each test's windows when it ends, and collect the cycles of earlier tests (widgets, plot items) here,
    not in the middle of a later test's paint: pyqtgraph items freed by the collector during a QGraphicsView paint
    crashed the full suite once.

    pytest-qt closes a test's widgets and calls deleteLater(), but no event loop runs between tests to delete
    them: every window of a worker's session stayed alive (~27,000 Python objects each), with its timers. Later
    tests paid for them: a full collection grew from 0.06 to 0.3 s after 30 windows, and a test whose store
    refresh or replay woke the leaked windows' timers took 122-173 s and 40-45 CPU s instead of 2.5 s (issue 41).
    Here, after the test's own fixtures are torn down (this one was set up first), the deferred deletions run."""
    from PySide6.QtCore import QCoreApplication, QEvent

    gc.collect()
    yield
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()


@pytest.fixture
def window(qtbot, sandbox, tmp_path):
    from PySide6.QtCore import QSettings

    from tunebench import paths
    from tunebench.store.repo import Store
    from tunebench.ui.main_window import MainWindow

    store = Store(paths.default_db_path())
    settings = QSettings(str(tmp_path / "gui.ini"), QSettings.Format.IniFormat)
    w = MainWindow(store, sandbox, settings)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.stop_run()
    if w.worker is not None:
        w.worker.wait(60)
    store.close()


@pytest.fixture
def win(qtbot, tmp_path):
    """The window on a private store and settings file, no server (replay, compare, stage, appearance)."""
    from PySide6.QtCore import QSettings

    from tunebench.store.repo import Store
    from tunebench.ui.main_window import MainWindow

    store = Store(tmp_path / "sessions.sqlite")
    w = MainWindow(store, settings=QSettings(str(tmp_path / "gui.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    w.show()
    yield w
    w.stage.set(False)
    store.close()
