"""The profile probe's parsing (hosts/profile.py) on perf script output as perf 6.1 prints it, and the flame
graph; the probe itself on the sandbox is in tests/integration/test_probes.py."""

from collections import Counter

import pytest

from tunebench.core.flamegraph import svg
from tunebench.hosts.profile import fold, self_top

SCRIPT = """mariadbd  4234   10101010\x20
\t           fc26f __poll+0x4f (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          bef110 vio_socket_io_wait+0x20 (/usr/sbin/mariadbd)
\t          bb6229 [unknown] (/usr/sbin/mariadbd)
\t           891f5 start_thread+0x1 (/usr/lib/x86_64-linux-gnu/libc.so.6)

mariadbd  4240   10101010\x20
\tffffffff82203249 _raw_spin_unlock_irqrestore+0x19 ([kernel.kallsyms])
\tffffffff821ef691 do_syscall_64+0x5 ([kernel.kallsyms])
\t          10aba4 __send+0x14 (/usr/lib/x86_64-linux-gnu/libc.so.6)

mariadbd  4241   10101010\x20
\t           fc26f __poll+0x50 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          bef110 vio_socket_io_wait+0x20 (/usr/sbin/mariadbd)
\t          bb6229 [unknown] (/usr/sbin/mariadbd)
\t           891f5 start_thread+0x1 (/usr/lib/x86_64-linux-gnu/libc.so.6)
"""


def test_stacks_fold_root_first_and_functions_lose_their_offsets():
    folded = fold(SCRIPT)
    assert folded == Counter({"start_thread;mariadbd [unknown];vio_socket_io_wait;__poll": 2,
                              "__send;[k] do_syscall_64;[k] _raw_spin_unlock_irqrestore": 1})
    top = self_top(folded, 1)
    assert top[0][0] == "__poll" and abs(top[0][1] - 200 / 3) < 1e-9
    assert top[1][0] == "other" and abs(top[1][1] - 100 / 3) < 1e-9


def test_flame_graph_svg():
    out = svg(fold(SCRIPT), "session 1 step 2")
    assert out.startswith("<svg") and out.rstrip().endswith("</svg>")
    assert "vio_socket_io_wait (2 samples, 66.7 %)" in out and "session 1 step 2" in out


def test_series_names_of_functions():
    from tunebench.hosts.profile import series_part

    assert series_part("[k] finish_task_switch.isra.0") == "k:finish_task_switch_isra_0"
    assert series_part("mariadbd [unknown]") == "mariadbd:unknown"
    assert series_part("Prepared_statement::execute") == "Prepared_statement::execute"


# `perf script -F comm,pid,ip,sym,dso` (what the probe asks for): the header is "comm pid"
BY_PID = """mariadbd    4234
\t           fc26f __poll (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           891f5 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)

python3.11    5001
\tffffffff821ef691 do_syscall_64 ([kernel.kallsyms])
\t          10aba4 __send (/usr/lib/x86_64-linux-gnu/libc.so.6)

mariadbd    4234
\t           fc26f __poll (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           891f5 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)

sleep    6000
\tffffffff821ef691 do_syscall_64 ([kernel.kallsyms])
"""


def test_samples_fold_per_process_role_and_unknown_pids_are_dropped():
    from tunebench.hosts.profile import fold_by_process

    out = fold_by_process(BY_PID, {4234: "mysqld", 5001: "client"})
    assert out == {"mysqld": Counter({"start_thread;__poll": 2}),
                   "client": Counter({"__send;[k] do_syscall_64": 1})}


class _FakeRunner:
    """What RemotePerf sees of an SshRunner: `run(command)` -> (status, output)."""

    class host:  # the attribute SshRunner has
        label = "db1:22"

    def __init__(self, answers):
        self.answers, self.commands = list(answers), []

    def run(self, command, timeout=30.0):
        self.commands.append(command)
        return self.answers.pop(0)


def test_remote_perf_says_in_one_line_why_it_cannot_sample():
    from tunebench.hosts.profile import RemotePerf

    assert RemotePerf(_FakeRunner([(0, "no-perf\n2\n1000\n")])).problem() == \
        "perf not found on db1:22 (Debian: apt-get install linux-perf)"
    assert RemotePerf(_FakeRunner([(0, "3\n1000\n")])).problem() == \
        "perf_event_paranoid is 3 on db1:22: sampling another process needs 1 or less, or root"
    assert RemotePerf(_FakeRunner([(0, "3\n0\n")])).problem() is None  # root may


def test_remote_perf_window_is_one_bounded_command_that_cleans_up():
    from tunebench.hosts.profile import PerfFailed, RemotePerf

    runner = _FakeRunner([(0, BY_PID), (1, "Error:\nNo permission to enable cpu-clock event.\n")])
    perf = RemotePerf(runner)
    assert perf.record("4234", 5, 99) == BY_PID
    cmd = runner.commands[0]
    assert "perf record -q -g -B -N --no-bpf-event -F 99 -p 4234" in cmd and "sleep 5" in cmd and "rm -rf $d" in cmd
    with pytest.raises(PerfFailed, match=r"db1:22: No permission to enable cpu-clock event\."):
        perf.record("4234", 5, 99)
    assert perf.cut() is True and len(runner.commands) == 2  # between windows: nothing to send
    perf._dir = "/tmp/tb-perf-abc"  # a window in progress: a second command interrupts its perf
    runner.answers.append((0, ""))
    assert perf.cut() is True and runner.commands[-1] == "kill -INT $(cat /tmp/tb-perf-abc/pid 2>/dev/null) 2>/dev/null"


def test_following_the_processes_says_what_it_costs(monkeypatch):
    """Not root and perf_event_paranoid 1: perf may follow our processes but not sample every CPU, which cost 23 %
    of the TPS in bench/profile_overhead.py; the probe's line says so."""
    from tunebench.hosts import profile

    monkeypatch.setattr(profile.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(profile, "paranoid_level", lambda: 1)
    monkeypatch.setattr(profile, "perf_problem", lambda: None)
    probe = profile.ProfileProbe({"mysqld": lambda: [1]}, window=0.05)
    monkeypatch.setattr(probe, "_loop", lambda: None)
    try:
        line = probe.open()
    finally:
        probe.close()
    assert probe.perf.system_wide is False and "costs the load more than sampling every CPU" in line
    assert not profile.system_wide_allowed(1000, 1) and profile.system_wide_allowed(0, 2)
    assert profile.system_wide_allowed(1000, 0)


def test_a_stripped_server_is_said_with_what_its_frames_count_as():
    """Issue 18: Debian's mariadbd is stripped; its nameless frames were counted as 'mariadbd [unknown]' without a
    word, so a user read the top function as a mystery. One line says why, and what is named."""
    from tunebench.hosts.profile import stripped_note

    folded = {"start_thread;mariadbd [unknown]": 60, "start_thread;[k] do_syscall_64": 30, "__poll": 10}
    line = stripped_note(folded)
    assert line is not None and "'mariadbd [unknown]' (60 % of its samples)" in line
    assert stripped_note({"start_thread;do_command;dispatch_command": 5, "[k] schedule": 5}) is None  # named
    assert stripped_note({"libc.so.6 [unknown]": 5}) is None  # a library's nameless frame: not the server's
    assert stripped_note({}) is None


def test_processes_that_start_during_a_window_are_kept_when_every_cpu_is_sampled():
    """The load generator's processes start after the probes: with every CPU sampled, the first window has their
    samples too (they were dropped, and an 8 s step had no profile.client series at all)."""
    import threading

    from tunebench.hosts.profile import ProfileProbe

    clients: list[int] = []
    done = threading.Event()

    class LatePerf:
        where, system_wide, cut_wait = "this host", True, 1.0

        def problem(self):
            return None

        def kill(self):
            pass

        def cut(self):
            return True

        def record(self, pids, window, freq, cut):
            threading.Event().wait(0.05)
            if clients:  # later windows: nothing sampled
                return ""
            clients.append(5001)  # the first window began before the client existed; it started during it
            done.set()
            return BY_PID

    probe = ProfileProbe({"mysqld": lambda: [4234], "client": lambda: list(clients)}, perf=LatePerf(), window=0.05)
    probe.open()
    try:
        assert done.wait(5)
        assert probe.cut(wait=5)
        folded = probe.take_folded()
    finally:
        probe.close()
    assert set(folded) == {"mysqld", "client"} and sum(folded["client"].values()) >= 1
    assert not any("sleep" in s for s in folded["client"])  # another process' samples still dropped


def test_a_killed_perf_never_starts_another_window(monkeypatch):
    """The profile thread could start a window between the probe's kill and its own look at the stop flag: a
    `perf record -- sleep 5` outlived the run. A killed LocalPerf starts nothing again."""
    import subprocess

    from tunebench.hosts.profile import LocalPerf, PerfFailed

    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a) or (_ for _ in ()).throw(OSError()))
    perf = LocalPerf()
    perf.kill()
    with pytest.raises(PerfFailed, match="the profile ended"):
        perf.record("1", 5.0, 99)
    assert started == []


def test_a_cut_signals_the_window_never_the_script_reading_it(monkeypatch):
    """A cut at a step's edge while `perf script` read the last window sent SIGINT to the script (the newest process
    started), and that window's stacks were lost: a sweep's step came out without the server's. A cut only ever
    signals the recording."""
    import os
    import subprocess

    from tunebench.hosts.profile import LocalPerf

    perf = LocalPerf()
    record = perf._start(["sleep", "30"])
    script = perf._start(["sleep", "30"], window=False)
    signalled = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: signalled.append(pid))
    try:
        perf.cut()
        assert signalled == [record.pid]
    finally:
        for p in (record, script):
            p.kill()
            p.communicate()  # (its pipes closed too)
    assert isinstance(script, subprocess.Popen)


def test_a_window_counts_its_seconds_from_its_workloads_start_not_from_perfs():
    """A window's recorded seconds ran from before perf started, and perf's own start (parsing, opening its events on
    every CPU) took 0.5-0.7 s of a 5-s window under load: a step's profiled seconds were overstated, and with them
    the samples its server's CPU time should give. Now the window's workload says when it starts."""
    from tunebench.hosts.profile import recorded_span

    assert recorded_span("1000.25\n", 999.5, 1004.0, 5.0) == pytest.approx(3.75)  # perf's 0.75 s start left out
    assert recorded_span("1000.25\n", 999.5, 1006.0, 5.0) == 5.0  # at most the window
    assert recorded_span("", 999.5, 1001.0, 5.0) == pytest.approx(1.5)  # the workload said nothing: the coarse span
    assert recorded_span("1500.0\n", 999.5, 1001.0, 5.0) == pytest.approx(1.5)  # a clock step: the coarse span


def test_a_remote_window_reads_its_span_from_the_host():
    from tunebench.hosts.profile import SPAN_MARK, RemotePerf

    runner = _FakeRunner([(0, f"{SPAN_MARK} 2000.5 2003.0\n" + BY_PID)])
    perf = RemotePerf(runner)
    assert perf.record("4234", 5, 99) == BY_PID
    assert perf.recorded_seconds == pytest.approx(2.5)
    assert "date +%s.%N" in runner.commands[0]
