"""The servers Tunebench can sandbox: the system's binaries, kits fetched from Debian's archive (MySQL 9.x from
sid, MariaDB 11.8 from trixie, MariaDB 10.5 from bullseye) and basedirs or tarballs a user added. A kit lives in a
folder of its own under the kits dir with a kit.json that says what it is; nothing is installed system-wide."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from tunebench import paths
from tunebench.core.errors import ConfigError, SandboxError
from tunebench.hosts.runner import child_env
from tunebench.hosts.server_binary import ServerBinary, find_server_binaries, probe_binary

KIT_FILE = "kit.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MULTIARCH = "x86_64-linux-gnu"
ELF_MACHINE_X86_64 = 62


@dataclass(frozen=True, slots=True)
class DebianKit:
    """What `servers fetch NAME` downloads: one package from one suite of Debian's archive."""

    suite: str
    package: str
    binary: str  # usr/sbin/mysqld


FETCHABLE = {
    "mysql": DebianKit("sid", "mysql-server-core", "usr/sbin/mysqld"),
    "mariadb-11.8": DebianKit("trixie", "mariadb-server-core", "usr/sbin/mariadbd"),
    # the MariaDB line before the system's 10.11 (bullseye's; its libraries come with it, run by its own loader)
    "mariadb-10.5": DebianKit("bullseye", "mariadb-server-core-10.5", "usr/sbin/mariadbd"),
}


@dataclass(frozen=True, slots=True)
class FetchProgress:
    """How far a fetch is (the shape cli/progress.ProgressBar draws)."""

    what: str
    fraction: float
    done: int = 0
    total: int = 0

    def line(self) -> str:
        return f"{self.what} ({100 * self.fraction:.0f} %)"


# ---- listing and resolving ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _system_servers(paths_key: tuple[str, ...]) -> tuple[ServerBinary, ...]:
    out = []
    for path in paths_key:
        with contextlib.suppress(SandboxError):
            out.append(probe_binary(path))
    return tuple(out)


def system_servers() -> list[ServerBinary]:
    return list(_system_servers(tuple(find_server_binaries())))


def _from_kit_file(folder: Path) -> ServerBinary | None:
    try:
        data = json.loads((folder / KIT_FILE).read_text())
        base = Path(data.get("root") or folder)

        def at(rel: str | None) -> str | None:
            return None if not rel else str(base / rel)

        libs = data.get("library_path")
        return ServerBinary(
            path=str(at(data["binary"])), flavor=str(data["flavor"]), version=str(data["version"]),
            loader=at(data.get("loader")),
            library_path=":".join(str(base / p) for p in libs) if libs else None,
            name=str(data["name"]), source=str(data.get("source", "added")), basedir=str(at(data.get("basedir")) or ""))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def kit_servers() -> list[ServerBinary]:
    root = paths.kits_dir()
    if not root.is_dir():
        return []
    found = [_from_kit_file(d) for d in sorted(root.iterdir()) if d.is_dir() and not d.name.startswith(".")]
    return sorted((s for s in found if s is not None), key=lambda s: (s.flavor, s.version_tuple))


def list_servers() -> list[ServerBinary]:
    """The system's servers first (the default sandbox runs the first), then the kits."""
    return system_servers() + kit_servers()


def default_server() -> ServerBinary:
    found = system_servers()
    if found:
        return found[0]
    kits = kit_servers()
    if kits:
        return kits[0]
    raise SandboxError("no mysqld or mariadbd found on PATH; install a server (make run does: apt-get install "
                       "mariadb-server) or fetch one: tunebench servers fetch mysql")


def resolve_server(name: str, servers: Iterable[ServerBinary] | None = None) -> ServerBinary:
    """A server by its name or a unique prefix of it (`mysql-9` for mysql-9.7.4)."""
    known = list(list_servers() if servers is None else servers)
    exact = [s for s in known if s.name == name]
    if exact:
        return exact[0]
    matches = [s for s in known if s.name.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    names = ", ".join(s.name for s in known) or "none (tunebench servers fetch mysql)"
    if matches:
        raise ConfigError(f"server {name!r} is ambiguous: {', '.join(s.name for s in matches)}; known: {names}")
    raise ConfigError(f"unknown server {name!r}; known: {names}")


# ---- fetching from Debian's archive ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Mirror:
    uri: str
    keyring: str | None


def _sources_entries(text: str, deb822: bool) -> Iterable[tuple[str, list[str], str | None]]:
    """(uri, suites, signed-by) of every `deb` source in a sources file (one-line or deb822 format)."""
    if deb822:
        for stanza in re.split(r"\n\s*\n", text):
            fields: dict[str, str] = {}
            key = ""
            for line in stanza.splitlines():
                if line.startswith("#") or not line.strip():
                    continue
                if line[0].isspace() and key:
                    fields[key] += "\n" + line.strip()
                    continue
                key, _, value = line.partition(":")
                key = key.strip().lower()
                fields[key] = value.strip()
            if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
                continue
            signed = fields.get("signed-by") or None
            for uri in fields.get("uris", "").split():
                yield uri, fields.get("suites", "").split(), signed if signed and "\n" not in signed else None
        return
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        opts: dict[str, str] = {}
        m = re.match(r"deb\s+\[([^\]]*)\]\s+(.*)", line)
        rest = line[4:].strip()
        if m:
            opts = dict(o.split("=", 1) for o in m.group(1).split() if "=" in o)
            rest = m.group(2)
        parts = rest.split()
        if len(parts) >= 2:
            yield parts[0], [parts[1]], opts.get("signed-by")


def debian_mirror(etc: Path | None = None) -> Mirror:
    """The Debian archive this machine's apt is configured with (its main suite, not security);
    $TUNEBENCH_APT_ETC names another apt configuration folder to read it from."""
    etc = etc or Path(os.environ.get("TUNEBENCH_APT_ETC", "/etc/apt"))
    files = [(etc / "sources.list", False)]
    parts = etc / "sources.list.d"
    if parts.is_dir():
        files += [(p, p.suffix == ".sources") for p in sorted(parts.iterdir()) if p.suffix in (".list", ".sources")]
    for path, deb822 in files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for uri, suites, signed in _sources_entries(text, deb822):
            if re.search(r"/debian/?$", uri) and any(not s.endswith(("-security", "/updates")) for s in suites):
                return Mirror(uri.rstrip("/"), signed)
    raise SandboxError(f"no Debian archive among the apt sources in {etc} (a deb line whose URI ends in /debian); "
                       "add a server of your own instead: tunebench servers add PATH")


def _apt_options(state: Path) -> list[str]:
    return ["-o", f"Dir::Etc::SourceList={state / 'sources.list'}", "-o", f"Dir::Etc::SourceParts={state / 'parts'}",
            "-o", f"Dir::Etc::PreferencesParts={state / 'prefs'}", "-o", f"Dir::State::Lists={state / 'lists'}",
            "-o", f"Dir::State::status={state / 'status'}", "-o", f"Dir::Cache={state / 'cache'}",
            "-o", "Debug::NoLocking=1", "-o", "APT::Get::List-Cleanup=0", "-o", "APT::Install-Recommends=0",
            "-o", "Acquire::Retries=2", "-o", "Acquire::http::Timeout=30"]


def _problems(out: str) -> list[str]:
    return [ln.strip() for ln in out.splitlines() if ln.startswith(("E:", "Err:", "W:"))]


def _run_apt(argv: list[str], progress: Callable[[FetchProgress], None], what: str, lo: float, hi: float) -> str:
    """apt-get with a status pipe (dlstatus:N:PERCENT:...) turned into progress between lo and hi."""
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen([*_with_parent(), *argv[:1], "-o", f"APT::Status-Fd={write_fd}", *argv[1:]],
                                pass_fds=(write_fd,),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=child_env({"DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}))
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        raise SandboxError(f"cannot run apt-get: {exc.strerror}") from None
    os.close(write_fd)
    with os.fdopen(read_fd, errors="replace") as status:
        for line in status:
            parts = line.split(":", 3)
            if len(parts) >= 3 and parts[0] in ("dlstatus", "pmstatus"):
                with contextlib.suppress(ValueError):
                    pct = min(100.0, max(0.0, float(parts[2])))
                    progress(FetchProgress(what, lo + (hi - lo) * pct / 100))
    out = proc.communicate()[0].decode(errors="replace")
    if proc.returncode != 0:
        errors = _problems(out) or out.splitlines()[-2:]
        raise SandboxError(f"apt-get failed ({what}): {' | '.join(errors[:3])}")
    return out


def _elf_machine(path: Path) -> int | None:
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


def _check_arch(binary: Path) -> None:
    machine = _elf_machine(binary)
    if machine is None:
        raise SandboxError(f"{binary} is not a Linux program (no ELF header)")
    if machine != ELF_MACHINE_X86_64 and os.uname().machine == "x86_64":
        raise SandboxError(f"{binary} is built for another architecture (ELF machine {machine}); this machine is "
                           "x86_64")


def _write_kit(folder: Path, server: ServerBinary, root: Path, extra: dict[str, object]) -> None:
    def rel(p: str | None) -> str | None:
        return None if p is None else os.path.relpath(p, root)

    data = {"name": server.name, "flavor": server.flavor, "version": server.version, "binary": rel(server.path),
            "loader": rel(server.loader), "basedir": rel(str(server.prefix)), "source": server.source,
            "library_path": [rel(p) for p in (server.library_path or "").split(":") if p] or None,
            **extra}
    if root != folder:
        data["root"] = str(root)
    (folder / KIT_FILE).write_text(json.dumps(data, indent=2))


# ---- one change to the kits at a time; nothing a dead fetch left behind; nothing removed under a running server --
LOCK_WAIT = 900.0  # seconds a fetch or an add waits for another one to end


@contextlib.contextmanager
def _kits_locked(say: Callable[[str], None] = lambda _m: None) -> Iterator[Path]:
    """The kits dir, with no other fetch or add under way (a second one waits for the first: two at once ended
    in a traceback, issue 43 item 9); what a killed one left (`.fetch-*`, `.add-*`) is removed first."""
    kits = paths.kits_dir()
    kits.mkdir(parents=True, exist_ok=True)
    fd = os.open(kits, os.O_RDONLY | os.O_DIRECTORY)  # the folder itself is locked: no lock file in it
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("another `servers fetch` or `servers add` is under way: waiting for it")
            end = time.monotonic() + LOCK_WAIT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > end:
                        raise SandboxError(f"another `servers fetch` or `servers add` held {kits} for "
                                           f"{LOCK_WAIT:.0f} s") from None
                    time.sleep(0.2)
        for stale in [*kits.glob(".fetch-*"), *kits.glob(".add-*"), *kits.glob(".old-*")]:
            shutil.rmtree(stale, ignore_errors=True)  # under the lock nothing else is working in them
        yield kits
    finally:
        os.close(fd)


def running_from(folder: Path) -> list[int]:
    """The processes running a program from `folder` (a kit's server, through its loader or not)."""
    root = str(folder.resolve()) + os.sep
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
        except OSError:
            continue
        if exe.startswith(root) or argv0.startswith(root):
            pids.append(int(entry.name))
    return pids


def _refuse_if_running(server: ServerBinary, doing: str) -> None:
    pids = running_from(paths.kits_dir() / server.name)
    if pids:
        raise ConfigError(f"{doing} {server.name}: it is running (pid {', '.join(map(str, pids[:3]))}); stop it "
                          f"first: tunebench sandbox stop --server {server.name}")


def _with_parent() -> list[str]:
    """What a child's argv starts with so that it is killed when Tunebench dies, even by kill -9 (apt-get and dpkg
    outlived a killed fetch): util-linux's setpriv --pdeathsig (a preexec_fn is unsafe in a threaded process)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def _kit_loader(root: Path) -> Path:
    """The unpacked libc's dynamic loader: /usr/lib on a merged-/usr release (bookworm and later), /lib on one
    before it (bullseye, whose /lib64 link points at an absolute path: resolved inside the kit, not on this host)."""
    for rel in (f"usr/lib/{MULTIARCH}/ld-linux-x86-64.so.2", f"lib/{MULTIARCH}/ld-linux-x86-64.so.2"):
        if (root / rel).exists():
            return root / rel
    link = root / "lib64/ld-linux-x86-64.so.2"
    if link.is_symlink():
        target = os.readlink(link)
        inside = root / target.lstrip("/") if target.startswith("/") else link.parent / target
        if inside.exists():
            return inside
    return link


def _unique_name(name: str) -> str:
    taken = {s.name for s in list_servers()}
    if name not in taken:
        return name
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}"


def fetch(which: str, progress: Callable[[FetchProgress], None] = lambda _p: None,
          refresh: bool = False) -> tuple[ServerBinary, bool]:
    """Download a kit from Debian's archive into the kits dir; (the server, whether it was fetched now)."""
    kit = FETCHABLE.get(which)
    if kit is None:
        raise ConfigError(f"unknown kit {which!r}; fetchable: {', '.join(FETCHABLE)}")
    source_prefix = f"debian {kit.suite} {kit.package} "
    have = [s for s in kit_servers() if s.source.startswith(source_prefix)]
    if have and not refresh:
        return have[-1], False
    for old in have:  # before anything is downloaded: a running sandbox's kit is never replaced under it
        _refuse_if_running(old, "fetch --refresh of")
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        raise SandboxError("fetching a kit needs apt-get and dpkg (Debian/Ubuntu); add a server of your own "
                           "instead: tunebench servers add PATH")
    mirror = debian_mirror()
    with _kits_locked(lambda m: progress(FetchProgress(m, 0.0))) as kits:
        have = [s for s in kit_servers() if s.source.startswith(source_prefix)]  # what the other fetch made
        if have and not refresh:
            return have[-1], False
        return _fetch_locked(kit, kits, mirror, source_prefix, have, progress)


def _fetch_locked(kit: DebianKit, kits: Path, mirror: Mirror, source_prefix: str, have: list[ServerBinary],
                  progress: Callable[[FetchProgress], None]) -> tuple[ServerBinary, bool]:
    work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=kits))
    aside: list[tuple[Path, Path]] = []
    try:
        state = work / "apt"
        for sub in ("lists/partial", "cache/archives/partial", "parts", "prefs"):
            (state / sub).mkdir(parents=True)
        (state / "status").write_text("")
        signed = f"[signed-by={mirror.keyring}] " if mirror.keyring else ""
        (state / "sources.list").write_text(f"deb {signed}{mirror.uri} {kit.suite} main\n")
        apt = ["apt-get", "-q", "-y", *_apt_options(state)]
        out = _run_apt([*apt, "update"], progress, f"{kit.suite}: package lists", 0.0, 0.1)
        if not any((state / "lists").glob("*_Packages*")):  # apt-get update exits 0 when nothing answered
            raise SandboxError(f"cannot reach the Debian archive {mirror.uri} ({kit.suite}): "
                               + (" | ".join(_problems(out)[:2]) or "no package list"))
        _run_apt([*apt, "--download-only", "install", kit.package], progress,
                 f"{kit.package} from {kit.suite}", 0.1, 0.8)
        debs = sorted((state / "cache" / "archives").glob("*.deb"))
        if not debs:
            raise SandboxError(f"apt-get downloaded nothing for {kit.package} from {mirror.uri} {kit.suite}")
        root = work / "root"
        root.mkdir()
        for n, deb in enumerate(debs, 1):
            unpacked = subprocess.run([*_with_parent(), "dpkg", "-x", str(deb), str(root)], capture_output=True,
                                      text=True, errors="replace", env=child_env())
            if unpacked.returncode != 0:
                raise SandboxError(f"dpkg -x {deb.name} failed: {unpacked.stderr.strip()[:300]}")
            progress(FetchProgress(f"unpacking {n}/{len(debs)}", 0.8 + 0.2 * n / len(debs), n, len(debs)))
        version_deb = next((d.name for d in debs if d.name.startswith(kit.package + "_")), "")
        pkg_version = unquote(version_deb.split("_")[1]) if version_deb else "?"
        shutil.rmtree(state)
        loader = _kit_loader(root)
        libs = f"{root / 'usr/lib' / MULTIARCH}:{root / 'lib' / MULTIARCH}"
        binary = root / kit.binary
        if not binary.exists():
            raise SandboxError(f"{kit.package} from {kit.suite} has no {kit.binary}")
        probed = probe_binary(str(binary), str(loader) if loader.exists() else None, libs)
        for old in have:  # --refresh: the old kits aside (their names free again), removed once the new one is in
            _refuse_if_running(old, "fetch --refresh of")
            moved = Path(tempfile.mkdtemp(prefix=".old-", dir=kits)) / "kit"
            (kits / old.name).rename(moved)
            aside.append((kits / old.name, moved))
        name = _unique_name(probed.name)
        folder = kits / name
        server = ServerBinary(probed.path, probed.flavor, probed.version, probed.loader, probed.library_path,
                              name=name, source=f"{source_prefix}{pkg_version} ({mirror.uri})",
                              basedir=str(root / "usr"))
        _write_kit(work, server, work, {})
        work.rename(folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        for where, moved in aside:  # the old kits back as they were
            with contextlib.suppress(OSError):
                moved.rename(where)
                moved.parent.rmdir()
        raise
    for _where, moved in aside:
        shutil.rmtree(moved.parent, ignore_errors=True)
    fetched = _from_kit_file(folder)
    assert fetched is not None
    return fetched, True


# ---- adding a basedir or a tarball ----------------------------------------------------------------------------
def _find_binary(top: Path) -> Path | None:
    for rel in ("bin/mariadbd", "bin/mysqld", "sbin/mariadbd", "sbin/mysqld", "usr/sbin/mariadbd", "usr/sbin/mysqld",
                "libexec/mysqld"):
        if (top / rel).is_file():
            return top / rel
    return None


def _safe_members(tar: tarfile.TarFile, dest: Path) -> list[tarfile.TarInfo]:
    """A tarball's members, refused when one would land outside `dest` (absolute paths, `..`, device files) or
    is a link (symbolic or hard) to something outside it."""
    out = []
    for m in tar.getmembers():
        target = (dest / m.name).resolve()
        if not str(target).startswith(str(dest.resolve()) + os.sep) and target != dest.resolve():
            raise SandboxError(f"the tarball holds a path outside its folder: {m.name!r}")
        if m.isdev():
            raise SandboxError(f"the tarball holds a device file: {m.name!r}")
        if m.issym() or m.islnk():  # a link's target too: a symlink to /etc, a hard link to ../../x
            base = target.parent if m.issym() else dest
            linked = (base / m.linkname).resolve() if not os.path.isabs(m.linkname) else Path(m.linkname)
            if not str(linked).startswith(str(dest.resolve()) + os.sep):
                raise SandboxError(f"the tarball holds a link to outside its folder: {m.name!r} -> {m.linkname!r}")
        out.append(m)
    return out


def add(path: str, name: str | None = None) -> ServerBinary:
    """Register a basedir (used in place) or a tarball (unpacked under the kits dir) in the layout of MySQL's,
    Percona Server's and MariaDB's generic Linux tarballs (bin/mysqld or bin/mariadbd, share/)."""
    if name is not None and not _NAME.match(name):
        raise ConfigError(f"invalid server name {name!r}: letters, digits, '.', '_' and '-'")
    src = Path(path).expanduser()
    if not src.exists():
        raise ConfigError(f"{path}: no such file or folder")
    with _kits_locked() as kits:
        return _add_locked(src, path, name, kits)


def _add_locked(src: Path, path: str, name: str | None, kits: Path) -> ServerBinary:
    work = Path(tempfile.mkdtemp(prefix=".add-", dir=kits))
    try:
        if src.is_dir():
            top = src.resolve()
            root = top
        else:
            try:
                with tarfile.open(src) as tar:
                    members = _safe_members(tar, work / "root")
                    tar.extractall(work / "root", members=members, filter="tar")
            except (tarfile.TarError, OSError, EOFError) as exc:
                raise SandboxError(f"{path}: not a readable tarball ({exc})") from None
            inner = list((work / "root").iterdir())
            top = inner[0] if len(inner) == 1 and inner[0].is_dir() else work / "root"
            root = work
        binary = _find_binary(top)
        if binary is None:
            raise SandboxError(f"{path}: no server in it (bin/mysqld or bin/mariadbd)")
        _check_arch(binary)
        probed = probe_binary(str(binary))
        final = name or _unique_name(probed.name)
        if any(s.name == final for s in list_servers()):
            raise ConfigError(f"a server named {final!r} exists already; choose another with --name")
        server = ServerBinary(probed.path, probed.flavor, probed.version, name=final,
                              source=f"added {src.resolve()}", basedir=str(binary.parent.parent))
        _write_kit(work, server, root, {})
        work.rename(kits / final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    added = _from_kit_file(kits / final)
    assert added is not None
    return added


def remove(name: str) -> ServerBinary:
    server = resolve_server(name, kit_servers())
    if server.name != name:
        raise ConfigError(f"removing needs the full name: {server.name}")
    _refuse_if_running(server, "servers remove")
    with _kits_locked():
        shutil.rmtree(paths.kits_dir() / server.name)
    return server
