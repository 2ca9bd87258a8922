"""The Confirm action's blocks (run/confirm.py Confirmation) on a simulated run whose TPS follows the knob, each
second handed over as the confirmation waits for it (no real clock): the order, the knob put back where it was, the
busy seconds left out, and one more round of blocks when busy seconds left fewer than three pairs."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np

from tunebench.core.interval import Interval
from tunebench.run.confirm import Confirmation, confirm_order


class FakeRun:
    def __init__(self, busy_seconds=frozenset(), effect: float = 1.5):
        self.now = 1000.0
        self.knob = "1"
        self.busy_seconds = busy_seconds  # seconds since the start another process takes (over 10 % of the CPU)
        self.effect = effect
        self.events: list = []
        self.notes: list[str] = []
        self.stop_event = threading.Event()
        self._step_stop = threading.Event()
        self._step_ends = 1e12
        self.spec = SimpleNamespace(busy_pct=10.0, probe_interval=1.0)
        self.controller = SimpleNamespace(set_live=self.set_live)
        self.conf: Confirmation | None = None
        self.rng = np.random.default_rng(1)

    def set_live(self, name, value):
        before, self.knob = self.knob, str(value)
        return {"name": name, "from": before, "to": self.knob}

    def pause(self, dt: float) -> bool:
        """The run's clock moves on; each whole second ended is handed to the confirmation."""
        end = self.now + dt
        while int(self.now) < int(end):
            self.now = float(int(self.now) + 1)
            second = int(self.now - 1000.0)
            busy = second in self.busy_seconds
            tps = 1000.0 * (self.effect if self.knob == "2" else 1.0) * (0.5 if busy else 1.0)
            tps *= 1 + self.rng.normal(0, 0.02)
            assert self.conf is not None
            self.conf.feed_samples(self.now + 0.1, {"proc.local.other.cpu": 40.0 if busy else 1.0})
            self.conf.feed(Interval(t=self.now, group="main", threads=2, tps=tps, qps=tps, reads=0, writes=0,
                                    other=0, lat_ms={"p95": 1.0, "p99": 2.0}))
        self.now = end
        return False

    def _record(self, ev):
        self.events.append(ev)

    def on_note(self, m):
        self.notes.append(m)

    def noise_floor(self, _group):
        return None

    def _confirm_ended(self, _c):
        pass


def confirm(run: FakeRun) -> Confirmation:
    c = Confirmation(run, "innodb_flush_log_at_trx_commit", "1", "2", "main", 4, 1, confirm_order(False), False, "1")
    run.conf = c
    c.clock, c.pause = (lambda: run.now), run.pause
    c._blocks()  # the thread's work, here on the test's own thread
    return c


def test_eight_blocks_judge_a_true_effect_and_put_the_knob_back():
    run = FakeRun()
    c = confirm(run)
    data = c.event.data
    assert c.order == "ABBABAAB" and len(data["blocks"]) == 8 and run.knob == "1"
    v = data["verdict"]
    assert v["repeats"] == 4 and v["ci_low"] > 1.3 and "ABBA BAAB" in c.event.label


def test_blocks_lost_to_busy_seconds_run_once_more():
    """Another process's bursts over the first three pairs' B blocks: one pair keeps quiet seconds on both sides,
    so the eight blocks run again (said in a note) and the sixteen are judged."""
    run = FakeRun()
    c0 = confirm(run)
    busy = {int(lo - 1000.0) + k for side, lo, _hi in c0.blocks[:6] if side == "B" for k in range(6)}
    run = FakeRun(busy_seconds=frozenset(busy))
    c = confirm(run)
    assert len(c.blocks) == 16 and c.order == "ABBABAAB" * 2
    assert any("it needs 3; 8 blocks more" in n for n in run.notes), run.notes
    v = c.event.data["verdict"]
    assert v["repeats"] >= 3 and v["ci_low"] > 1.3 and "ABBA BAAB ABBA BAAB" in c.event.label
    assert run.knob == "1"
