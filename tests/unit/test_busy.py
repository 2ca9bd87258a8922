"""Busy seconds (core/busy.py): which of a step's seconds the machine spent elsewhere, and how it is said."""

import numpy as np

from tunebench.core.busy import BUSY_PCT, busy_mask, busy_text, step_busy


def _series(t, local, remote=None):
    out = {"proc.local.other.cpu": (np.asarray(t, float), np.asarray(local, float)),
           "client.main.tps": (np.asarray(t, float), np.ones(len(t)))}
    if remote is not None:
        out["proc.db1.other.cpu"] = (np.asarray(t, float) + 0.3, np.asarray(remote, float))
    return out


def test_a_steps_busy_seconds_are_counted_on_the_busiest_host():
    t = np.arange(101.0, 121.0)  # 20 seconds, [100, 120]
    local = np.where(np.arange(20) % 4 == 0, 40.0, 2.0)  # 5 busy seconds at 40 %
    remote = np.where(np.arange(20) < 12, 25.0, 1.0)  # 12 busy seconds at 25 %
    busy = step_busy(_series(t, local, remote), 100.0, 120.0)
    assert busy == {"seconds": 12, "of": 20, "threshold_pct": BUSY_PCT, "other_pct": 25.0, "host": "db1"}
    assert busy_text(busy) == "busy 12 of 20 s: 25 % of the CPU used by other processes on db1"
    quiet = step_busy(_series(t, np.full(20, 3.0)), 100.0, 120.0)
    assert quiet is not None and quiet["seconds"] == 0 and quiet["of"] == 20
    assert step_busy({"client.main.tps": (t, np.ones(20))}, 100.0, 120.0) is None  # not measured: not "quiet"
    # a probe out of phase with a step that ended 0.2 s after its last second: the step's 20 seconds, not 21 (the
    # demo's 5-s steps said "busy 6 of 6 s")
    shifted = step_busy({"proc.local.other.cpu": (np.arange(100.6, 121.0), np.full(21, 50.0)),
                         "client.main.tps": (t, np.ones(20))}, 100.0, 120.2)
    assert shifted is not None and shifted["of"] == 20 and shifted["seconds"] == 20


def test_each_engine_second_takes_the_probe_second_nearest_its_end():
    probe_t = np.arange(100.4, 110.4)  # the probe's seconds end 0.4 s after the engine's
    other = np.zeros(10)
    other[[3, 7]] = 50.0
    engine_t = np.arange(100.0, 110.0)
    mask = busy_mask({"proc.local.other.cpu": (probe_t, other)}, engine_t)
    assert list(np.flatnonzero(mask)) == [3, 7]
    # a second the probe missed (no sample within half a second) is not called busy from a neighbour's
    gap = busy_mask({"proc.local.other.cpu": (np.delete(probe_t, 3), np.delete(other, 3))}, engine_t)
    assert list(np.flatnonzero(gap)) == [7]
