"""Starting external processes and streaming their output lines (the local runner)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from tunebench.core.errors import EngineError

PR_SET_PDEATHSIG = 1


def die_with_us(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A preexec_fn that makes the kernel SIGKILL the child when the thread that started it dies (for us:
    the process running the engine, killed -9 or crashed), so no load keeps running behind a dead run.
    Resolved here, in the parent: the child between fork and exec only makes one libc call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # we died before the line above: nobody would ever send it
            os._exit(1)

    return preexec


# What an external tool (sysbench and its Lua scripts, a server, perf, apt) gets of our environment: the locale, the
# paths, proxies for apt, a user's Lua modules. Never the rest: $TUNEBENCH_DB_PASSWORD, a MYSQL_PWD of the user's,
# tokens of other tools (issue 43 item 4: the whole environment reached sysbench, scripts and the sandbox's mysqld).
# What a tool needs beyond this (sysbench's MYSQL_PWD for its target) is given to it by name.
CHILD_ENV = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM", "LD_LIBRARY_PATH",
             "LUA_PATH", "LUA_CPATH", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
             "NO_PROXY", "ALL_PROXY", "all_proxy",
             # the test suite's mark of the session that started a process (a path, no secret): each xdist worker
             # counts and stops only its own servers and perf processes by it (tests/server_leaks.py)
             "TUNEBENCH_TEST_HOME"}


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for an external tool: CHILD_ENV and the LC_* of ours, then `extra`."""
    env = {k: v for k, v in os.environ.items() if k in CHILD_ENV or k.startswith("LC_")}
    env.update(extra or {})
    return env


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    argv: tuple[str, ...]
    returncode: int | None
    seconds: float
    tail: tuple[str, ...] = field(default_factory=tuple)


class LocalProcess:
    """One child process in its own process group, so a stop never leaves orphans behind, and tied to our
    life (PR_SET_PDEATHSIG), so a kill -9 of us does not either."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None = None, display: Sequence[str] = (),
                 cwd: str | None = None):
        self.argv = tuple(argv)
        # What logs and errors show: argv with secrets masked by the caller.
        self.display = tuple(display) or self.argv
        full_env = child_env(env)
        self._started = time.monotonic()
        self._tail: list[str] = []
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=full_env,
                cwd=cwd,
                text=True,
                errors="replace",  # a script's output that is not UTF-8 is read, never the reader's death
                bufsize=1,
                start_new_session=True,
                preexec_fn=die_with_us(),  # noqa: PLW1509 - one prctl call, resolved in the parent
            )
        except OSError as exc:
            raise EngineError(f"cannot start {self.display[0]}: {exc.strerror}") from None

    @property
    def pid(self) -> int:
        return self._proc.pid

    def lines(self) -> Iterator[str]:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            line = raw.rstrip("\n")
            self._tail.append(line)
            del self._tail[:-40]
            yield line

    def wait(self, timeout: float | None = None) -> ProcessOutcome:
        try:
            rc = self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            rc = None
        if rc is not None and self._proc.stdout and not self._proc.stdout.closed:
            self._proc.stdout.close()
        return ProcessOutcome(self.display, rc, time.monotonic() - self._started, tuple(self._tail))

    def stop(self, grace: float = 5.0) -> ProcessOutcome:
        """SIGTERM the whole process group, then SIGKILL after `grace` seconds."""
        if self._proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(self._proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self._proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        outcome = self.wait(0)
        if self._proc.stdout and not self._proc.stdout.closed:  # stopped: nobody reads it any more (not even when
            self._proc.stdout.close()  # the kill has not been reaped yet: an open pipe was a ResourceWarning later)
        return outcome


class LocalRunner:
    """Runs processes on this machine. The SSH runner offers the same `start`."""

    host = "local"

    def start(
        self, argv: Sequence[str], env: Mapping[str, str] | None = None, display: Sequence[str] = (),
        cwd: str | None = None,
    ) -> LocalProcess:
        return LocalProcess(argv, env, display, cwd)
