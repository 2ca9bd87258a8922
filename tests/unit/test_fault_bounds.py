"""Without a server: a probe stuck on a frozen server is left behind in bounded time; a dead worker's
stderr says where and why it died."""

from __future__ import annotations

import re
import threading
import time

from tests.conftest import wait_until

from tunebench.core.probe import Reading
from tunebench.load.postmortem import examine
from tunebench.run.monitor import ProbeSampler


class FrozenProbe:
    """read() blocks like a query on a SIGSTOPped server, until `thaw` is set."""

    name = "frozen"

    def __init__(self) -> None:
        self.thaw = threading.Event()
        self.reading = threading.Event()
        self.closed = False
        self.reads = 0

    def open(self) -> str:
        return "frozen"

    def read(self) -> Reading:
        self.reads += 1
        self.reading.set()
        self.thaw.wait(30)
        return Reading(gauges={"x": 1.0})

    def close(self) -> None:
        self.closed = True


class QuickProbe(FrozenProbe):
    name = "quick"

    def read(self) -> Reading:
        return Reading(gauges={"y": 1.0})


def test_stop_and_close_leave_a_stuck_probe_behind_in_bounded_time():
    frozen, quick = FrozenProbe(), QuickProbe()
    reports: list[str] = []
    samples: list[dict[str, float]] = []
    sampler = ProbeSampler([frozen, quick], 0.1, lambda _t, v, _k: samples.append(v),
                           lambda _kind, _p, msg: reports.append(msg))
    sampler.open()
    sampler.start()
    assert frozen.reading.wait(5)
    t0 = time.monotonic()
    assert sampler.stop() == [frozen]
    assert time.monotonic() - t0 < ProbeSampler.STOP_GRACE + 1
    sampler.start()  # a server restart's resume: the stuck thread goes on, no second reader of its connection
    assert sum(1 for th in threading.enumerate() if th.name == "probe-frozen") == 1
    t0 = time.monotonic()
    sampler.close()
    assert time.monotonic() - t0 < ProbeSampler.STOP_GRACE + ProbeSampler.CLOSE_GRACE + 1
    assert quick.closed and not frozen.closed  # never closed under the thread still using it
    assert any("frozen: the server did not answer" in m for m in reports)
    n = len(samples)
    frozen.thaw.set()
    # the stuck thread's late read comes back and the thread ends: only then is "nothing written" a result
    wait_until(lambda: not any(th.name == "probe-frozen" for th in threading.enumerate()), 5,
               "the frozen probe's thread to finish its late read")
    assert len(samples) == n  # the late read is dropped, not written after the session ended
    assert frozen.reads == 1


FAULTHANDLER_SEGV = """\
Fatal Python error: Segmentation fault

Thread 0x00007f0000000001 (most recent call first):
  File "/venv/lib/python3.11/site-packages/tunebench/load/worker.py", line 248 in _run
  File "/usr/lib/python3.11/threading.py", line 1038 in _bootstrap_inner

Current thread 0x00007f0000000002 (most recent call first):
  File "/venv/lib/python3.11/site-packages/tunebench/load/driver.py", line 96 in execute
  File "/venv/lib/python3.11/site-packages/tunebench/load/worker.py", line 121 in run

Extension modules: numpy.core._multiarray_umath, _mysql_connector (total: 2)
"""


def test_postmortem_names_the_signal_the_crash_site_and_the_c_library_message():
    pm = examine(-11, FAULTHANDLER_SEGV)
    assert pm.describe() == "killed by SIGSEGV in the driver: Fatal Python error: Segmentation fault"
    glibc = "double free or corruption (out)\n" + FAULTHANDLER_SEGV.replace("Segmentation fault", "Aborted")
    assert examine(-6, glibc).describe() == "killed by SIGABRT in the driver: double free or corruption (out)"
    assert examine(-9, "").describe() == "killed by SIGKILL: no output"
    tb = "Traceback (most recent call last):\n  File \"x.py\", line 1 in <module>\nMemoryError\n"
    assert examine(1, tb).describe() == "exited with code 1: MemoryError"


class SlowProbe(FrozenProbe):
    """read() answers, but later than the interval: a server too busy to answer SHOW GLOBAL STATUS in time."""

    name = "slow"

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def read(self) -> Reading:
        self.reads += 1
        time.sleep(self.seconds)
        return Reading(gauges={"x": 1.0})


def test_a_probe_that_falls_behind_says_so_once():
    """At ~4,000 users the status probe's reads took seconds: its series skipped them without a word, and the
    gaps in the server's plots looked like missing data."""
    slow = SlowProbe(0.35)
    reports: list[str] = []
    sampler = ProbeSampler([slow], 0.1, lambda _t, _v, _k: None, lambda _kind, _p, msg: reports.append(msg))
    sampler.open()
    sampler.start()
    try:
        wait_until(lambda: slow.reads >= 4, 10, "four slow reads")
    finally:
        sampler.close()
    behind = [m for m in reports if "skips the seconds" in m]
    assert len(behind) == 1 and behind[0].startswith("probe slow: a read took 0.") and "every 0.1 s" in behind[0]


SAMPLER_CHILD = """
import sys, time
from tunebench.core.probe import Reading
from tunebench.run.monitor import ProbeSampler

class Quick:
    def __init__(self, name):
        self.name = name
    def open(self):
        return "quick"
    def read(self):
        return Reading(gauges={self.name: 1.0})
    def close(self):
        pass

sampler = ProbeSampler([Quick("status"), Quick("waits")], 0.1, lambda _t, _v, _k: None,
                       lambda kind, _p, msg: print(kind, msg, flush=True))
sampler.open()
sampler.start()
print("sampling", flush=True)
sys.stdin.readline()  # the test's word: it stopped this process, then let it go on
time.sleep(0.5)
sampler.close()
"""


# the children's sampling, told what a probe says, until the test writes a line (after the stop and SIGCONT)
SAMPLE_UNTIL_TOLD = """
sampler.open()
sampler.start()
sys.stdin.readline()
time.sleep(0.5)
sampler.close()
"""

SAMPLER_IN_READ_CHILD = """
import sys, time
from tunebench.core.probe import Reading
from tunebench.run.monitor import ProbeSampler

class Quick:
    def __init__(self, name, tell=0):
        self.name, self.reads, self.tell = name, 0, tell
    def open(self):
        return "quick"
    def read(self):
        self.reads += 1
        if self.reads == self.tell:  # the test stops this process while this read is in progress
            print("in read", flush=True)
            time.sleep(0.3)
        return Reading(gauges={self.name: 1.0})
    def close(self):
        pass

sampler = ProbeSampler([Quick("status"), Quick("waits", tell=5)], 0.1, lambda _t, _v, _k: None,
                       lambda kind, _p, msg: print(kind, msg, flush=True))
""" + SAMPLE_UNTIL_TOLD


def _stop_the_child(source: str, mark: str, pause_before: float) -> list[str]:
    """Run `source`, SIGSTOP it `pause_before` s after it printed `mark`, SIGCONT 2 s later: what it said."""
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    child = subprocess.Popen([sys.executable, "-c", source], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT, env=dict(os.environ))
    try:
        for line in child.stdout:
            if line.strip() == mark:
                break
        else:
            raise AssertionError("the sampler did not start: " + child.stderr.read())
        time.sleep(pause_before)
        child.send_signal(signal.SIGSTOP)
        time.sleep(2.0)
        child.send_signal(signal.SIGCONT)
        out, err = child.communicate("go\n", timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    return [line for line in out.splitlines() if line.startswith(("probe_slow", "probe_stalled"))]


def test_a_process_stopped_inside_a_read_is_not_a_slow_probe():
    """The stop landed while one probe was inside its read (CI, a busy machine): that probe said "a read took
    2.0 s" and the other said the process was stopped. The read's time was the stop's: one report, the stop's."""
    said = _stop_the_child(SAMPLER_IN_READ_CHILD, "in read", 0.0)
    assert not any("a read took" in line for line in said), said
    assert len(said) == 1 and said[0].startswith("probe_stalled probes: this process was stopped"), said


BOTH_IN_READ_CHILD = """
import sys, threading, time
from tunebench.core.probe import Reading
from tunebench.run.monitor import ProbeSampler

both = threading.Barrier(2)

class Quick:
    def __init__(self, name, tell):
        self.name, self.reads, self.tell = name, 0, tell
    def open(self):
        return "quick"
    def read(self):
        self.reads += 1
        if self.reads == 5:  # both probes inside this read when the test stops the process
            both.wait(5)
            if self.tell:
                print("in read", flush=True)
            time.sleep(0.3)
        return Reading(gauges={self.name: 1.0})
    def close(self):
        pass

sampler = ProbeSampler([Quick("status", False), Quick("waits", True)], 0.1, lambda _t, _v, _k: None,
                       lambda kind, _p, msg: print(kind, msg, flush=True))
""" + SAMPLE_UNTIL_TOLD


def test_a_process_stopped_while_every_probe_reads_is_not_a_slow_probe():
    """The stop landed while every probe was inside a read (a clean-clone run at load 6-9): no probe was waiting to
    see it, and both said "a read took 2.0 s". A thread that only waits sees it: one report, the stop's."""
    said = _stop_the_child(BOTH_IN_READ_CHILD, "in read", 0.0)
    assert not any("a read took" in line for line in said), said
    assert len(said) == 1 and said[0].startswith("probe_stalled probes: this process was stopped"), said


def test_a_stopped_process_is_not_a_slow_probe():
    """SIGSTOP, then SIGCONT, of the process the probes run in: every probe woke late after quick reads, and each
    said "a read took 0.0 s". The gap was the process's, and it says so (once), not a probe's."""
    said = _stop_the_child(SAMPLER_CHILD, "sampling", 0.5)
    assert not any("a read took" in line for line in said), said
    assert len(said) == 1, said
    m = re.match(r"probe_stalled probes: this process was stopped for at least (\d+\.\d) s .*, not slow reads", said[0])
    assert m and 1.5 <= float(m.group(1)) <= 2.5, said
