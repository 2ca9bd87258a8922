"""The builtin engine on client hosts without a host: what crosses the channel (load/wire.py), how the remote
interpreter is named, what a host lacking it is told, and how slots split over hosts."""

import json
import sys

import numpy as np
import pytest

from tunebench import __version__
from tunebench.core.errors import ConfigError
from tunebench.core.histogram import LatencyHistogram
from tunebench.core.schedule import OpenLoop
from tunebench.core.target import ConnParams
from tunebench.load import wire
from tunebench.load.builtin import BuiltinEngine
from tunebench.load.remote_builtin import ClientPythonError, check_client_python, python_argv
from tunebench.load.remote_workers import report_of
from tunebench.load.sysbench import split_threads
from tunebench.run.tasks import build_run_spec


@pytest.mark.parametrize("workload", ["oltp_read_write", "oltp_point_select", "tpcc", "iibench", "dbstress_rw1"])
def test_every_familys_plans_cross_as_json_and_come_back_equal(workload):
    spec = build_run_spec(workload, {}, "4")
    plans = BuiltinEngine(ConnParams("u", "secret"), list(spec.groups), workers=1).group_plans(7, 0)
    line = wire.dumps(plans)
    assert "\n" not in line and json.loads(line)  # plain JSON, one line
    assert wire.loads(line) == plans


def test_orders_and_reports_come_back_as_they_went():
    order = ("active", {"main": 3}, {"main": OpenLoop(150.0, "fixed", 20.0)})
    assert wire.loads(wire.dumps(order)) == order
    hist = LatencyHistogram()
    hist.add_ns(np.array([1_000_000, 2_000_000, 40_000_000], dtype=np.int64))
    report = report_of({"main": [[3, 30, 6, 6, 2, 0], hist, 2, None, None, [0, 0, 0.0], {1213: 2}]})
    back = wire.loads(wire.dumps(("tick", 5, report)))
    totals, idx, counts, max_ns, threads, _finished, _trx, _open_loop, codes = back[2]["main"]
    again = LatencyHistogram()
    again.add_sparse(idx, counts, max_ns)
    assert again.summary_ms() == hist.summary_ms() and tuple(totals) == (3, 30, 6, 6, 2, 0) and threads == 2
    # the second's errors by server error code travel with it (issue 44 item 4), and are a report's shape
    from tunebench.load.remote_builtin import _a_report

    assert codes == {1213: 2} and _a_report(back[2]["main"])
    assert not _a_report((*back[2]["main"][:8], {"1213": "two"}))
    assert wire.loads(wire.dumps({1: float("inf")})) == {1: float("inf")}


@pytest.mark.parametrize("bad", [
    {"__dc__": "subprocess:Popen", "f": {"args": ["true"]}},
    {"__dc__": "os:system", "f": {}},
    {"__enum__": "signal:Signals", "v": 9},
    {"__dc__": "tunebench.core.target:ConnParams.__init__.__globals__", "f": {}},
    {"__dc__": "tunebench.__main__:main", "f": {}},  # importing it would run the CLI again
    {"__enum__": "tunebench._private:X", "v": 1},
    {"__dc__": "tunebench.nosuchmodule:X", "f": {}},
    {"__dc__": "tunebench.core.target:NoSuchClass", "f": {}},
    {"__dc__": "tunebench.core.target:ConnParams", "f": {"nosuchfield": 1}},  # a field missing: TypeError inside
    {"__dc__": "tunebench.core.target:ConnParams", "f": [1, 2]},
    {"__map__": [[[1], 2], 3]},
    {"__set__": [{"a": 1}]},
    {"__bytes__": "!!!"},
    {"__float__": [1]},
])
def test_reading_never_builds_anything_outside_tunebench(bad):
    """Whatever the other end sends, one ValueError (never a TypeError that would end the reader's thread), and
    nothing imported that runs anything."""
    before = set(sys.modules)
    with pytest.raises(ValueError):
        wire.decode(bad)
    assert "tunebench.__main__" not in set(sys.modules) - before


def test_remote_python_words():
    assert python_argv("python3.11") == ["python3.11"]
    assert python_argv("PYTHONPATH=/opt/tb/app python3.11") == ["env", "PYTHONPATH=/opt/tb/app", "python3.11"]
    assert python_argv("'/opt/my python/bin/python3.11' -X dev") == ["/opt/my python/bin/python3.11", "-X", "dev"]
    with pytest.raises(ConfigError):
        python_argv("  ")
    with pytest.raises(ConfigError):
        python_argv("'unclosed")


class FakeHost:
    label = "10.0.0.5"

    def __init__(self, rc, out):
        self.rc, self.out, self.commands = rc, out, []

    def run(self, command, timeout=30.0):
        self.commands.append(command)
        return self.rc, self.out


MINOR = f"{sys.version_info[0]} {sys.version_info[1]}"


@pytest.mark.parametrize(("rc", "out", "said"), [
    (127, "sh: 1: python3.11: not found\n", "client host 10.0.0.5: no python3.11 there"),
    (1, f"@tb-python {MINOR}\nModuleNotFoundError: No module named 'tunebench'\n",
     "client host 10.0.0.5: python3.11 cannot import tunebench (ModuleNotFoundError: No module named 'tunebench')"),
    (0, "@tb-python 3 9\n", "client host 10.0.0.5: python3.11 is Python 3.9; the builtin engine needs"),
    (0, f"@tb-python {MINOR}\n@tb-python tunebench 0.0.1\n", f"Tunebench 0.0.1 there, {__version__} here"),
    (1, f"@tb-python {MINOR}\n@tb-python tunebench {__version__}\nModuleNotFoundError: No module named 'numpy'\n",
     "cannot import its workers (ModuleNotFoundError: No module named 'numpy')"),
])
def test_what_a_client_host_lacks_is_one_line(rc, out, said):
    with pytest.raises(ClientPythonError) as err:
        check_client_python(FakeHost(rc, out))
    assert said in str(err.value) and "\n" not in str(err.value)
    assert err.value.exit_code == 2


def test_a_client_host_with_all_of_it_passes_and_the_check_has_no_secret():
    host = FakeHost(0, f"@tb-python {MINOR}\n@tb-python tunebench {__version__}\n@tb-python protocol 2\n")
    check_client_python(host, "PYTHONPATH=/opt/tb python3.11")
    assert host.commands[0].startswith("env PYTHONPATH=/opt/tb python3.11 -c ")


@pytest.mark.parametrize("hosts", [1, 2, 3])
def test_slots_split_over_hosts_as_sysbench_splits_threads(hosts):
    """Slot n runs on host n % hosts: n threads are split_threads(n, hosts) per host, at every step's count."""
    for n in range(1, 12):
        per_host = [sum(1 for s in range(n) if s % hosts == h) for h in range(hosts)]
        assert per_host == split_threads(n, hosts)


def test_a_host_that_read_the_hello_late_counts_the_runs_seconds():
    """The hello says tick 0 began 2.0 s before it was sent; the host read it 1.5 s later (start-up on a busy
    machine): its clock puts tick 0 3.5 s back, not 2.0 (its seconds were 1.5 s late, merged with the other hosts'
    seconds of the same number). A host whose wall clock is off falls back on the hello's elapsed."""
    from tunebench.load.remote_workers import run_clock

    assert run_clock(2.0, 1000.0, 1003.5, 50.0) == pytest.approx(46.5)  # wall: began 3.5 s ago
    assert run_clock(2.0, 1000.0, 1001.99, 50.0) == pytest.approx(48.01)  # a few ms of clock skew: still the wall
    assert run_clock(2.0, 1000.0, 900.0, 50.0) == pytest.approx(48.0)  # a clock 100 s behind: the hello's
    assert run_clock(2.0, 1000.0, 1300.0, 50.0) == pytest.approx(48.0)  # 300 s ahead: the hello's


def test_a_garbled_message_from_a_client_host_is_said_once_and_the_reader_goes_on():
    """Lines that decode but are not in the shape this Tunebench sends (a tick without a report, a report of
    another shape, a gap with no fields) used to end the host's reader thread with a TypeError: the host's seconds
    were then never read again. Now each is ignored, said once, and the good lines after them are read."""
    from tunebench.load.remote_builtin import HostLink, RemoteBuiltinEngine

    class Proc:
        def __init__(self, lines):
            self._lines = lines

        def lines(self):
            yield from self._lines

    spec = build_run_spec("oltp_point_select", {}, "2")
    notes: list[str] = []
    eng = RemoteBuiltinEngine(ConnParams("u", "p", socket="/x"), list(spec.groups), [type("R", (), {"label": "h1"})()],
                              notes=notes.append)
    hist = LatencyHistogram()
    hist.add_ns(np.array([1_000_000], dtype=np.int64))
    good = report_of({"main": [[5, 10, 0, 0, 0, 0], hist, 2, None, None, [0, 0, 0.0]]})
    lines = [wire.dumps(x) for x in (
        ("tick", 0, 5, None),  # a tick with a number for its report
        ("tick", 0, {"main": (1, 2)}, None),  # a report of another shape
        ("tick", "x", good, None),
        ("gap", 1.0, "why", 7),
        ("note",),
        ("note", "still read"),
        ("ready", {"workers": 1}),
    )]
    link = HostLink(runner=None, proc=Proc(lines))
    eng._links[0] = link
    eng._closing = True  # the reader's end is not a lost host here
    eng._read_host(0, link)
    garbled = [n for n in notes if "not of this Tunebench" in n]
    assert len(garbled) == 1 and "h1: still read" in notes and link.info == {"workers": 1}, notes
    assert eng._pending == {}  # nothing garbled was kept to be merged
