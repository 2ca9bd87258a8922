"""The server binaries on this machine (mysqld, mariadbd): where they are, which flavor and version, and how to
start them (a kit from another distribution runs through the dynamic loader it brought)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tunebench.core.errors import SandboxError
from tunebench.hosts.runner import child_env

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
    # A kit unpacked from another distribution's packages: its own ld-linux and library folders (its glibc is
    # newer than this machine's), so it is started as `loader --library-path LIBS path`.
    loader: str | None = None
    library_path: str | None = None
    name: str = ""  # e.g. mysql-9.7.4: what --server names
    source: str = "system"  # system | added PATH | debian SUITE PACKAGE VERSION
    basedir: str = ""  # the install's prefix (usr/ of a kit, the top of a tarball); "" = derived from path

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", self.version)[:3])

    @property
    def argv(self) -> list[str]:
        """How to start it: the binary, through its kit's loader when it has one."""
        if self.loader:
            return [self.loader, "--library-path", self.library_path or "", self.path]
        return [self.path]

    @property
    def prefix(self) -> Path:
        return Path(self.basedir) if self.basedir else Path(os.path.realpath(self.path)).parent.parent

    @property
    def is_system(self) -> bool:
        return self.source == "system"

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "flavor": self.flavor, "version": self.version, "path": self.path,
                "basedir": str(self.prefix), "source": self.source, "loader": self.loader}


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


def probe_binary(path: str, loader: str | None = None, library_path: str | None = None) -> ServerBinary:
    argv = ServerBinary(path, "", "", loader, library_path).argv
    try:
        out = subprocess.run([*argv, "--no-defaults", "--version"], capture_output=True, text=True, timeout=30,
                             errors="replace", env=child_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"cannot run {path}: {getattr(exc, 'strerror', None) or exc}") from None
    flavor, version = parse_server_version(out.stdout + out.stderr)
    return ServerBinary(path, flavor, version, loader, library_path, name=f"{flavor}-{version}")


def program_of(cmdline: list[bytes]) -> str:
    """The program a process runs, by name: `mysqld` also for `ld-linux-x86-64.so.2 --library-path L
    /kit/usr/sbin/mysqld ...` (a kit started through its loader, whose comm is the loader's)."""
    if not cmdline:
        return ""
    name = os.path.basename(cmdline[0].decode(errors="replace"))
    if not name.startswith("ld-linux"):
        return name
    args = iter(cmdline[1:])
    for arg in args:
        text = arg.decode(errors="replace")
        if text in ("--library-path", "--preload", "--argv0", "--audit", "--glibc-hwcaps-prepend",
                    "--glibc-hwcaps-mask"):
            next(args, None)
        elif not text.startswith("--"):
            return os.path.basename(text)
    return name
