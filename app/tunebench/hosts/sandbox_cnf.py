"""The sandbox server's my.cnf: the template filled in, what its flavor and version need, and the option
overrides of a restart (names and values checked: nothing is written that would break the file)."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from tunebench.core.errors import SandboxError

_OPTION_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
REDO_LOG = "512M"  # innodb_log_file_size (one file) or, from MySQL 8.0.30, innodb_redo_log_capacity


def flavor_lines(flavor: str, version: Sequence[int]) -> list[str]:
    """What one flavor/version needs in [mysqld] (and what it no longer accepts)."""
    lines = []
    if flavor in ("mysql", "percona"):
        lines.append("mysqlx = OFF")  # X plugin would listen on 33060 otherwise
        lines.append("secure-file-priv =")  # its compiled-in folder does not exist in a private sandbox
        if tuple(version) >= (8, 0, 30):
            lines.append(f"innodb_redo_log_capacity = {REDO_LOG}")  # innodb_log_file_size is deprecated there
        else:
            lines.append("innodb_log_file_size = 256M")
    else:
        lines.append("innodb_log_file_size = 256M")
    if flavor != "mariadb" or tuple(version) < (11, 0):
        # O_DIRECT: MariaDB 11 has it by default and deprecates the option (a warning at every start)
        lines.append("innodb_flush_method = O_DIRECT")
    return lines


def render_cnf(template: str, values: dict[str, str], flavor: str, overrides: dict[str, str | None],
               version: Sequence[int] = (), extra: Sequence[str] = ()) -> str:
    text = string.Template(template).substitute(values)
    lines = ["", "# flavor specific", *flavor_lines(flavor, version), *extra]
    if overrides:
        lines += ["", "# overrides"]
    for name, value in overrides.items():
        if not _OPTION_NAME.match(name):
            raise SandboxError(f"invalid server option name {name!r}")
        if value is None:
            lines.append(name)
        else:
            if "\n" in str(value):
                raise SandboxError(f"invalid value for {name}: newlines are not allowed")
            lines.append(f"{name} = {value}")
    return text + "\n".join(lines) + "\n"
