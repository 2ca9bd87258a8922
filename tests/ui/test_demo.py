"""A demo plan in the window (issue 45 item 4): live through the window's own actions (stubbed here: the real
run is tests/ui/test_demo_live.py), paused and skipped, rehearsed over a recording without touching a server,
and going on over the recording when the load dies mid-plan."""

from tunebench.core.demo_plan import parse_plan
from tunebench.run.records import RunError, RunOutcome
from tunebench.store.synthetic import record

PLAN = """name = "quick"
title = "a quick one"
{extra}
[load]
workload = "oltp_update_index"
threads = 4
rate = 100
[[step]]
at = 0
do = "start"
caption = "go"
[[step]]
at = {flip}
do = "flip"
knob = "innodb_flush_log_at_trx_commit"
value = "2"
caption = "the flip"
[[step]]
at = {say}
do = "say"
caption = "a word"
[[step]]
at = {stop}
do = "stop"
"""


def stubbed(win, monkeypatch) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(win, "run_workload", lambda: calls.append("run"))
    monkeypatch.setattr(win, "flip_knob", lambda name, value, **_k: calls.append(f"flip {name}={value}"))
    monkeypatch.setattr(win, "stop_run", lambda: calls.append("stop"))
    monkeypatch.setattr(win.controller, "running", lambda: True)
    return calls


def test_a_live_plan_runs_its_steps_in_order_with_a_countdown_pause_and_skip(win, qtbot, monkeypatch):
    calls = stubbed(win, monkeypatch)
    plan = parse_plan(PLAN.format(extra="", flip=0.4, say=30, stop=60))
    lines: list[str] = []
    win.demo.line.connect(lines.append)
    win.demo.start(plan)
    assert calls == ["run"]  # at 0: at once
    assert win.workload.workload.currentText() == "oltp_update_index" and win.workload.rate.text() == "100"
    assert win.demo_pause_action.isEnabled() and win.demo_next_action.isEnabled()
    # the plan waits for the load's first second (a prepare, a busy machine): then counts from it
    assert "waiting for the load's first second" in win.dashboard.demo_line.text()
    qtbot.wait(600)
    assert calls == ["run"] and win.demo.now() == 0.0
    win.controller.timeline.add(1_790_000_000.0, {"client.main.tps": 100.0})
    qtbot.waitUntil(lambda: any("next in" in ln and "flip innodb_flush_log_at_trx_commit to 2" in ln for ln in lines),
                    timeout=3000)
    assert win.dashboard.demo_line.isVisible()
    qtbot.waitUntil(lambda: "flip innodb_flush_log_at_trx_commit=2" in calls, timeout=5000)
    win.demo_pause_action.trigger()  # Space
    t = win.demo.now()
    qtbot.wait(300)
    assert win.demo.now() == t and "PAUSED" in win.dashboard.demo_line.text()
    win.demo_pause_action.trigger()
    assert not win.demo.paused
    win.demo_next_action.trigger()  # N: the say step now, then the stop
    assert win.demo.done == 3 and "a word" in win.dashboard.demo_line.text()
    win.demo_next_action.trigger()
    assert calls == ["run", "flip innodb_flush_log_at_trx_commit=2", "stop"]
    assert win.demo.plan is None and not win.dashboard.demo_line.isVisible()
    assert not win.demo_pause_action.isEnabled()


def test_a_rehearsal_plays_the_recording_and_does_nothing_to_a_server(win, qtbot, monkeypatch):
    calls = stubbed(win, monkeypatch)
    sid = record(win.store, 120, 30, knob_at=30, verdict=True)
    plan = parse_plan(PLAN.format(extra="", flip=30, say=60, stop=100))
    assert win.rehearse_demo_plan.__name__  # (the Demo menu's entry)
    assert win.demo.rehearse(plan, sid)
    assert win.demo.mode == "rehearsal" and win.replay_bar.speed_factor == 10
    win.replay_bar.speed.setCurrentText("30x")  # the test's own hurry
    win.stage.set(True, full_screen=False)
    seen: list[str] = []
    win.demo.finished.connect(seen.append)
    qtbot.waitUntil(lambda: seen == ["done"], timeout=15000)
    assert calls == []  # no run, no flip, no stop: the recording has its own
    assert [do for _t, do in win.demo.log] == ["start", "flip", "say", "stop"]
    # each when the head reached its second: never earlier; later by the head's steps (a 0.1-s tick is 3 s of the
    # recording at 30x, and a tick the busy machine delays by 0.4 s another 12)
    assert all(0 <= t - at <= 15
               for (t, _do), at in zip(win.demo.log, (0, 30, 60, 100), strict=True)), win.demo.log
    win.stage.set(False)


def test_when_the_load_dies_the_plan_goes_on_over_its_recording(win, qtbot, monkeypatch):
    calls = stubbed(win, monkeypatch)
    sid = record(win.store, 120, 30, knob_at=30, verdict=True)
    plan = parse_plan(PLAN.format(extra=f"rehearsal = {sid}", flip=0.2, say=1.5, stop=3))
    win.demo.start(plan)
    win.controller.timeline.add(1_790_000_000.0, {"client.main.tps": 100.0})  # the load's first second
    qtbot.waitUntil(lambda: len(calls) == 2, timeout=5000)  # run, flip
    win.controller.run_finished.emit(RunOutcome("failed", None, error=RunError("target", "server has gone away")))
    assert win.demo.mode == "recording" and win.controller.replay_session["id"] == sid
    assert "the server stopped at" in win.dashboard.demo_line.text()
    assert f"the recording of session {sid}" in win.dashboard.demo_line.text()
    head = win.replay_timeline.head
    assert head is not None and 0.0 < head < 3.0  # from the second it died, not from the start or the end
    seen: list[str] = []
    win.demo.finished.connect(seen.append)
    qtbot.waitUntil(lambda: seen == ["done"], timeout=10000)
    assert calls == ["run", "flip innodb_flush_log_at_trx_commit=2"]  # the rest over the recording


def test_a_server_that_stops_answering_sends_the_plan_to_its_recording_at_once(win, qtbot, monkeypatch):
    """Seen with the sandbox killed -9 mid-demo: the run waited 63 s of its step and 30 s more for the server, and
    the plan went on flipping a dead server. The watch's "server not answering" now sends it to the recording and
    stops the live run."""
    from tunebench.core.interval import Event

    calls = stubbed(win, monkeypatch)
    sid = record(win.store, 120, 30, knob_at=30, verdict=True)
    plan = parse_plan(PLAN.format(extra=f"rehearsal = {sid}", flip=0.2, say=1.5, stop=3))
    win.demo.start(plan)
    win.controller.timeline.add(1_790_000_000.0, {"client.main.tps": 100.0})
    qtbot.waitUntil(lambda: len(calls) == 2, timeout=5000)  # run, flip
    why = "sandbox (watch): cannot connect to UNIX socket …: no server listening there (is it running?)"
    win.controller.timeline_event.emit(Event(1_790_000_001.0, "gap", f"server not answering: {why}",
                                             {"server": "down", "why": why}))
    assert calls[-1] == "stop"  # the live run stopped
    assert win.demo.mode == "recording" and win.controller.replay_session["id"] == sid
    assert "the server stopped at" in win.dashboard.demo_line.text() and why in win.dashboard.demo_line.text()
    # the run's end (the Stop) is not a second failure
    win.controller.run_finished.emit(RunOutcome("stopped", 7))
    assert win.demo.mode == "recording"
    seen: list[str] = []
    win.demo.finished.connect(seen.append)
    qtbot.waitUntil(lambda: seen == ["done"], timeout=10000)


def test_a_recording_shorter_than_the_plan_still_brings_its_last_steps(win, qtbot, monkeypatch):
    """Seen with the sandbox killed at 72 s: the recording (136 s) ended before the plan (150 s), its play head
    stopped at the end and the plan's last steps never came."""
    calls = stubbed(win, monkeypatch)
    sid = record(win.store, 20, 30, knob_at=5, verdict=True)
    plan = parse_plan(PLAN.format(extra="", flip=5, say=18, stop=40))
    assert win.demo.rehearse(plan, sid)
    win.replay_bar.speed.setCurrentText("30x")
    seen: list[str] = []
    win.demo.finished.connect(seen.append)
    qtbot.waitUntil(lambda: seen == ["done"], timeout=15000)
    assert [do for _t, do in win.demo.log] == ["start", "flip", "say", "stop"] and calls == []
    assert win.demo.log[-1][0] >= 40  # at its time, after the recording's end (20 s)


def test_a_load_that_dies_without_a_recording_ends_the_plan_saying_why(win, qtbot, monkeypatch):
    stubbed(win, monkeypatch)
    plan = parse_plan(PLAN.format(extra="", flip=5, say=6, stop=7))
    seen: list[str] = []
    win.demo.finished.connect(seen.append)
    win.demo.start(plan)
    win.controller.run_finished.emit(RunOutcome("failed", None, error=RunError("target", "server has gone away")))
    assert len(seen) == 1 and "server has gone away" in seen[0] and "no rehearsed recording" in seen[0]
    # a load that completes (its steps ran out) is no failure: the plan's captions go on
    win.demo.start(plan)
    win.controller.run_finished.emit(RunOutcome("completed", 5))
    assert win.demo.running and "the load completed" in win.dashboard.demo_line.text()
    win.demo.stop()


def test_a_load_the_window_refuses_ends_the_plan_before_any_flip(win, qtbot, monkeypatch):
    calls = stubbed(win, monkeypatch)
    monkeypatch.setattr(win.controller, "running", lambda: False)  # (refused: no run started)
    seen: list[str] = []
    win.demo.finished.connect(seen.append)
    win.demo.start(parse_plan(PLAN.format(extra="", flip=0.1, say=6, stop=7)))
    assert seen == ["the load did not start (the status line says why)"] and calls == ["run"]
    qtbot.wait(300)
    assert calls == ["run"]  # no flip on a server between runs


def test_a_bad_plan_file_is_one_line_and_nothing_starts(win, qtbot, monkeypatch, tmp_path):
    calls = stubbed(win, monkeypatch)
    bad = tmp_path / "bad.toml"
    bad.write_text("[[step]]\nat = 0\ndo = \"dance\"\n")
    messages: list[str] = []
    monkeypatch.setattr(win, "show_message", messages.append)
    assert not win.run_demo_plan(str(bad))
    assert calls == [] and not win.demo.running
    assert len(messages) == 1 and "step 1: do must be one of" in messages[0]
