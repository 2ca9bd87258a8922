"""A run process that never started (spawn refused: a script that starts the window without a __main__ guard)
left the worker holding it, and closing the window joined it: "can only join a started process" out of the close
handler. The worker keeps only a started process."""

import multiprocessing.context

import pytest

from tunebench.ui.run_worker import RunWorker


def test_a_run_that_never_started_is_not_waited_for(qtbot, monkeypatch):
    def refuse(self):
        raise RuntimeError("An attempt has been made to start a new process before the current process has finished")

    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", refuse)
    worker = RunWorker(request=None)
    with pytest.raises(RuntimeError):
        worker.start()
    assert not worker.running()
    worker.wait(1)  # returns: nothing was started
