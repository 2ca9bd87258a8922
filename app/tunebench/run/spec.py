"""What a run is: the RunSpec (client groups, engine, times, probes, hosts), its validation, and the tasks that
turn a sweep into one (sweep_run_spec, plan_sweep) for the CLI and the window alike."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tunebench.core.busy import BUSY_PCT
from tunebench.core.errors import ConfigError
from tunebench.core.probe import PROBE_NAMES, check_interval
from tunebench.core.schedule import ARRIVALS, MAX_RATE, MIN_RATE
from tunebench.core.sweep import MAX_SECONDS, ConfigPlan, PhaseSpec, Plan, SweepSpec, make_plan
from tunebench.core.sweep.plan import RATE_OPTION
from tunebench.core.sweep.spec import check_phases
from tunebench.hosts.ssh import parse_ssh_url
from tunebench.load.builtin import default_workers, runs_compiled
from tunebench.load.capacity import Capacity, check_capacity, estimate_mb, mem_available_mb, peak_connections
from tunebench.load.engine import ClientGroup
from tunebench.load.prepare import check_schema_name
from tunebench.load.remote_builtin import DEFAULT_PYTHON, python_argv
from tunebench.mysql.connect import ServerInfo, introspect, open_connection, text_of
from tunebench.mysql.knobs import describe_knobs
from tunebench.mysql.target import Target, conn_params
from tunebench.run.tuning import sandbox_for

ENGINES = ("builtin", "sysbench")
MAX_WORKERS = 1024


@dataclass(frozen=True, slots=True)
class RunSpec:
    groups: tuple[ClientGroup, ...]
    engine: str = "builtin"
    step_seconds: int = 10
    warmup_seconds: int = 0
    transport: str | None = None
    schema: str = "tunebench"
    workers: int | None = None
    prepare_threads: int = 4
    seed: int | None = None
    probes: tuple[str, ...] | None = None  # None: every probe that works here; (): none
    probe_interval: float = 1.0
    extra: dict[str, Any] = field(default_factory=dict)
    client_hosts: tuple[str, ...] = ()  # ssh://user@host[:port]: the load runs there (split threads)
    remote_python: str = DEFAULT_PYTHON  # the builtin engine on client hosts: their interpreter (load/remote_builtin)
    trust_host_key: bool = False  # accept (and remember) a client host's unknown host key
    ssh_keys: tuple[str, ...] = ()
    server_wait: int = 30  # how long the run waits for a server that stopped answering before it gives up (s)
    # a live change's verdict leaves out the seconds with more of the machine's CPU than this (%) used by other
    # processes (core/busy.py); None: judges them too
    busy_pct: float | None = BUSY_PCT
    # a phase plan (a sweep's [[phase]]): each step named, some an action of a family instead of load
    phases: tuple[PhaseSpec, ...] = ()

    def phase_at(self, step: int) -> PhaseSpec | None:
        return self.phases[step] if step < len(self.phases) else None

    def action_family(self, action: str) -> ClientGroup:
        """The group whose family runs `action` (its options describe the data the action changes)."""
        for g in self.groups:
            if action in g.family.actions:
                return g
        offered = sorted({a for g in self.groups for a in g.family.actions})
        raise ConfigError(f"no client group's family has the action {action!r}"
                          + (f"; they have {', '.join(offered)}" if offered else " (none has actions)"))

    @property
    def steps(self) -> int:
        return max(g.steps for g in self.groups)

    def validate(self) -> None:
        if self.engine not in ENGINES:
            raise ConfigError(f"unknown engine {self.engine!r}; use {' or '.join(ENGINES)}")
        if not self.groups:
            raise ConfigError("a run needs at least one client group")
        names = [g.name for g in self.groups]
        if len(set(names)) != len(names):
            raise ConfigError(f"client group names must be unique: {', '.join(names)}")
        for g in self.groups:
            check_group_name(g.name)
            # 0: the group idle in that step, which only a phase plan has
            if not g.schedule or any(n < 0 for n in g.schedule) or (0 in g.schedule and not self.phases):
                raise ConfigError(f"group {g.name}: thread counts must be >= 1, got {list(g.schedule)}")
            if max(g.schedule) > 100_000:
                raise ConfigError(f"group {g.name}: {max(g.schedule)} threads is beyond reason")
        for g in self.groups:
            check_open_loop(g, self.steps)
        longest = max(self.groups, key=lambda g: len(g.schedule))
        for g in self.groups:
            # one count holds the group there through every step; any other number of counts is one per step
            if len(g.schedule) not in (1, self.steps):
                raise ConfigError(
                    f"group {g.name} has {len(g.schedule)} thread counts ({_counts(g.schedule)}) and group "
                    f"{longest.name} {self.steps} ({_counts(longest.schedule)}): give one per step, or one count "
                    "to hold through every step")
        check_phases(self.phases, [(g.name, g.schedule) for g in self.groups], self.steps, "the run")
        if self.phases and self.engine != "builtin":
            raise ConfigError("a phase plan runs on the builtin engine (its groups idle in some steps)")
        for p in self.phases:
            if p.action:
                self.action_family(p.action)
        if not 1 <= self.step_seconds <= MAX_SECONDS:
            raise ConfigError(f"--step-seconds must be from 1 to {MAX_SECONDS}, got {self.step_seconds}")
        if not 0 <= self.warmup_seconds <= MAX_SECONDS:
            raise ConfigError(f"--warmup-seconds must be from 0 to {MAX_SECONDS}, got {self.warmup_seconds}")
        if self.workers is not None and not 1 <= self.workers <= MAX_WORKERS:
            raise ConfigError(f"--workers must be from 1 to {MAX_WORKERS}, got {self.workers}")
        if self.busy_pct is not None and not 0 < self.busy_pct <= 100:
            raise ConfigError(f"--busy-threshold must be more than 0 and at most 100 (% of the machine), or off, got "
                              f"{self.busy_pct:g}")
        if not 1 <= self.server_wait <= 3600:
            raise ConfigError(f"--server-wait must be from 1 to 3600 s, got {self.server_wait}")
        if self.seed is not None and not 0 <= self.seed < 2**32:
            raise ConfigError(f"--seed must be from 0 to {2**32 - 1}, got {self.seed}")
        check_schema_name(self.schema)
        check_interval(self.probe_interval)
        for url in self.client_hosts:
            parse_ssh_url(url)
        if len(set(self.client_hosts)) != len(self.client_hosts):
            raise ConfigError("each --client-host once (two names for one machine are two hosts)")
        if self.client_hosts:
            python_argv(self.remote_python)
        unknown = [p for p in self.probes or () if p not in PROBE_NAMES]
        if unknown:
            raise ConfigError(f"unknown probe {unknown[0]!r}; choose from {', '.join(PROBE_NAMES)}")
        for g in self.groups:
            what = f"{g.workload.name}.lua" if g.family.name == "lua" else f"the {g.family.name} family"
            if self.engine not in g.family.engines:
                raise ConfigError(f"group {g.name}: {what} runs on the {' or '.join(g.family.engines)} engine, "
                                  f"not {self.engine}")
            if g.family.name == "lua" and self.client_hosts:
                raise ConfigError(f"group {g.name}: {what} runs on this machine only (the script and its modules "
                                  "are not copied to client hosts)")
        for family in {g.family.name for g in self.groups}:
            same = [g for g in self.groups if g.family.name == family]
            if len({g.family.data_key(g.options) for g in same}) > 1:
                fam = same[0].family
                raise ConfigError(f"client groups of the {family} family share its tables: "
                                  f"{', '.join(f'{g.name} has {fam.shape(g.options)}' for g in same)}")


def check_open_loop(g: ClientGroup, steps: int) -> None:
    """A group's rates (one per step, or one for every step), arrival process and latency limit."""
    if not g.rates:
        if g.latency_limit_ms is not None:
            raise ConfigError(f"group {g.name}: --latency-limit needs a rate (--rate): it skips transactions "
                              "already later than the limit, which only a schedule of intended starts has")
        return
    if any(not (MIN_RATE <= r <= MAX_RATE) for r in g.rates):  # NaN compares false: refused too
        raise ConfigError(f"group {g.name}: rates must be from {MIN_RATE:g} to {MAX_RATE:,} per second, got "
                          f"{', '.join(f'{r:g}' for r in g.rates)}")
    if len(g.rates) not in (1, steps):
        raise ConfigError(f"group {g.name} has {len(g.rates)} rates for {steps} steps: give one per step, or one "
                          "to hold through every step")
    if g.arrival not in ARRIVALS:
        raise ConfigError(f"unknown arrival process {g.arrival!r}; use {' or '.join(ARRIVALS)}")
    if g.latency_limit_ms is not None and not 0 < g.latency_limit_ms <= MAX_SECONDS * 1000:
        raise ConfigError(f"--latency-limit must be above 0 and at most {MAX_SECONDS * 1000:,} ms, got "
                          f"{g.latency_limit_ms:g}")


GROUP_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_group_name(name: str) -> None:
    """A client group's name: it names the group's series (client.NAME.tps), so letters, digits, _ and - only."""
    if not name:
        raise ConfigError("a client group needs a name: --group NAME=WORKLOAD:THREADS")
    if not GROUP_NAME.fullmatch(name):
        raise ConfigError(f"client group name {name!r}: use up to 64 letters, digits, _ and - (it names the "
                          "group's series, client.NAME.tps)")


def _counts(schedule: Sequence[int]) -> str:
    return ",".join(str(n) for n in schedule)


def config_groups(groups: Sequence[ClientGroup], options: Mapping[str, Any]) -> tuple[ClientGroup, ...]:
    """The client groups of one sweep configuration: its workload-option axes (option.NAME) applied to every group
    whose family has that option; ConfigError when no group has it or a value does not fit."""
    if not options:
        return tuple(groups)
    if RATE_OPTION in options:  # the rate axis: the first group's rate through the configuration's steps
        options = dict(options)
        rate = float(options.pop(RATE_OPTION))
        groups = [replace(groups[0], rates=(rate,)), *groups[1:]]
        if not options:
            return tuple(groups)
    out, used = [], set()
    for g in groups:
        mine = {k: v for k, v in options.items() if k in g.family.option_specs()}
        used |= set(mine)
        out.append(replace(g, options=g.workload.options({**g.options, **mine})) if mine else g)
    for name in options:
        if name not in used:
            raise ConfigError(f"axis option.{name}: no client group's workload has an option {name!r}")
    return tuple(out)


def single_config(spec: RunSpec) -> ConfigPlan:
    return ConfigPlan(0, {}, {}, spec.transport, spec.engine, None)



def sweep_run_spec(sweep: SweepSpec, **overrides: Any) -> RunSpec:
    """The RunSpec a sweep runs with (groups, engine, times, transport, schema, seed from the spec), for the
    CLI and the window alike; `overrides` are the caller's own settings (probes, client hosts, ...)."""
    from tunebench.load.workload import load_workload

    groups = []
    for g in sweep.groups:
        wl = load_workload(g.workload)
        groups.append(ClientGroup(g.name, wl, wl.options(dict(g.options)), g.threads, rates=g.rates,
                                  arrival=sweep.arrival, latency_limit_ms=sweep.latency_limit_ms if g.rates else None))
    fields: dict[str, Any] = {"groups": tuple(groups), "engine": sweep.engine, "step_seconds": sweep.step_seconds,
                              "warmup_seconds": sweep.warmup_seconds, "transport": sweep.transport,
                              "schema": groups[0].workload.default_schema if sweep.schema is None else sweep.schema,
                              "seed": sweep.seed, "phases": sweep.phases, "busy_pct": sweep.busy_pct}
    fields.update({k: v for k, v in overrides.items() if v is not None})
    return RunSpec(**fields)


def plan_sweep(sweep: SweepSpec, target: Target, transport: str | None = None,
               note: Callable[[str], None] | None = None) -> tuple[Plan, ServerInfo]:
    """Validate a sweep against the target's own variable list and expand it; nothing is changed. A server axis
    plans on each server's sandbox (started if it is not running): see plan_server_sweep."""
    if "server" in sweep.axes:
        return plan_server_sweep(sweep, target, transport, note)
    conn = open_connection(conn_params(target, transport or sweep.transport), target.name)
    try:
        info = introspect(conn)
        missing = {a for a in sweep.optional if a in sweep.axes and a not in info.variables}
        if missing:
            (note or (lambda _m: None))(f"{info.flavor} {info.version} has no {', '.join(sorted(missing))}: "
                                        "that axis is left out")
            sweep = sweep.without_axes(missing)
        knobs = describe_knobs(conn, info, sweep.knob_axes)
    finally:
        conn.close()
    sb = sandbox_for(target)
    plan = make_plan(sweep, knobs, info.variables, sb.status().cpus if sb else None)
    if any(c.options for c in plan.configs):
        groups = sweep_run_spec(sweep).groups
        for c in plan.configs:
            config_groups(groups, c.options)  # every value checked by its family before anything runs
    if sb is not None:
        from tunebench.hosts.sandbox import check_cpus, check_sandbox_overrides

        check_sandbox_overrides(dict.fromkeys(k for c in plan.configs for k in c.static), sb.initialized)

        for cpus in sorted({c.cpus for c in plan.configs if c.cpus}):
            check_cpus(cpus)
    if sb is None:
        for c in plan.configs:
            if c.cpus:
                raise ConfigError(f"the cpus axis binds the sandbox server; target {target.name} is not it")
            if c.static and not target.restart_command:
                raise ConfigError(f"{next(iter(c.static))} needs a server restart and target {target.name} has no "
                                  "restart method: `tunebench target add` with --db-host, --option-file and "
                                  "--restart-command gives it one")
    return plan, info


def plan_server_sweep(sweep: SweepSpec, target: Target, transport: str | None = None,
                      note: Callable[[str], None] | None = None) -> tuple[Plan, ServerInfo]:
    """The same configurations on every server of the axis, each planned against its own sandbox (a knob one
    server lacks is dropped there when the axis is optional), in the axis' order: the first is the baseline
    unless the spec names another."""
    from tunebench.hosts.kits import resolve_server
    from tunebench.hosts.sandbox import SandboxServer

    if not target.name.startswith("sandbox"):
        raise ConfigError(f"a server axis runs on the servers' own sandboxes, not on target {target.name}")
    say = note or (lambda _m: None)
    servers = [resolve_server(str(n)) for n in sweep.axes["server"]]
    names = [s.name for s in servers]
    if len(set(names)) != len(names):
        raise ConfigError(f"{sweep.source or 'this sweep'}: the server axis names one server twice: {', '.join(names)}")
    want_base = sweep.baseline.get("server")
    base_server = resolve_server(str(want_base), servers).name if want_base else names[0]
    sub = sweep.without_axes({"server"})
    configs: list[ConfigPlan] = []
    restarts, seconds, baseline, first_info = 0, 0.0, 0, None
    started: list[str] = []  # (the run stops them again once done with them; `sweep --plan` at once)
    for server in servers:
        sb = SandboxServer.for_server(server)
        if not sb.status().running:
            say(f"starting the {sb.target_name} server ...")
            sb.start()
            started.append(server.name)
        def prefixed(message: str, name: str = server.name) -> None:
            say(f"{name}: {message}")

        plan, info = plan_sweep(sub, sb.target(), transport, note=prefixed)
        first_info = first_info or info
        offset = len(configs)
        if server.name == base_server:
            baseline = plan.baseline + offset
        configs += [replace(c, idx=c.idx + offset, server=server.name) for c in plan.configs]
        restarts += plan.restarts
        seconds += plan.seconds
    assert first_info is not None
    return Plan(sweep, tuple(configs), restarts, seconds, baseline, tuple(started)), first_info


def check_run_capacity(conn: Any, info: ServerInfo, spec: RunSpec, configs: Sequence[ConfigPlan],
                       server_here: bool) -> None:
    """A run too big for the server (max_connections) or for this machine (memory) is refused before anything
    on the server changes; `server_here`: the server shares this machine's memory with the load."""
    cur = conn.cursor()
    cur.execute("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
    row = cur.fetchone()
    cur.close()
    in_use = int(row[1]) if row else 0
    # the account's own limit (MAX_USER_CONNECTIONS; the session value is it when set) and what it has open
    # (PROCESSLIST shows an account without PROCESS its own connections)
    cur = conn.cursor()
    cur.execute("SELECT @@session.max_user_connections, CURRENT_USER()")
    user_limit, current = cur.fetchone()
    user = text_of(current).rpartition("@")[0]
    cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s", (user,))
    user_in_use = max(int(cur.fetchone()[0]) - 2, 0)  # less this check's connection and the run lock's (ours)
    cur.close()
    limits = [int(info.variables.get("max_connections", "151"))]
    # a sweep may raise the limit itself
    limits += [int(c.knobs["max_connections"]) for c in configs if "max_connections" in c.knobs]
    peak = peak_connections([g.schedule for g in spec.groups])
    engines = {c.engine for c in configs} | {spec.engine}
    workers = spec.workers or default_workers(peak, runs_compiled(list(spec.groups)))
    memory = max(estimate_mb(peak, e, workers, server_here, info.variables) for e in engines)
    check_capacity(Capacity(peak, max(limits), in_use, memory, mem_available_mb(), user, max(int(user_limit or 0), 0),
                            user_in_use))
