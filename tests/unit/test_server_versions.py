"""Flavor branches tested on `--version` strings as the MySQL, Percona and MariaDB manuals show them."""

import pytest

from tunebench.core.errors import SandboxError
from tunebench.hosts.sandbox_cnf import render_cnf
from tunebench.hosts.server_binary import parse_server_version
from tunebench.mysql.connect import flavor_of


@pytest.mark.parametrize(
    ("text", "flavor", "version"),
    [
        ("/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)", "mysql", "8.0.36"),
        ("/usr/sbin/mysqld  Ver 8.0.35-27 for Linux on x86_64 (Percona Server (GPL), Release '27')",
         "percona", "8.0.35"),
        ("mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)", "mariadb",
         "10.11.19"),
        ("/usr/sbin/mysqld  Ver 9.1.0 for Linux on x86_64 (MySQL Community Server - GPL)", "mysql", "9.1.0"),
    ],
)
def test_parse_server_version(text, flavor, version):
    assert parse_server_version(text) == (flavor, version)


def test_unparseable_version():
    with pytest.raises(SandboxError):
        parse_server_version("something else")


def test_flavor_from_variables():
    assert flavor_of("10.11.6-MariaDB-0+deb12u1", "Debian 12") == "mariadb"
    assert flavor_of("8.0.36", "MySQL Community Server - GPL") == "mysql"
    assert flavor_of("8.0.35-27", "Percona Server (GPL), Release 27") == "percona"


def test_cnf_flavor_lines_and_overrides():
    tpl = "[mysqld]\nport = ${port}\n"
    my = render_cnf(tpl, {"port": "1"}, "mysql", {"innodb_doublewrite": "0", "skip-log-bin": None})
    assert "mysqlx = OFF" in my and "innodb_doublewrite = 0" in my and "\nskip-log-bin\n" in my
    assert "mysqlx" not in render_cnf(tpl, {"port": "1"}, "mariadb", {})
    with pytest.raises(SandboxError):
        render_cnf(tpl, {"port": "1"}, "mariadb", {"bad name": "1"})
    with pytest.raises(SandboxError):
        render_cnf(tpl, {"port": "1"}, "mariadb", {"x": "1\n[client]"})
