"""The sandbox server's my.cnf: the template filled in, what its flavor needs, and the option overrides of a
restart (names and values checked: nothing is written that would break the file)."""

from __future__ import annotations

import re
import string

from tunebench.core.errors import SandboxError

_OPTION_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def render_cnf(template: str, values: dict[str, str], flavor: str, overrides: dict[str, str | None]) -> str:
    text = string.Template(template).substitute(values)
    extra = ["", "# flavor specific"]
    if flavor in ("mysql", "percona"):
        extra.append("mysqlx = OFF")  # X plugin would listen on 33060 otherwise
    if overrides:
        extra += ["", "# overrides"]
    for name, value in overrides.items():
        if not _OPTION_NAME.match(name):
            raise SandboxError(f"invalid server option name {name!r}")
        if value is None:
            extra.append(name)
        else:
            if "\n" in str(value):
                raise SandboxError(f"invalid value for {name}: newlines are not allowed")
            extra.append(f"{name} = {value}")
    return text + "\n".join(extra) + "\n"
