"""Issue 42's Confirm action on the real sandbox: a run in progress, its knob flipped and confirmed from another
terminal (`tunebench live flip`, `tunebench live confirm`, through the run's control socket). The confirmation
alternates the flip's two values in eight blocks on the running load, records a "verdict" event whose numbers equal
a recomputation from the stored series, and leaves the knob where it was; the run's end puts it back."""

import json
import os
import stat
import threading
import time

import pytest
from tests.conftest import _run_in_process, wait_until
from tests.integration.test_sweep import knob_values, store_for

from tunebench.core.verdict import Verdict, recompute
from tunebench.load.engine import ClientGroup
from tunebench.load.workload import load_workload
from tunebench.run.confirm import control_dir, running_controls
from tunebench.run.experiment import Experiment
from tunebench.run.spec import RunSpec

pytestmark = pytest.mark.integration

KNOB = "innodb_flush_log_at_trx_commit"


def _knob(sandbox) -> str:
    return knob_values(sandbox)[KNOB]


def test_a_flip_of_trx_commit_confirmed_from_another_terminal(sandbox, cli):
    """oltp_update_index at 2 threads, every commit flushed (1) or not (2): a confirmed difference (the interval
    over the four pairs of blocks above 1: 1.34x-1.79x here on a quiet machine; at 1 thread this disk's fast fsync
    left 1.14x, 0.97-1.33). Blocks of 2 s with 1 s to settle (22 s in all) keep the test short. Busy seconds are
    not left out here (busy_pct None): beside the rest of the suite every second would be busy; what the machine's
    load does to the verdict is the simulation's business (tests/unit/test_verdict.py)."""
    before = knob_values(sandbox)
    assert before[KNOB] == "1"
    # this machine's noise floor for the load first (an A/A calibration of eight 2-s blocks): the confirmed verdict
    # below says it beside its ratio
    r = cli("calibrate", "--workload", "oltp_update_index", "--table-size", "10000", "--threads", "2",
            "--block-seconds", "2", "--settle-seconds", "0", "--warmup-seconds", "0", "--probes", "none",
            "--busy-threshold", "off", "--json", timeout=240)
    assert r.returncode == 0, r.stderr
    cal = json.loads(r.stdout)["calibration"]
    assert cal["pairs"] == 4 and cal["floor_pct"] is not None and cal["threads"] == 2, cal
    assert cal["floor_pct"] == round(100 * max(cal["ci_high"] - 1, 1 / cal["ci_low"] - 1, 0), 1)
    assert knob_values(sandbox) == before
    wl = load_workload("oltp_update_index")
    group = ClientGroup("main", wl, wl.options({"table_size": 10000}), (2,))
    store = store_for(sandbox)
    spec = RunSpec(groups=(group,), step_seconds=240, warmup_seconds=0, probes=(), busy_pct=None)
    exp = Experiment(store, sandbox.target(), spec)
    result: dict = {}
    th = threading.Thread(target=lambda: result.update(exp.run().to_dict()))
    th.start()
    try:
        wait_until(lambda: exp._measured_since is not None and time.time() > exp._measured_since + 3, 120,
                   "3 measured seconds")
        # nothing flipped yet: refused with one line, nothing changed. These two in this process (tests/conftest.py
        # _run_in_process: main(), its stderr and exit status; the request still goes through the run's socket):
        # two processes cost 1.4 CPU s each and their start-up's seconds of closed loop (issue 41); the flip and the
        # confirmation below come from another process, as from another terminal
        r = _run_in_process(("live", "confirm"))
        assert r.returncode == 2 and "flip one first" in r.stderr and r.stderr.count("\n") == 1, r.stderr
        r = _run_in_process(("live", "confirm", f"{KNOB}=1,2", "--block-seconds", "600"))
        assert r.returncode == 2 and "the step ends in" in r.stderr, r.stderr
        assert _knob(sandbox) == "1"
        sock = next(control_dir().glob("*.sock"))
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600

        r = cli("live", "flip", f"{KNOB}=2")
        assert r.returncode == 0 and f"{KNOB} 1 → 2" in r.stdout, r.stderr
        r = cli("live", "confirm", "--block-seconds", "2", "--settle-seconds", "1", "--json", timeout=240)
        assert r.returncode == 0, r.stderr
        done = json.loads(r.stdout)
        assert done["order"] == "BAABABBA"  # the knob was at B (2): one change fewer
        assert done["text"].startswith(f"confirming {KNOB} 1 → 2: BAAB ABBA blocks of 2 s"), done["text"]
        assert _knob(sandbox) == "2"  # where it was when the confirmation began
        data = done["data"]
        assert data["confirmed"] and len(data["blocks"]) == 8
        v = Verdict.from_dict(data["verdict"])
        print(done["verdict"])
        assert v.judged and v.repeats == 4, done["verdict"]
        if v.ci_low > 1.0:
            assert done["verdict"].startswith(f"{KNOB} 1 → 2 (Confirm): {v.ratio:.2f}x TPS (95 % CI ")
        else:
            # beside the suite's other workers at load 16 the machine's A/A floor was ±112 % and four pairs of
            # 2-s blocks could not tell 1.97x from noise (0.78-4.97): then it says so, and the interval still holds
            # the effect a quiet machine measures (1.34x-1.79x). Its power is the simulations' business
            # (tests/unit/test_confirm_blocks.py); here, what is said and stored is what the blocks give.
            # and the machine's noise beside it, "within" it only when the ratio is (3.06x outside ±203 %, a clean
            # clone: "(this machine's noise: ±203 %)")
            assert "no clear difference" in done["verdict"] and v.floor_text() in done["verdict"], done["verdict"]
            assert v.ci_high > 1.34 and cal["floor_pct"] > 20, (done["verdict"], cal)
        assert "confirmed over 4 pairs of blocks, BAAB ABBA" in done["verdict"]
        # "(this machine's noise: ±N %)", or "-- within this machine's noise (±N %)" when the ratio is inside the
        # floor (a clean clone at load 14: 3.31x inside an A/A floor of ±824 %)
        assert v.floor_pct == cal["floor_pct"] and f"±{cal['floor_pct']:.0f} %)" in done["verdict"]
    finally:
        exp.request_stop(by_user=True)
        th.join(120)
    assert result["status"] == "stopped"
    assert knob_values(sandbox) == before  # the run's end put the flip back
    session = store.get_session(result["session_id"])
    verdicts = [e for e in session["events"] if e["kind"] == "verdict"]
    confirmed = [e for e in verdicts if e["data"].get("confirmed")]
    assert len(confirmed) == 1
    stored = {n: (d.t, d.v) for n, d in store.series(result["session_id"]).items()}
    assert recompute(stored, confirmed[0]["data"]) == Verdict.from_dict(confirmed[0]["data"]["verdict"])
    # the blocks are on the timeline (bands), and the single flip before them is judged on its own seconds only
    assert [e["data"]["confirm"] for e in session["events"] if e["kind"] == "trial"] == list("BAABABBA")
    single = [e for e in verdicts if not e["data"].get("confirmed")]
    assert all(e["data"]["end"] <= confirmed[0]["data"]["start"] for e in single)
    # the socket went with the run (a run killed -9 by another test leaves its own: the next run clears it)
    assert not (control_dir() / f"{os.getpid()}.sock").exists() and not running_controls()
    store.close()
