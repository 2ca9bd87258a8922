"""The `tunebench` command: the headless contract scripts and CI use (every command has --json)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from tunebench import __version__, paths
from tunebench.core.errors import ConfigError, TunebenchError
from tunebench.core.interval import Interval
from tunebench.core.probe import parse_probe_list

# The plan's text lives in core.sweep: the window's sweep panel shows the same lines as `--plan`.
from tunebench.core.sweep import PLAN_HEAD, PLAN_TAIL  # noqa: F401
from tunebench.core.sweep import duration_text as _duration
from tunebench.core.sweep import plan_text as _plan_text

WORKLOAD_SHORTCUTS = ("tables", "table_size")
# How a run ended -> exit status (a failed run raises, and exits 2 with its one line).
EXIT_CODES = {"completed": 0, "incomplete": 1, "aborted": 130}
MAX_ID = 2**63 - 1  # SQLite's INTEGER
# A sweep beyond either needs --yes on the command line (the plan is printed first either way).
CONFIRM_CONFIGS = 200
CONFIRM_SECONDS = 24 * 3600


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line like every other error (the usage is in --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"tunebench: error: {message} (see `{self.prog} --help`)\n")


def _int_in(low: int, high: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {value}")
        return value
    parse.__name__ = "integer"
    return parse


def _number(text: str) -> float:
    """A float; its range (nan included) is checked where the GUI's values are checked too."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


SECONDS = 86_400
PORT = _int_in(1, 65535)


def _threads_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--threads wants a comma-separated list of integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise ConfigError(f"--threads values must be >= 1, got {text!r}")
    if any(v > 100_000 for v in values):
        raise ConfigError(f"--threads values must be <= 100000, got {text!r}")
    return values


def _options(args: argparse.Namespace) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    for item in getattr(args, "option", None) or []:
        if "=" not in item:
            raise ConfigError(f"--option wants NAME=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        opts[k.strip()] = v.strip()
    for k in WORKLOAD_SHORTCUTS:
        v = getattr(args, k, None)
        if v is not None:
            opts[k] = v
    return opts


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, default=str))
    else:
        print(text)


def _store(args: argparse.Namespace) -> Any:
    from tunebench.store.repo import Store

    return Store(Path(args.db) if args.db else paths.default_db_path())


def _sandbox() -> Any:
    from tunebench.hosts.sandbox import SandboxServer

    return SandboxServer()


def resolve_target(args: argparse.Namespace, store: Any, start_sandbox: bool = True) -> Any:
    from tunebench.core.target import parse_target_url

    name = getattr(args, "target", None) or "sandbox"
    if name == "sandbox":
        sb = _sandbox()
        if start_sandbox and not sb.status().running:
            print("starting the sandbox server ...", file=sys.stderr)
            sb.start()
        return sb.target()
    if "://" in name:
        return parse_target_url(name)
    target = store.get_target(name)
    if target is None:
        known = ", ".join(["sandbox", *(t.name for t in store.list_targets())])
        raise ConfigError(f"unknown target {name!r}; known: {known}")
    return target


# ---- commands ------------------------------------------------------------------------------------
def cmd_doctor(args: argparse.Namespace) -> int:
    import mysql.connector

    from tunebench.hosts.sandbox import find_server_binaries, probe_binary
    from tunebench.load.driver import driver_mode
    from tunebench.load.sysbench import sysbench_binary, sysbench_version
    from tunebench.mysql.target import keyring_backend_name

    servers = []
    for path in find_server_binaries():
        try:
            b = probe_binary(path)
            servers.append({"path": b.path, "flavor": b.flavor, "version": b.version})
        except TunebenchError as exc:
            servers.append({"path": path, "error": str(exc)})
    sb = _sandbox().status()
    report = {
        "tunebench": __version__,
        "python": sys.version.split()[0],
        "driver": {"name": "mysql-connector-python", "version": mysql.connector.__version__,
                   "c_extension": bool(mysql.connector.HAVE_CEXT), "mode": driver_mode()},
        "sysbench": {"path": sysbench_binary(), "version": sysbench_version()},
        "servers": servers,
        "keyring": keyring_backend_name(),
        "sandbox": {"running": sb.running, "initialized": sb.initialized, "base_dir": sb.base_dir,
                    "port": sb.port, "socket": sb.socket, "flavor": sb.flavor, "version": sb.version},
        "store": str(Path(args.db) if args.db else paths.default_db_path()),
    }
    problems = []
    if not servers:
        problems.append("no mysqld/mariadbd found (apt-get install mariadb-server)")
    if not report["sysbench"]["path"]:
        problems.append("sysbench not found (apt-get install sysbench)")
    if not mysql.connector.HAVE_CEXT:
        problems.append("mysql-connector C extension not active: builtin engine runs in pure Python (slow)")
    report["problems"] = problems
    report["probes"] = _doctor_probes(args, sb.running)
    d = report["driver"]
    lines = [
        f"tunebench   {__version__} (Python {report['python']})",
        f"driver      mysql-connector-python {d['version']}, {d['mode']}",
        f"sysbench    {report['sysbench']['version'] or 'NOT FOUND'} {report['sysbench']['path'] or ''}",
        "servers     " + ("; ".join(f"{s.get('flavor', '?')} {s.get('version', '')} {s['path']}" for s in servers)
                         or "NONE FOUND"),
        f"keyring     {report['keyring']}",
        f"sandbox     {'running' if sb.running else 'stopped'}"
        + (f" {sb.flavor} {sb.version} port {sb.port} socket {sb.socket}" if sb.running else "")
        + f" ({sb.base_dir})",
        f"store       {report['store']}",
        *_probe_lines(report["probes"]),
        *(f"PROBLEM     {p}" for p in problems),
    ]
    _emit(args, report, "\n".join(lines))
    return 1 if problems else 0


def _doctor_probes(args: argparse.Namespace, sandbox_running: bool) -> dict[str, Any]:
    """Which probes work against the target (the sandbox when it runs); opened and closed, nothing kept."""
    from tunebench.mysql.connect import introspect, open_connection
    from tunebench.mysql.target import conn_params
    from tunebench.run.monitor import ProbeSampler, build_probes, local_server_pid, status_map

    if not args.target and not sandbox_running:
        return {"target": None, "skipped": "no target: start the sandbox or pass --target"}
    try:
        store = _store(args)
        target = resolve_target(args, store, start_sandbox=False)
        params = conn_params(target, args.transport)
        conn = open_connection(params, target.name)
        try:
            info = introspect(conn)
        finally:
            conn.close()
    except TunebenchError as exc:
        return {"target": getattr(args, "target", None) or "sandbox", "error": str(exc)}
    from tunebench.run.tuning import KnobController

    pid, why = local_server_pid(target, info, args.transport)
    journal = KnobController(store, target, info, None).probe_journal()  # what a probe enables is journaled
    sampler = ProbeSampler(build_probes(None, params, target.name, info, pid, None, why, journal=journal), 1.0,
                           lambda _t, _v, _k: None, lambda _k, _p, _m: None)
    try:
        statuses = sampler.open()
    finally:
        sampler.close()
    return {"target": target.name, "server": f"{info.flavor} {info.version}", "available": status_map(statuses)}


def _probe_lines(probes: dict[str, Any]) -> list[str]:
    if "available" not in probes:
        return [f"probes      {probes.get('error') or probes.get('skipped')}"]
    lines = [f"probes      on {probes['target']} ({probes['server']}):"]
    for name, st in probes["available"].items():
        lines.append(f"  {name:9} {'ok' if st['ok'] else 'UNAVAILABLE'}: {st['detail']}")
    return lines


def cmd_sandbox(args: argparse.Namespace) -> int:
    sb = _sandbox()
    if args.action == "start":
        overrides: dict[str, str | None] = {}
        if args.option_file:  # [mysqld] of this file: what a restart command of a remote target passes
            overrides.update(_mysqld_options(args.option_file))
        for item in args.set or []:
            k, _, v = item.partition("=")
            if not k.strip():
                raise ConfigError(f"--set wants OPTION=VALUE (or OPTION), got {item!r}")
            overrides[k.strip()] = v.strip() if _ else None
        st = sb.start(overrides, cpus=args.cpus)
        _auto_restore(args)  # what an interrupted run left changed on it
    elif args.action == "stop":
        st = sb.stop()
    else:
        st = sb.status()
    text = (f"sandbox {'running' if st.running else 'stopped'}: {st.flavor} {st.version}, "
            f"socket {st.socket}, port {st.port}, pid {st.pid or '-'}, datadir {st.datadir}")
    _emit(args, st.to_dict(), text)
    return 0


def _mysqld_options(path: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    section = ""
    try:
        lines = Path(path).read_bytes().decode("utf-8").splitlines()
    except FileNotFoundError:
        return out  # no overlay: the server as configured
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not a text option file (not UTF-8)") from None
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
        elif line and section in ("mysqld", "mariadbd", "server"):
            k, eq, v = line.partition("=")
            out[k.strip()] = v.strip() if eq else None
    return out


def cmd_target(args: argparse.Namespace) -> int:
    from tunebench.mysql.target import Target

    store = _store(args)
    if args.action == "add":
        if not args.name or not (args.socket or args.host):
            raise ConfigError("target add NAME needs --socket PATH or --host HOST [--port N]")
        if args.name == "sandbox" or "://" in args.name:
            raise ConfigError("'sandbox' and URLs are reserved target names")
        if args.db_host:
            from tunebench.hosts.ssh import parse_ssh_url

            parse_ssh_url(args.db_host)
        if (args.option_file or args.restart_command) and not (args.db_host and args.option_file
                                                                and args.restart_command):
            raise ConfigError("a restart method needs all three: --db-host, --option-file and --restart-command")
        if store.get_target(args.name) is not None and not args.replace:
            raise ConfigError(f"target {args.name!r} exists; give --replace to overwrite it")
        t = Target(args.name, socket=args.socket, host=args.host, port=args.port if args.host else None,
                   user=args.user, schema=args.schema, db_host=args.db_host, ssh_key=args.ssh_key,
                   option_file=args.option_file, restart_command=args.restart_command)
        store.save_target(t)
        _emit(args, t.to_dict(), f"target {t.name} saved (no password is stored)")
    elif args.action == "restart":
        from tunebench.hosts.remote_restart import RemoteRestart, wait_for_server
        from tunebench.mysql.connect import open_connection
        from tunebench.mysql.target import conn_params

        target = store.get_target(args.name or "")
        if target is None:
            raise ConfigError(f"unknown target {args.name!r}")
        remote = RemoteRestart(target, key_files=(args.ssh_key,) if args.ssh_key else ())
        if args.dry_run:
            steps = remote.plan({})
            steps[0] = f"{remote.runner.host.url()}: {remote.path} keeps its content"
            print("\n".join(["dry run, nothing is done:", *steps]))
            return 0
        try:
            original = remote.read_original()["content"]
            took = remote.restart(original, lambda: wait_for_server(
                lambda: open_connection(conn_params(target, None), target.name, timeout=5)))
        finally:
            remote.close()
        _emit(args, {"restarted": target.name, "seconds": round(took, 2)},
              f"{target.name} restarted over SSH in {took:.1f} s")
    elif args.action == "remove":
        if not store.delete_target(args.name or ""):
            raise ConfigError(f"unknown target {args.name!r}")
        _emit(args, {"removed": args.name}, f"target {args.name} removed")
    else:
        targets = [t.to_dict() for t in store.list_targets()]
        lines = [f"{t['name']:20} {t['socket'] or str(t['host']) + ':' + str(t['port'])} user={t['user']}"
                 for t in targets]
        _emit(args, targets, "\n".join(lines) or "(no targets; the sandbox is built in)")
    return 0


def _group_from_args(args: argparse.Namespace) -> Any:
    from tunebench.load.engine import ClientGroup
    from tunebench.load.workload import load_workload

    groups = []
    opts = _options(args)
    if args.workload:
        wl = load_workload(args.workload)
        groups.append(ClientGroup("main", wl, wl.options(opts), _threads_list(args.threads),
                                  lua_script=getattr(args, "lua", None)))
    for spec in getattr(args, "group", None) or []:
        # NAME=WORKLOAD:T1,T2,...
        try:
            name, rest = spec.split("=", 1)
            wname, threads = rest.split(":", 1)
        except ValueError:
            raise ConfigError(f"--group wants NAME=WORKLOAD:T1,T2,..., got {spec!r}") from None
        wl = load_workload(wname.strip())
        groups.append(ClientGroup(name.strip(), wl, wl.options(opts), _threads_list(threads)))
    if not groups:
        raise ConfigError("give --workload NAME (or --group NAME=WORKLOAD:THREADS)")
    return groups


def _live_line(iv: Interval, t0: float, probed: dict[str, float] | None = None) -> str:
    p95 = iv.lat_ms.get("p95")
    line = (f"[ {iv.t - t0:4.0f}s ] {iv.group} thds: {iv.threads} tps: {iv.tps:.2f} qps: {iv.qps:.2f} "
            f"(r/w/o: {iv.reads:.2f}/{iv.writes:.2f}/{iv.other:.2f}) lat (ms,95%): "
            f"{'-' if p95 is None else f'{p95:.3f}'} err/s: {iv.errors:.2f} reconn/s: {iv.reconnects:.2f}")
    if probed:
        parts = []
        for label, name, fmt in (("srv qps", "server.questions", "{:.0f}"), ("running", "server.threads_running",
                                 "{:.0f}"), ("cpu", "host.local.cpu.busy", "{:.0f}%"),
                                 ("server cpu", "proc.local.server.cpu", "{:.0f}%"),
                                 ("client cpu", "proc.local.client.cpu", "{:.0f}%")):
            if name in probed:
                parts.append(f"{label}: {fmt.format(probed[name])}")
        if parts:
            line += " | " + " ".join(parts)
    return line


def _steps_table(steps: list[dict[str, Any]]) -> str:
    head = f"{'step':>4} {'group':10} {'threads':>7} {'tps':>11} {'qps':>11} {'p95 ms':>8} {'p99 ms':>8} " \
           f"{'cv':>6} {'errors':>7} {'seconds':>7}"
    rows = [head, "-" * len(head)]
    for s in steps:
        p95 = "-" if s["lat_p95_ms"] is None else f"{s['lat_p95_ms']:.3f}"
        p99 = "-" if s["lat_p99_ms"] is None else f"{s['lat_p99_ms']:.3f}"
        cv = "-" if s["cv"] is None else f"{s['cv']:.3f}"
        rows.append(f"{s['step']:>4} {s['group']:10} {s['threads']:>7} {s['tps']:>11.2f} {s['qps']:>11.2f} "
                    f"{p95:>8} {p99:>8} {cv:>6} {s['errors']:>7.0f} {s['seconds']:>7}"
                    + ("  INCOMPLETE" if s.get("incomplete") else ""))
    return "\n".join(rows)


def ssh_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--client-host", action="append", metavar="ssh://USER@HOST[:PORT]",
                    help="run the sysbench load on this client host (repeatable: the threads are split over the "
                         "hosts, each host recorded as client.GROUP@HOST beside the group total)")
    sp.add_argument("--trust-host-key", action="store_true",
                    help="accept an SSH host key not in known_hosts yet (kept in Tunebench's known_hosts)")
    sp.add_argument("--ssh-key", action="append", metavar="FILE", help="SSH private key (also: agent, ~/.ssh)")


def cmd_run(args: argparse.Namespace) -> int:
    from tunebench.run.experiment import Experiment
    from tunebench.run.spec import RunSpec

    groups = _group_from_args(args)
    spec = RunSpec(groups=tuple(groups), engine=args.engine, step_seconds=args.step_seconds,
                   warmup_seconds=args.warmup_seconds, transport=args.transport, schema=args.schema,
                   workers=args.workers, seed=args.seed, probes=parse_probe_list(args.probes),
                   probe_interval=args.probe_interval, client_hosts=tuple(args.client_host or ()),
                   trust_host_key=args.trust_host_key, ssh_keys=tuple(args.ssh_key or ()))
    spec.validate()
    store = _store(args)
    target = resolve_target(args, store)
    t0 = time.time()
    quiet = args.json
    probed: dict[str, float] = {}

    def on_interval(iv: Interval) -> None:
        if not quiet:
            print(_live_line(iv, t0, probed), flush=True)

    def on_samples(_t: float, values: dict[str, float]) -> None:
        probed.update(values)

    def on_note(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    exp = Experiment(store, target, spec, on_interval=on_interval, on_note=on_note, on_samples=on_samples)
    result = exp.run().to_dict()
    text = f"\nsession {result['session_id']} ({result['status']}), engine {result['engine']}, " \
           f"target {result['target']} {result['server'].get('flavor')} {result['server'].get('version')}\n" \
           + _steps_table(result["steps"])
    if result["status"] == "incomplete":
        text += "\nINCOMPLETE: a step lost its server or a client host; its numbers cover the seconds measured"
    _emit(args, result, text)
    return EXIT_CODES.get(result["status"], 130)


def cmd_prepare(args: argparse.Namespace, cleanup: bool = False) -> int:
    from tunebench.load.prepare import check_schema_name, prepare
    from tunebench.load.prepare import cleanup as do_cleanup
    from tunebench.load.workload import load_workload
    from tunebench.mysql.connect import open_connection
    from tunebench.mysql.target import conn_params

    # Everything the command line says is checked before the server is touched (or started).
    check_schema_name(args.schema, allow_system=cleanup)
    if not cleanup:
        if not args.workload:
            raise ConfigError("prepare needs --workload NAME (a workloads/*.toml name or a .toml path)")
        wl = load_workload(args.workload)
        opts = wl.options(_options(args))
    store = _store(args)
    target = resolve_target(args, store)
    params = conn_params(target, args.transport)
    if cleanup:
        result = do_cleanup(params, args.schema)
        text = f"dropped {', '.join(result['dropped']) or 'nothing'} in {args.schema}" + (
            f"; left alone (not created by Tunebench): {', '.join(result['left_alone'])}"
            if result["left_alone"] else "")
        _emit(args, result, text)
        return 0
    open_connection(params, target.name).close()
    say = (lambda _m: None) if args.json else print
    result = prepare(params, args.schema, opts, wl.prepare_rows(opts), threads=args.prepare_threads, progress=say)
    _emit(args, result, f"prepared {result['tables_created']} table(s) x {result['rows_per_table']} rows "
                        f"in {args.schema} ({result['seconds']} s)")
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    store = _store(args)
    if args.action == "list":
        sessions = store.list_sessions()
        for s in sessions:
            steps = s["summary"].get("steps", [])
            s["best_tps"] = max((x["tps"] for x in steps), default=None)
        lines = [f"{'id':>4}  {'started':19}  {'status':9}  {'engine':8}  {'workload':22}  {'target':10}  "
                 f"{'server':18}  best tps"]
        for s in sessions:
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s["started_at"]))
            best = "-" if s["best_tps"] is None else f"{s['best_tps']:.1f}"
            lines.append(f"{s['id']:>4}  {started}  {s['status']:9}  {s['engine']:8}  {s['workload'][:22]:22}  "
                         f"{s['target'][:10]:10}  {(s['flavor'] or '')} {(s['version'] or ''):10}  {best}")
        _emit(args, sessions, "\n".join(lines))
        return 0
    if args.id is None:
        raise ConfigError(f"sessions {args.action} needs a session {'file' if args.action == 'import' else 'ID'}")
    if args.action == "import":
        ids = store.import_sessions(args.id)
        print(f"imported {len(ids)} session(s) from {args.id}: {', '.join(map(str, ids))}")
        return 0
    try:
        sid = int(args.id)
    except ValueError:
        raise ConfigError(f"a session ID is a number, not {args.id!r}") from None
    if not 1 <= sid <= MAX_ID:
        raise ConfigError(f"no session {args.id} (IDs are from 1 to {MAX_ID})")
    if args.action in ("rename", "tag", "note"):
        if args.text is None:
            raise ConfigError(f"sessions {args.action} {sid} needs the text ('' clears)")
        field = {"rename": "name", "tag": "tags", "note": "notes"}[args.action]
        store.update_session(sid, **{field: args.text})
        return 0
    if args.action == "delete":
        store.get_session(sid)
        store.delete_session(sid)
        shrunk = store.shrink()
        print(f"deleted session {sid}" + (" (store file compacted)" if shrunk else ""))
        return 0
    if args.action == "export":
        if args.format == "sqlite" and not args.output:
            raise ConfigError("--format sqlite writes a file: give it with --output FILE.tbsession")
        if args.output:
            _check_output(Path(args.output), overwrite=args.format != "sqlite")
        store.get_session(sid)
    if args.action == "export" and args.format == "sqlite":
        out_path = store.export_session(sid, args.output)
        print(f"wrote {out_path}: import it with `tunebench sessions import {out_path}`", file=sys.stderr)
        return 0
    session = store.get_session(sid)
    series = store.series(sid)
    if args.action == "show":
        session["series"] = {
            name: {"kind": d.kind, "points": len(d.v), "min": float(d.v.min()), "mean": float(d.v.mean()),
                   "max": float(d.v.max())} for name, d in sorted(series.items()) if len(d.v)
        }
        session["variables_count"] = len(session.pop("variables"))
        text = json.dumps({k: v for k, v in session.items() if k not in ("series", "events")}, indent=2,
                          default=str) + "\n\nseries:\n" + "\n".join(
            f"  {n:40} {s['points']:6} pts  min {s['min']:.3f}  mean {s['mean']:.3f}  max {s['max']:.3f}"
            for n, s in session["series"].items())
        _emit(args, session, text)
        return 0
    # export
    if args.format == "json":
        session["series"] = {n: {"kind": d.kind, "t": d.t.tolist(), "v": d.v.tolist()} for n, d in series.items()}
        out = json.dumps(session, indent=2, default=str)
    elif args.format == "md":
        from tunebench.core.results import markdown

        out = markdown(session)
    else:
        from tunebench.store.export import to_csv

        out = to_csv(session, series)
    if args.output:
        try:
            Path(args.output).write_text(out)
        except OSError as exc:
            raise ConfigError(f"cannot write {args.output}: {exc.strerror}") from None
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(out)
    return 0


def _check_output(path: Path, overwrite: bool) -> None:
    """An export's destination, checked before anything is computed or written."""
    if path.is_dir():
        raise ConfigError(f"--output {path} is a directory; give a file name")
    if not path.parent.is_dir():
        raise ConfigError(f"--output {path}: the directory {path.parent} does not exist")
    if path.exists() and not overwrite:
        raise ConfigError(f"--output {path} exists; choose another name")
    import os

    if not os.access(path if path.exists() else path.parent, os.W_OK):
        raise ConfigError(f"--output {path}: not writable")


def cmd_sweep(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from tunebench.core.results import markdown
    from tunebench.load.recipes import load_spec
    from tunebench.run.experiment import Experiment
    from tunebench.run.spec import plan_sweep, sweep_run_spec

    sweep = load_spec(args.file)
    if args.threads:  # in the spec itself: the plan, its time estimate and the session say so
        schedule = _threads_list(args.threads)
        sweep = sweep.with_overrides(groups=tuple(replace(g, threads=schedule) for g in sweep.groups))
    sweep = sweep.with_overrides(step_seconds=args.step_seconds, warmup_seconds=args.warmup_seconds,
                                 cooldown_seconds=args.cooldown_seconds)
    spec = sweep_run_spec(sweep, transport=args.transport, schema=args.schema, workers=args.workers,
                          probes=parse_probe_list(args.probes), probe_interval=args.probe_interval,
                          client_hosts=tuple(args.client_host or ()), trust_host_key=args.trust_host_key,
                          ssh_keys=tuple(args.ssh_key or ()))
    spec.validate()
    store = _store(args)
    if args.resume is not None:
        old = store.get_session(args.resume)
        if not sweep.optional and old["config"].get("sweep_fingerprint") != sweep.fingerprint():
            raise ConfigError(f"session {args.resume} was not recorded from this sweep spec; cannot resume it")
    big = sweep.config_count > CONFIRM_CONFIGS or sweep.estimated_seconds > CONFIRM_SECONDS
    if big and not args.plan and not args.yes:  # refused before the server is touched
        raise ConfigError(f"sweep {sweep.name}: {sweep.config_count:,} configurations, about "
                          f"{_duration(sweep.estimated_seconds)} of load; look at it with --plan, then run it "
                          "with --yes")
    target = resolve_target(args, store)
    plan, _info = plan_sweep(sweep, target, spec.transport, note=lambda m: print(m, file=sys.stderr))
    if args.plan:
        _emit(args, plan.to_dict(), _plan_text(plan))
        return 0
    if not args.json:
        print(_plan_text(plan), flush=True)
    t0 = time.time()
    quiet = args.json

    def on_interval(iv: Interval) -> None:
        if not quiet:
            print(_live_line(iv, t0), flush=True)

    def on_note(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    exp = Experiment(store, target, spec, on_interval=on_interval, on_note=on_note, plan=plan, resume=args.resume,
                     reset_data=sweep.reset_data, cooldown_seconds=sweep.cooldown_seconds)
    result = exp.run().to_dict()
    if args.json:
        _emit(args, result, "")
    else:
        session = store.get_session(result["session_id"])
        print("\n" + markdown(session))
        if result.get("restored"):
            print("restored: " + ", ".join(f"{r['name']}={r['original']} ({r['state']})" for r in result["restored"]
                                           if r.get("kind") != "probe"))
    return EXIT_CODES.get(result["status"], 130)


def cmd_restore(args: argparse.Namespace) -> int:
    from tunebench.run.tuning import restore_pending

    store = _store(args)
    done, live = restore_pending(store, force=args.force, note=lambda m: print(m, file=sys.stderr))
    failed = [d for d in done if d["state"] != "restored"]
    lines = [f"restored {d['name']} = {d['original']} on {d['target']}" if d["state"] == "restored" else
             f"FAILED {d['name']} on {d['target']}: {d.get('message')}" for d in done]
    lines += [f"left alone (run in progress, pid {r['owner_pid']}): {r['name']} on {r['target_name']}" for r in live]
    _emit(args, {"restored": done, "in_progress": live}, "\n".join(lines) or "nothing to restore")
    return 1 if failed else 0


def _auto_restore(args: argparse.Namespace, knobs: bool = True) -> None:
    """At every start: sessions whose process died are marked interrupted, and (unless `knobs` is off) knobs
    and probe settings a crashed or killed run left changed are put back; each said in one line."""
    path = Path(args.db) if args.db else paths.default_db_path()
    if not path.exists():
        return
    from tunebench.run.tuning import restore_pending, restored_lines
    from tunebench.store.repo import Store

    store = Store(path)
    try:
        orphans = store.mark_orphans()
        if orphans:
            print(f"tunebench: session {', '.join(map(str, orphans))} marked interrupted (its process is gone)",
                  file=sys.stderr)
        if not knobs or not store.journal_pending():
            return
        done, _live = restore_pending(store, note=lambda m: print(m, file=sys.stderr))
    finally:
        store.close()
    for line in restored_lines(done):
        print(f"tunebench: {line}", file=sys.stderr)


def cmd_gui(args: argparse.Namespace) -> int:
    from tunebench.ui.launch import has_display, in_own_session, rerun_in_own_session

    if not has_display():
        print("no display: running the headless demo instead (set DISPLAY, or QT_QPA_PLATFORM=offscreen)",
              file=sys.stderr)
        ns = argparse.Namespace(**{**vars(args), "step_seconds": 5})
        return cmd_demo(ns)
    if not in_own_session():
        return rerun_in_own_session(sys.argv[1:])  # Qt is loaded there, not here
    try:
        from tunebench.ui.app import run_gui
    except ImportError as exc:
        raise ConfigError(f"the GUI needs PySide6 and pyqtgraph ({exc}); `make run` installs them") from None
    return run_gui(Path(args.db) if args.db else paths.default_db_path(), demo=args.demo,
                   screenshot=args.screenshot, full_screen=args.full_screen, theme=args.theme,
                   replay=args.replay, stage=args.stage)


def cmd_demo(args: argparse.Namespace) -> int:
    """The headless demo (`make run` without a display): sandbox + point selects, both engines."""
    print("Tunebench headless demo: embedded sandbox, oltp_point_select at 1 and 4 threads, both engines")
    for engine in ("builtin", "sysbench"):
        # Parsed like a typed `run`, so every option the run command grows has its default here too.
        argv = ["run", "--workload", "oltp_point_select", "--threads", "1,4", "--engine", engine,
                "--step-seconds", str(args.step_seconds), "--target", "sandbox"]
        ns = build_parser().parse_args([*(["--db", args.db] if getattr(args, "db", None) else []), *argv])
        print(f"\n=== engine: {engine}")
        rc = cmd_run(ns)
        if rc:
            return rc
    print("\nSessions are in the store: tunebench sessions list")
    return 0


# ---- parser ------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="tunebench", description="MySQL-family tuning workbench (headless CLI)")
    p.add_argument("--version", action="version", version=f"tunebench {__version__}")
    p.add_argument("--db", help="session store file (default: under the user data dir)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def common(sp: argparse.ArgumentParser, target: bool = True) -> None:
        sp.add_argument("--json", action="store_true", help="machine-readable output")
        if target:
            sp.add_argument("--target", help="sandbox (default), a saved target name, or mysql://user@host:port")
            sp.add_argument("--transport", choices=["socket", "tcp"], help="UNIX socket or TCP (default: socket)")
            sp.add_argument("--schema", default="tunebench", help="schema for the sbtest tables")

    def workload_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--workload", help="workload name (workloads/*.toml) or path to a .toml file")
        sp.add_argument("--tables", type=_int_in(1, 100_000), help="number of sbtest tables")
        sp.add_argument("--table-size", type=_int_in(0, 2**31 - 1), help="rows per table")
        sp.add_argument("-o", "--option", action="append", metavar="NAME=VALUE", help="any sysbench OLTP option")

    sp = sub.add_parser("doctor", help="what this machine has: driver, sysbench, servers, keyring, sandbox, probes")
    sp.add_argument("--target", help="check the probes against this target (default: the sandbox, if running)")
    sp.add_argument("--transport", choices=["socket", "tcp"])
    common(sp, target=False)
    sp.set_defaults(func=cmd_doctor)

    sp = sub.add_parser("sandbox", help="start/stop/status of the embedded sandbox server")
    sp.add_argument("action", choices=["start", "stop", "status"])
    sp.add_argument("--set", action="append", metavar="OPTION=VALUE", help="my.cnf override (start)")
    sp.add_argument("--cpus", help="bind the server to these CPUs (taskset list, e.g. 0 or 0-1)")
    sp.add_argument("--option-file", metavar="PATH",
                    help="start: the [mysqld] options of this file as overrides (a missing file: none)")
    common(sp, target=False)
    sp.set_defaults(func=cmd_sandbox)

    sp = sub.add_parser("target", help="saved targets (passwords are never stored)")
    sp.add_argument("action", choices=["add", "list", "remove", "restart"])
    sp.add_argument("name", nargs="?")
    sp.add_argument("--socket")
    sp.add_argument("--host")
    sp.add_argument("--port", type=PORT, default=3306)
    sp.add_argument("--user", default="root")
    sp.add_argument("--schema")
    sp.add_argument("--db-host", metavar="ssh://USER@HOST[:PORT]",
                    help="the machine the server runs on: its CPU, disks and mysqld CPU are probed over SSH")
    sp.add_argument("--ssh-key", metavar="FILE", help="private key for --db-host (else agent, ~/.ssh)")
    sp.add_argument("--option-file", metavar="PATH",
                    help="on the db host: the option file Tunebench writes static knobs to (read by the server)")
    sp.add_argument("--restart-command", metavar="CMD",
                    help="on the db host: restarts the server, e.g. 'sudo systemctl restart mariadb'")
    sp.add_argument("--dry-run", action="store_true", help="restart: print what would be done, do nothing")
    sp.add_argument("--replace", action="store_true", help="add: overwrite a saved target of that name")
    common(sp, target=False)
    sp.set_defaults(func=cmd_target)

    sp = sub.add_parser("prepare", help="create and load the sbtest tables for a workload")
    workload_opts(sp)
    sp.add_argument("--prepare-threads", type=_int_in(1, 256), default=4)
    common(sp)
    sp.set_defaults(func=cmd_prepare)

    sp = sub.add_parser("cleanup", help="drop the tables Tunebench created in the schema")
    common(sp)
    sp.set_defaults(func=lambda a: cmd_prepare(a, cleanup=True))

    sp = sub.add_parser("run", help="run a workload over concurrency steps and record a session")
    workload_opts(sp)
    sp.add_argument("--threads", default="1", help="concurrency steps, e.g. 1,4,16")
    sp.add_argument("--group", action="append", metavar="NAME=WORKLOAD:T1,T2",
                    help="an extra client group running at the same time")
    sp.add_argument("--step-seconds", type=_int_in(1, SECONDS), default=10)
    sp.add_argument("--warmup-seconds", type=_int_in(0, SECONDS), default=0)
    sp.add_argument("--engine", default="builtin", help="builtin or sysbench")
    sp.add_argument("--lua", help="sysbench engine: run this Lua script instead of the workload's")
    sp.add_argument("--workers", type=_int_in(1, 1024), help="builtin engine worker processes (default: CPUs)")
    sp.add_argument("--seed", type=_int_in(0, 2**32 - 1), help="random seed of the builtin engine")
    sp.add_argument("--probes", metavar="LIST",
                    help="probes to record: status,waits,metrics,cpu,proc (default: all that work here), or none")
    sp.add_argument("--probe-interval", type=_number, default=1.0, metavar="SECONDS",
                    help="probe sampling interval, 0.25-60 s (default 1)")
    ssh_options(sp)
    common(sp)
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser("sweep", help="run a tuning sweep: knob x knob x concurrency, restored afterwards")
    sp.add_argument("file", help="sweep TOML file, or a recipe name from workloads/recipes")
    sp.add_argument("--plan", action="store_true", help="print the plan (configurations, restarts, time) and stop")
    sp.add_argument("--threads", help="override the concurrency steps, e.g. 4,16")
    sp.add_argument("--step-seconds", type=_int_in(1, SECONDS))
    sp.add_argument("--warmup-seconds", type=_int_in(0, SECONDS))
    sp.add_argument("--cooldown-seconds", type=_int_in(0, SECONDS))
    sp.add_argument("--resume", type=_int_in(1, MAX_ID), metavar="SESSION",
                    help="continue this session after its last done step")
    sp.add_argument("--yes", action="store_true",
                    help=f"run a sweep of more than {CONFIRM_CONFIGS} configurations or "
                         f"{CONFIRM_SECONDS // 3600} h without asking")
    sp.add_argument("--workers", type=_int_in(1, 1024))
    sp.add_argument("--probes", metavar="LIST")
    sp.add_argument("--probe-interval", type=_number, default=1.0, metavar="SECONDS")
    ssh_options(sp)
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--target", help="sandbox (default), a saved target name, or mysql://user@host:port")
    sp.add_argument("--transport", choices=["socket", "tcp"])
    sp.add_argument("--schema")
    sp.set_defaults(func=cmd_sweep)

    sp = sub.add_parser("restore", help="put back knobs a crashed or killed run left changed (the journal)")
    sp.add_argument("--force", action="store_true", help="also entries of a run that still seems alive")
    common(sp, target=False)
    sp.set_defaults(func=cmd_restore)

    sp = sub.add_parser("sessions", help="recorded sessions: list, show, export, import, rename, tag, note, delete")
    sp.add_argument("action", choices=["list", "show", "export", "import", "rename", "tag", "note", "delete"])
    sp.add_argument("id", nargs="?", help="session ID (import: the session file)")
    sp.add_argument("text", nargs="?", help="rename/tag/note: the new name, comma-separated tags, or note")
    sp.add_argument("--format", choices=["csv", "json", "md", "sqlite"], default="csv",
                    help="csv: every series on the 1-second timeline; json: session, events and raw samples; "
                         "md: result tables (steps, sweep curves, best-to-best, ratios) as Markdown; "
                         "sqlite: the session as a file another Tunebench imports (needs --output)")
    sp.add_argument("--output", "-O", help="export to this file instead of stdout")
    common(sp, target=False)
    sp.set_defaults(func=cmd_sessions)

    sp = sub.add_parser("gui", help="the workbench window (also: tunebench with no arguments)")
    sp.add_argument("--demo", action="store_true", help="run a short demo on the sandbox with one knob flip")
    sp.add_argument("--replay", type=_int_in(1, MAX_ID), metavar="SESSION",
                    help="open a recorded session in the dashboard")
    sp.add_argument("--stage", action="store_true",
                    help="stage mode: full screen, big, high contrast, chosen plots, F1-F8 hotkeys")
    sp.add_argument("--screenshot", metavar="FILE.png",
                    help="with --demo or --replay: render the window to FILE and exit")
    sp.add_argument("--full-screen", action="store_true", help="full screen")
    sp.add_argument("--theme", choices=["light", "dark", "stage"])
    sp.set_defaults(func=cmd_gui)

    sp = sub.add_parser("demo", help="short headless demo on the sandbox")
    sp.add_argument("--step-seconds", type=_int_in(1, SECONDS), default=5)
    sp.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        args = parser.parse_args([*(sys.argv[1:] if argv is None else argv), "gui"])
    try:
        # `sandbox start` restores after the server is up (see cmd_sandbox)
        _auto_restore(args, knobs=args.command not in ("restore", "doctor", "sandbox"))
        return int(args.func(args) or 0)
    except TunebenchError as exc:
        print(f"tunebench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tunebench: interrupted", file=sys.stderr)
        return 130
