"""The SSH runner: the same `start` as the local runner, on a client or database host, agentless.

Built on paramiko. Honours ~/.ssh/config (HostName, User, Port, IdentityFile), the agent and the usual key
files. Host keys are checked against ~/.ssh/known_hosts and Tunebench's own known_hosts (in its data dir):
a mismatch is refused, and an unknown host is refused unless the user trusts it explicitly
(`--trust-host-key`, or the GUI's dialog); a trusted key is written to Tunebench's known_hosts, never to
the user's.

A remote command runs under a small sh wrapper: secrets (MYSQL_PWD) arrive on its stdin, never in a
command line; the command's pid is printed first; and a watcher kills the command when the channel's stdin
closes, which is what happens when we stop it, when the connection drops, and when Tunebench dies. So no
sysbench is ever left behind on a client host.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunebench import paths
from tunebench.core.errors import ConfigError, EngineError, TunebenchError
from tunebench.hosts.runner import ProcessOutcome

PID_MARK = "@tunebench-pid "
URL_RE = re.compile(r"^ssh://(?:(?P<user>[A-Za-z0-9._-]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)"
                    r"(?::(?P<port>\d+))?/?$")


class SshError(TunebenchError):
    """Cannot reach, authenticate to, or trust an SSH host: one line that says which and why; `kind` says
    which as data (host_key_unknown, host_key_mismatch, auth, unreachable, ssh) and `host` is the ssh:// URL."""

    exit_code = 2

    def __init__(self, message: str, kind: str = "ssh", host: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.host = host


@dataclass(frozen=True, slots=True)
class SshHost:
    host: str
    user: str | None = None
    port: int | None = None

    @property
    def label(self) -> str:
        """What series and messages call this host: the name given, plus the port when not 22."""
        return f"{self.host}:{self.port}" if self.port and self.port != 22 else self.host

    def url(self) -> str:
        return f"ssh://{self.user + '@' if self.user else ''}{self.host}{':' + str(self.port) if self.port else ''}"


def parse_ssh_url(text: str) -> SshHost:
    """`ssh://[user@]host[:port]` (or `[user@]host[:port]`)."""
    raw = text.strip()
    m = URL_RE.match(raw if raw.startswith("ssh://") else f"ssh://{raw}")
    if not m or not m.group("host"):
        raise ConfigError(f"not an SSH host: {text!r} (expected ssh://user@host[:port])")
    port = int(m.group("port")) if m.group("port") else None
    if port is not None and not 0 < port < 65536:
        raise ConfigError(f"SSH port out of range in {text!r}")
    return SshHost(m.group("host").strip("[]"), m.group("user"), port)


def tunebench_known_hosts() -> Path:
    return paths.data_dir() / "known_hosts"


def _ssh_config(host: str) -> dict[str, Any]:
    import paramiko

    path = Path.home() / ".ssh" / "config"
    if not path.is_file():
        return {}
    try:
        return dict(paramiko.SSHConfig.from_path(str(path)).lookup(host))
    except (OSError, paramiko.SSHException):
        return {}


class _TrustOnce:
    """The user said to trust this host: accept its key and remember it in Tunebench's known_hosts."""

    def __init__(self, path: Path):
        self.path = path
        self.added: list[str] = []

    def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
        keys = client.get_host_keys()
        keys.add(hostname, key.get_name(), key)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        self.added.append(f"{hostname} {key.get_name()} SHA256:{_fingerprint(key)}")


def _fingerprint(key: Any) -> str:
    import base64
    import hashlib

    return base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")


def connect(host: SshHost, trust: bool = False, key_files: Sequence[str] = (), timeout: float = 10.0,
            note: Callable[[str], None] | None = None) -> Any:
    """A connected paramiko SSHClient, or SshError with one line saying what is wrong."""
    import paramiko

    cfg = _ssh_config(host.host)
    hostname = cfg.get("hostname", host.host)
    port = host.port or int(cfg.get("port", 22))
    user = host.user or cfg.get("user") or getpass.getuser()
    keys = [os.path.expanduser(k) for k in (*key_files, *cfg.get("identityfile", []))]
    keys = [k for k in keys if os.path.isfile(k)]
    where = f"{user}@{hostname}:{port}"
    url = f"ssh://{where}"
    client = paramiko.SSHClient()
    try:
        client.load_system_host_keys()
    except (OSError, paramiko.SSHException):
        pass
    mine = tunebench_known_hosts()
    if mine.is_file():
        try:
            client.get_host_keys().load(str(mine))
        except (OSError, paramiko.SSHException) as exc:
            raise SshError(f"cannot read {mine}: {exc}") from None
    policy = _TrustOnce(mine) if trust else paramiko.RejectPolicy()
    client.set_missing_host_key_policy(policy)
    try:
        client.connect(hostname, port=port, username=user, key_filename=keys or None, timeout=timeout,
                       banner_timeout=timeout, auth_timeout=timeout, allow_agent=True, look_for_keys=True)
    except paramiko.BadHostKeyException as exc:
        client.close()
        known = f"[{hostname}]:{port}" if port != 22 else hostname
        raise SshError(f"ssh {where}: host key mismatch (got {exc.key.get_name()} "
                       f"SHA256:{_fingerprint(exc.key)}, known_hosts has another): refusing to connect. If the "
                       f"host was reinstalled, remove the old key: ssh-keygen -R '{known}' "
                       f"(and from {mine})", "host_key_mismatch", url) from None
    except paramiko.AuthenticationException:
        client.close()
        tried = ", ".join(keys) if keys else "the agent and ~/.ssh/id_*"
        raise SshError(f"ssh {where}: authentication failed (tried {tried}); give a key with --ssh-key FILE "
                       "or IdentityFile in ~/.ssh/config", "auth", url) from None
    except paramiko.SSHException as exc:
        client.close()
        if "not found in known_hosts" in str(exc):
            raise SshError(f"ssh {where}: unknown host key; check it and trust it explicitly with "
                           f"--trust-host-key (it is then kept in {mine})", "host_key_unknown", url) from None
        raise SshError(f"ssh {where}: {exc}", host=url) from None
    except (TimeoutError, OSError) as exc:
        client.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        raise SshError(f"ssh {where}: cannot connect: {reason}", "unreachable", url) from None
    if isinstance(policy, _TrustOnce):
        for line in policy.added:
            (note or (lambda m: sys.stderr.write(f"tunebench: {m}\n")))(f"trusted new host key {line}")
    return client


def wrapper_script(argv: Sequence[str], secret_names: Sequence[str], cwd: str | None = None) -> str:
    """The sh that runs `argv` on the remote host (in `cwd`): secrets from stdin, pid first, dies with the
    channel."""
    for name in secret_names:
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
            raise ConfigError(f"not an environment variable name: {name!r}")
    reads = "".join(f"IFS= read -r {n}; export {n}; " for n in secret_names)
    cmd = " ".join(shlex.quote(a) for a in argv)
    cd = f"cd {shlex.quote(cwd)} || exit 1; " if cwd else ""
    return (f"exec 3<&0; {cd}{reads}{cmd} </dev/null 2>&1 & c=$!; echo '{PID_MARK}'$c; "
            # the watcher: stdin closes (stop, dropped connection, dead Tunebench) -> TERM, then KILL
            "( cat <&3 >/dev/null 2>&1; kill -TERM $c 2>/dev/null; sleep 5; kill -KILL $c 2>/dev/null ) "
            ">/dev/null 2>&1 & w=$!; exec 3<&-; wait $c; rc=$?; kill $w 2>/dev/null; exit $rc")


def talking_script(argv: Sequence[str], cwd: str | None = None) -> str:
    """The sh that runs `argv` (in `cwd`) reading the channel as its stdin: what the caller sends reaches it
    (secrets too: they never touch a command line or an environment), and the channel's end is its stdin's end,
    which the command must take as its stop (load/remote_workers.py does). The pid is printed first."""
    cmd = " ".join(shlex.quote(a) for a in argv)
    cd = f"cd {shlex.quote(cwd)} || exit 1; " if cwd else ""
    return f"exec 3<&0; {cd}{cmd} <&3 2>&1 & c=$!; exec 3<&-; echo '{PID_MARK}'$c; wait $c"


class SshProcess:
    """One remote command; the interface of LocalProcess (lines, wait, stop, pid). `talk`: the command reads
    what `send` sends (its stdin is the channel) and stops when the channel's stdin closes."""

    def __init__(self, runner: SshRunner, argv: Sequence[str], env: Mapping[str, str] | None,
                 display: Sequence[str], cwd: str | None = None, talk: bool = False):
        self.runner = runner
        self.argv = tuple(argv)
        self.display = tuple(display) or self.argv
        self.remote_pid: int | None = None
        self.lost = False
        self.talk = talk
        self._tail: list[str] = []
        self._started = time.monotonic()
        env = dict(env or {})
        if talk and env:
            raise ValueError("a talking command gets its secrets through send(), not its environment")
        client = runner.client()
        try:
            self._chan = client.get_transport().open_session()
            script = talking_script(self.argv, cwd) if talk else wrapper_script(self.argv, list(env), cwd)
            self._chan.exec_command(script)
            for value in env.values():
                self._chan.sendall((value + "\n").encode())
        except Exception as exc:  # paramiko raises several kinds here; all mean the same to the user
            raise EngineError(f"{runner.host.label}: cannot start {self.display[0]}: {exc}") from None

    @property
    def pid(self) -> int:
        return -1  # not a local pid: the process probe never looks for it here

    def send(self, data: bytes) -> None:
        """To the command's stdin (a talking command's); OSError when the channel is gone."""
        try:
            self._chan.sendall(data)
        except (EOFError, OSError) as exc:
            raise OSError(f"{self.runner.host.label}: the channel is closed ({exc})") from None
        except Exception as exc:  # paramiko's SSHException: the connection dropped
            raise OSError(f"{self.runner.host.label}: {exc}") from None

    def lines(self) -> Iterator[str]:
        f = self._chan.makefile("rb")  # paramiko decodes text strictly: a non-UTF-8 line would end the reader
        try:
            for raw_bytes in f:
                line = raw_bytes.decode("utf-8", errors="replace").rstrip("\r\n")
                if line.startswith(PID_MARK):
                    self.remote_pid = int(line[len(PID_MARK):])
                    continue
                self._tail.append(line)
                del self._tail[:-40]
                yield line
        except (OSError, EOFError):
            pass
        self._check_lost()

    def _check_lost(self) -> None:
        """After the output ended: the exit status follows (a moment later); a dropped connection never
        sends one (paramiko leaves -1, which no process exit status is)."""
        deadline = time.monotonic() + 5
        while not self._chan.exit_status_ready() and time.monotonic() < deadline and self.runner.alive():
            time.sleep(0.02)
        if not self._chan.exit_status_ready() or self._chan.exit_status == -1:
            self.lost = True

    def wait(self, timeout: float | None = None) -> ProcessOutcome:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._chan.exit_status_ready() and not self._chan.closed:
            if deadline is not None and time.monotonic() >= deadline:
                return ProcessOutcome(self.display, None, time.monotonic() - self._started, tuple(self._tail))
            if not self.runner.alive():
                self.lost = True
                break
            time.sleep(0.05)
        rc = self._chan.recv_exit_status() if self._chan.exit_status_ready() else None
        if rc == -1:
            self.lost, rc = True, None
        return ProcessOutcome(self.display, rc, time.monotonic() - self._started, tuple(self._tail))

    def stop(self, grace: float = 5.0) -> ProcessOutcome:
        """Close its stdin: the wrapper TERMs the command (KILL 5 s later); then close the channel."""
        try:
            self._chan.shutdown_write()
        except (OSError, EOFError):
            pass
        outcome = self.wait(grace + 6)
        if outcome.returncode is None and self.talk and self.remote_pid and not self.lost:
            # a talking command that did not stop at the end of its stdin: killed (its own children see their
            # pipes to it close, and stop)
            with contextlib.suppress(EngineError, SshError):
                self.runner.run(f"kill -KILL {int(self.remote_pid)} 2>/dev/null", timeout=10)
            outcome = self.wait(5)
        self._chan.close()
        return outcome


class SshRunner:
    """Runs processes on one SSH host, with the interface of LocalRunner; reconnects with backoff."""

    def __init__(self, host: SshHost, trust: bool = False, key_files: Sequence[str] = (),
                 retries: int = 4, note: Callable[[str], None] | None = None):
        self.host = host
        self.note = note
        self.trust = trust
        self.key_files = tuple(key_files)
        self.retries = retries
        self._client: Any = None
        self._lock = threading.Lock()
        self.reconnects = 0

    @property
    def label(self) -> str:
        return self.host.label

    def alive(self) -> bool:
        t = self._client.get_transport() if self._client is not None else None
        return bool(t is not None and t.is_active())

    def client(self) -> Any:
        """The connection, made when needed; a lost one is remade with 1, 2, 4 s between attempts. Trust
        and key errors are final (retrying would not change them)."""
        with self._lock:
            if self.alive():
                return self._client
            had = self._client is not None
            if had:
                self._client.close()
            delay = 1.0
            attempts = self.retries if had else 1  # a first connection fails at once; a lost one is retried
            for attempt in range(attempts):
                try:
                    self._client = connect(self.host, self.trust, self.key_files, note=self.note)
                    self.trust = False  # trusted once, now in known_hosts
                    if had:
                        self.reconnects += 1
                    return self._client
                except SshError as exc:
                    if exc.kind != "unreachable" or attempt == attempts - 1:
                        raise
                time.sleep(delay)
                delay *= 2
            raise SshError(f"ssh {self.host.url()}: cannot connect", "unreachable", self.host.url())

    def connect(self) -> SshRunner:
        self.client()
        return self

    def start(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
              display: Sequence[str] = (), cwd: str | None = None, talk: bool = False) -> SshProcess:
        return SshProcess(self, argv, env, display, cwd, talk)

    def put_private_folder(self, files: Mapping[str, str], prefix: str) -> str:
        """A new folder on the host only its user can read (mktemp -d, mode 0700), holding these local files
        under the given names (mode 0600). Whoever made it removes it (remove_folder)."""
        rc, out = self.run(f"umask 077 && mktemp -d /tmp/{shlex.quote(prefix)}XXXXXX", timeout=10)
        folder = out.strip().splitlines()[-1] if out.strip() else ""
        if rc != 0 or not folder.startswith("/tmp/"):
            raise EngineError(f"{self.host.label}: cannot make a private folder: {out.strip()}")
        try:
            sftp = self.client().open_sftp()
            try:
                for name, local in files.items():
                    remote = f"{folder}/{name}"
                    sftp.put(local, remote)
                    sftp.chmod(remote, 0o600)
            finally:
                sftp.close()
        except (OSError, EOFError) as exc:
            self.remove_folder(folder)
            raise EngineError(f"{self.host.label}: cannot copy the TLS files there: {exc}") from None
        except Exception as exc:  # paramiko's own errors (SSHException and kin) mean the same to the user
            self.remove_folder(folder)
            raise EngineError(f"{self.host.label}: cannot copy the TLS files there: {exc}") from None
        return folder

    def remove_folder(self, folder: str) -> None:
        if not folder.startswith("/tmp/tb-"):
            raise ValueError(f"not a folder Tunebench made: {folder}")
        with contextlib.suppress(EngineError, SshError):
            self.run(f"rm -rf -- {shlex.quote(folder)}", timeout=10)

    def run(self, command: str, timeout: float = 30.0) -> tuple[int, str]:
        """A short command: (exit status, stdout+stderr)."""
        client = self.client()
        try:
            _stdin, stdout, _stderr = client.exec_command(command + " 2>&1", timeout=timeout)
            out = stdout.read().decode(errors="replace")
            return stdout.channel.recv_exit_status(), out
        except Exception as exc:  # a dropped connection mid-command
            raise EngineError(f"{self.host.label}: {command.split(maxsplit=1)[0]}: {exc}") from None

    def read_file(self, path: str) -> str:
        rc, out = self.run(f"cat {shlex.quote(path)}", timeout=10)
        if rc != 0:
            raise OSError(f"{self.host.label}:{path}: {out.strip() or 'cannot read'}")
        return out

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
