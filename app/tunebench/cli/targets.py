"""Where the load goes: `tunebench sandbox start|stop|status` and saved targets (`tunebench target ...`)."""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunebench.cli.journal import auto_restore
from tunebench.cli.output import emit
from tunebench.cli.resolve import open_store, sandbox
from tunebench.core.errors import ConfigError
from tunebench.core.knobs import cnf_entry
from tunebench.core.target import check_ssl_mode

TARGET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _abs(path: str | None) -> str | None:
    return str(Path(path).expanduser().resolve()) if path else None


def set_overrides(items: list[str]) -> dict[str, str | None]:
    """`sandbox start --set OPTION=VALUE ...` as my.cnf overrides; log_bin=ON/OFF by the sweep axis's rule
    (core/knobs.cnf_entry): ON is `log_bin = binlog` (binlog.000001 ...; `log_bin = ON` named them ON.000001),
    OFF `skip_log_bin`."""
    out: dict[str, str | None] = {}
    for item in items:
        k, eq, v = item.partition("=")
        name = k.strip()
        if not name:
            raise ConfigError(f"--set wants OPTION=VALUE (or OPTION), got {item!r}")
        if name.replace("-", "_").lower() == "log_bin" and v.strip().upper() in ("ON", "1", "OFF", "0"):
            ck, cv = cnf_entry("log_bin", "ON" if v.strip().upper() in ("ON", "1") else "OFF")
            out.pop("log_bin" if ck == "skip_log_bin" else "skip_log_bin", None)
            out[ck] = cv
            continue
        out[name] = v.strip() if eq else None
    return out


def cmd_sandbox(args: argparse.Namespace) -> int:
    sb = sandbox(args)
    if args.action == "start":
        overrides: dict[str, str | None] = {}
        if args.option_file:  # [mysqld] of this file: what a restart command of a remote target passes
            overrides.update(mysqld_options(args.option_file))
        overrides.update(set_overrides(args.set or []))
        # (no run lock here: `tunebench sandbox start --option-file F` is how a target's restart command starts
        # the server again while the sweep that asked for it holds the lock)
        st = sb.start(overrides, cpus=args.cpus)
        auto_restore(args)  # what an interrupted run left changed on it
    elif args.action == "stop":
        with _held(sb, "sandbox stop"):  # issue 43 item 6: beside a live tune `sandbox stop` stopped the server
            st = sb.stop()
    else:
        st = sb.status()
    text = (f"{sb.target_name} {'running' if st.running else 'stopped'}: {st.flavor} {st.version}, "
            f"socket {st.socket}, port {st.port}, pid {st.pid or '-'}, datadir {st.datadir}")
    emit(args, st.to_dict(), text)
    return 0


@contextlib.contextmanager
def _held(sb: Any, what: str) -> Iterator[None]:
    """The sandbox's run lock while it is started again or stopped, when it runs (a stopped one has no run)."""
    from tunebench.mysql.target import conn_params
    from tunebench.run.runlock import RunLock

    if not sb.status().running:
        yield
        return
    lock = RunLock(conn_params(sb.target(), None), sb.target_name, what)
    lock.acquire()
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # its connection went with the server
            lock.release()


def mysqld_options(path: str) -> dict[str, str | None]:
    """The [mysqld] (or [mariadbd], [server]) options of an option file; a missing file has none."""
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

    store = open_store(args)
    if args.action == "add":
        if not args.name or not (args.socket or args.host):
            raise ConfigError("target add NAME needs --socket PATH or --host HOST [--port N]")
        if args.name == "sandbox" or args.name.startswith("sandbox:") or "://" in args.name:
            raise ConfigError("'sandbox', 'sandbox:NAME' and URLs are reserved target names")
        # issue 43 item 18: a name like a/b;c, both transports, a CA file that is not there were all taken
        if not TARGET_NAME.fullmatch(args.name):
            raise ConfigError(f"target name {args.name!r}: letters, digits, '.', '_' and '-' only (up to 64, a "
                              "letter or digit first)")
        if args.socket and args.host:
            raise ConfigError("target add takes --socket PATH or --host HOST, not both (the mysql client would "
                              "use one and ignore the other)")
        for flag, path in (("--ssl-ca", args.ssl_ca), ("--ssl-cert", args.ssl_cert), ("--ssl-key", args.ssl_key)):
            if path and not Path(path).expanduser().is_file():
                raise ConfigError(f"{flag} {path}: no such file")
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
                   option_file=args.option_file, restart_command=args.restart_command,
                   ssl_mode=check_ssl_mode(args.ssl_mode), ssl_ca=_abs(args.ssl_ca), ssl_cert=_abs(args.ssl_cert),
                   ssl_key=_abs(args.ssl_key), get_server_public_key=args.get_server_public_key)
        t.check_tls()
        store.save_target(t)
        emit(args, t.to_dict(), f"target {t.name} saved (no password is stored)")
    elif args.action == "restart":
        return _restart(args, store)
    elif args.action == "test":
        return _test(args, store)
    elif args.action == "remove":
        if not store.delete_target(args.name or ""):
            raise ConfigError(f"unknown target {args.name!r}")
        emit(args, {"removed": args.name}, f"target {args.name} removed")
    else:
        targets = [t.to_dict() for t in store.list_targets()]
        lines = [f"{t['name']:20} {t['socket'] or str(t['host']) + ':' + str(t['port'])} user={t['user']}"
                 for t in targets]
        emit(args, targets, "\n".join(lines) or "(no targets; the sandbox is built in)")
    return 0


def _test(args: argparse.Namespace, store: Any) -> int:
    """`target test NAME`: one connection as a run would open it (its password from the keyring, the password
    file, $MYSQL_PWD, ~/.my.cnf, else asked on the terminal), then what the window's Test connection says: the
    server, its performance_schema, TLS. A failure is one line naming the target, exit 2."""
    from tunebench.run.tasks import read_server_facts

    target = store.get_target(args.name or "")
    if target is None:
        raise ConfigError(f"unknown target {args.name!r}" + ("" if args.name else ": target test NAME"))
    facts = read_server_facts(target)
    emit(args, {"target": target.name, "flavor": facts.flavor, "version": facts.version,
                "performance_schema": facts.performance_schema, "tls": facts.tls},
         facts.connection_line)
    return 0


def _restart(args: argparse.Namespace, store: Any) -> int:
    """`target restart NAME`: its restart command over SSH with the option file as it is, then wait for it."""
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
    emit(args, {"restarted": target.name, "seconds": round(took, 2)},
         f"{target.name} restarted over SSH in {took:.1f} s")
    return 0
