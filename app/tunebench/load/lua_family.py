"""Any sysbench Lua script as a workload family: its options read from the script, its own prepare/cleanup/
check commands, its event run by the sysbench engine. The script is used unchanged.

`sysbench PATH help` lists the options a script declares (sysbench.cmdline.options), one per line:
    --scale=N                     Scale factor (warehouses) [100]
    --use_fk[=on|off]             Use foreign keys [on]
    --trx_level=STRING            Transaction isolation level (RC, RR or SER) [RR]
N is a number (an integer unless its default has a fraction), [=on|off] a boolean, STRING one line of text.
Modules a script `require`s beside itself (sysbench-tpcc's tpcc_common.lua) are found through LUA_PATH: sysbench
looks only in the working directory otherwise.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunebench.core.errors import ConfigError, WorkloadError
from tunebench.core.target import ConnParams
from tunebench.hosts.runner import child_env
from tunebench.load.family import CheckResult, ConnectionContext, Progress, Transaction, TrxType
from tunebench.load.options import OptionSpec, resolve_options

HELP_TIMEOUT = 15
_OPTION_RE = re.compile(r"^\s+--(?P<name>[A-Za-z0-9_-]+)(?P<kind>\[=on\|off\]|=N|=STRING)?\s+(?P<help>.*?)"
                        r"\s*(?:\[(?P<default>[^\]]*)\])?\s*$")
# function prepare(, prepare = function, sysbench.cmdline.commands = { check = {...} }
_COMMAND_RE = r"(?:^|[\s;])(?:function\s+{name}\s*\(|{name}\s*=\s*function\b|{name}\s*=\s*\{{)"
_REQUIRE_RE = re.compile(r"require\s*\(?\s*[\"']([A-Za-z0-9_.]+)[\"']")
EVENT = (TrxType("event", 1, "one call of the script's event()"),)
_BANNER = re.compile(r"^sysbench \d+\.\d+.*\(using ")


@dataclass(frozen=True, slots=True)
class LuaScript:
    path: str  # absolute
    options: Mapping[str, OptionSpec]
    commands: tuple[str, ...]  # of prepare, cleanup, check: the ones the script has

    @property
    def name(self) -> str:
        return Path(self.path).stem

    @property
    def directory(self) -> str:
        return str(Path(self.path).parent)


_cache: dict[tuple[str, float, int], LuaScript] = {}
_lock = threading.Lock()


def sysbench_env(script: LuaScript | str, password: str | None = None) -> dict[str, str]:
    """The environment sysbench runs a script in: modules beside it found, the password out of argv."""
    directory = script.directory if isinstance(script, LuaScript) else str(Path(script).parent)
    env = {"LUA_PATH": f"{directory}/?.lua;;"}
    if password is not None:
        env["MYSQL_PWD"] = password
    return env


def _sources(path: Path) -> str:
    """The script and the modules it requires from beside it (one level down is enough for sysbench-tpcc)."""
    text = path.read_text(errors="replace")
    seen = {path.stem}
    out = [text]
    for mod in _REQUIRE_RE.findall(text):
        if mod in seen:
            continue
        seen.add(mod)
        beside = path.parent / f"{mod.replace('.', '/')}.lua"
        if beside.is_file():
            out.append(beside.read_text(errors="replace"))
    return "\n".join(out)


def parse_help(text: str) -> dict[str, OptionSpec]:
    options: dict[str, OptionSpec] = {}
    for line in text.splitlines():
        m = _OPTION_RE.match(line)
        if m is None or not line.startswith("  --"):
            continue
        name, kind, default = m.group("name"), m.group("kind"), m.group("default") or ""
        help_text = m.group("help").strip()
        if kind == "[=on|off]":
            options[name] = OptionSpec(name, bool, default == "on", help_text)
        elif kind == "=N":
            number = float(default) if default else 0.0
            if re.fullmatch(r"-?\d+", default or "0"):
                options[name] = OptionSpec(name, int, int(default or 0), help_text)
            else:
                options[name] = OptionSpec(name, float, number, help_text)
        else:
            options[name] = OptionSpec(name, str, default, help_text, free_text=True)
    return options


def inspect_script(path: str, binary: str | None = None) -> LuaScript:
    """What a script declares; WorkloadError (one line) when it cannot be read, does not parse or has no event."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise WorkloadError(f"Lua script {path} {'is not a file' if p.exists() else 'not found'}")
    p = p.resolve()
    try:
        st = p.stat()
        source = _sources(p)
    except OSError as exc:
        raise WorkloadError(f"Lua script {path}: cannot read it ({exc.strerror})") from None
    key = (str(p), st.st_mtime, st.st_size)
    with _lock:
        if key in _cache:
            return _cache[key]
    import shutil

    sysbench = binary or shutil.which("sysbench")
    if not sysbench:
        raise WorkloadError("sysbench not found on PATH (make run installs it: apt-get install sysbench)")
    try:
        out = subprocess.run([sysbench, str(p), "help"], capture_output=True, text=True, errors="replace",
                             timeout=HELP_TIMEOUT, env=child_env(sysbench_env(str(p))), cwd=p.parent)
    except subprocess.TimeoutExpired:
        raise WorkloadError(f"Lua script {path}: `sysbench {p.name} help` did not answer in {HELP_TIMEOUT} s") from None
    text = out.stdout + out.stderr
    fatal = next((ln.strip() for ln in text.splitlines() if "FATAL" in ln), None)
    no_options = "does not implement the 'help' command" in text  # a script that declares no options
    if fatal or (out.returncode != 0 and not no_options):
        raise WorkloadError(f"Lua script {path} does not load: "
                            f"{fatal or (text.strip().splitlines() or ['sysbench exited ' + str(out.returncode)])[-1]}")
    if not re.search(_COMMAND_RE.format(name="event"), source, re.M):
        raise WorkloadError(f"Lua script {path} has no event() function: sysbench cannot run it")
    commands = tuple(c for c in ("prepare", "cleanup", "check")
                     if re.search(_COMMAND_RE.format(name=c), source, re.M))
    script = LuaScript(str(p), parse_help(text), commands)
    with _lock:
        _cache[key] = script
    return script


class LuaFamily:
    """One Lua script's family (sysbench engine only)."""

    name = "lua"
    engines: tuple[str, ...] = ("sysbench",)
    headline: tuple[str, float, str] | None = None

    def headline_of(self, options: Mapping[str, Any]) -> tuple[str, float, str] | None:
        return self.headline
    data_options: tuple[str, ...] = ()

    def __init__(self, script: LuaScript):
        self.script = script
        self.description = f"sysbench Lua script {script.path}"
        self.form_options = tuple(script.options)[:8]

    def option_specs(self) -> Mapping[str, OptionSpec]:
        return self.script.options

    def resolve(self, defaults: Mapping[str, Any], fixed: Mapping[str, Any], given: Mapping[str, Any],
                where: str = "") -> dict[str, Any]:
        return resolve_options(defaults, fixed, given, where, self.script.options, f" of {self.script.name}.lua")

    def transactions(self, options: Mapping[str, Any]) -> tuple[TrxType, ...]:
        return EVENT

    def plan(self, workload: Any, options: Mapping[str, Any]) -> None:
        return None

    def shape(self, options: Mapping[str, Any]) -> str:
        given = " ".join(f"{k}={_flag_value(v)}" for k, v in options.items()
                         if v != self.script.options[k].default)
        return f"{self.script.name}.lua's data" + (f" ({given})" if given else "")

    def data_key(self, options: Mapping[str, Any]) -> tuple[Any, ...]:
        return ()

    def data_bytes(self, workload: Any, options: Mapping[str, Any]) -> int | None:
        return None  # the script's own prepare: its size is the script's business

    def missing_data(self, params: ConnParams, schema: str, workload: Any,
                     options: Mapping[str, Any]) -> str | None:
        return None  # a script's data is the script's business: its run says what is missing

    def script_flags(self, options: Mapping[str, Any]) -> list[str]:
        """The script's options as sysbench flags: those that differ from the script's defaults."""
        return [f"--{k}={_flag_value(v)}" for k, v in options.items()
                if k in self.script.options and v != self.script.options[k].default]

    def command_argv(self, command: str, params: ConnParams, schema: str, options: Mapping[str, Any],
                     threads: int, binary: str = "sysbench") -> list[str]:
        argv = [binary, self.script.path, "--db-driver=mysql", f"--mysql-user={params.user}", f"--mysql-db={schema}"]
        if params.socket:
            argv.append(f"--mysql-socket={params.socket}")
        else:
            from tunebench.load.sysbench import sysbench_tls

            argv += [f"--mysql-host={params.host}", f"--mysql-port={params.port}",
                     f"--mysql-ssl={'on' if sysbench_tls(params) else 'off'}"]
        return [*argv, *self.script_flags(options), f"--threads={threads}", command]

    def run_command(self, command: str, params: ConnParams, schema: str, options: Mapping[str, Any],
                    threads: int = 1, progress: Progress | None = None,
                    cancel: threading.Event | None = None) -> tuple[int, list[str], float]:
        """Run the script's `command` (prepare/cleanup/check) here; (exit status, its last lines, seconds).
        WorkloadError when the script has no such command."""
        if command not in self.script.commands:
            raise WorkloadError(f"{self.script.name}.lua has no {command} command "
                                f"(it has: {', '.join(self.script.commands) or 'none'})")
        from tunebench.hosts.runner import LocalRunner
        from tunebench.load.sysbench import check_sysbench_tls, sysbench_tls, tls_folder

        note = check_sysbench_tls(params)  # the script's commands run sysbench: its TLS rules
        if note and progress:
            progress(note)
        argv = self.command_argv(command, params, schema, options, threads)
        started = time.monotonic()
        folder = tls_folder(params) if sysbench_tls(params) else None
        proc = LocalRunner().start(argv, env=sysbench_env(self.script, params.password),
                                   cwd=folder.name if folder else None)
        say = progress or (lambda _m: None)
        done = threading.Event()
        if cancel is not None:
            threading.Thread(target=_stop_on, args=(cancel, done, proc), daemon=True).start()
        fatal: list[str] = []
        try:
            for line in proc.lines():
                if "FATAL" in line:
                    fatal.append(line.strip())
                if line.strip() and not _BANNER.match(line):
                    say(line.rstrip())
        finally:
            done.set()
            outcome = proc.wait(60) if cancel is None or not cancel.is_set() else proc.stop()
            if folder is not None:
                folder.cleanup()
        rc = outcome.returncode
        if rc is None:  # still running after its output ended: stopped, and a failure
            proc.stop()
            rc = 1
        # a FATAL of one of its threads is a failed command, whatever sysbench's exit status says
        return rc or (1 if fatal else 0), [*outcome.tail, *fatal[-1:]], time.monotonic() - started

    def prepare(self, params: ConnParams, schema: str, workload: Any, options: Mapping[str, Any], threads: int,
                progress: Progress | None = None, on_rows: Callable[[Any], None] | None = None,
                cancel: threading.Event | None = None) -> dict[str, Any]:
        from tunebench.load.prepare import register_new_tables, schema_tables

        before = schema_tables(params, schema, create=True)
        rc, tail, seconds = self.run_command("prepare", params, schema, options, threads, progress, cancel)
        created = register_new_tables(params, schema, before, {"family": "lua", "script": self.script.path})
        cancelled = cancel is not None and cancel.is_set()
        if rc != 0 and not cancelled:
            raise WorkloadError(f"{self.script.name}.lua prepare failed (exit {rc}): {_last_error(tail)}"
                                + (f"; it created {', '.join(created)} (tunebench cleanup drops them)"
                                   if created else ""))
        return {"schema": schema, "tables_created": len(created), "rows": 0, "rows_per_table": 0,
                "seconds": round(seconds, 2), "cancelled": cancelled, "dropped": [],
                "what": f"{self.script.name}.lua's data ({len(created)} new table(s))"}

    def cleanup(self, params: ConnParams, schema: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        from tunebench.load.prepare import cleanup, forget_tables, schema_tables

        if options is None or "cleanup" not in self.script.commands:
            return cleanup(params, schema)
        before = schema_tables(params, schema)
        rc, tail, _seconds = self.run_command("cleanup", params, schema, options)
        if rc != 0:
            raise WorkloadError(f"{self.script.name}.lua cleanup failed (exit {rc}): {_last_error(tail)}")
        gone = sorted(before - schema_tables(params, schema))
        forget_tables(params, schema, gone)
        return {"schema": schema, "dropped": gone, "left_alone": []}

    actions: Mapping[str, str] = {}

    def run_action(self, name: str, params: ConnParams, schema: str, options: Mapping[str, Any],
                   cancel: threading.Event | None = None) -> dict[str, Any]:
        raise ConfigError(f"a Lua script has no action {name!r}")

    def check(self, params: ConnParams, schema: str, options: Mapping[str, Any]) -> list[CheckResult]:
        if "check" not in self.script.commands:
            return []
        rc, tail, _seconds = self.run_command("check", params, schema, options)
        return [CheckResult(f"{self.script.name}.lua check", rc == 0, "" if rc == 0 else _last_error(tail))]

    def connection_work(self, ctx: ConnectionContext) -> Transaction:
        raise ConfigError(f"{self.script.name}.lua runs on the sysbench engine (--engine sysbench)")

    def sysbench_args(self, workload: Any, options: Mapping[str, Any]) -> tuple[str, list[str]]:
        return self.script.path, self.script_flags(options)


def _flag_value(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _last_error(tail: list[str]) -> str:
    lines = [ln.strip() for ln in tail if ln.strip()]
    fatal = [ln for ln in lines if "FATAL" in ln or "error" in ln.lower()]
    return (fatal or lines or ["no output"])[-1]


def _stop_on(cancel: threading.Event, done: threading.Event, proc: Any) -> None:
    """A cancel stops the script's process group (a prepare may take minutes)."""
    while not done.is_set():
        if cancel.wait(0.25):
            proc.stop()
            return


def lua_family(path: str) -> LuaFamily:
    return LuaFamily(inspect_script(path))
