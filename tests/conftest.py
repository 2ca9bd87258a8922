"""Shared fixtures. Every test gets a private TUNEBENCH_HOME; integration tests share one real sandbox."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from cpu_account import CpuAccount, CpuReport
from server_leaks import kill_all, servers_under

# Before anything imports tunebench.paths: never touch the user's real data dir or sandbox.
# Once per test session: test modules import helpers from this file (`from tests.conftest import wait_until`),
# and under --import-mode=importlib that can load it a second time as another module. A second home then took
# over TUNEBENCH_HOME mid-session, and the sandbox a later subprocess started there outlived `make test`.
# (Keyed by this process: a pytest this one starts, e.g. a --collect-only, is a session of its own.)
# Server kits (MySQL 9.x, MariaDB 11.8) are fetched once by `make test` into the user's data dir and shared by
# every test home (TUNEBENCH_KITS); each test session starts its own sandboxes of them.
if not os.environ.get("TUNEBENCH_KITS"):
    import platformdirs

    os.environ["TUNEBENCH_KITS"] = str(Path(os.environ.get("TUNEBENCH_HOME") or
                                            platformdirs.user_data_dir("tunebench", appauthor=False)) / "servers")
_pid, _, _home = os.environ.get("TUNEBENCH_TEST_HOME", "").partition(":")
_HOME = Path(_home) if _pid == str(os.getpid()) and _home else Path(tempfile.mkdtemp(prefix="tb-test-"))
os.environ["TUNEBENCH_TEST_HOME"] = f"{os.getpid()}:{_HOME}"
os.environ["TUNEBENCH_HOME"] = str(_HOME)
os.environ.pop("MYSQL_PWD", None)
# `make sanitized-hotloop` preloads ASan's runtime into this interpreter to check the compiled loop; the servers
# and tools the tests start are not what it checks (and would run slower and bigger under it)
if "libasan" in os.environ.get("LD_PRELOAD", ""):
    del os.environ["LD_PRELOAD"]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def sandbox():
    from tunebench.hosts.sandbox import SandboxServer

    sb = SandboxServer(_HOME / "sandbox")
    sb.start()
    yield sb
    sb.stop()


# The servers the suite runs the tests that carry the truth of the numbers on: the system's MariaDB 10.11 (the
# shared `sandbox`), and the MySQL 9.x and MariaDB 11.8 kits (`servers fetch`). A missing one fails, never skips.
SERVERS = ("mariadb-10.11", "mysql-9", "mariadb-11.8")
KIT_OF = {"mysql-9": "mysql", "mariadb-11.8": "mariadb-11.8", "mariadb-10.5": "mariadb-10.5"}


class ServerUnderTest:
    """One server's sandbox and how the CLI names it."""

    def __init__(self, name: str, sb, args: list[str]):
        self.name, self.sandbox, self.args = name, sb, args

    @property
    def flavor(self) -> str:
        return self.sandbox.status().flavor

    def params(self, database: str | None = "tunebench", transport: str = "socket"):
        from tunebench.mysql.target import conn_params

        return conn_params(self.sandbox.target(), transport, database=database)

    def __repr__(self) -> str:
        return self.name

    # A knob that needs a restart on this server, and a value other than its default: innodb_doublewrite is
    # static on MariaDB 10.11 only (dynamic on MySQL 8.0.30+ and MariaDB 11.x).
    STATIC = {"mariadb-10.11": ("innodb_doublewrite", "OFF"), "mariadb-11.8": ("innodb_log_buffer_size", "33554432"),
              "mysql-9": ("innodb_read_io_threads", "6")}

    @property
    def static_knob(self) -> tuple[str, str]:
        return self.STATIC[self.name]


@pytest.fixture(scope="session")
def kit_sandboxes():
    """Sandboxes of the kits, started on first use and kept for the session."""
    started: dict[str, object] = {}
    yield started
    for sb in started.values():
        sb.stop()


def server_under_test(name: str, sandbox, kit_sandboxes) -> ServerUnderTest:
    from tunebench.core.errors import TunebenchError
    from tunebench.hosts.kits import resolve_server
    from tunebench.hosts.sandbox import SandboxServer

    if name == "mariadb-10.11":
        st = sandbox.status()
        assert (st.flavor, st.version.split(".")[:2]) == ("mariadb", ["10", "11"]), st
        return ServerUnderTest(name, sandbox, [])
    if name not in kit_sandboxes:
        try:
            server = resolve_server(name)
        except TunebenchError as exc:
            pytest.fail(f"{exc}: `make test` fetches the kits (tunebench servers fetch {KIT_OF[name]})",
                        pytrace=False)
        sb = SandboxServer.for_server(server, _HOME)
        sb.start()
        kit_sandboxes[name] = sb
    return ServerUnderTest(name, kit_sandboxes[name], ["--server", name])


@pytest.fixture(params=SERVERS)
def each_server(request, sandbox, kit_sandboxes) -> ServerUnderTest:
    return server_under_test(request.param, sandbox, kit_sandboxes)


@pytest.fixture(scope="session")
def sandbox_params(sandbox):
    from tunebench.mysql.target import conn_params

    return conn_params(sandbox.target(), "socket", database="tunebench")


# Commands that read or write a store and print: run in this process (a `tunebench` process costs ~0.7 s of CPU to
# start and import, ~100 of these a suite). Their output, exit status and store effects are the same; what a
# process does (signals, a run's child processes, knobs, exit on a dead parent) is never what such a test is about.
# Anything else, or with an environment of its own, runs as the user runs it: `python -m tunebench` in a new process
# (prepare, check and cleanup were tried here: a file they leave to the process's exit to close came up as an
# unclosed-file warning in a later test).
IN_PROCESS = frozenset({("sessions", "show"), ("sessions", "export"), ("sessions", "list"), ("sessions", "profile"),
                        ("sessions", "diff"), ("sessions", "rename"), ("sessions", "tag"), ("sessions", "import"),
                        ("sessions", "delete"), ("workloads",), ("target", "list"), ("target", "add"),
                        ("target", "remove"), ("servers", "list"), ("history", "list"), ("history", "show"),
                        ("history", "name")})


def _command(args: tuple[str, ...]) -> tuple[str, ...]:
    rest = list(args)
    while rest[:1] == ["--db"]:
        rest = rest[2:]
    if rest[:1] == ["workloads"]:
        return ("workloads",)
    return tuple(rest[:2])


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 180,
            refused: bool = False) -> subprocess.CompletedProcess:
    """`tunebench ARGS`: in this process for the IN_PROCESS commands, and for input the test expects refused
    (`refused=True`: bad input is refused before anything runs, so the command never gets to what a process of
    its own would change; ~1.2 CPU s a refusal saved, issue 41), else as the user runs it, in a new process."""
    db = args[1] if args[:1] == ("--db",) and len(args) > 1 else ""
    if not env and (refused or _command(args) in IN_PROCESS) and "://" not in db:  # (a server's store: its
        return _run_in_process(args)  # connections)
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "tunebench", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=ROOT)


def _run_in_process(args: tuple[str, ...]) -> subprocess.CompletedProcess:
    """`tunebench ARGS` as main() runs it, its stdout and stderr captured (argparse's exit 2 included)."""
    import contextlib
    import io

    from tunebench.cli import main
    from tunebench.store.repo import Store

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    opened: list[Store] = []
    init = Store.__init__

    def tracked(self, *a, **kw):  # the command's stores, closed after it as its process exit would
        opened.append(self)
        init(self, *a, **kw)

    try:
        Store.__init__ = tracked  # type: ignore[method-assign]
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(list(args))
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
    finally:
        Store.__init__ = init  # type: ignore[method-assign]
        os.chdir(cwd)
        for store in opened:
            with contextlib.suppress(Exception):
                store.close()
    return subprocess.CompletedProcess([sys.executable, "-m", "tunebench", *args], rc, out.getvalue(),
                                       err.getvalue())


def wait_for_load(proc: subprocess.Popen, seconds: float = 120, lines: int = 2, marker: str = " main thds:") -> None:
    """Read a `tunebench run` child's stdout until its load has reported `lines` seconds (bounded)."""
    deadline, seen, out = time.monotonic() + seconds, 0, []
    while time.monotonic() < deadline and seen < lines:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        out.append(line)
        seen += marker in line
    assert seen >= lines, "the run never started its load:\n" + "".join(out[-20:])


def wait_until(predicate, timeout: float, what: str, interval: float = 0.05):
    """Poll `predicate` until it returns something true (returned) or `timeout` seconds pass (a failure that
    says what was awaited). For waits outside a Qt event loop; GUI tests use qtbot.waitUntil/waitSignal."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


# Fixtures that start or need a real server, sysbench or sshd: a test that uses one (directly or through
# another fixture) is an integration test and must say so, so that `-m "not integration"` never starts one.
SERVER_FIXTURES = frozenset({"sandbox", "sandbox_params", "sshd", "window", "each_server", "kit_sandboxes"})


def server_fixtures_without_marker(item: pytest.Item) -> set[str]:
    """The server fixtures `item` uses although it is not marked integration (empty when all is well)."""
    if item.get_closest_marker("integration") is not None:
        return set()
    return SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ()))


class _WorkerEnds:
    """The controller says when each xdist worker ran out of modules: how balanced the split was (a worker that
    ends minutes after the others is where the suite's time goes)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config, self.t0 = config, time.monotonic()

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        self.config.pluginmanager.get_plugin("terminalreporter").write_line(
            f"[xdist] worker {node.gateway.id} done at {time.monotonic() - self.t0:.0f} s")


def pytest_configure(config: pytest.Config) -> None:
    controller = config.pluginmanager.hasplugin("xdist") and not os.environ.get("PYTEST_XDIST_WORKER") \
        and getattr(config.option, "numprocesses", None)
    if controller:
        config.pluginmanager.register(_WorkerEnds(config), "tunebench-worker-ends")
    else:  # a process that runs tests: what each cost in CPU (tests/cpu_account.py)
        config.pluginmanager.register(CpuAccount(), "tunebench-cpu-account")
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        config.pluginmanager.register(CpuReport(config), "tunebench-cpu-report")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--check-markers", action="store_true",
                     help="only check that every test using a server fixture is marked integration (at collection)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # the workers take whole modules (--dist loadfile) in this order: the longest first, so no worker starts a
        # seven-minute module when the others are nearly done (each worker sorts the same way: the same order)
        weights = json.loads((Path(__file__).parent / "durations.json").read_text())
        items.sort(key=lambda item: -float(weights.get(item.nodeid.split("::", 1)[0], 0)))
    if config.getoption("--check-markers"):
        bad = [f"{item.nodeid} uses {', '.join(sorted(missing))}" for item in items
               if (missing := server_fixtures_without_marker(item))]
        if bad:
            raise pytest.UsageError("not marked @pytest.mark.integration:\n  " + "\n  ".join(bad))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # before any fixture is set up: an unmarked test fails here rather than start a sandbox
    if missing := server_fixtures_without_marker(item):
        pytest.fail(f"{item.nodeid} uses {', '.join(sorted(missing))} (a real server, sysbench or sshd) but is not "
                    "marked @pytest.mark.integration", pytrace=False)


def _session_roots(config: pytest.Config) -> list[str]:
    """This session's directories, each with its slash: /tmp/pytest-of-root/pytest-25 is not pytest-256."""
    roots = [str(_HOME), os.environ.get("TUNEBENCH_HOME", "")]
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None:
        roots.append(str(factory.getbasetemp()))
    return [r.rstrip("/") + "/" for r in roots if r]


_LOG_SIZES = pytest.StashKey[dict]()


def _error_logs() -> dict[Path, int]:
    """The session's sandboxes' error logs and their sizes."""
    sizes = {}
    for log in [*_HOME.glob("sandbox/error.log"), *_HOME.glob("sandboxes/*/error.log")]:
        with contextlib.suppress(OSError):
            sizes[log] = log.stat().st_size
    return sizes


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failed test's report holds what its servers wrote to their error logs meanwhile and the machine's load: a
    stall that fails a test beside other work says there why (InnoDB's own warnings, a crash, a restart)."""
    report = yield
    if call.when == "setup":
        item.stash[_LOG_SIZES] = _error_logs()
    elif report.failed:
        before = item.stash.get(_LOG_SIZES, {})
        for log, size in _error_logs().items():
            with contextlib.suppress(OSError), log.open("rb") as f:
                f.seek(before.get(log, 0) if before.get(log, 0) <= size else 0)
                lines = f.read().decode(errors="replace").splitlines()[-40:]
            if lines:
                report.sections.append((f"{log.parent.name} error log during the test", "\n".join(lines)))
        with contextlib.suppress(OSError):
            report.sections.append(("machine", f"load average {Path('/proc/loadavg').read_text().strip()}\n"
                                               f"runnable threads now: {_runnable()}\nservers now: {_servers()}"))
    return report


def _servers() -> str:
    """Each server process: its state and where it waits (a server stuck in start-up or shutdown says how)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            text = stat.read_text()
            comm = text[text.index("(") + 1:text.rindex(")")]
            if comm in ("mariadbd", "mysqld", "ld-linux-x86-64"):
                pid = stat.parts[2]
                fields = text[text.rindex(")") + 2:].split()
                wchan = Path(f"/proc/{pid}/wchan").read_text().strip() or "-"
                tasks = [t.read_text() for t in Path(f"/proc/{pid}/task").glob("*/stat")]
                states = [t[t.rindex(")") + 2] for t in tasks]
                out.append(f"{comm}[{pid}] ppid {fields[1]} {fields[0]} {wchan} threads "
                           + "".join(f"{c}{states.count(c)}" for c in sorted(set(states))))
    return "; ".join(out) or "none"


def _runnable() -> str:
    """The processes with threads on the run queue now (state R), most first: who a load average belongs to."""
    counts: dict[str, int] = {}
    for task in Path("/proc").glob("[0-9]*/task/[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            text = task.read_text()
            if text[text.rindex(")") + 2] == "R":
                pid = task.parts[2]
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                counts[f"{comm}[{pid}]"] = counts.get(f"{comm}[{pid}]", 0) + 1
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])[:12]) or "none"


@pytest.fixture(autouse=True)
def _no_stray_servers(request):
    """A server a test starts in a directory of its own must be stopped by that test: it failed once to be,
    and a sandbox outlived `make test`. The shared sandbox (and its restarts) is the session's business."""
    roots = _session_roots(request.config)
    shared = (str(_HOME / "sandbox") + "/", str(_HOME / "sandboxes") + "/")
    before = set(servers_under(roots))
    yield
    stray = {pid: line for pid, line in servers_under(roots).items()
             if pid not in before and not any(s in line for s in shared)}
    if stray:
        kill_all(stray)
        pytest.fail("the test left a database server running (killed now): " + "; ".join(stray.values()),
                    pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After every fixture is torn down, no server of this session may still run."""
    left = servers_under(_session_roots(session.config))
    if left:
        kill_all(left)
        session.config.pluginmanager.get_plugin("terminalreporter").write_line(
            "FAILED: database servers outlived the test session (killed now): " + "; ".join(left.values()), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    # the session's home (its sandboxes' datadirs: 1.4 GB) goes with it, unless asked to keep it for a post-mortem
    if not os.environ.get("TUNEBENCH_KEEP_TEST_HOME") and _HOME.name.startswith("tb-test-"):
        import shutil

        shutil.rmtree(_HOME, ignore_errors=True)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def refused_cli():
    """`tunebench ARGS` for input that must be refused (one line, exit 2, before anything runs): in this process."""
    return functools.partial(run_cli, refused=True)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    """A real OpenSSH server on 127.0.0.1 with its own host key and one authorized user key."""

    def __init__(self, root: Path):
        import getpass
        import shutil

        self.root = root
        self.port = _free_port()
        self.user = getpass.getuser()
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        for name in ("host_key", "user_key", "other_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / name)], check=True)
        (root / "authorized_keys").write_text((root / "user_key.pub").read_text())
        (root / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {root / 'host_key'}\nPidFile {root / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {root / 'authorized_keys'}\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
            "StrictModes no\nUsePAM no\nLogLevel ERROR\nSubsystem sftp internal-sftp\n")
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # privilege separation directory
        self.proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(root / "sshd_config")], stderr=subprocess.PIPE)
        import socket
        import time

        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"sshd did not start: {self.proc.stderr.read().decode()[-500:]}") from None
                time.sleep(0.1)
        self.host_key_line = (root / "host_key.pub").read_text().split()[:2]

    @property
    def key(self) -> str:
        return str(self.root / "user_key")

    def url(self, host: str = "127.0.0.1") -> str:
        return f"ssh://{self.user}@{host}:{self.port}"

    def trust(self, known_hosts: Path, host: str = "127.0.0.1") -> None:
        """What `--trust-host-key` would have written, done by hand."""
        known_hosts.parent.mkdir(parents=True, exist_ok=True)
        with known_hosts.open("a") as f:
            f.write(f"[{host}]:{self.port} {' '.join(self.host_key_line)}\n")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    server = Sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture
def trusted(sshd):
    """The test sshd's key in Tunebench's known_hosts under both loopback names."""
    from tunebench.hosts.ssh import tunebench_known_hosts

    kh = tunebench_known_hosts()
    kh.unlink(missing_ok=True)
    for host in ("127.0.0.1", "localhost"):
        sshd.trust(kh, host)
    yield sshd
    kh.unlink(missing_ok=True)
