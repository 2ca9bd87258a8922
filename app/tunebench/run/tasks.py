"""The tasks the CLI and the window both run, written once: a server's facts, a workload's data (prepare,
cleanup) and a run's spec from the values a user gives. No Qt; each returns a frozen, typed result."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import mysql.connector

from tunebench.core.busy import BUSY_PCT
from tunebench.core.errors import ConfigError, TargetError, WorkloadError
from tunebench.core.knobs import KnobInfo
from tunebench.core.probe import parse_probe_list
from tunebench.core.results import tls_text
from tunebench.load.capacity import check_disk, free_bytes
from tunebench.load.engine import ClientGroup
from tunebench.load.prepare import RowsProgress, check_schema_name, cleanup, default_schemas
from tunebench.load.workload import DEFAULT_SCHEMA, Workload, load_workload, lua_workload
from tunebench.mysql.connect import ServerInfo, connection_tls, introspect, open_connection, query_all, text_of
from tunebench.mysql.knobs import describe_knobs
from tunebench.mysql.target import ConnParams, Target, conn_params
from tunebench.run.monitor import server_is_local
from tunebench.run.runlock import RunLock
from tunebench.run.spec import RunSpec

MAX_THREADS = 100_000


# ---- server facts ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What one server is, read in one connection: flavor, version, every global variable, and what it says
    about the variables asked for (type, dynamic or not, range, current value)."""

    target: str
    flavor: str
    version: str
    version_full: str
    performance_schema: bool
    info: ServerInfo = field(repr=False)  # what the run layer takes (knob controller, probes)
    variables: Mapping[str, str] = field(repr=False)  # SHOW GLOBAL VARIABLES, names lower-case
    knobs: Mapping[str, KnobInfo] = field(repr=False)  # the names asked for that this server has
    missing: tuple[str, ...] = ()  # the names asked for that this server does not have (nothing was sent)
    tls: Mapping[str, Any] = field(default_factory=dict)  # how this connection travelled (connect.connection_tls)

    def values(self, names: Iterable[str]) -> dict[str, str]:
        """The current values of those of `names` this server has."""
        return {n: self.variables[n] for n in names if n in self.variables}

    @property
    def label(self) -> str:
        """One line naming the server: `sandbox: 10.11.6-MariaDB-0+deb12u1`."""
        return f"{self.target}: {self.variables.get('version', '')}".rstrip(": ")

    @property
    def connection_line(self) -> str:
        """What a connection test shows: `sandbox: MariaDB 10.11.6, performance_schema ON`."""
        return (f"{self.target}: {self.flavor} {self.version}, performance_schema "
                f"{'ON' if self.performance_schema else 'OFF'}" + (f", {tls_text(self.tls)}" if self.tls else ""))


def read_server_facts(target: Target, names: Iterable[str] = (), *, transport: str | None = None,
                      password: str | None = None) -> ServerFacts:
    """Open one connection to `target`, introspect it and describe the variables `names` it has (a name it
    does not have is listed in `missing`, never sent). TargetError when it cannot be reached."""
    params = conn_params(target, transport, password=password)
    conn = open_connection(params, target.name)
    try:
        info = introspect(conn)
        tls = connection_tls(conn, params)
        asked = list(dict.fromkeys(names))
        present = [n for n in asked if n in info.variables]
        knobs = describe_knobs(conn, info, present)
    finally:
        conn.close()
    return ServerFacts(target=target.name, flavor=info.flavor, version=info.version, version_full=info.version_full,
                       performance_schema=info.performance_schema, info=info, variables=info.variables,
                       knobs=knobs, missing=tuple(n for n in asked if n not in info.variables), tls=tls)


# ---- a workload's data: prepare and cleanup -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DataRequest:
    """Prepare (or clean up) checked before any server is touched: schema, workload and its options."""

    schema: str
    cleanup: bool
    workload: Workload | None  # None for cleanup
    options: Mapping[str, Any] = field(repr=False)
    rows: int  # per table (OLTP)
    threads: int  # loader connections
    every_default: bool = False  # a cleanup without a schema: every family's default schema that exists

    @property
    def what(self) -> str:
        """The data set in a few words (the family's): `2 table(s) x 10,000 rows`."""
        return self.workload.family.shape(self.options) if self.workload is not None else ""

    @property
    def busy_text(self) -> str:
        """What a view shows while it runs."""
        return "cleaning up …" if self.cleanup else f"preparing {self.what} …"


@dataclass(frozen=True, slots=True)
class DataOutcome:
    """What prepare or cleanup did; `summary` is the one line the CLI prints and the window shows."""

    action: Literal["prepare", "cleanup"]
    target: str
    schema: str
    tables: int  # prepare: tables (re)created and loaded; cleanup: tables dropped
    rows_per_table: int  # cleanup: 0
    seconds: float
    summary: str
    dropped: tuple[str, ...] = ()  # cleanup: what it dropped; a cancelled prepare: its half-loaded tables
    left_alone: tuple[str, ...] = ()  # cleanup: tables in the schema Tunebench did not create
    cancelled: bool = False  # prepare: stopped by its cancel event before every table was whole
    rows: int = 0  # prepare: rows loaded in all

    def to_dict(self) -> dict[str, Any]:
        """The `--json` output of `tunebench prepare` / `tunebench cleanup`."""
        if self.action == "cleanup":
            return {"schema": self.schema, "dropped": list(self.dropped), "left_alone": list(self.left_alone)}
        return {"schema": self.schema, "tables_created": self.tables, "rows_per_table": self.rows_per_table,
                "rows": self.rows, "rows_per_s": round(self.rows / self.seconds) if self.seconds > 0 else 0,
                "seconds": self.seconds, "cancelled": self.cancelled, "dropped": list(self.dropped)}


def data_request(workload: str | Workload | None, options: Mapping[str, Any] | None = None, *,
                 cleanup: bool = False, schema: str | None = None, threads: int = 4,
                 lua: str | None = None) -> DataRequest:
    """Check everything a prepare/cleanup is given (ConfigError/WorkloadError) without touching a server.
    `lua`: a sysbench Lua script by path, whose own prepare/cleanup run (with its options)."""
    if schema is not None:
        check_schema_name(schema, allow_system=cleanup)
    if lua and workload:
        raise ConfigError("give --workload NAME or --lua PATH, not both")
    script = lua_workload(lua) if lua else workload if isinstance(workload, Workload) and workload.lua else None
    if script is not None:
        where = script.default_schema if schema is None else schema
        return DataRequest(where, cleanup, script, script.options(options), 0, threads)
    if cleanup and workload:  # the window's Cleanup: its workload's tables, in its family's schema
        where = _workload(workload).default_schema if schema is None else schema
        return DataRequest(where, True, None, {}, 0, threads)
    if cleanup:  # no schema given: every family's own (each its tables only)
        where = DEFAULT_SCHEMA if schema is None else schema
        return DataRequest(where, True, None, {}, 0, threads, every_default=schema is None)
    if not workload:
        raise ConfigError("prepare needs --workload NAME (a workloads/*.toml name or a .toml path) or --lua PATH")
    wl = _workload(workload)
    opts = wl.options(options)
    where = wl.default_schema if schema is None else schema
    return DataRequest(where, False, wl, opts, wl.prepare_rows(opts), threads)


def prepare_data(target: Target, request: DataRequest, *, transport: str | None = None,
                 password: str | None = None, progress: Callable[[str], None] | None = None,
                 on_rows: Callable[[RowsProgress], None] | None = None,
                 cancel: threading.Event | None = None) -> DataOutcome:
    """Create and load the workload's tables on `target` (only what is missing or of another shape), or drop
    the tables Tunebench created there; `progress` gets sysbench-like lines while it loads, and how far the
    load is (rows/s, time left) as lines too unless `on_rows` takes it. `cancel` stops the load: the whole
    tables stay, the half-loaded ones are dropped, and the outcome says so."""
    params = conn_params(target, transport, password=password)
    # the server's run lock, as a run takes it (issue 43 item 6: beside a live run `cleanup` dropped its tables,
    # exit 0, and the run died): a server another Tunebench works on is refused, the holder named
    lock = RunLock(params, target.name, "cleanup" if request.cleanup else "prepare")
    lock.acquire()
    try:
        return _prepare_locked(target, request, params, transport, progress, on_rows, cancel)
    finally:
        lock.release()


def _prepare_locked(target: Target, request: DataRequest, params: ConnParams, transport: str | None,
                    progress: Callable[[str], None] | None, on_rows: Callable[[RowsProgress], None] | None,
                    cancel: threading.Event | None) -> DataOutcome:
    if request.cleanup:
        started = time.monotonic()
        open_connection(params, target.name).close()  # a server that refuses us is named as the target
        if request.workload is not None:  # a Lua script's own cleanup
            r = request.workload.family.cleanup(params, request.schema, request.options)
        elif request.every_default:
            r = {"dropped": [], "left_alone": []}
            for schema in default_schemas(params):
                done = cleanup(params, schema)
                r["dropped"] += [f"{schema}.{t}" for t in done["dropped"]]
                r["left_alone"] += [f"{schema}.{t}" for t in done["left_alone"]]
        else:
            r = cleanup(params, request.schema)
        where = "the default schemas" if request.every_default else request.schema
        text = f"dropped {', '.join(r['dropped']) or 'nothing'} in {where}" + (
            f"; left alone (not created by Tunebench): {', '.join(r['left_alone'])}" if r["left_alone"] else "")
        return DataOutcome("cleanup", target.name, request.schema, len(r["dropped"]), 0,
                           round(time.monotonic() - started, 2), text, tuple(r["dropped"]),
                           tuple(r["left_alone"]))
    assert request.workload is not None  # a prepare request always has one (data_request)
    # an unreachable server is named as the target, not "target"
    conn = open_connection(params, target.name)
    try:
        datadir = query_all(conn, "SELECT @@datadir")[0][0]
    finally:
        conn.close()
    space = datadir_space(text_of(datadir), server_is_local(target, transport or target.default_transport()))
    if space is not None and request.workload.family.missing_data(params, request.schema, request.workload,
                                                                  request.options) is not None:
        check_data_fits(request.workload, request.options, space)
    if on_rows is None and progress is not None:
        say = progress

        def as_line(p: RowsProgress) -> None:
            say(p.line())

        on_rows = as_line
    with server_refusals(f"prepare of {request.workload.name} in {request.schema}"):
        r = request.workload.family.prepare(params, request.schema, request.workload, request.options,
                                            request.threads, progress=progress, on_rows=on_rows, cancel=cancel)
    if not r["cancelled"]:
        verify_prepared(request.workload, params, request.schema, request.options)
    if r["cancelled"]:
        text = (f"prepare cancelled after {r['seconds']} s: {r['tables_created']} whole table(s) kept, "
                f"{len(r['dropped'])} half-loaded dropped ({', '.join(r['dropped']) or 'none'}) in {request.schema}")
    elif r.get("kept"):  # nothing loaded: never "prepared 0 ..."
        text = (f"nothing to prepare in {request.schema}: the {request.workload.name} data of this shape is there "
                f"already, kept as it is (`tunebench check --workload {request.workload.name}` verifies its "
                "contents; `cleanup` then `prepare` loads it again)")
    else:
        text = f"prepared {r['what']} in {request.schema} ({r['seconds']} s)"
    return DataOutcome("prepare", target.name, request.schema, r["tables_created"], r["rows_per_table"],
                       r["seconds"], text, tuple(r["dropped"]), cancelled=r["cancelled"], rows=r["rows"])


def check_data(target: Target, request: DataRequest, *, transport: str | None = None,
               password: str | None = None) -> dict[str, Any]:
    """The family's consistency conditions on the prepared data (TPC-C 3.3.2.1-4): {ok, conditions, summary}.
    ConfigError when the family has none or its data is not prepared."""
    assert request.workload is not None
    family = request.workload.family
    params = conn_params(target, transport, password=password)
    open_connection(params, target.name).close()
    missing = family.missing_data(params, request.schema, request.workload, request.options)
    if missing is not None:
        raise ConfigError(f"{missing}: prepare it first (tunebench prepare --workload {request.workload.name})")
    results = family.check(params, request.schema, request.options)
    if not results:
        raise ConfigError(f"the {family.name} family has no consistency check")
    ok = all(r.ok for r in results)
    lines = [f"{'ok    ' if r.ok else 'FAILED'} {r.name}" + (f": {r.detail}" if r.detail else "") for r in results]
    lines.append(f"{family.shape(request.options)} in {request.schema}: "
                 + ("consistent" if ok else f"{sum(not r.ok for r in results)} condition(s) FAILED"))
    return {"ok": ok, "schema": request.schema, "family": family.name,
            "conditions": [{"name": r.name, "ok": r.ok, "detail": r.detail} for r in results],
            "summary": "\n".join(lines)}


def workload_catalog(family: str | None = None) -> dict[str, Any]:
    """What `tunebench workloads` lists: every family (options, transactions) and workload preset."""
    from tunebench.load.families import FAMILY_NAMES, get_family
    from tunebench.load.workload import available

    names = FAMILY_NAMES if family is None else (get_family(family).name,)
    families = []
    for name in names:
        fam = get_family(name)
        defaults = fam.resolve({}, {}, {})
        families.append({
            "name": fam.name, "description": fam.description, "engines": list(fam.engines),
            "headline": head[2] if (head := fam.headline_of(defaults)) else None,
            "transactions": [{"name": t.name, "weight": t.weight, "help": t.help}
                             for t in fam.transactions(defaults)],
            "options": [{"name": o.name, "type": o.kind.__name__, "default": o.default, "help": o.help,
                         "min": o.minimum, "max": o.maximum, "choices": list(o.choices)}
                        for o in fam.option_specs().values()],
        })
    workloads = []
    for wname in available():
        wl = load_workload(wname)
        if family is None or wl.family_name == family:
            workloads.append({"name": wl.name, "family": wl.family_name, "description": wl.description})
    return {"families": families, "workloads": workloads}


@dataclass(frozen=True, slots=True)
class DiskSpace:
    """The server's datadir and the bytes free on its filesystem (known when the server runs on this machine)."""

    path: str
    free: int


def datadir_space(datadir: str | None, local: bool) -> DiskSpace | None:
    """`datadir` (the server's @@datadir) and its free space when the server is on this machine and the path can
    be looked at; None otherwise (a remote server's disk is not this machine's to measure)."""
    if not local or not datadir:
        return None
    free = free_bytes(datadir)
    return DiskSpace(datadir, free) if free is not None else None


def check_data_fits(workload: Workload, options: Mapping[str, Any], space: DiskSpace | None) -> None:
    """ConfigError, one line with the numbers, when the family's estimate of the data set exceeds the free space
    of the server's datadir filesystem (nothing is checked where either is unknown)."""
    if space is not None:
        family = workload.family
        check_disk(family.shape(options), family.data_bytes(workload, options), space.path, space.free)


def ensure_data(params: ConnParams, spec: RunSpec, note: Callable[[str], None], force: bool = False,
                cancel: threading.Event | None = None, space: DiskSpace | None = None) -> bool:
    """The run's tables, prepared if missing or of another shape (or, with `force`, dropped and prepared again:
    a sweep's reset_data between configurations). The tables are shared by every client group of the run.
    False when `cancel` stopped the load (its half-made tables are dropped, see load.prepare). `space`: the
    server's disk, when known: a data set that cannot fit there is refused before its load starts."""
    if force:
        note(f"resetting the data: re-preparing schema {spec.schema}")
        cleanup(params, spec.schema)
    for g in data_groups(spec.groups):
        missing = g.family.missing_data(params, spec.schema, g.workload, g.options)
        if not force and missing is None:
            continue
        check_data_fits(g.workload, g.options, space)
        note(f"preparing {g.family.shape(g.options)} in schema {spec.schema}")
        with server_refusals(f"prepare of {g.workload.name} in {spec.schema}"):
            done = g.family.prepare(params, spec.schema, g.workload, g.options, spec.prepare_threads,
                                    progress=note, cancel=cancel)
        if done["cancelled"]:
            note("the prepare was cancelled: " + (f"dropped the unfinished {', '.join(done['dropped'])}"
                                                 if done["dropped"] else "no table was half-made"))
            return False
        verify_prepared(g.workload, params, spec.schema, g.options)
    return True


@contextlib.contextmanager
def server_refusals(what: str) -> Iterator[None]:
    """A server error during a prepare (disk full, an engine it does not have, the server gone) in one line; the
    loaders have dropped what they left half-made (or registered it as loading: the next prepare drops it)."""
    try:
        yield
    except mysql.connector.Error as exc:
        errno = getattr(exc, "errno", None)
        msg = (getattr(exc, "msg", None) or str(exc)).strip()
        hint = {1114: "a table is full: the server's disk, or the engine's own limit (MEMORY: max_heap_table_size)",
                1021: "the server's disk is full", 1286: "the server has no such storage engine (SHOW ENGINES)",
                2013: "the server went away during the load (did it stop? its disk full?)",
                2006: "the server went away during the load (did it stop? its disk full?)"}.get(errno or 0)
        if hint is None and ("errno: 28" in msg or "No space left" in msg or "(errno 28" in msg):
            hint = "the server's disk is full"
        raise TargetError(f"{what} failed: {errno} {msg}" + (f" ({hint})" if hint else "")) from None


def verify_prepared(workload: Workload, params: ConnParams, schema: str, options: Mapping[str, Any]) -> None:
    """After a prepare, the data is what the run needs (as `check` would see it), or the prepare failed: never
    "prepared" over tables of another shape (another family's of the same name) and a run on them."""
    missing = workload.family.missing_data(params, schema, workload, options)
    if missing is not None:
        raise WorkloadError(f"the prepare did not leave the data the workload needs: {missing}; another workload's "
                            "tables of the same names? use another --schema, or `tunebench cleanup --schema "
                            f"{schema}` first")


def data_groups(groups: Sequence[ClientGroup]) -> list[ClientGroup]:
    """One group per family whose data the run needs: the one that needs the most rows (an oltp_insert group,
    which prepares empty tables, beside an oltp_read_write one shares the read_write group's tables)."""
    best: dict[str, ClientGroup] = {}
    for g in groups:
        held = best.get(g.family.name)
        if held is None or g.workload.prepare_rows(g.options) > held.workload.prepare_rows(held.options):
            best[g.family.name] = g
    return list(best.values())


# ---- a run's spec -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GroupRequest:
    """A client group as a user names it: `--group NAME=WORKLOAD:T1,T2`, or the window's second workload."""

    name: str
    workload: str  # a workloads/*.toml name, a .toml path or a sysbench .lua script path
    threads: str | tuple[int, ...]
    rates: str | tuple[float, ...] = ()  # open loop: its rate per step (`@R1,R2` after the threads)


def parse_threads(text: str) -> tuple[int, ...]:
    """`--threads 1,4,16`: concurrency steps, each 1..100000."""
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--threads wants a comma-separated list of integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise ConfigError(f"--threads values must be >= 1, got {text!r}")
    if any(v > MAX_THREADS for v in values):
        raise ConfigError(f"--threads values must be <= {MAX_THREADS}, got {text!r}")
    return values


def parse_rates(text: str) -> tuple[float, ...]:
    """`--rate 2000` or `--rate 500,1000,2000`: transactions per second, one per step (or one for all)."""
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--rate wants a comma-separated list of numbers (transactions per second), got "
                          f"{text!r}") from None
    if not values:
        raise ConfigError(f"--rate wants at least one number, got {text!r}")
    return values


def parse_option_items(items: Iterable[str]) -> dict[str, str]:
    """`-o NAME=VALUE` items as a dict (values are typed and checked by the workload)."""
    opts: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--option wants NAME=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        opts[k.strip()] = v.strip()
    return opts


def parse_group(text: str) -> GroupRequest:
    """`NAME=WORKLOAD:T1,T2,...[@R1,R2,...]` (threads and rates are checked when the group is built)."""
    try:
        name, rest = text.split("=", 1)
        wname, threads = rest.rsplit(":", 1) if "@" not in rest else rest.split("@", 1)[0].rsplit(":", 1)
    except ValueError:
        raise ConfigError(f"--group wants NAME=WORKLOAD:T1,T2,...[@RATE,...], got {text!r}") from None
    rates = text.split("@", 1)[1] if "@" in text else ()
    return GroupRequest(name.strip(), wname.strip(), threads, rates)


def _schedule(threads: str | Sequence[int]) -> tuple[int, ...]:
    return parse_threads(threads) if isinstance(threads, str) else tuple(threads)


def _rates(rates: str | Sequence[float] | None) -> tuple[float, ...]:
    if rates is None or (not isinstance(rates, str) and not rates):
        return ()  # closed loop; an empty --rate "" or `@` is refused by parse_rates (it ran closed loop, item 18)
    return parse_rates(rates) if isinstance(rates, str) else tuple(float(r) for r in rates)


def _workload(workload: str | Workload) -> Workload:
    """A workload by name or .toml path, or a sysbench Lua script by its .lua path."""
    if isinstance(workload, Workload):
        return workload
    return lua_workload(workload) if workload.endswith(".lua") else load_workload(workload)


def build_run_spec(workload: str | Workload | None, options: Mapping[str, Any], threads: str | Sequence[int], *,
                   groups: Sequence[GroupRequest | str] = (), lua_script: str | None = None,
                   engine: str | None = None, step_seconds: int = 10, warmup_seconds: int = 0,
                   transport: str | None = None, schema: str | None = None, client_hosts: Sequence[str] = (),
                   workers: int | None = None, seed: int | None = None,
                   probes: str | Sequence[str] | None = None, probe_interval: float = 1.0,
                   trust_host_key: bool = False, ssh_keys: Sequence[str] = (),
                   group_options: Literal["all", "shape"] = "all", rate: str | Sequence[float] | None = None,
                   arrival: str = "poisson", latency_limit_ms: float | None = None,
                   server_wait: int = 30, remote_python: str = "python3.11",
                   busy_pct: float | None = BUSY_PCT) -> RunSpec:
    """A validated RunSpec, as `tunebench run` builds it from its arguments (ConfigError for anything wrong).

    `workload` runs as the group "main" at `threads` (text like `--threads`, or the counts); `groups` are
    more groups at the same time (a GroupRequest, or `--group` text). `group_options`: "all" gives each extra
    group all of `options` (the CLI), "shape" only the main group's table shape (the window's second
    workload, whose other options may not apply to it). `probes`: `--probes` text, the names, or None (all).
    """
    built: list[ClientGroup] = []
    main: ClientGroup | None = None
    if workload and lua_script:
        raise ConfigError("give --workload NAME or --lua PATH, not both (the script's options come with -o)")
    if workload or lua_script:
        wl = lua_workload(lua_script) if lua_script else _workload(workload)  # type: ignore[arg-type]
        main = ClientGroup("main", wl, wl.options(options), _schedule(threads), lua_script=wl.lua or None,
                           rates=_rates(rate), arrival=arrival, latency_limit_ms=latency_limit_ms)
        built.append(main)
    for g in groups:
        request = parse_group(g) if isinstance(g, str) else g
        wl = _workload(request.workload)
        specs = wl.family.option_specs()
        shared: Mapping[str, Any]
        if group_options == "shape":  # the main group's data set, where it is of the same family
            shared = ({k: main.options[k] for k in wl.family.data_options}
                      if main is not None and main.family.name == wl.family.name else {})
        elif main is not None:  # the options this group's family has (the main group checked every name)
            shared = {k: v for k, v in options.items() if k.replace("-", "_") in specs}
        else:
            shared = options
        rates = _rates(request.rates)
        built.append(ClientGroup(request.name, wl, wl.options(shared), _schedule(request.threads),
                                 lua_script=wl.lua or None, rates=rates, arrival=arrival,
                                 latency_limit_ms=latency_limit_ms if rates else None))
    if not built:
        raise ConfigError("give --workload NAME or --lua PATH (or --group NAME=WORKLOAD:THREADS)")
    if engine is None:  # the first engine every group's family runs on (builtin, or sysbench for a Lua script)
        engine = next((e for e in ("builtin", "sysbench") if all(e in g.family.engines for g in built)), "builtin")
    spec = RunSpec(groups=tuple(built), engine=engine, step_seconds=step_seconds, warmup_seconds=warmup_seconds,
                   transport=transport, schema=built[0].workload.default_schema if schema is None else schema,
                   workers=workers, seed=seed,
                   probes=parse_probe_list(probes) if isinstance(probes, str) or probes is None else tuple(probes),
                   probe_interval=probe_interval, client_hosts=tuple(client_hosts), trust_host_key=trust_host_key,
                   ssh_keys=tuple(ssh_keys), server_wait=server_wait, remote_python=remote_python,
                   busy_pct=busy_pct)
    spec.validate()
    return spec


# ---- an SSH host key the user has seen and accepts --------------------------------------------------------
def trust_host_key(url: str) -> str:
    """Connect once to `url` accepting its host key (kept in Tunebench's own known_hosts); the line to show."""
    from tunebench.hosts.ssh import SshRunner, parse_ssh_url

    notes: list[str] = []
    SshRunner(parse_ssh_url(url), trust=True, note=notes.append, retries=1).connect().close()
    return "; ".join(notes) or f"{url} trusted"
