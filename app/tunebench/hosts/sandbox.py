"""The embedded sandbox server: a private mysqld/mariadbd started from the binaries on this machine or a kit.

It lives entirely under the user data dir (datadir, socket, my.cnf, logs), listens on a private
socket and a free loopback port, and never touches a system server, its datadir or port 3306. Each server
has a sandbox of its own (sandbox/ for the system's, sandboxes/NAME/ for the others); several may run at once.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tunebench import paths
from tunebench.core.errors import SandboxError
from tunebench.core.target import Target
from tunebench.hosts.cpu_binding import check_cpus
from tunebench.hosts.kits import default_server, list_servers, resolve_server
from tunebench.hosts.runner import child_env
from tunebench.hosts.sandbox_cnf import render_cnf
from tunebench.hosts.server_binary import ServerBinary, probe_binary
from tunebench.mysql.target import read_option_file_password

SANDBOX_USER = "tunebench"
# Servers this process started: the server outlives a CLI call by design, but while we live we keep
# the handle so it can be reaped on stop (and is not garbage-collected while still running).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
# A start is hung when the server has neither greeted a client nor written a line to its error log for this long:
# MariaDB 10.11.19 stopped for good after reading its grant tables, its main thread waiting on a thread that never
# answered, SIGTERM never handled (seen in ~1 of 10 quick restarts beside CPU hogs). A start that works writes a line
# every few seconds (crash recovery included) and greets within seconds of its last one: it is killed and started
# again, once.
HUNG_SECONDS = 45.0
# A server that has not begun to shut down this long after SIGTERM (no new line in its error log) never will.
STOP_SILENT_SECONDS = 30.0


# Options that are the sandbox's own (where it lives, how it is reached) or fixed when its datadir was made: a
# `--set` or an axis may not change them (the README's promise: never port 3306, never another datadir).
RESERVED = frozenset({"port", "socket", "datadir", "basedir", "pid_file", "log_error", "tmpdir", "plugin_dir",
                      "lc_messages_dir", "bind_address", "skip_networking", "user", "defaults_file",
                      "defaults_extra_file", "skip_grant_tables", "secure_file_priv", "mysqlx"})
FIXED_AT_INIT = frozenset({"innodb_page_size", "lower_case_table_names", "innodb_data_file_path",
                           "innodb_undo_tablespaces"})


def check_sandbox_overrides(overrides: Mapping[str, str | None], initialized: bool) -> None:
    """SandboxError for an option of the sandbox's own, or one fixed when its datadir was made."""
    for name in overrides:
        key = name.strip().lower().replace("-", "_")
        if key in RESERVED:
            raise SandboxError(f"{name} is the sandbox's own setting (it keeps its datadir, socket and a free port "
                               "of its own, never 3306); the sandbox is left as it was")
        if key in FIXED_AT_INIT and initialized:
            raise SandboxError(f"{name} is fixed when the sandbox's datadir is made; the sandbox is left as it was "
                               "(`tunebench sandbox` on a new one: remove its folder first)")


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block is done (a server restart is never left half-way: down, or up with
    a my.cnf that says otherwise), then are delivered as they came. Only the main thread has signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def hold(sig: int, _frame: Any) -> None:
        pending.append(sig)

    previous = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for held in dict.fromkeys(pending):
            signal.raise_signal(held)


# What `--help --verbose` may say of the datadir's own tables rather than of the options: MariaDB reads the plugins
# from mysql.plugin (an Aria table), and one the running server has open, or a kill -9 left unclosed, reads as
# "marked as crashed" there (errno 145); the server repairs it at its own start (aria_recover_options). Seen
# under the suite's load: a sweep's static-knob restart refused as "the server refuses these options".
TABLE_NOT_OPTION = re.compile(r"marked as crashed|Got error '?145\b")


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does: TIME_WAIT is no obstacle
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(avoid: set[int] | None = None) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port != 3306 and port not in (avoid or ()):
            return port


@dataclass(slots=True)
class SandboxState:
    """What the sandbox was last started with; kept in state.json next to the datadir."""

    binary: str = ""
    server: str = ""  # the server's name (mysql-9.7.4); a kit's sandbox keeps running that kit
    flavor: str = ""
    version: str = ""
    port: int = 0
    pid: int = 0
    overrides: dict[str, str | None] = field(default_factory=dict)
    cpus: str | None = None


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    running: bool
    initialized: bool
    base_dir: str
    datadir: str
    socket: str
    port: int
    pid: int
    flavor: str
    version: str
    binary: str
    overrides: dict[str, str | None]
    cpus: str | None
    server: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class SandboxServer:
    """Initialise, start, stop and restart the private server."""

    def __init__(self, base_dir: Path | None = None, binary: str | None = None, server: ServerBinary | None = None):
        self.base = Path(base_dir) if base_dir else paths.sandbox_dir()
        self._server = server
        self._binary_override = binary or (None if server else os.environ.get("TUNEBENCH_SERVER_BINARY"))
        self.datadir = self.base / "data"
        self.socket = self.base / "mysqld.sock"
        self.cnf = self.base / "my.cnf"
        self.client_cnf = self.base / "client.cnf"
        self.pidfile = self.base / "mysqld.pid"
        self.errlog = self.base / "error.log"
        self.state_file = self.base / "state.json"
        self.tmpdir = self.base / "tmp"
        if len(str(self.socket)) > 100:
            raise SandboxError(f"sandbox path too long for a UNIX socket: {self.socket}")

    # ---- state ---------------------------------------------------------------------------------
    def _load_state(self) -> SandboxState:
        try:
            return SandboxState(**json.loads(self.state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return SandboxState()

    def _save_state(self, state: SandboxState) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(state), indent=2))
        tmp.replace(self.state_file)

    @classmethod
    def for_server(cls, server: ServerBinary, home: Path | None = None) -> SandboxServer:
        """The sandbox of one server: the default one for the system's first server, its own for the others."""
        default = _default_name()
        sub = None if server.name == default else server.name
        base = (home / ("sandbox" if sub is None else f"sandboxes/{sub}")) if home else paths.sandbox_dir(sub)
        return cls(base, server=server)

    @classmethod
    def named(cls, name: str | None, home: Path | None = None) -> SandboxServer:
        """`--server NAME` (a unique prefix is enough); None: the default sandbox."""
        if not name:
            return cls(home / "sandbox" if home else None)
        return cls.for_server(resolve_server(name), home)

    def binary(self) -> ServerBinary:
        if self._server is not None:
            return self._server
        if self._binary_override:
            return probe_binary(self._binary_override)
        state = self._load_state()
        if state.server and state.binary:
            known = [s for s in list_servers() if s.name == state.server]
            if known:
                return known[0]
            if not Path(state.binary).exists():
                raise SandboxError(f"this sandbox's server {state.server} is gone ({state.binary}); "
                                   "tunebench servers list shows what is here")
        return default_server()

    @property
    def initialized(self) -> bool:
        return (self.datadir / "mysql").is_dir() and self.client_cnf.exists()

    def _our_pid(self) -> int:
        """The pid of a live server started from *our* my.cnf, or 0. Never trusts a stale pid file."""
        try:
            candidates = [int(self.pidfile.read_text().strip())]
        except (OSError, ValueError):
            candidates = []
        candidates.append(self._load_state().pid)  # taskset-started or pid file not yet written
        for pid in candidates:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if pid > 0 else []
            except OSError:
                continue
            if f"--defaults-file={self.cnf}".encode() in cmdline:
                return pid
        return 0

    def status(self) -> SandboxStatus:
        state = self._load_state()
        pid = self._our_pid()
        return SandboxStatus(
            running=pid > 0,
            initialized=self.initialized,
            base_dir=str(self.base),
            datadir=str(self.datadir),
            socket=str(self.socket),
            port=state.port,
            pid=pid,
            flavor=state.flavor,
            version=state.version,
            binary=state.binary,
            overrides=state.overrides,
            cpus=state.cpus,
            server=state.server,
        )

    # ---- lifecycle -----------------------------------------------------------------------------
    def _cnf_text(self, server: ServerBinary, port: int, overrides: dict[str, str | None], errlog: str) -> str:
        template = (paths.resources_dir() / "sandbox.cnf.in").read_text()
        values = {
            "user": "root" if os.geteuid() == 0 else getpass.getuser(),
            "basedir": str(server.prefix),
            "datadir": str(self.datadir),
            "socket": str(self.socket),
            "port": str(port),
            "pidfile": str(self.pidfile),
            "errlog": errlog,
            "tmpdir": str(self.tmpdir),
        }
        return render_cnf(template, values, server.flavor, overrides, server.version_tuple, kit_lines(server))

    def _write_cnf(self, server: ServerBinary, port: int, overrides: dict[str, str | None]) -> None:
        self.cnf.write_text(self._cnf_text(server, port, overrides, str(self.errlog)))

    def check_options(self, server: ServerBinary, overrides: dict[str, str | None]) -> None:
        """Ask the server binary itself whether it accepts the my.cnf these overrides make: `--help
        --verbose` parses every option (and the plugins') and exits without touching a datadir."""
        if not overrides:
            return
        text = self._cnf_text(server, 3306, overrides, "/dev/null")
        with tempfile.TemporaryDirectory(prefix="tunebench-cnf-") as tmp:
            cnf = Path(tmp) / "my.cnf"
            cnf.write_text(text.replace("log-error ", "# log-error ", 1))
            try:
                out = subprocess.run([*server.argv, f"--defaults-file={cnf}", "--help", "--verbose"],
                                     capture_output=True, text=True, timeout=60, env=child_env())
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise SandboxError(f"cannot check the server options with {server.path}: {exc}") from None
        errors = [e for ln in out.stderr.splitlines() if "[ERROR]" in ln
                  and not TABLE_NOT_OPTION.search(e := ln.split("[ERROR]", 1)[1].strip())]
        if out.returncode != 0 or errors:
            detail = errors[0] if errors else (out.stderr.strip().splitlines() or ["exit code"])[-1]
            raise SandboxError(f"the server refuses these options ({', '.join(overrides)}): {detail}; "
                               "the sandbox is left as it was")

    def _initialize(self, server: ServerBinary) -> None:
        self.datadir.mkdir(parents=True, exist_ok=True)
        if server.flavor == "mariadb" and (server.loader or not server.is_system):
            self._bootstrap_mariadb(server)
            return
        if server.flavor == "mariadb":
            tool = None
            for name in ("mariadb-install-db", "mysql_install_db"):
                tool = shutil.which(name, path=str(Path(server.path).parent) + os.pathsep + os.environ["PATH"])
                if tool:
                    break
            if not tool:
                raise SandboxError("mariadb-install-db not found next to the MariaDB server binary")
            argv = [tool, f"--defaults-file={self.cnf}", "--auth-root-authentication-method=normal",
                    "--skip-test-db"]
        else:
            argv = [*server.argv, f"--defaults-file={self.cnf}", "--initialize-insecure"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=child_env())
        if out.returncode != 0 or not (self.datadir / "mysql").is_dir():
            shutil.rmtree(self.datadir, ignore_errors=True)
            tail = (out.stdout + out.stderr).strip().splitlines()[-5:] or [self._error_log_tail(0)]
            raise SandboxError(f"initialising the sandbox datadir failed: {_reason(out.returncode, tail)}")

    def _bootstrap_mariadb(self, server: ServerBinary) -> None:
        """What mariadb-install-db does, through the kit's loader: the system tables' SQL fed to
        `mariadbd --bootstrap` (the script would start the binary directly, without the kit's libraries)."""
        share = mariadb_share(server)
        if share is None:
            raise SandboxError(f"no mariadb_system_tables.sql (or mysql_system_tables.sql) under "
                               f"{server.prefix}/share: not a complete MariaDB")
        parts = ["create database if not exists mysql;", "use mysql;", "SET @auth_root_socket=NULL;"]
        for name in ("mariadb_system_tables.sql", "mariadb_performance_tables.sql", "mariadb_system_tables_data.sql",
                     "fill_help_tables.sql", "maria_add_gis_sp_bootstrap.sql", "mariadb_sys_schema.sql"):
            # (MariaDB before 10.6 names them mysql_*.sql)
            found = next((share / n for n in (name, name.replace("mariadb_", "mysql_", 1)) if (share / n).exists()),
                         None)
            if found is not None:
                parts.append(found.read_text(errors="replace"))
        argv = [*server.argv, f"--defaults-file={self.cnf}", "--bootstrap", "--log-warnings=0",
                "--enforce-storage-engine=", "--max_allowed_packet=8M", "--net_buffer_length=16K"]
        try:
            out = subprocess.run(argv, input="\n".join(parts), capture_output=True, text=True, timeout=600,
                                 errors="replace", env=child_env())
        except (OSError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(self.datadir, ignore_errors=True)
            raise SandboxError(f"initialising the sandbox datadir failed: {exc}") from None
        if out.returncode != 0 or (not (self.datadir / "mysql" / "user.frm").exists() and \
                not (self.datadir / "mysql" / "global_priv.frm").exists()):
            shutil.rmtree(self.datadir, ignore_errors=True)
            tail = (out.stdout + out.stderr).strip().splitlines()[-5:] or [self._error_log_tail(0)]
            raise SandboxError(f"initialising the sandbox datadir failed: {_reason(out.returncode, tail)}")
        (self.datadir / "mariadb_upgrade_info").write_text(server.version + "-MariaDB")

    def _bootstrap_accounts(self, port: int) -> None:
        """First start: create the sandbox account and lock root behind a random password."""
        from tunebench.mysql.connect import admin_connect

        password = secrets.token_urlsafe(18)
        root_target = Target(name="sandbox-root", socket=str(self.socket), user="root")
        conn = admin_connect(root_target, password="")
        try:
            cur = conn.cursor()
            for host in ("localhost", "127.0.0.1"):
                cur.execute(f"CREATE USER IF NOT EXISTS '{SANDBOX_USER}'@'{host}' IDENTIFIED BY %s", (password,))
                cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO '{SANDBOX_USER}'@'{host}' WITH GRANT OPTION")
            cur.execute("ALTER USER 'root'@'localhost' IDENTIFIED BY %s", (password,))
        finally:
            conn.close()
        self._write_client_cnf(password, port)

    def _write_client_cnf(self, password: str, port: int) -> None:
        """The option file the mysql/mariadb clients can use as-is; rewritten on every start (new port)."""
        self.client_cnf.touch(mode=0o600)
        os.chmod(self.client_cnf, 0o600)
        self.client_cnf.write_text(
            f"[client]\nuser={SANDBOX_USER}\npassword={password}\nsocket={self.socket}\nport={port}\nhost=127.0.0.1\n"
        )

    def start(self, overrides: dict[str, str | None] | None = None, cpus: str | None = None,
              timeout: float = 120.0, force: bool = False) -> SandboxStatus:
        """Start (initialising on first use). A running sandbox is left alone unless options differ. A restart
        is not interrupted half-way (Ctrl-C and SIGTERM are taken once the server is up), and one that does not
        come up puts back the last configuration that did, then says why."""
        state = self._load_state()
        wanted = dict(overrides or {})
        if self._our_pid() and wanted == state.overrides and cpus == state.cpus and not force:
            return self.status()
        # Everything is checked before a running server is stopped: a bad option leaves it running.
        check_sandbox_overrides(wanted, self.initialized)
        if cpus is not None:
            cpus = check_cpus(cpus)
        server = self.binary()
        self.check_options(server, wanted)
        was_running = bool(self._our_pid())
        fresh = not self.base.exists()  # a first start that fails leaves no sandbox folder behind
        with signals_deferred():
            try:
                return self._start(server, state, wanted, cpus, timeout)
            except SandboxError as exc:
                if fresh and not self._our_pid():
                    shutil.rmtree(self.base, ignore_errors=True)
                if not (was_running and self.initialized) or (wanted == state.overrides and cpus == state.cpus):
                    raise
                try:  # the last configuration that came up
                    self._start(server, state, dict(state.overrides), state.cpus, timeout)
                except SandboxError as again:
                    raise SandboxError(f"{exc}; and the previous configuration did not come up either: {again}"
                                       ) from None
                raise SandboxError(f"{exc}; the sandbox is running again with its previous settings") from None

    def _start(self, server: ServerBinary, state: SandboxState, wanted: dict[str, str | None], cpus: str | None,
               timeout: float) -> SandboxStatus:
        if self._our_pid():
            self.stop()
        self.base.mkdir(parents=True, exist_ok=True)
        os.chmod(self.base, 0o700)
        self.tmpdir.mkdir(exist_ok=True)
        # Keep the port across restarts (sweeps restart the server; TCP targets must not move); another
        # sandbox's port is never taken, even while that one is stopped.
        port = state.port if state.port and port_is_free(state.port) else free_port(self._ports_of_others())
        first_time = not self.initialized
        if first_time:
            shutil.rmtree(self.datadir, ignore_errors=True)
            self._write_cnf(server, port, {})
            self._initialize(server)
        self._write_cnf(server, port, wanted)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        argv = [*server.argv, f"--defaults-file={self.cnf}"]
        if cpus:
            taskset = shutil.which("taskset")
            if not taskset:
                raise SandboxError("CPU binding needs taskset (util-linux)")
            argv = [taskset, "-c", cpus, *argv]
        for attempt in (1, 2):
            log_offset = self._errlog_size()
            with open(self.base / "stdout.log", "ab") as out:
                proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, env=child_env())
            _CHILDREN[proc.pid] = proc
            self._save_state(SandboxState(server.path, server.name, server.flavor, server.version, port, proc.pid,
                                          wanted, cpus))
            try:
                self._wait_ready(proc, timeout, log_offset)
                break
            except _Hung as hung:
                self._kill(proc.pid)
                if attempt == 2:
                    raise SandboxError(f"sandbox server hung twice during start-up: {hung}") from None
                with open(self.errlog, "a") as log:  # where the next reader of the log looks for why
                    log.write(f"[tunebench] the server (pid {proc.pid}) hung during start-up ({hung}): killed and "
                              "started again\n")
        if first_time:
            self._bootstrap_accounts(port)
        else:
            password = read_option_file_password(self.client_cnf)
            if password:
                self._write_client_cnf(password, port)
        return self.status()

    def _error_log_tail(self, offset: int) -> str:
        try:
            with open(self.errlog, "rb") as f:
                f.seek(offset)
                lines = f.read().decode(errors="replace").strip().splitlines()
        except OSError:
            return ""
        errors = [ln for ln in lines if "ERROR" in ln] or lines
        return " | ".join(errors[-3:])

    def _errlog_size(self) -> int:
        try:
            return self.errlog.stat().st_size
        except OSError:
            return 0

    def _greets(self) -> bool:
        """The server answers a connection with its handshake: only once it takes connections (the socket file and
        its listen backlog come earlier, while the server may still stop for good on its way up)."""
        if not self.socket.exists():
            return False
        with socket.socket(socket.AF_UNIX) as s, contextlib.suppress(OSError):
            s.settimeout(1.0)
            s.connect(str(self.socket))
            return bool(s.recv(1))
        return False

    def _wait_ready(self, proc: subprocess.Popen[bytes], timeout: float, log_offset: int) -> None:
        deadline = time.monotonic() + timeout
        size, moved = self._errlog_size(), time.monotonic()
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                _CHILDREN.pop(proc.pid, None)
                raise SandboxError(f"sandbox server exited during start-up: {self._error_log_tail(log_offset)}")
            if self._greets():
                return
            if (now := self._errlog_size()) != size:
                size, moved = now, time.monotonic()
            elif time.monotonic() - moved > HUNG_SECONDS:
                raise _Hung(f"no greeting and no line in its error log for {HUNG_SECONDS:.0f} s after: "
                            f"{self._error_log_tail(log_offset).split(' | ')[-1][:200]}")
            time.sleep(0.1)
        self.stop()
        raise SandboxError(f"sandbox server not ready after {timeout:.0f} s: {self._error_log_tail(log_offset)}")

    def _kill(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        child = _CHILDREN.pop(pid, None)
        if child is not None:
            child.wait(30)
        else:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists() and not _is_zombie(pid):
                time.sleep(0.05)

    def stop(self, timeout: float = 300.0) -> SandboxStatus:
        """SIGTERM, then the server's own shutdown (up to `timeout`: a big buffer pool's flush); one that has not begun
        to shut down STOP_SILENT_SECONDS after it (no new line in its error log) is hung and killed."""
        pid = self._our_pid()
        if pid:
            size = self._errlog_size()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            start = time.monotonic()
            deadline = start + timeout
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
                if _is_zombie(pid):
                    break
                if time.monotonic() - start > STOP_SILENT_SECONDS and self._errlog_size() == size:
                    break  # never began to shut down: killed below
                time.sleep(0.1)
            if Path(f"/proc/{pid}").exists() and not _is_zombie(pid):
                self._kill(pid)  # and gone before a start that follows opens its files
            elif (child := _CHILDREN.pop(pid, None)) is not None:
                child.wait(30)
        state = self._load_state()
        state.pid = 0
        if self.state_file.exists():
            self._save_state(state)
        return self.status()

    def restart(self, overrides: dict[str, str | None] | None = None, cpus: str | None = None) -> SandboxStatus:
        return self.start(overrides, cpus, force=True)

    def destroy(self) -> None:
        """Stop and delete everything the sandbox owns (its datadir included)."""
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    def _ports_of_others(self) -> set[int]:
        home = self.base.parent.parent if self.base.parent.name == "sandboxes" else self.base.parent
        ports = set()
        for state_file in [home / "sandbox" / "state.json", *(home / "sandboxes").glob("*/state.json")]:
            if state_file.parent != self.base:
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    ports.add(int(json.loads(state_file.read_text()).get("port") or 0))
        return ports

    @property
    def target_name(self) -> str:
        """`sandbox` for the default one, `sandbox:NAME` for another server's."""
        return "sandbox" if self.base.name == "sandbox" else f"sandbox:{self.base.name}"

    def target(self) -> Target:
        state = self._load_state()
        return Target(
            name=self.target_name,
            socket=str(self.socket),
            host="127.0.0.1",
            port=state.port,
            user=SANDBOX_USER,
            password_file=str(self.client_cnf),
        )


def _reason(returncode: int, tail: list[str]) -> str:
    """Why a server program failed, never empty: its last lines, or how it ended when it printed nothing (a
    binary that answers --version and then crashes)."""
    lines = [ln.strip() for ln in tail if ln and ln.strip()]
    if lines:
        return " | ".join(lines)
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"the server was killed by {signal.Signals(-returncode).name} and printed nothing"
        return f"the server was killed by signal {-returncode} and printed nothing"
    return f"the server exited with status {returncode} and printed nothing"


def other_sandboxes() -> list[SandboxServer]:
    """The sandbox of every server but the default one (the kits, other system binaries)."""
    default = _default_name()
    return [SandboxServer.for_server(s) for s in list_servers() if s.name != default]


def _default_name() -> str:
    try:
        return default_server().name
    except SandboxError:
        return ""


def _first_dir(candidates: list[Path], marker: str) -> Path | None:
    return next((d for d in candidates if (d / marker).exists()), None)


def mariadb_share(server: ServerBinary) -> Path | None:
    top = server.prefix
    dirs = [top / "share/mariadb", top / "share", top / "share/mysql", top / "scripts"]
    # MariaDB 10.6 and later name it mariadb_system_tables.sql, 10.5 and before mysql_system_tables.sql
    return _first_dir(dirs, "mariadb_system_tables.sql") or _first_dir(dirs, "mysql_system_tables.sql")


def kit_lines(server: ServerBinary) -> list[str]:
    """Where a kit's or tarball's plugins and error messages are (their compiled-in paths point at /usr)."""
    if server.is_system:
        return []
    top = server.prefix
    lines = []
    plugins = next((d for d in (top / "lib/mysql/plugin", top / "lib/plugin", top / "lib64/mysql/plugin")
                    if d.is_dir()), None)
    if plugins:
        lines.append(f"plugin-dir = {plugins}")
    messages = _first_dir([top / "share/mysql", top / "share/mariadb", top / "share"], "english/errmsg.sys")
    if messages:
        lines.append(f"lc-messages-dir = {messages}")
    return lines


class _Hung(Exception):
    """A server start that stopped on its way up (HUNG_SECONDS)."""


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False
