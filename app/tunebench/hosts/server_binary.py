"""The server binaries on this machine (mysqld, mariadbd): where they are, and which flavor and version."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from tunebench.core.errors import SandboxError

SERVER_NAMES = ("mariadbd", "mysqld")
EXTRA_BIN_DIRS = ("/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin", "/usr/libexec", "/opt/mysql/bin")


def which(name: str) -> str | None:
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(EXTRA_BIN_DIRS)
    return shutil.which(name, path=path)


def find_server_binaries() -> list[str]:
    """Server binaries on PATH (and the usual sbin dirs), MariaDB's first; symlinks to one file count once."""
    found: list[str] = []
    seen: set[str] = set()
    for name in SERVER_NAMES:
        path = which(name)
        if path and os.path.realpath(path) not in seen:
            seen.add(os.path.realpath(path))
            found.append(path)
    return found


@dataclass(frozen=True, slots=True)
class ServerBinary:
    path: str
    flavor: str  # mariadb | mysql | percona
    version: str

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", self.version)[:3])


def parse_server_version(text: str) -> tuple[str, str]:
    """Flavor and version from `mysqld --version` output of MariaDB, MySQL or Percona Server."""
    m = re.search(r"Ver\s+(\d+\.\d+\.\d+)(\S*)", text)
    if not m:
        raise SandboxError(f"cannot read the server version from: {text.strip()[:200]!r}")
    version = m.group(1)
    if "MariaDB" in text:
        return "mariadb", version
    if "Percona" in text:
        return "percona", version
    return "mysql", version


def probe_binary(path: str) -> ServerBinary:
    try:
        out = subprocess.run([path, "--no-defaults", "--version"], capture_output=True, text=True, timeout=30)
    except OSError as exc:
        raise SandboxError(f"cannot run {path}: {exc.strerror}") from None
    flavor, version = parse_server_version(out.stdout + out.stderr)
    return ServerBinary(path, flavor, version)
