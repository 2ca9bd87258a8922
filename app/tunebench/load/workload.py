"""Declarative workloads (workloads/*.toml): loading, validation and option resolution.

A workload is a named preset of one family (load/families.py): `family = "tpcc"` (default "oltp"), option
[defaults] and [fixed] values, and for the OLTP family its `event` list and `sysbench_script`."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunebench import paths
from tunebench.core.errors import ConfigError, WorkloadError
from tunebench.load.families import get_family
from tunebench.load.family import Family
from tunebench.load.oltp import EVENT_ITEMS, EventProgram, compile_program

DEFAULT_SCHEMA = "tunebench"
_KEYS = {"name", "description", "family", "sysbench_script", "event", "defaults", "fixed", "prepare"}


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    description: str
    sysbench_script: str
    event: tuple[str, ...]  # OLTP family only
    defaults: Mapping[str, Any] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)
    # oltp_insert without auto_inc prepares empty tables, as sysbench does.
    empty_tables_without_auto_inc: bool = False
    path: str = ""
    family_name: str = "oltp"
    lua: str = ""  # a sysbench Lua script by path: the workload is that script, its family the script's

    @property
    def family(self) -> Family:
        if self.lua:
            from tunebench.load.lua_family import lua_family

            return lua_family(self.lua)
        return get_family(self.family_name)

    def options(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.family.resolve(self.defaults, self.fixed, given or {}, where=f"workload {self.name}: ")

    def program(self, options: Mapping[str, Any]) -> EventProgram:
        return compile_program(self.event, options)

    @property
    def default_schema(self) -> str:
        """Where its tables go when no schema is given: a schema per family (dbSTRESS-like's history1 and TPC-C's
        history1 are different tables; a Lua script's tables are its own), the OLTP family's `tunebench`."""
        if self.lua:
            stem = re.sub(r"[^A-Za-z0-9_]", "_", Path(self.lua).stem)[:40]
            return f"tunebench_lua_{stem}"
        return DEFAULT_SCHEMA if self.family_name == "oltp" else f"{DEFAULT_SCHEMA}_{self.family_name}"

    def prepare_rows(self, options: Mapping[str, Any]) -> int:
        """Rows per table a prepare loads (OLTP's table_size; 0 where the family has no such option)."""
        if self.empty_tables_without_auto_inc and not options.get("auto_inc", True):
            return 0
        return int(options.get("table_size", 0))


def _parse(path: Path) -> Workload:
    where = f"workload file {path}"
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise WorkloadError(f"{where}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"{where}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise WorkloadError(f"{where}: cannot read ({exc.strerror})") from None
    unknown = set(data) - _KEYS
    if unknown:
        raise WorkloadError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise WorkloadError(f"{where}: 'name' must be a plain identifier")
    family_name = data.get("family", "oltp")
    if not isinstance(family_name, str):
        raise WorkloadError(f"{where}: 'family' must be a name")
    try:
        family = get_family(family_name)
    except WorkloadError as exc:
        raise WorkloadError(f"{where}: {exc}") from None
    event = data.get("event", [] if family_name != "oltp" else None)
    if family_name != "oltp" and event:
        raise WorkloadError(f"{where}: 'event' is for the oltp family; {family_name} declares its transactions")
    if family_name == "oltp" and (
            not isinstance(event, list) or not event or not all(isinstance(e, str) for e in event)):
        raise WorkloadError(f"{where}: 'event' must be a non-empty list of: {', '.join(EVENT_ITEMS)}")
    event = event if isinstance(event, list) else []
    for item in event:
        if item not in EVENT_ITEMS:
            raise WorkloadError(f"{where}: unknown event item {item!r}; known: {', '.join(EVENT_ITEMS)}")
    specs = family.option_specs()
    for table in ("defaults", "fixed"):
        section = data.get(table, {})
        if not isinstance(section, dict):
            raise WorkloadError(f"{where}: [{table}] must be a table of options")
        for key in section:
            if key not in specs:
                raise WorkloadError(f"{where}: [{table}] unknown option {key!r}")
    prepare = data.get("prepare", {})
    wl = Workload(
        name=name,
        description=str(data.get("description", "")),
        sysbench_script=str(data.get("sysbench_script", name)),
        event=tuple(event),
        defaults=data.get("defaults", {}),
        fixed=data.get("fixed", {}),
        empty_tables_without_auto_inc=bool(prepare.get("empty_tables_without_auto_inc", False)),
        path=str(path),
        family_name=family_name,
    )
    try:
        wl.options()  # validates the values in [defaults] and [fixed]
    except ConfigError as exc:
        raise WorkloadError(f"{where}: {exc}") from None
    return wl


def available(directory: Path | None = None) -> dict[str, Path]:
    d = directory or paths.workloads_dir()
    return {p.stem: p for p in sorted(d.glob("*.toml"))}


def load_workload(name_or_path: str, directory: Path | None = None) -> Workload:
    """A workload by name (workloads/NAME.toml) or by path to a .toml file."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" and candidate.is_file():
        return _parse(candidate)
    if candidate.suffix == ".toml" and ("/" in name_or_path or candidate.exists()):
        raise WorkloadError(f"workload file {name_or_path} {'is not a file' if candidate.exists() else 'not found'}")
    found = available(directory)
    if name_or_path not in found:
        raise WorkloadError(
            f"unknown workload {name_or_path!r}; available: {', '.join(found) or '(none found)'}"
        )
    return _parse(found[name_or_path])


def lua_workload(path: str) -> Workload:
    """A sysbench Lua script as a workload (WorkloadError when it does not load or has no event)."""
    from tunebench.load.lua_family import inspect_script

    script = inspect_script(path)
    return Workload(name=script.name, description=f"sysbench Lua script {script.path}", sysbench_script=script.path,
                    event=(), family_name="lua", lua=script.path, path=script.path)
