"""`gui --metrics-listen`: the window's run records (from its run process) reach the endpoint, labelled with the
session; the run's end takes its state (step, knobs) off."""

from __future__ import annotations

from tests.conftest import _free_port

from tunebench.core.interval import Event, Interval
from tunebench.core.openmetrics import LiveReading
from tunebench.run.child import RunRequest
from tunebench.run.metrics_endpoint import MetricsEndpoint
from tunebench.run.records import RunOutcome, RunSession
from tunebench.ui.controller import WindowController
from tunebench.ui.run_worker import RunWorker


def test_run_records_feed_the_endpoint(qtbot):
    endpoint = MetricsEndpoint(f"127.0.0.1:{_free_port()}")
    try:
        worker = RunWorker(RunRequest("unused.sqlite", None, None, live_metrics=True))  # type: ignore[arg-type]
        WindowController._feed_metrics(worker, endpoint)
        worker._dispatch(RunSession(12, "oltp_read_only", "sandbox", "lab-1"))
        worker._dispatch(Event(99.0, "step_start", "step 1", {"threads": {"main": 8}, "config": 0, "step": 1}))
        worker._dispatch(Interval(100.5, "main", 8, 4321.0, 60000.0, 0, 0, 0, {"p99": 4.0}))
        worker._dispatch(LiveReading(100.4, {"server.threads_running": 6.0}, {"server.threads_running": "gauge"},
                                     {"server.com_commit": 777.0}))
        text = endpoint.metrics.render(scraper="a")
        labels = 'session="12",workload="oltp_read_only",target="sandbox",host="lab-1"'
        assert f'tunebench_client_tps{{{labels},group="main"}} 4321 100.500' in text
        assert f'tunebench_client_latency_seconds{{{labels},group="main",quantile="0.99"}} 0.004 100.500' in text
        assert f"tunebench_server_threads_running{{{labels}}} 6 100.400" in text
        assert f"tunebench_server_com_commit_total{{{labels}}} 777 100.400" in text
        assert "tunebench_step_info{" in text
        with qtbot.waitSignal(worker.finished):
            worker._dispatch(RunOutcome("completed", 12))
        after = endpoint.metrics.render(scraper="a")
        assert "tunebench_step_info" not in after and "tunebench_client_tps{" in after
    finally:
        endpoint.close(linger=False)
