"""Server kits: the Debian mirror read from apt's sources, names resolved by prefix, basedirs and tarballs added
(or refused with one line and nothing left behind), a kit's process recognised through its loader."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from server_leaks import servers_under
from tunebench.core.errors import ConfigError, SandboxError
from tunebench.hosts import kits
from tunebench.hosts.sandbox_cnf import render_cnf
from tunebench.hosts.server_binary import ServerBinary, program_of


def test_program_of_a_kit_started_through_its_loader():
    loader = [b"/k/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", b"--library-path", b"/k/usr/lib:/k/lib",
              b"/k/usr/sbin/mysqld", b"--defaults-file=/x/my.cnf"]
    assert program_of(loader) == "mysqld"
    assert program_of([b"/usr/sbin/mariadbd", b"--defaults-file=x"]) == "mariadbd"
    assert program_of([]) == ""


def test_the_leak_guard_sees_a_kit_server(tmp_path):
    # what a kit's server looks like in /proc: the loader run as a program, then the server binary (sleep here)
    (tmp_path / "mysqld").symlink_to("/bin/sleep")
    proc = subprocess.Popen(["/lib64/ld-linux-x86-64.so.2", "--library-path", "/usr/lib/x86_64-linux-gnu",
                             str(tmp_path / "mysqld"), "60"])
    try:
        import time

        deadline = time.monotonic() + 5
        while not servers_under([str(tmp_path)]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(servers_under([str(tmp_path)])) == [proc.pid]
    finally:
        proc.kill()
        proc.wait()


def _apt(tmp_path: Path, main: str, parts: dict[str, str]) -> Path:
    etc = tmp_path / "apt"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list").write_text(main)
    for name, text in parts.items():
        (etc / "sources.list.d" / name).write_text(text)
    return etc


def test_the_mirror_comes_from_the_apt_sources(tmp_path):
    deb822 = ("Types: deb\n# a comment\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n"
              "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
              "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    etc = _apt(tmp_path, "", {"debian.sources": deb822, "other.list": "deb https://example.org/apt stable main\n"})
    m = kits.debian_mirror(etc)
    assert m == kits.Mirror("http://mirror.example/debian", "/usr/share/keyrings/debian-archive-keyring.gpg")
    one_line = _apt(tmp_path / "b", "# x\ndeb [arch=amd64 signed-by=/k.gpg] http://ftp.fr.debian.org/debian/ "
                                    "bookworm main\n", {})
    assert kits.debian_mirror(one_line) == kits.Mirror("http://ftp.fr.debian.org/debian", "/k.gpg")
    with pytest.raises(SandboxError, match="no Debian archive"):
        kits.debian_mirror(_apt(tmp_path / "c", "deb http://archive.ubuntu.com/ubuntu noble main\n", {}))


def _servers() -> list[ServerBinary]:
    return [ServerBinary("/a", "mariadb", "10.11.19", name="mariadb-10.11.19"),
            ServerBinary("/b", "mariadb", "11.8.9", name="mariadb-11.8.9"),
            ServerBinary("/c", "mysql", "9.7.4", name="mysql-9.7.4")]


def test_a_server_by_its_name_or_a_unique_prefix():
    assert kits.resolve_server("mysql-9", _servers()).name == "mysql-9.7.4"
    assert kits.resolve_server("mariadb-11.8", _servers()).name == "mariadb-11.8.9"
    assert kits.resolve_server("mariadb-10.11.19", _servers()).path == "/a"
    with pytest.raises(ConfigError, match=r"ambiguous: mariadb-10\.11\.19, mariadb-11\.8\.9"):
        kits.resolve_server("mariadb", _servers())
    with pytest.raises(ConfigError, match=r"unknown server 'percona'; known: mariadb-10.11.19, mariadb-11.8.9, mysql"):
        kits.resolve_server("percona", _servers())


def test_a_folder_without_a_server_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path / "kits"))
    (tmp_path / "empty" / "bin").mkdir(parents=True)
    with pytest.raises(SandboxError, match="no server in it"):
        kits.add(str(tmp_path / "empty"))
    assert list((tmp_path / "kits").iterdir()) == []


def _tarball(path: Path, members: dict[str, bytes], mode: int = 0o755) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))


def test_a_tarball_of_another_architecture_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path / "kits"))
    # an ELF header for aarch64 (e_machine 183)
    elf = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + (2).to_bytes(2, "little") + (183).to_bytes(2, "little") + b"\0" * 40
    _tarball(tmp_path / "mysql-8.4.0-linux-aarch64.tar.gz", {"mysql-8.4.0/bin/mysqld": elf, "mysql-8.4.0/share/x": b""})
    with pytest.raises(SandboxError, match="another architecture"):
        kits.add(str(tmp_path / "mysql-8.4.0-linux-aarch64.tar.gz"))
    assert list((tmp_path / "kits").iterdir()) == []


def _links(path: Path, links: dict[str, tuple[bytes, str]]) -> None:
    """A tarball of a server folder and the given links (name -> (tarfile.SYMTYPE or LNKTYPE, target))."""
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("mysql-9/bin/mysqld")
        info.size, info.mode = 1, 0o755
        tar.addfile(info, io.BytesIO(b"x"))
        for name, (kind, target) in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            tar.addfile(info)


@pytest.mark.parametrize("links", [
    {"mysql-9/lib/etc": (tarfile.SYMTYPE, "/etc")},  # absolute
    {"mysql-9/lib/up": (tarfile.SYMTYPE, "../../../outside")},  # relative, out of the folder
    {"mysql-9/share/passwd": (tarfile.LNKTYPE, "/etc/passwd")},  # a hard link
    {"mysql-9/share/up": (tarfile.LNKTYPE, "../outside")},
])
def test_a_tarball_with_a_link_to_outside_is_refused_before_anything_is_written(tmp_path, monkeypatch, links):
    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path / "kits"))
    _links(tmp_path / "evil.tar.gz", links)
    with pytest.raises(SandboxError, match="link to outside its folder"):
        kits.add(str(tmp_path / "evil.tar.gz"))
    assert list((tmp_path / "kits").iterdir()) == []


def test_links_inside_the_folder_are_kept(tmp_path, monkeypatch):
    """MySQL's own tarballs hold links within (lib/libssl.so -> libssl.so.3): those are fine."""
    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path / "kits"))
    _links(tmp_path / "ok.tar.gz", {"mysql-9/lib/libx.so": (tarfile.SYMTYPE, "libx.so.3"),
                                    "mysql-9/bin/mysqld-debug": (tarfile.LNKTYPE, "mysql-9/bin/mysqld")})
    with tarfile.open(tmp_path / "ok.tar.gz") as tar:
        assert len(kits._safe_members(tar, tmp_path / "root")) == 3


def test_a_hostile_tarball_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path / "kits"))
    _tarball(tmp_path / "evil.tar.gz", {"../../escaped": b"x", "bin/mysqld": b"x"})
    with pytest.raises(SandboxError, match="outside its folder"):
        kits.add(str(tmp_path / "evil.tar.gz"))
    assert not (tmp_path / "escaped").exists() and list((tmp_path / "kits").iterdir()) == []
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(SandboxError, match="not a readable tarball"):
        kits.add(str(tmp_path / "junk.tar.gz"))


def test_a_basedir_is_added_in_place_and_listed(tmp_path, monkeypatch):
    """A generic tarball's layout (bin/mysqld): a stand-in server that answers --version as MySQL does."""
    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path / "kits"))
    base = tmp_path / "mysql-8.4.3-linux-glibc2.28-x86_64"
    (base / "bin").mkdir(parents=True)
    (base / "share").mkdir()
    fake = base / "bin" / "mysqld"
    fake.write_text(f"#!{sys.executable}\n"
                    f"print('{fake}  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server - GPL)')\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxError, match="not a Linux program"):  # a script is not a server binary
        kits.add(str(base))
    assert list((tmp_path / "kits").iterdir()) == []


def test_mysql_8030_and_later_get_the_redo_log_capacity():
    tpl = "[mysqld]\n"
    my9 = render_cnf(tpl, {}, "mysql", {}, (9, 7, 4))
    assert "innodb_redo_log_capacity = 512M" in my9 and "innodb_log_file_size" not in my9
    assert "secure-file-priv =" in my9 and "mysqlx = OFF" in my9
    my80 = render_cnf(tpl, {}, "mysql", {}, (8, 0, 28))
    assert "innodb_log_file_size = 256M" in my80 and "innodb_redo_log_capacity" not in my80
    ma11 = render_cnf(tpl, {}, "mariadb", {}, (11, 8, 9))
    assert "innodb_flush_method" not in ma11 and "secure-file-priv" not in ma11  # deprecated in MariaDB 11
    assert "innodb_flush_method = O_DIRECT" in render_cnf(tpl, {}, "mariadb", {}, (10, 11, 19))


def test_unknown_kit_and_unknown_server_on_the_command_line(tmp_path):
    env = {**os.environ, "TUNEBENCH_KITS": str(tmp_path / "kits"), "TUNEBENCH_HOME": str(tmp_path / "home")}
    for argv, want in ((["servers", "fetch", "percona-8"], "unknown kit 'percona-8'; fetchable: mysql, mariadb-11.8"),
                       (["sandbox", "status", "--server", "nosuch"], "unknown server 'nosuch'; known: "),
                       (["servers", "add", str(tmp_path / "missing")], "no such file or folder")):
        out = subprocess.run([sys.executable, "-m", "tunebench", *argv], capture_output=True, text=True, env=env,
                             timeout=60)
        assert out.returncode == 2, out
        assert want in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not (tmp_path / "kits").exists() or list((tmp_path / "kits").iterdir()) == []


def test_kit_file_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path))
    root = tmp_path / "mysql-9.7.4"
    (root / "root/usr/sbin").mkdir(parents=True)
    server = ServerBinary(str(root / "root/usr/sbin/mysqld"), "mysql", "9.7.4",
                          str(root / "root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
                          f"{root}/root/usr/lib/x86_64-linux-gnu:{root}/root/lib/x86_64-linux-gnu",
                          name="mysql-9.7.4", source="debian sid mysql-server-core 9.7.4-2",
                          basedir=str(root / "root/usr"))
    kits._write_kit(root, server, root, {})
    assert json.loads((root / "kit.json").read_text())["binary"] == "root/usr/sbin/mysqld"  # relative: movable
    assert kits.kit_servers() == [server]
    assert server.argv[:2] == [server.loader, "--library-path"]



def test_a_fetch_that_cannot_reach_the_archive_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    """The mirror read from the apt sources answers nothing (127.0.0.1 on a closed port)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    etc = _apt(tmp_path, f"deb http://127.0.0.1:{port}/debian bookworm main\n", {})
    monkeypatch.setenv("TUNEBENCH_APT_ETC", str(etc))
    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path / "kits"))
    with pytest.raises(SandboxError, match=r"cannot reach the Debian archive http://127\.0\.0\.1") as err:
        kits.fetch("mariadb-11.8")
    assert "\n" not in str(err.value) and "127.0.0.1" in str(err.value)
    assert list((tmp_path / "kits").iterdir()) == []


def test_remove_takes_the_full_name_of_a_kit(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path))
    root = tmp_path / "mysql-8.4.3"
    root.mkdir()
    server = ServerBinary(str(root / "bin/mysqld"), "mysql", "8.4.3", name="mysql-8.4.3", source="added /x",
                          basedir=str(root))
    kits._write_kit(root, server, root, {})
    with pytest.raises(ConfigError, match=r"needs the full name: mysql-8\.4\.3"):
        kits.remove("mysql-8")
    with pytest.raises(ConfigError, match=r"unknown server 'mariadb-10\.11'"):  # the system's is not a kit
        kits.remove("mariadb-10.11")
    assert kits.remove("mysql-8.4.3").name == "mysql-8.4.3" and not root.exists()


def _fake_kit(kits_dir: Path, name: str) -> Path:
    """A kit folder whose bin/mysqld is a copy of sleep(1) standing in for a server (a program of the kit)."""
    root = kits_dir / name
    (root / "bin").mkdir(parents=True)
    binary = root / "bin" / "mysqld"
    shutil.copy(shutil.which("sleep"), binary)
    server = ServerBinary(str(binary), "mysql", "9.7.4", name=name, source="debian sid mysql-server-core 9.7.4 (http://127.0.0.1:1/debian)",
                          basedir=str(root))
    kits._write_kit(root, server, root, {})
    return binary


def test_a_running_kit_is_neither_removed_nor_replaced_and_a_dead_fetch_leaves_nothing(tmp_path, monkeypatch):
    """`servers remove` deleted a running sandbox's kit, and `fetch --refresh` replaced it (issue 43 item 9): both
    refuse now, before anything changes, naming the pid; what a killed fetch left (.fetch-*) goes at the next one."""
    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path))
    binary = _fake_kit(tmp_path, "mysql-9.7.4")
    proc = subprocess.Popen([str(binary), "60"])
    try:
        from tests.conftest import wait_until

        wait_until(lambda: kits.running_from(tmp_path / "mysql-9.7.4") == [proc.pid], 10, "the kit's program")
        with pytest.raises(ConfigError, match=rf"servers remove mysql-9\.7\.4: it is running \(pid {proc.pid}\)"):
            kits.remove("mysql-9.7.4")
        with pytest.raises(ConfigError, match=r"fetch --refresh of mysql-9\.7\.4: it is running"):
            kits.fetch("mysql", refresh=True)
        assert binary.exists()
    finally:
        proc.kill()
        proc.wait()
    (tmp_path / ".fetch-dead1").mkdir()  # a fetch killed with -9
    (tmp_path / ".fetch-dead1" / "apt").mkdir()
    with kits._kits_locked():
        pass
    assert not (tmp_path / ".fetch-dead1").exists()
    assert kits.remove("mysql-9.7.4").name == "mysql-9.7.4" and not (tmp_path / "mysql-9.7.4").exists()


def test_two_changes_to_the_kits_at_once_wait_for_each_other(tmp_path, monkeypatch):
    """Two concurrent fetches ended in a traceback: the second now waits for the first (said), then goes on."""
    import threading
    import time

    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path))
    said: list[str] = []
    order: list[str] = []
    inside = threading.Event()

    def first():
        with kits._kits_locked():
            inside.set()
            time.sleep(0.5)
            order.append("first")
    th = threading.Thread(target=first)
    th.start()
    assert inside.wait(10)
    with kits._kits_locked(said.append):
        order.append("second")
    th.join(10)
    assert order == ["first", "second"] and said and "waiting for it" in said[0]


def test_a_kit_that_answers_its_version_then_crashes_says_why_and_leaves_no_sandbox(tmp_path, monkeypatch):
    import tempfile

    """Its first start gave an empty reason and left a sandbox folder (issue 43 item 9): now the reason says how
    the server ended, and the folder made for it is gone."""
    from tunebench.hosts.sandbox import SandboxServer

    monkeypatch.setenv("TUNEBENCH_KITS", str(tmp_path / "kits"))
    root = tmp_path / "kits" / "mysql-9.7.4"
    (root / "bin").mkdir(parents=True)
    fake = root / "bin" / "mysqld"
    fake.write_text(f"#!{sys.executable}\nimport os, signal, sys\n"
                    f"if '--version' in sys.argv: print('{fake}  Ver 9.7.4 for Linux on x86_64 (MySQL Community "
                    "Server - GPL)'); sys.exit(0)\n"
                    "os.kill(os.getpid(), signal.SIGSEGV)\n")
    fake.chmod(0o755)
    server = ServerBinary(str(fake), "mysql", "9.7.4", name="mysql-9.7.4", source="added /x", basedir=str(root))
    kits._write_kit(root, server, root, {})
    home = Path(tempfile.mkdtemp(prefix="tbh-", dir="/tmp"))  # a socket path short enough
    sb = SandboxServer.named("mysql-9.7.4", home=home)
    with pytest.raises(SandboxError, match="killed by SIGSEGV and printed nothing") as err:
        sb.start(timeout=20)
    assert not str(err.value).rstrip().endswith(":"), err.value
    assert not sb.base.exists(), list(sb.base.iterdir())
    shutil.rmtree(home)


def test_apt_dies_with_a_fetch_killed_with_minus_9(tmp_path):
    """kill -9 of a fetch left its apt-get running (issue 43 item 9): apt and dpkg now die with Tunebench."""
    import signal
    import time

    from tests.conftest import wait_until

    fake_apt = tmp_path / "apt-get"
    fake_apt.write_text(f"#!/bin/sh\necho $$ > {tmp_path / 'apt.pid'}\nexec sleep 60\n")
    fake_apt.chmod(0o755)
    parent = subprocess.Popen([sys.executable, "-c", "from tunebench.hosts import kits; "
                               f"kits._run_apt([{str(fake_apt)!r}, 'update'], lambda p: None, 'x', 0, 1)"],
                              cwd=str(Path(__file__).resolve().parents[2]))
    try:
        wait_until(lambda: (tmp_path / "apt.pid").exists() and (tmp_path / "apt.pid").read_text().strip(), 20,
                   "the fake apt-get")
        apt = int((tmp_path / "apt.pid").read_text())
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and Path(f"/proc/{apt}").exists() and \
                Path(f"/proc/{apt}/stat").read_text().split()[2] != "Z":
            time.sleep(0.05)
        alive = Path(f"/proc/{apt}").exists() and Path(f"/proc/{apt}/stat").read_text().split()[2] != "Z"
        assert not alive, "apt-get outlived the fetch that was killed"
    finally:
        parent.kill()
        with __import__("contextlib").suppress(Exception):
            os.kill(int((tmp_path / "apt.pid").read_text()), signal.SIGKILL)
