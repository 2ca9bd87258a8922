"""The run's outcome and errors are data: kind and host travel as fields, never inside a sentence."""

import pickle

from tunebench.core.errors import ConfigError, StoreError, TargetError
from tunebench.core.stats import StepSummary
from tunebench.hosts.ssh import SshError
from tunebench.run.records import ChangeKnob, Reply, RunError, RunOutcome, StepResult


def test_errors_carry_their_kind_and_host():
    assert RunError.from_exception(ConfigError("bad")).kind == "config"
    assert RunError.from_exception(TargetError("down")).kind == "target"
    assert RunError.from_exception(StoreError("full")).kind == "store"
    e = RunError.from_exception(SshError("ssh u@h:2222: whatever the text says", "host_key_unknown",
                                         "ssh://u@h:2222"))
    assert (e.kind, e.host) == ("host_key_unknown", "ssh://u@h:2222")
    bug = RunError.from_exception(ZeroDivisionError("division by zero"))
    assert bug.kind == "bug" and "ZeroDivisionError" in bug.message


def test_an_outcome_crosses_a_pipe_and_keeps_the_cli_json_shape():
    s = StepSummary("main", 4, 10, 100.0, 2000.0, 100.0, 0.01, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 1000.0)
    outcome = RunOutcome("failed", 7, (StepResult(0, (s,)),), ({"name": "sync_binlog", "state": "restored"},),
                         RunError("host_key_unknown", "ssh u@h:22: unknown host key", "ssh://u@h:22"),
                         {"engine": "builtin", "steps": [{"step": 1, "tps": 100.0}]})
    back = pickle.loads(pickle.dumps(outcome))
    assert back == outcome and back.best_tps == 100.0
    d = back.to_dict()
    assert (d["session_id"], d["status"], d["engine"]) == (7, "failed", "builtin")
    assert d["restored"][0]["name"] == "sync_binlog"
    assert (d["error_kind"], d["error_host"]) == ("host_key_unknown", "ssh://u@h:22")
    assert pickle.loads(pickle.dumps(ChangeKnob(3, "sync_binlog", "0"))).rid == 3
    assert pickle.loads(pickle.dumps(Reply(3, error=RunError("config", "no")))).error.kind == "config"


def test_unreachable_ssh_is_an_unreachable_error_with_its_host():
    from conftest import _free_port
    from tunebench.hosts.ssh import SshHost, connect

    free_port = _free_port()  # closed: nothing listens there
    try:
        connect(SshHost("127.0.0.1", "nobody", free_port), timeout=3)
    except SshError as exc:
        assert exc.kind == "unreachable" and exc.host == f"ssh://nobody@127.0.0.1:{free_port}"
    else:
        raise AssertionError("connected to a closed port")


def test_the_users_stop_is_stopped_a_signal_or_a_lost_window_aborted(tmp_path):
    """The window's Stop used to end a run "aborted", like SIGTERM: it is "stopped" now."""
    import threading
    from multiprocessing import Pipe

    from tunebench.core.target import Target
    from tunebench.run.child import _commands
    from tunebench.run.experiment import Experiment
    from tunebench.run.records import Stop
    from tunebench.run.tasks import build_run_spec
    from tunebench.store.repo import Store

    store = Store(tmp_path / "s.sqlite")
    spec = build_run_spec("oltp_point_select", {"tables": 1, "table_size": "100"}, "1")

    def stopped_by(send_stop: bool) -> str:
        exp = Experiment(store, Target("t", host="127.0.0.1", port=1), spec)
        window, child = Pipe()
        listener = threading.Thread(target=_commands, args=(child, exp, lambda _r: None))
        listener.start()
        if send_stop:
            window.send(Stop())
        window.close()  # the window goes away (after its Stop, if any)
        listener.join(10)
        assert exp.stop_event.is_set()
        return exp.stop_status

    assert stopped_by(True) == "stopped"
    assert stopped_by(False) == "aborted"
    exp = Experiment(store, Target("t", host="127.0.0.1", port=1), spec)
    exp.request_stop()  # what SIGTERM calls
    assert exp.stop_status == "aborted"
    store.close()


def test_a_step_says_how_many_of_its_seconds_it_used_and_why():
    """Issue 30 item 2: a TPC-C step that dropped 7 ramp seconds said nothing of it (313 TPS beside a plot at ~85
    for 8 s); a step that lost its server for 3 s likewise."""
    from tunebench.core.step_context import step_seconds

    step = {"measure_from": 1000.0, "ended_at": 1030.2, "summary": {"main": {"seconds": 23, "steady_skipped": 7}}}
    s = step_seconds(step, "main")
    assert s is not None and s.text() == "23 of 30 s (7 s ramp-up below the steady level left out)"
    assert s.short() == "23/30*"
    full = step_seconds({"measure_from": 1000.0, "ended_at": 1030.0, "summary": {"main": {"seconds": 30}}}, "main")
    assert full is not None and full.text() == "30 s"
    down = {"measure_from": 1000.0, "ended_at": 1030.0, "summary": {
        "main": {"seconds": 25, "steady_skipped": 0}, "_incomplete": {"server_down_seconds": 3.2}}}
    d = step_seconds(down, "main")
    assert d is not None and d.text() == "25 of 30 s (3 s without a server; 2 s not reported left out)"
    # a summary that never counted its seconds (an older or synthetic one) says nothing, not "0 of 60 s"
    assert step_seconds({"measure_from": 1000.0, "ended_at": 1060.0, "summary": {"main": {"tps": 1.0}}}, "main") is None
