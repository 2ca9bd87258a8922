"""Issue 44 item 3: variables the server moves by itself (GTID sets with the binary log on, whatever a version
exposes) are learned in the first warm-up and never called drift; a variable that moves later than its knob's SET
is that knob's companion when the controller says so; anything else that moves is drift."""

from tunebench.run import drift as drift_mod
from tunebench.run.drift import DriftGuard


class _Conn:
    def close(self):
        pass


def _guard(companion=None):
    events = []
    guard = DriftGuard(_Conn, lambda: {"innodb_thread_concurrency"}, events.append, None, companion)
    return guard, events


def test_what_moves_in_the_warm_up_is_learned_and_what_moves_later_is_drift(monkeypatch):
    base = {"gtid_owned": "", "x_counter": "1", "innodb_io_capacity": "200", "innodb_thread_sleep_delay": "10000"}
    readings = iter([base,
                     {**base, "x_counter": "7"},  # the warm-up: moved with no change of ours
                     {**base, "x_counter": "9", "innodb_thread_sleep_delay": "0"},  # a later step
                     {**base, "x_counter": "12", "innodb_thread_sleep_delay": "0", "innodb_io_capacity": "999"}])
    monkeypatch.setattr(drift_mod, "read_variables", lambda _c: next(readings))
    seen = []
    guard, events = _guard(companion=lambda n, b, a: seen.append((n, b, a)) or n == "innodb_thread_sleep_delay")
    assert guard.check("before step 1") == []
    assert guard.learn() == ["x_counter"] and guard.moving == {"x_counter"}
    assert "x_counter" in events[-1].label and events[-1].kind == "note"
    assert guard.learn() == []  # once
    assert guard.check("before step 2") == []  # the counter again: learned; the sleep delay: a companion
    assert ("innodb_thread_sleep_delay", "10000", "0") in seen
    found = guard.check("before step 3")
    assert [d.name for d in found] == ["innodb_io_capacity"] and events[-1].kind == "drift"


def test_a_companion_moving_in_the_warm_up_is_the_knobs_not_learned(monkeypatch):
    """The first configuration sets innodb_thread_concurrency: InnoDB moves innodb_thread_sleep_delay during the
    warm-up. It is that knob's companion (put back at the end), not a variable that moves by itself."""
    base = {"innodb_thread_sleep_delay": "10000", "x_counter": "1"}
    readings = iter([base, {"innodb_thread_sleep_delay": "0", "x_counter": "2"}])
    monkeypatch.setattr(drift_mod, "read_variables", lambda _c: next(readings))
    guard, _events = _guard(companion=lambda n, _b, _a: n == "innodb_thread_sleep_delay")
    guard.check("before step 1")
    assert guard.learn() == ["x_counter"] and "innodb_thread_sleep_delay" not in guard.moving
