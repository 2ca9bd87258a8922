"""The command line: every command, its arguments and their types (a bad value is one line, exit 2)."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from tunebench import __version__
from tunebench.cli.ci import cmd_ci
from tunebench.cli.doctor import cmd_doctor
from tunebench.cli.gui import cmd_demo, cmd_gui
from tunebench.cli.history import cmd_history
from tunebench.cli.journal import cmd_restore
from tunebench.cli.live import cmd_live
from tunebench.cli.runs import (
    CONFIRM_CONFIGS,
    CONFIRM_SECONDS,
    cmd_calibrate,
    cmd_cleanup,
    cmd_prepare,
    cmd_run,
    cmd_sweep,
    cmd_tune,
)
from tunebench.cli.servers import cmd_servers
from tunebench.cli.sessions import MAX_ID, cmd_sessions
from tunebench.cli.targets import cmd_sandbox, cmd_target
from tunebench.cli.workloads import cmd_check, cmd_workloads
from tunebench.core.busy import BUSY_PCT


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


def _busy(text: str) -> float | None:
    """--busy-threshold: a percentage of the machine, or off."""
    return None if text.strip().lower() == "off" else _number(text)


SECONDS = 86_400
PORT = _int_in(1, 65535)


def ssh_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--client-host", action="append", metavar="ssh://USER@HOST[:PORT]",
                    help="run the load (sysbench, or the builtin engine's workers) on this client host "
                         "(repeatable: the threads are split over the hosts, each host recorded as client.GROUP@HOST "
                         "beside the group total)")
    sp.add_argument("--remote-python", default="python3.11", metavar="COMMAND",
                    help="the builtin engine on client hosts: the interpreter there that imports this Tunebench "
                         "(default python3.11; settings may come first: 'PYTHONPATH=/opt/tunebench/app python3.11')")
    sp.add_argument("--trust-host-key", action="store_true",
                    help="accept an SSH host key not in known_hosts yet (kept in Tunebench's known_hosts)")
    sp.add_argument("--ssh-key", action="append", metavar="FILE", help="SSH private key (also: agent, ~/.ssh)")


def metrics_option(sp: argparse.ArgumentParser, what: str = "the run's") -> None:
    sp.add_argument("--metrics-listen", metavar="HOST:PORT",
                    help=f"serve {what} live series for Prometheus at http://HOST:PORT/metrics (OpenMetrics), e.g. "
                         "127.0.0.1:9464; nothing listens without it")
    sp.add_argument("--metrics-token-file", metavar="FILE",
                    help="a file (mode 600) holding a bearer token every scrape must send (Prometheus: "
                         "authorization: {credentials_file: FILE}); without it the endpoint has no authentication")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="tunebench", description="MySQL-family tuning workbench (headless CLI)")
    p.add_argument("--version", action="version", version=f"tunebench {__version__}")
    p.add_argument("--db", help="session store: a file (default: under the user data dir; also $TUNEBENCH_DB), or a "
                                "server database shared by a team, postgresql+psycopg://USER@HOST:PORT/DB or "
                                "mysql+mysqlconnector://USER@HOST:PORT/DB (its password from "
                                "$TUNEBENCH_DB_PASSWORD or the keyring, never in the URL)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def common(sp: argparse.ArgumentParser, target: bool = True) -> None:
        sp.add_argument("--json", action="store_true", help="machine-readable output")
        if target:
            sp.add_argument("--target", help="sandbox (default), a saved target name, or mysql://user@host:port")
            sp.add_argument("--server", metavar="NAME",
                            help="the sandbox of this server (`tunebench servers list`; a unique prefix: mysql-9)")
            sp.add_argument("--transport", choices=["socket", "tcp", "tcp+tls"],
                            help="UNIX socket, TCP, or TCP with TLS required (default: socket)")
            sp.add_argument("--schema", help="the schema of the workload's tables (default: one per family: "
                                             "tunebench for OLTP, tunebench_tpcc, tunebench_dbstress, "
                                             "tunebench_iibench, tunebench_lua_SCRIPT; cleanup: all of them)")

    def workload_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--workload", help="workload name (workloads/*.toml) or path to a .toml file")
        sp.add_argument("--lua", metavar="PATH", help="any sysbench Lua script, unchanged: its own options with -o, "
                                                      "its prepare/cleanup/check, run by the sysbench engine")
        sp.add_argument("--tables", type=_int_in(1, 100_000), help="number of tables (OLTP) or table sets (TPC-C)")
        sp.add_argument("--table-size", type=_int_in(0, 2**31 - 1), help="rows per table (OLTP)")
        sp.add_argument("-o", "--option", action="append", metavar="NAME=VALUE",
                        help="an option of the workload's family (`tunebench workloads` lists them)")

    sp = sub.add_parser("doctor", help="what this machine has: driver, sysbench, servers, keyring, sandbox, probes")
    sp.add_argument("--target", help="check the probes against this target (default: the sandbox, if running)")
    sp.add_argument("--transport", choices=["socket", "tcp", "tcp+tls"])
    common(sp, target=False)
    sp.set_defaults(func=cmd_doctor)

    sp = sub.add_parser("sandbox", help="start/stop/status of the embedded sandbox server")
    sp.add_argument("action", choices=["start", "stop", "status"])
    sp.add_argument("--server", metavar="NAME",
                    help="the sandbox of this server (`tunebench servers list`; a unique prefix: mysql-9)")
    sp.add_argument("--set", action="append", metavar="OPTION=VALUE", help="my.cnf override (start)")
    sp.add_argument("--cpus", help="bind the server to these CPUs (taskset list, e.g. 0 or 0-1)")
    sp.add_argument("--option-file", metavar="PATH",
                    help="start: the [mysqld] options of this file as overrides (a missing file: none)")
    common(sp, target=False)
    sp.set_defaults(func=cmd_sandbox)

    sp = sub.add_parser("servers", help="the servers Tunebench can sandbox: list, add, fetch, remove")
    sp.add_argument("action", choices=["list", "add", "fetch", "remove"])
    sp.add_argument("what", nargs="?", metavar="PATH|KIT|NAME",
                    help="add: a basedir or tarball; fetch: mysql, mariadb-11.8 or mariadb-10.5; "
                         "remove: a server's name")
    sp.add_argument("--name", help="add: the name to give it (default: FLAVOR-VERSION)")
    sp.add_argument("--refresh", action="store_true", help="fetch: download again even if the kit is here")
    common(sp, target=False)
    sp.set_defaults(func=cmd_servers)

    sp = sub.add_parser("target", help="saved targets (passwords are never stored)")
    sp.add_argument("action", choices=["add", "list", "remove", "restart", "test"])
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
    sp.add_argument("--ssl-mode", metavar="MODE",
                    help="TLS as the mysql client's: DISABLED, PREFERRED (default), REQUIRED, VERIFY_CA, "
                         "VERIFY_IDENTITY")
    sp.add_argument("--ssl-ca", metavar="FILE", help="the CA that signed the server's certificate (VERIFY_CA and up)")
    sp.add_argument("--ssl-cert", metavar="FILE", help="a client certificate (with --ssl-key)")
    sp.add_argument("--ssl-key", metavar="FILE", help="the client certificate's private key")
    sp.add_argument("--get-server-public-key", action="store_true",
                    help="caching_sha2_password without TLS: take the server's RSA public key (unverified: "
                         "prefer TLS)")
    sp.add_argument("--dry-run", action="store_true", help="restart: print what would be done, do nothing")
    sp.add_argument("--replace", action="store_true", help="add: overwrite a saved target of that name")
    common(sp, target=False)
    sp.set_defaults(func=cmd_target)

    sp = sub.add_parser("prepare", help="create and load a workload's tables (sbtest, TPC-C's, ...)")
    workload_opts(sp)
    sp.add_argument("--prepare-threads", type=_int_in(1, 256), default=4)
    common(sp)
    sp.set_defaults(func=cmd_prepare)

    sp = sub.add_parser("check", help="a workload family's consistency conditions on the prepared data (TPC-C 1-4)")
    workload_opts(sp)
    common(sp)
    sp.set_defaults(func=cmd_check)

    sp = sub.add_parser("workloads", help="the workload families, their options and transactions, and workloads")
    sp.add_argument("--family", help="only this family")
    common(sp, target=False)
    sp.set_defaults(func=cmd_workloads)

    sp = sub.add_parser("cleanup", help="drop the tables Tunebench created in the schema (with --lua: the "
                                        "script's own cleanup)")
    sp.add_argument("--lua", metavar="PATH", help="run this sysbench Lua script's cleanup command")
    sp.add_argument("-o", "--option", action="append", metavar="NAME=VALUE", help="an option of the --lua script")
    common(sp)
    sp.set_defaults(func=cmd_cleanup)

    sp = sub.add_parser("run", help="run a workload over concurrency steps and record a session")
    workload_opts(sp)
    sp.add_argument("--threads", default="1", help="concurrency steps, e.g. 1,4,16")
    sp.add_argument("--group", action="append", metavar="NAME=WORKLOAD:T1,T2[@R1,R2]",
                    help="an extra client group running at the same time (@: its rates, open loop)")
    sp.add_argument("--rate", metavar="R1,R2",
                    help="open loop: transactions per second for the group, one per step (or one for all steps); "
                         "--threads is then the pool of connections serving it, and latency counts from each "
                         "transaction's intended start (queue wait included)")
    sp.add_argument("--arrival", choices=("poisson", "fixed"), default="poisson",
                    help="open loop: arrivals as a Poisson process (default) or evenly spaced")
    sp.add_argument("--latency-limit", type=_number, metavar="MS",
                    help="open loop: a transaction already later than this when a connection is free is skipped "
                         "and counted, never run (pgbench's --latency-limit); those over it are counted late")
    sp.add_argument("--step-seconds", type=_int_in(1, SECONDS), default=10)
    sp.add_argument("--warmup-seconds", type=_int_in(0, SECONDS), default=0)
    sp.add_argument("--server-wait", type=_int_in(1, 3600), default=30, metavar="SECONDS",
                    help="how long the run waits for a server that stopped answering before it gives up (30)")
    sp.add_argument("--busy-threshold", type=_busy, default=BUSY_PCT, metavar="PCT",
                    help="a live change's verdict leaves out the seconds in which other processes used more than "
                         f"PCT %% of the machine's CPU ({BUSY_PCT:g}; off: judge them too)")
    sp.add_argument("--engine", help="builtin or sysbench (default: builtin; sysbench for --lua)")
    sp.add_argument("--workers", type=_int_in(1, 1024), help="builtin engine worker processes (default: CPUs)")
    sp.add_argument("--seed", type=_int_in(0, 2**32 - 1),
                    help="random seed of the builtin engine: the same seed sends each connection's same draws again "
                         "(default: -o rand_seed, else time based; oltp_insert's ids without auto_inc never repeat)")
    sp.add_argument("--probes", metavar="LIST",
                    help="probes to record: status,waits,metrics,tables,cpu,proc (default, `all`: all that work "
                         "here), statements (statement digests) and profile (perf) only when asked "
                         "(all,statements), or none")
    sp.add_argument("--probe-interval", type=_number, default=1.0, metavar="SECONDS",
                    help="probe sampling interval, 0.25-60 s (default 1)")
    ssh_options(sp)
    metrics_option(sp)
    common(sp)
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser("calibrate", help="this machine's noise floor for a load: the same configuration in eight "
                                          "alternating blocks (A/A); later verdicts inside it say so")
    workload_opts(sp)
    sp.add_argument("--threads", default="8", help="the load's one thread count (default 8)")
    sp.add_argument("--block-seconds", type=_int_in(2, 600), default=10,
                    help="each block's measured seconds (default 10: as Confirm's, about 2 minutes in all)")
    sp.add_argument("--settle-seconds", type=_int_in(0, 600), default=5, help="before the first block (default 5)")
    sp.add_argument("--warmup-seconds", type=_int_in(0, SECONDS), default=10)
    sp.add_argument("--busy-threshold", type=_busy, default=BUSY_PCT, metavar="PCT",
                    help=f"busy seconds left out: other processes over PCT %% of the CPU ({BUSY_PCT:g}; off)")
    sp.add_argument("--engine", help="builtin or sysbench (default: builtin)")
    sp.add_argument("--workers", type=_int_in(1, 1024), help="builtin engine worker processes (default: CPUs)")
    sp.add_argument("--probes", metavar="LIST", help="probes to record (default: all that work here)")
    common(sp)
    sp.set_defaults(func=cmd_calibrate)

    sp = sub.add_parser("tune", help="search better values of dynamic knobs on the running load (optuna TPE), "
                                     "confirmed A/B/A/B; every knob put back")
    workload_opts(sp)
    sp.add_argument("--threads", default="8", help="the load's one thread count (default 8)")
    sp.add_argument("--rate", metavar="R", help="open loop: transactions per second (then --objective p99 is the one "
                                                "that moves)")
    sp.add_argument("--knob", action="append", metavar="NAME=LO..HI[:log] | NAME=V1,V2,...",
                    help="a dynamic knob to search: a range (sizes may use K/M/G; :log for a log scale) or the values "
                         "to try; several --knob search them together")
    sp.add_argument("--budget", default="10m", help="the search's time: 10m, 300s, 1h (default 10m); the A/B/A/B "
                                                    "confirmation of the best comes after it")
    sp.add_argument("--trial-seconds", type=_int_in(5, 3600), default=20, help="measured seconds per trial (20)")
    sp.add_argument("--calibrate", action="store_true",
                    help="first an A/A of eight blocks of the load as it is (as `tunebench calibrate`): a confirmed "
                         "best inside this noise floor is no clear improvement")
    sp.add_argument("--settle-seconds", type=_int_in(0, 600), default=5,
                    help="seconds left out after each change (5)")
    sp.add_argument("--warmup-seconds", type=_int_in(0, 3600), default=10,
                    help="seconds of load before the first baseline (10)")
    sp.add_argument("--objective", choices=("tps", "p99"), default="tps",
                    help="what a trial is judged on: TPS (higher) or p99 latency (lower)")
    sp.add_argument("--seed", type=_int_in(0, 2**32 - 1), default=0, help="the sampler's seed (0)")
    sp.add_argument("--engine", help="builtin or sysbench (default: builtin; sysbench for --lua)")
    sp.add_argument("--workers", type=_int_in(1, 1024), help="builtin engine worker processes (default: CPUs)")
    sp.add_argument("--probes", metavar="LIST", help="probes to record (default: all that work here), or none")
    sp.add_argument("--server-wait", type=_int_in(1, 3600), default=30, metavar="SECONDS",
                    help="how long the run waits for a server that stopped answering before it gives up (30)")
    sp.add_argument("--verbose", action="store_true", help="print every second's line too")
    metrics_option(sp)
    common(sp)
    sp.set_defaults(func=cmd_tune)

    sp = sub.add_parser("sweep", help="run a tuning sweep: knob x knob x concurrency, restored afterwards")
    sp.add_argument("file", help="sweep TOML file, or a recipe name from workloads/recipes")
    sp.add_argument("--plan", action="store_true", help="print the plan (configurations, restarts, time) and stop")
    sp.add_argument("--threads", help="override the concurrency steps, e.g. 4,16")
    sp.add_argument("--step-seconds", type=_int_in(1, SECONDS))
    sp.add_argument("--warmup-seconds", type=_int_in(0, SECONDS))
    sp.add_argument("--cooldown-seconds", type=_int_in(0, SECONDS))
    sp.add_argument("--slo-p99", type=_number, metavar="MS",
                    help="a sweep over rates: mark each configuration's knee, the highest rate served whose p99 "
                         "(from the intended start) is at most this")
    sp.add_argument("--resume", type=_int_in(1, MAX_ID), metavar="SESSION",
                    help="continue this session after its last done step")
    sp.add_argument("--calibrate", action="store_true",
                    help="first this machine's noise floor for the load at each thread count (A/A, as `tunebench "
                         "calibrate`, ~2 min each): single-run ratios inside it say so")
    sp.add_argument("--yes", action="store_true",
                    help=f"run a sweep of more than {CONFIRM_CONFIGS} configurations or "
                         f"{CONFIRM_SECONDS // 3600} h without asking")
    sp.add_argument("--workers", type=_int_in(1, 1024))
    sp.add_argument("--probes", metavar="LIST",
                    help="probes to record: status,waits,metrics,tables,cpu,proc (default: all that work here), "
                         "profile (perf, only when asked: every step keeps its stacks), or none")
    sp.add_argument("--probe-interval", type=_number, default=1.0, metavar="SECONDS",
                    help="probe sampling interval, 0.25-60 s (default 1)")
    ssh_options(sp)
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--target", help="sandbox (default), a saved target name, or mysql://user@host:port")
    sp.add_argument("--server", metavar="NAME",
                    help="the sandbox of this server (`tunebench servers list`; a unique prefix: mysql-9); a sweep "
                         "with a server axis runs on each of its servers' sandboxes instead")
    sp.add_argument("--transport", choices=["socket", "tcp", "tcp+tls"])
    sp.add_argument("--schema")
    metrics_option(sp)
    sp.set_defaults(func=cmd_sweep)

    sp = sub.add_parser("live", help="a running run's knobs from another terminal: flip one, or confirm a flip "
                                     "(ABBA BAAB blocks on the running load, a replicated verdict)")
    sp.add_argument("action", choices=["flip", "confirm"])
    sp.add_argument("knob", nargs="?", metavar="NAME[=VALUE|=A,B]",
                    help="flip: NAME=VALUE; confirm: nothing (the last flip), NAME (its last flip) or NAME=A,B")
    sp.add_argument("--block-seconds", type=_int_in(2, 600), default=10,
                    help="confirm: each block's measured seconds (default 10: eight blocks, about 2 minutes)")
    sp.add_argument("--settle-seconds", type=_int_in(0, 600), default=5,
                    help="confirm: seconds left out after each change (default 5)")
    sp.add_argument("--pid", type=_int_in(1, 2**22), help="the run's process when several run on this machine")
    sp.add_argument("--no-wait", dest="wait", action="store_false",
                    help="confirm: return once it started (the verdict comes as the run's event)")
    common(sp, target=False)
    sp.set_defaults(func=cmd_live)

    sp = sub.add_parser("restore", help="put back knobs a crashed or killed run left changed (the journal)")
    sp.add_argument("--force", action="store_true", help="also entries of a run that still seems alive")
    common(sp, target=False)
    sp.set_defaults(func=cmd_restore)

    sp = sub.add_parser("sessions", help="recorded sessions: list, show, export, import, rename, tag, note, delete, "
                                         "diff, profile, push, pull")
    sp.add_argument("action", choices=["list", "show", "export", "import", "rename", "tag", "note", "delete", "diff",
                                       "profile", "push", "pull"])
    sp.add_argument("id", nargs="?", help="session ID (import: the session file)")
    sp.add_argument("text", nargs="?", help="rename/tag/note: the new name, comma-separated tags, or note; "
                                            "diff: the second session's ID")
    sp.add_argument("--step", type=int, help="diff: this step of the first session (default: its best step); "
                                             "profile: this step (default: every profiled step)")
    sp.add_argument("--top", type=int, default=20, help="profile: functions listed per step (default 20)")
    sp.add_argument("--svg", help="profile: write the step's flame graph to this SVG file")
    sp.add_argument("--of", choices=["server", "client"], default="server",
                    help="profile: the server's CPU (default) or the load generator's processes' on this host")
    sp.add_argument("--step-b", type=int, help="diff: this step of the second session (default: --step, or its "
                                               "best step)")
    sp.add_argument("--format", choices=["csv", "json", "md", "sqlite"], default="csv",
                    help="csv: every series on the 1-second timeline; json: session, events and raw samples; "
                         "md: result tables (steps, sweep curves, best-to-best, ratios) as Markdown; "
                         "sqlite: the session as a file another Tunebench imports (needs --output)")
    sp.add_argument("--output", "-O", help="export to this file instead of stdout")
    sp.add_argument("--host", help="list: only the sessions recorded on this machine ('-': those recorded before "
                                   "Tunebench kept the machine's name)")
    sp.add_argument("--to", metavar="STORE", help="push: the store the session is copied into (a file, or a server "
                                                  "database's URL as --db takes it)")
    sp.add_argument("--from", dest="from_", metavar="STORE",
                    help="pull: the store the session is copied from (a shared server store's URL, or a file)")
    sp.add_argument("--again", action="store_true",
                    help="import: also the sessions already here (same recording), as copies; without it they are "
                         "skipped with one line each")
    common(sp, target=False)
    sp.set_defaults(func=cmd_sessions)

    sp = sub.add_parser("ci", help="run a recipe, add its result to a named series, exit 1 only on a regression "
                                   "beyond the series' own noise (Markdown summary, JUnit XML)")
    sp.add_argument("recipe", help="sweep TOML file, or a recipe name from workloads/recipes")
    sp.add_argument("--baseline", required=True, metavar="NAME",
                    help="the series the result joins (the first run under a new name starts it)")
    sp.add_argument("--repeats", type=_int_in(1, 20), default=1, metavar="N",
                    help="run the recipe N times: the new result is their median (default 1)")
    sp.add_argument("--junit", metavar="FILE", help="write JUnit XML here (one test case per load)")
    sp.add_argument("--markdown", metavar="FILE", help="write the Markdown summary here instead of stdout")
    sp.add_argument("--threads", help="override the recipe's concurrency steps, e.g. 4,16")
    sp.add_argument("--step-seconds", type=_int_in(1, SECONDS))
    sp.add_argument("--warmup-seconds", type=_int_in(0, SECONDS))
    sp.add_argument("--probes", metavar="LIST", help="as sweep --probes")
    common(sp)
    sp.set_defaults(func=cmd_ci)

    sp = sub.add_parser("history", help="the sessions of each experiment as a series over time, with the change "
                                        "points found in it: list, show, name")
    sp.add_argument("action", choices=["list", "show", "name"])
    sp.add_argument("series", nargs="?", help="show/name: the series (its name, or its key's first 4+ characters)")
    sp.add_argument("name", nargs="?", help="name: the series' new name ('' takes the name off)")
    sp.add_argument("--min-sessions", type=_int_in(1, 1_000_000), default=1, metavar="N",
                    help="list: only series of at least N sessions")
    common(sp, target=False)
    sp.set_defaults(func=cmd_history)

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
    sp.add_argument("--demo-plan", metavar="FILE",
                    help="run a demo plan hands-free (a TOML file, or a name from workloads/demos: durability, "
                         "knee); with --replay SESSION, rehearse it over that recording at 10x")
    metrics_option(sp, "the window's runs'")
    sp.set_defaults(func=cmd_gui)

    sp = sub.add_parser("demo", help="short headless demo on the sandbox")
    sp.add_argument("--step-seconds", type=_int_in(1, SECONDS), default=5)
    sp.set_defaults(func=cmd_demo)
    return p
