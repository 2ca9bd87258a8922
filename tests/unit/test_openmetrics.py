"""The live metrics endpoint's text (`--metrics-listen`): valid OpenMetrics and Prometheus text (by our reading of
the formats and by promtool's), labels escaped, every second handed to a scraper once, and the bad addresses."""

from __future__ import annotations

import http.client
import re
import shutil
import socket
import subprocess
import urllib.error
import urllib.request

import pytest
from tests.conftest import _free_port, run_cli

from tunebench.core.errors import ConfigError
from tunebench.core.interval import Event, Interval
from tunebench.core.openmetrics import LiveMetrics, LiveReading
from tunebench.run.metrics_endpoint import MetricsEndpoint, parse_listen
from tunebench.run.records import RunSession

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
SAMPLE = re.compile(r'^([^{ ]+)(?:\{(.*)\})? (\S+)(?: (\S+))?$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')
WORKLOAD = 'odd "name" \\ with\na newline'


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), text)


def labels_of(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    out, pos = {}, 0
    for m in LABEL.finditer(text):
        assert m.start() == pos, f"label text not understood at {text[pos:]!r}"
        out[m.group(1)] = unescape(m.group(2))
        pos = m.end()
    assert pos == len(text), f"label text not understood at {text[pos:]!r}"
    return out


def fed(seconds: int = 3) -> LiveMetrics:
    m = LiveMetrics()
    m.start_session({"session": "7", "workload": WORKLOAD, "target": "sandbox", "host": "box"})
    m.event(Event(99.0, "step_start", "step 1", {"threads": {"main": 4}, "config": 0, "step": 1}))
    for k in range(seconds):
        m.interval(Interval(100.5 + k, "main", 4, 1000.0 + k, 20000.0, 0, 0, 0,
                            {"p50": 1.0, "p95": 2.5, "p99": None, "max": 9.0}, errors=0.5))
        m.reading(LiveReading(100.2 + k, {"server.questions": 2000.0, "server.threads_running": 3.0,
                                          "waits.wait/synch/mutex/innodb/x.count": 5.0,
                                          "host.local.cpu.user": 12.5, "profile.mysqld.ut_delay": 3.0},
                              {"server.questions": "rate", "server.threads_running": "gauge",
                               "waits.wait/synch/mutex/innodb/x.count": "rate", "host.local.cpu.user": "gauge",
                               "profile.mysqld.ut_delay": "gauge"},
                              {"server.questions": 123456.0 + 2000 * k}))
    m.event(Event(101.0, "knob", "innodb_io_capacity = 400", {"name": "innodb_io_capacity", "from": 200, "to": 400}))
    m.event(Event(101.2, "knob", "innodb_adaptive_hash_index = OFF",
                  {"name": "innodb_adaptive_hash_index", "from": "ON", "to": "OFF"}))
    m.event(Event(101.4, "knob", "a path", {"name": "innodb_tmpdir", "from": "", "to": "/tmp"}))
    return m


def parse(text: str, openmetrics: bool) -> tuple[dict[str, str], list[tuple[str, dict[str, str], float, str | None]]]:
    """family -> type, and the samples; fails on anything the format does not allow."""
    lines = text.split("\n")
    assert lines[-1] == "", "the text ends with a newline"
    lines = lines[:-1]
    if openmetrics:
        assert lines[-1] == "# EOF" and lines.count("# EOF") == 1
        lines = lines[:-1]
    else:
        assert "# EOF" not in lines
    types: dict[str, str] = {}
    samples = []
    current = None
    for line in lines:
        if line.startswith("# "):
            kind, name, rest = line[2:].split(" ", 2)
            assert NAME.match(name), name
            if kind == "TYPE":
                assert name not in types, f"family {name} twice"
                assert openmetrics or name == current, "text 0.0.4: HELP, then TYPE"
                types[name] = rest
                current = name
            elif openmetrics:
                assert kind in ("HELP", "UNIT") and name == current, line
            else:
                assert kind == "HELP", line
                current = name
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        name, labels, value, stamp = m.groups()
        assert NAME.match(name), name
        family = current
        assert family is not None, f"{name} before any TYPE"
        if openmetrics:
            suffix = {"counter": "_total", "info": "_info"}.get(types[family], "")
            assert name == family + suffix, (name, family)
        else:
            assert name == family
        samples.append((name, labels_of(labels), float(value), stamp))
    return types, samples


@pytest.mark.parametrize("openmetrics", [True, False])
def test_exposition_is_valid_and_escaped(openmetrics):
    types, samples = parse(fed().render(openmetrics=openmetrics, scraper="a"), openmetrics)
    names = {s[0] for s in samples}
    counter = "tunebench_server_questions_total"
    assert {"tunebench_client_tps", "tunebench_client_qps", "tunebench_client_latency_seconds",
            "tunebench_client_errors_per_second", counter, "tunebench_server_threads_running",
            "tunebench_waits_count_per_second", "tunebench_host_cpu_user", "tunebench_knob_value",
            "tunebench_knob_change_total", "tunebench_step_info"} <= names
    assert not any("profile" in n or "ut_delay" in n for n in names)  # a name per function: not exposed
    assert types[counter if not openmetrics else "tunebench_server_questions"] == "counter"
    for name, labels, _v, _stamp in samples:
        assert labels["workload"] == WORKLOAD and labels["session"] == "7" and labels["host"] == "box", (name, labels)
    tps = [(v, stamp) for n, lb, v, stamp in samples if n == "tunebench_client_tps"]
    # every second, with its own time: seconds in OpenMetrics, ms in Prometheus text
    assert tps == [(1000.0, "100.500" if openmetrics else "100500"), (1001.0, "101.500" if openmetrics else "101500"),
                   (1002.0, "102.500" if openmetrics else "102500")]
    p95 = [v for n, lb, v, _s in samples if n == "tunebench_client_latency_seconds" and lb["quantile"] == "0.95"]
    assert p95 == [0.0025] * 3
    assert not any(n == "tunebench_client_latency_seconds" and lb["quantile"] == "0.99"
                   for n, lb, _v, _s in samples)  # unknown p99: no sample, not 0
    questions = [v for n, _lb, v, _s in samples if n == counter]
    assert questions == [123456.0, 125456.0, 127456.0]  # the server's own cumulative count
    knobs = {lb["name"]: v for n, lb, v, _s in samples if n == "tunebench_knob_value"}
    assert knobs == {"innodb_io_capacity": 400.0, "innodb_adaptive_hash_index": 0.0}  # a path is no gauge
    step = [(lb, s) for n, lb, _v, s in samples if n == "tunebench_step_info"]
    assert len(step) == 1 and step[0][0]["threads"] == "main=4" and step[0][0]["step"] == "1" and step[0][1] is None


def test_promtool_accepts_the_text():
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is missing (Debian's prometheus package; packaging/ensure-system-deps.sh)")
    text = fed().render(openmetrics=False, scraper="a")
    out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    # promtool's lint wants counters' and units' names its way; what it must never say is that it cannot parse
    assert "error while linting" not in out.stderr and "text format parsing error" not in out.stderr, out.stderr


def test_each_scraper_gets_each_second_once():
    m = fed(seconds=3)
    _types, first = parse(m.render(scraper="prom-a"), True)
    assert [v for n, _lb, v, _s in first if n == "tunebench_client_tps"] == [1000.0, 1001.0, 1002.0]
    m.interval(Interval(103.5, "main", 4, 1003.0, 20000.0, 0, 0, 0))
    m.interval(Interval(104.5, "main", 4, 1004.0, 20000.0, 0, 0, 0))
    _types, second = parse(m.render(scraper="prom-a"), True)
    assert [v for n, _lb, v, _s in second if n == "tunebench_client_tps"] == [1003.0, 1004.0]
    _types, again = parse(m.render(scraper="prom-a"), True)  # nothing new: the newest again (a duplicate is dropped)
    assert [v for n, _lb, v, _s in again if n == "tunebench_client_tps"] == [1004.0]
    _types, other = parse(m.render(scraper="curl"), True)  # another scraper takes nothing from the first
    assert [v for n, _lb, v, _s in other if n == "tunebench_client_tps"] == [1000.0 + k for k in range(5)]
    m.interval(Interval(104.0, "main", 4, 7.0, 1.0, 0, 0, 0))  # out of order: never exposed
    assert "7.0" not in m.render(scraper="prom-a") and " 7 " not in m.render(scraper="x")


def test_a_new_session_and_a_finished_run():
    m = fed()
    m.end_session()  # the run ended: its step and knobs are no longer true; its seconds stay
    text = m.render(scraper="a")
    assert "tunebench_step_info" not in text and "tunebench_knob_value" not in text
    assert "tunebench_client_tps" in text
    m.start_session({"session": "8", "workload": "w", "target": "t", "host": "h"})
    assert m.render(scraper="a") == "# EOF\n"


def get(url: str, accept: str | None = None) -> tuple[int, str, str]:
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, "", ""


def test_endpoint_negotiates_the_format():
    endpoint = MetricsEndpoint(f"127.0.0.1:{_free_port()}")
    try:
        endpoint.session(RunSession(3, "oltp_point_select", "sandbox", "box"))
        endpoint.interval(Interval(100.5, "main", 2, 500.0, 500.0, 0, 0, 0))
        prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75," \
                     "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"  # what Prometheus 2.42 sends
        status, ctype, body = get(endpoint.url, prometheus)
        assert status == 200 and ctype == "application/openmetrics-text; version=1.0.0; charset=utf-8"
        assert body.endswith("# EOF\n") and 'tunebench_client_tps{session="3"' in body
        status, ctype, body = get(endpoint.url, "text/plain")
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4") and "# EOF" not in body
        assert get(endpoint.url.replace("/metrics", "/other"))[0] == 404
    finally:
        endpoint.close(linger=False)
    # closed: the next run takes the port again at once (the scrapes' connections in TIME_WAIT do not hold it)
    MetricsEndpoint(endpoint.url.split("//")[1].split("/")[0]).close(linger=False)


def test_listen_addresses():
    assert parse_listen("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_listen("[::1]:9464") == ("::1", 9464)
    assert parse_listen("localhost:80") == ("localhost", 80)


def test_nothing_listens_unless_asked():
    from tunebench.cli import metrics_endpoint
    from tunebench.cli.parser import build_parser

    for argv in (["run"], ["sweep", "x"], ["tune"], ["gui"]):
        args = build_parser().parse_args(argv)
        assert args.metrics_listen is None and metrics_endpoint(args) is None


@pytest.mark.parametrize("command", [["run", "--workload", "oltp_point_select"], ["sweep", "no-such-sweep"],
                                     ["gui", "--demo"]])
def test_port_in_use_is_one_line_and_nothing_runs(command, tmp_path):
    db = tmp_path / "store.sqlite"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # a target nobody listens on: had anything run, the error would be about it
        out = run_cli("--db", str(db), *command, "--metrics-listen", f"127.0.0.1:{port}",
                      *(["--target", "mysql://root@127.0.0.1:1"] if command[0] != "gui" else []), timeout=60)
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith(f"tunebench: error: --metrics-listen 127.0.0.1:{port}: cannot listen there") \
        and "in use" in lines[0], lines
    assert not db.exists()  # no store opened, no session


@pytest.mark.parametrize("listen", ["9464", "127.0.0.1:99999", "127.0.0.1:", "::1:9464", "192.0.2.1:9464",
                                    "no-such-host.invalid:9464", "[::1]:0"])
def test_bad_listen_addresses_in_process(listen):
    with pytest.raises(ConfigError, match=r"^--metrics-listen") as err:
        MetricsEndpoint(listen).close(linger=False)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("listen", ["127.0.0.1:99999", "192.0.2.1:9464"])
def test_bad_listen_addresses(listen, tmp_path):
    db = tmp_path / "store.sqlite"
    out = run_cli("--db", str(db), "run", "--metrics-listen", listen, "--target", "mysql://root@127.0.0.1:1",
                  timeout=60)
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "--metrics-listen" in lines[0], out.stderr
    assert "Traceback" not in out.stderr and not db.exists()


def test_a_scrape_that_fails_on_the_way_loses_no_second(monkeypatch):
    """The cursor moved before the body was written: a scrape whose write failed lost those seconds for good
    (issue 43 item 21). Now it moves only once the body is written."""
    from tunebench.run import metrics_endpoint as me

    endpoint = MetricsEndpoint(f"127.0.0.1:{_free_port()}")
    try:
        endpoint.session(RunSession(3, "oltp_point_select", "sandbox", "box"))
        for k in range(3):
            endpoint.interval(Interval(100.5 + k, "main", 2, 500.0 + k, 500.0, 0, 0, 0))
        real = me._Handler.send_body

        def broken(self, body):
            raise ConnectionResetError("the scraper went away")
        monkeypatch.setattr(me._Handler, "send_body", broken)
        with pytest.raises((OSError, http.client.HTTPException)):  # closed without an answer
            get(endpoint.url)
        monkeypatch.setattr(me._Handler, "send_body", real)
        _status, _ctype, body = get(endpoint.url)
        _types, rows = parse(body, False)
        assert [v for n, _lb, v, _s in rows if n == "tunebench_client_tps"] == [500.0, 501.0, 502.0]
    finally:
        endpoint.close(linger=False)


def test_with_a_token_only_its_holder_scrapes_and_no_one_takes_its_seconds(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token-0123456789\n")
    token.chmod(0o600)
    endpoint = MetricsEndpoint(f"127.0.0.1:{_free_port()}", str(token))
    try:
        assert endpoint.warning is None
        endpoint.session(RunSession(3, "oltp_point_select", "sandbox", "box"))
        endpoint.interval(Interval(100.5, "main", 2, 500.0, 500.0, 0, 0, 0))
        assert get(endpoint.url)[0] == 401  # same address, same User-Agent, no token: nothing, cursor untouched
        req = urllib.request.Request(endpoint.url, headers={"Authorization": "Bearer wrong-token-0123456789"})
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(req, timeout=5)
        req = urllib.request.Request(endpoint.url, headers={"Authorization": "Bearer s3cret-token-0123456789"})
        with urllib.request.urlopen(req, timeout=5) as r:
            assert "tunebench_client_tps" in r.read().decode() and r.status == 200
    finally:
        endpoint.close(linger=False)
    token.chmod(0o644)
    with pytest.raises(ConfigError, match="readable by others"):
        MetricsEndpoint(f"127.0.0.1:{_free_port()}", str(token))
    token.chmod(0o600)
    token.write_text("short")
    with pytest.raises(ConfigError, match="at least 16"):
        MetricsEndpoint(f"127.0.0.1:{_free_port()}", str(token))


def test_an_endpoint_others_can_reach_without_a_token_says_so():
    endpoint = MetricsEndpoint(f"0.0.0.0:{_free_port()}")
    try:
        assert "no authentication" in endpoint.warning
    finally:
        endpoint.close(linger=False)
    endpoint = MetricsEndpoint(f"127.0.0.1:{_free_port()}")
    try:
        assert endpoint.warning is None  # loopback: this machine's own
    finally:
        endpoint.close(linger=False)


def test_an_idle_connection_is_closed_and_connections_are_bounded(monkeypatch):
    """An idle connection had no timeout: each kept a thread for ever. Now it ends after IDLE_SECONDS; past
    MAX_CONNECTIONS at once, new ones are closed rather than given a thread."""
    import socket as sk

    from tunebench.run import metrics_endpoint as me

    monkeypatch.setattr(me, "IDLE_SECONDS", 0.5)
    monkeypatch.setattr(me, "MAX_CONNECTIONS", 3)
    endpoint = MetricsEndpoint(f"127.0.0.1:{_free_port()}")
    host, port = endpoint.url.split("//")[1].split("/")[0].split(":")
    socks = []
    try:
        for _ in range(3):
            s = sk.create_connection((host, int(port)), timeout=10)
            socks.append(s)
        extra = sk.create_connection((host, int(port)), timeout=10)
        assert extra.recv(10) == b""  # the fourth: closed at once
        extra.close()
        for s in socks:
            assert s.recv(10) == b""  # each idle one closed by the server (within the 10 s of this recv)
        assert get(endpoint.url)[0] == 200  # their slots are free again
    finally:
        for s in socks:
            s.close()
        endpoint.close(linger=False)


def test_rendering_copies_under_the_lock_and_formats_outside_it(monkeypatch):
    """Rendering 120 s of every series held the run's lock for all of its formatting: the run's callbacks waited
    on a scrape. Now the lock covers the copy only: not one line is formatted while it is held."""
    from tunebench.core import openmetrics

    m = LiveMetrics()
    m.start_session({"session": "1"})
    for k in range(120):
        m.interval(Interval(100.5 + k, "main", 4, 1000.0 + k, 2e4, 0, 0, 0))
    held_while_formatting = []
    real = openmetrics.label_text

    def watched(labels):
        held_while_formatting.append(m._lock.locked())
        return real(labels)
    monkeypatch.setattr(openmetrics, "label_text", watched)
    text = m.render(scraper="a")
    assert text.count("tunebench_client_tps{") == 120
    assert held_while_formatting and not any(held_while_formatting)


@pytest.mark.parametrize(("extra", "said"), [
    (["--metrics-token-file", "/nonexistent/token"], "goes with --metrics-listen"),
    (["--metrics-listen", "127.0.0.1:PORT", "--metrics-token-file", "/nonexistent/token"], "cannot read it"),
])
def test_a_token_file_that_cannot_be_used_is_one_line_and_nothing_runs(extra, said, tmp_path):
    db = tmp_path / "store.sqlite"
    extra = [a.replace("PORT", str(_free_port())) for a in extra]
    out = run_cli("--db", str(db), "run", *extra, "--target", "mysql://root@127.0.0.1:1", timeout=60)
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and said in lines[0], out.stderr
    assert not db.exists()
