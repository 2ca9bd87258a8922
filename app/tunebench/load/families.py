"""The workload families Tunebench knows, by name (see load/family.py for what a family is)."""

from __future__ import annotations

from typing import Any

from tunebench.core.errors import WorkloadError
from tunebench.load.family import Family

FAMILY_NAMES = ("oltp", "tpcc", "iibench", "dbstress")
_loaded: dict[str, Any] = {}


def get_family(name: str) -> Family:
    """The family `name`; WorkloadError listing the known ones otherwise."""
    if name in _loaded:
        return _loaded[name]
    if name == "oltp":
        from tunebench.load.oltp_family import OltpFamily

        family: Any = OltpFamily()
    elif name == "tpcc":
        from tunebench.load.tpcc.family import TpccFamily

        family = TpccFamily()
    elif name == "iibench":
        from tunebench.load.iibench import IibenchFamily

        family = IibenchFamily()
    elif name == "dbstress":
        from tunebench.load.dbstress import DbstressFamily

        family = DbstressFamily()
    elif name == "lua":
        raise WorkloadError("the lua family is a script's: give it by path (--lua PATH)")
    else:
        raise WorkloadError(f"unknown workload family {name!r}; known: {', '.join(FAMILY_NAMES)}")
    _loaded[name] = family
    return family
