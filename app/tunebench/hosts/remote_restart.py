"""Restarting a server on its own host over SSH, for static knobs: write an option-file overlay, run the
configured restart command, wait until the server answers again.

The option file is the target's `option_file` (e.g. /etc/mysql/mariadb.conf.d/99-tunebench.cnf): Tunebench
owns its content while a run changes static knobs; its original content (or its absence) is journaled
first and put back, with one more restart, at the end, on abort, and by `tunebench restore`.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping
from typing import Any

from tunebench.core.errors import ConfigError, TargetError, TunebenchError
from tunebench.core.target import Target
from tunebench.hosts.ssh import SshRunner, parse_ssh_url

OPTION_FILE = "@option_file"  # journal name of a remote target's option-file overlay


def overlay_text(overrides: Mapping[str, str | None]) -> str:
    lines = ["# written by Tunebench for a tuning run; its original content comes back at the end", "[mysqld]"]
    lines += [name if value is None else f"{name} = {value}" for name, value in overrides.items()]
    return "\n".join(lines) + "\n"


class RemoteRestart:
    def __init__(self, target: Target, note: Callable[[str], None] | None = None, trust: bool = False,
                 key_files: tuple[str, ...] = ()):
        if not (target.db_host and target.option_file and target.restart_command):
            raise ConfigError(f"target {target.name} has no restart method (db_host, option_file, "
                              "restart_command)")
        self.target = target
        self.path = target.option_file
        self.command = target.restart_command
        keys = (*key_files, *((target.ssh_key,) if target.ssh_key else ()))
        self.runner = SshRunner(parse_ssh_url(target.db_host), trust, keys, note=note)

    def plan(self, overrides: Mapping[str, str | None]) -> list[str]:
        """What a restart with this overlay does, step by step (the dry run)."""
        where = self.runner.host.url()
        text = overlay_text(overrides) if overrides else None
        return [f"{where}: {'write ' + str(self.path) + ':' if text else 'put back the original ' + str(self.path)}",
                *(f"    {ln}" for ln in (text or "").splitlines()),
                f"{where}: run: {self.command}",
                f"wait until {self.target.name} answers again (up to 180 s)"]

    def read_original(self) -> dict[str, Any]:
        rc, out = self.runner.run(f"cat {shlex.quote(str(self.path))}")
        return {"path": self.path, "content": out if rc == 0 else None}

    def _write(self, content: str | None) -> None:
        path = shlex.quote(str(self.path))
        if content is None:
            rc, out = self.runner.run(f"rm -f {path}")
        else:
            client = self.runner.client()
            try:
                stdin, stdout, _stderr = client.exec_command(f"cat > {path} 2>&1", timeout=30)
                stdin.write(content)
                stdin.channel.shutdown_write()
                out = stdout.read().decode(errors="replace")
                rc = stdout.channel.recv_exit_status()
            except Exception as exc:  # the connection dropped mid-write
                raise TargetError(f"{self.runner.label}: cannot write {self.path}: {exc}") from None
        if rc != 0:
            raise TargetError(f"{self.runner.label}: cannot write {self.path}: {out.strip() or 'exit ' + str(rc)}")

    def restart(self, content: str | None, wait_until_up: Callable[[], None]) -> float:
        """Write the overlay (None: the original absence), restart, wait; returns the seconds it took."""
        t0 = time.time()
        self._write(content)
        rc, out = self.runner.run(str(self.command), timeout=300)
        if rc != 0:
            raise TargetError(f"{self.runner.label}: restart command failed (exit {rc}): "
                              f"{(out.strip().splitlines() or ['no output'])[-1]}")
        wait_until_up()
        return time.time() - t0

    def close(self) -> None:
        self.runner.close()


def wait_for_server(connect: Callable[[], Any], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            connect().close()
            return
        except (TunebenchError, OSError) as exc:
            last = str(exc)
        except Exception as exc:  # the driver's own errors while the server starts
            last = str(exc)
        time.sleep(1)
    raise TargetError(f"the server did not come back within {timeout:.0f} s after the restart: {last}")
