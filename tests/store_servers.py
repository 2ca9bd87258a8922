"""Database servers the shared-store tests start as session stores: a PostgreSQL from Debian's package and a
MariaDB that is not the sandbox under test, each on a private directory and loopback port, stopped at the end."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PG_BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
RUN_AS = "nobody"  # postgres refuses to run as root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"the server did not start: {log.read_text()[-800:]}") from None
            time.sleep(0.05)
    raise RuntimeError(f"the server did not listen on {port} within {timeout} s: {log.read_text()[-800:]}")


class PostgresStore:
    """A PostgreSQL on 127.0.0.1:PORT, data under a private /tmp directory (postgres runs as `nobody`, which
    cannot enter pytest's root-only temp), a database `tunebench` owned by `tb` with a password."""

    def __init__(self) -> None:
        if not PG_BIN:
            raise RuntimeError("PostgreSQL is not installed (packaging/ensure-system-deps.sh installs postgresql)")
        self.bin = Path(PG_BIN[-1])
        self.root = Path(tempfile.mkdtemp(prefix="tbstore-pg-"))
        self.user, self.password = "tb", secrets.token_urlsafe(12)
        nobody = pwd.getpwnam(RUN_AS)
        os.chown(self.root, nobody.pw_uid, nobody.pw_gid)
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        os.chown(pwfile, nobody.pw_uid, nobody.pw_gid)
        self.data, self.log = self.root / "data", self.root / "postgres.log"
        subprocess.run(["runuser", "-u", RUN_AS, "--", str(self.bin / "initdb"), "-D", str(self.data), "-U",
                        self.user, f"--pwfile={pwfile}", "--auth-host=scram-sha-256", "--auth-local=trust", "-E",
                        "UTF8", "--no-sync", "--no-instructions"], check=True, capture_output=True, timeout=60)
        pwfile.unlink()
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        try:
            self.start()
            subprocess.run(["runuser", "-u", RUN_AS, "--", str(self.bin / "psql"), "-h", str(self.root), "-p",
                            str(self.port), "-U", self.user, "-d", "postgres", "-qc", "CREATE DATABASE tunebench"],
                           check=True, capture_output=True, timeout=30)
        except BaseException:  # never a postgres left running behind a failed fixture
            self.close()
            raise

    def url(self, database: str = "tunebench") -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        """Started (again, on the same port: a store that comes back)."""
        log = self.log.open("ab")
        os.chown(self.log, pwd.getpwnam(RUN_AS).pw_uid, -1)
        self.proc = subprocess.Popen(
            ["runuser", "-u", RUN_AS, "--", str(self.bin / "postgres"), "-D", str(self.data), "-k", str(self.root),
             "-p", str(self.port), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c",
             "max_connections=50"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        _wait_port(self.port, self.proc, self.log)
        # listening is not accepting: until its start-up ends, postgres answers "the database system is starting
        # up" (psql exit 2, seen on a loaded machine); pg_isready says when it accepts (bounded)
        deadline = time.monotonic() + 60
        while subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)],
                             capture_output=True, timeout=30).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"postgres did not accept connections: {self.log.read_text()[-800:]}")
            time.sleep(0.1)

    def processes(self) -> list[int]:
        """runuser, the postmaster and every process it forked (each backend is a session of its own: a signal to
        the process group does not reach them)."""
        assert self.proc is not None
        out, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            with contextlib.suppress(OSError):
                for task in os.listdir(f"/proc/{pid}/task"):
                    with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
                        todo += [int(x) for x in f.read().split()]
        return out

    def signal_all(self, sig: int) -> None:
        """`sig` to every process of the server (SIGSTOP: frozen, connections open; SIGCONT: thawed)."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def stop(self) -> None:
        """Fast shutdown: the clients' connections are cut, as when a server goes away."""
        if self.proc is None:
            return
        pid = self._postmaster_pid()
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 2)  # SIGINT: fast shutdown
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(10)
        self.proc = None

    def _postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class MariaDBStore:
    """A MariaDB of its own (the system's mariadbd, through SandboxServer on a private directory and port, not the
    sandbox the runs load) with a database `tunebench_store` and an account `tb` that has a password."""

    def __init__(self, base: Path) -> None:
        from tunebench.hosts.sandbox import SandboxServer
        from tunebench.mysql.connect import admin_connect

        self.sandbox = SandboxServer(base)
        self.sandbox.start()
        self.user, self.password = "tb", secrets.token_urlsafe(12)
        conn = admin_connect(self.sandbox.target())
        try:
            cur = conn.cursor()
            cur.execute("CREATE DATABASE IF NOT EXISTS tunebench_store")
            cur.execute("CREATE USER IF NOT EXISTS 'tb'@'127.0.0.1' IDENTIFIED BY %s", (self.password,))
            cur.execute("GRANT ALL PRIVILEGES ON tunebench_store.* TO 'tb'@'127.0.0.1'")
        finally:
            conn.close()

    @property
    def port(self) -> int:
        return int(self.sandbox.status().port)

    def url(self, database: str = "tunebench_store") -> str:
        return f"mysql+mysqlconnector://{self.user}@127.0.0.1:{self.port}/{database}"

    def close(self) -> None:
        self.sandbox.stop()

