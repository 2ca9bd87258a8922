"""The commands that put load on a target: `prepare`/`cleanup` its data, `run` a workload, `sweep` knobs."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

from tunebench.cli.output import EXIT_CODES, emit, exit_code, live_line, steps_table
from tunebench.cli.progress import ProgressBar, ctrl_c_sets
from tunebench.cli.resolve import open_store, resolve_target
from tunebench.core.errors import ConfigError, TunebenchError
from tunebench.core.interval import Interval

# The plan's text lives in core.sweep: the window's sweep panel shows the same lines as `--plan`.
from tunebench.core.sweep import duration_text, plan_text
from tunebench.run.tasks import build_run_spec, data_request, parse_option_items, parse_threads, prepare_data

WORKLOAD_SHORTCUTS = ("tables", "table_size")
# A sweep beyond either needs --yes on the command line (the plan is printed first either way).
CONFIRM_CONFIGS = 200
CONFIRM_SECONDS = 24 * 3600


def workload_options(args: argparse.Namespace) -> dict[str, Any]:
    """-o NAME=VALUE items, with --tables/--table-size on top."""
    opts: dict[str, Any] = parse_option_items(getattr(args, "option", None) or [])
    for k in WORKLOAD_SHORTCUTS:
        v = getattr(args, k, None)
        if v is not None:
            opts[k] = v
    return opts


def cmd_prepare(args: argparse.Namespace, cleanup: bool = False) -> int:
    # Everything the command line says is checked before the server is touched (or started).
    request = data_request(getattr(args, "workload", None) if not cleanup else None, workload_options(args),
                           cleanup=cleanup, schema=args.schema, threads=getattr(args, "prepare_threads", 4),
                           lua=getattr(args, "lua", None))
    store = open_store(args)
    target = resolve_target(args, store)
    bar = ProgressBar(sys.stderr if args.json or sys.stderr.isatty() else sys.stdout)
    say = (lambda _m: None) if args.json else bar.line
    cancel = threading.Event()  # Ctrl-C: the whole tables stay, the half-loaded ones go
    with ctrl_c_sets(cancel):
        outcome = prepare_data(target, request, transport=args.transport, progress=say, on_rows=bar, cancel=cancel)
    bar.end()
    emit(args, outcome.to_dict(), outcome.summary)
    return EXIT_CODES["aborted"] if outcome.cancelled else 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    return cmd_prepare(args, cleanup=True)


def cmd_run(args: argparse.Namespace) -> int:
    from tunebench.run.experiment import Experiment

    spec = build_run_spec(args.workload, workload_options(args), args.threads, groups=args.group or (),
                          lua_script=getattr(args, "lua", None), engine=args.engine,
                          step_seconds=args.step_seconds, warmup_seconds=args.warmup_seconds,
                          transport=args.transport, schema=args.schema, client_hosts=args.client_host or (),
                          workers=args.workers, seed=args.seed, probes=args.probes,
                          probe_interval=args.probe_interval, trust_host_key=args.trust_host_key,
                          ssh_keys=args.ssh_key or (), rate=args.rate, arrival=args.arrival,
                          latency_limit_ms=args.latency_limit, server_wait=args.server_wait,
                          remote_python=args.remote_python, busy_pct=args.busy_threshold)
    store = open_store(args)
    target = resolve_target(args, store)
    t0 = time.time()
    quiet = args.json
    probed: dict[str, float] = {}

    def on_interval(iv: Interval) -> None:
        if not quiet:
            print(live_line(iv, t0, probed), flush=True)

    def on_samples(_t: float, values: dict[str, float]) -> None:
        probed.update(values)

    def on_note(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    exp = Experiment(store, target, spec, on_note=on_note, on_samples=on_samples,
                     **live_hooks(args, on_interval=on_interval))
    result = exp.run().to_dict()
    notes = annotate_steps(store, result)
    text = f"\nsession {result['session_id']} ({result['status']}), engine {result['engine']}, " \
           f"target {result['target']} {result['server'].get('flavor')} {result['server'].get('version')}\n" \
           + steps_table(result["steps"]) + "".join(f"\n{n}" for n in notes)
    if result["status"] == "incomplete":
        text += ("\nINCOMPLETE: a step measured no transaction, lost its server or a client host (see above); its "
                 "numbers cover the seconds measured")
    emit(args, result, text)
    return exit_code(result["status"])


def live_hooks(args: argparse.Namespace, on_interval: Any) -> dict[str, Any]:
    """The Experiment's callbacks: the command's own, and those of `--metrics-listen`'s endpoint (bound by main)."""
    endpoint = getattr(args, "metrics_endpoint", None)
    if endpoint is None:
        return {"on_interval": on_interval}
    return dict(endpoint.hooks(on_interval=on_interval))


def annotate_steps(store: Any, result: dict[str, Any]) -> list[str]:
    """Each step of the result gets what it ran with (knobs set or flipped live) and the seconds its figures are
    over (and why the others are left out), from the session as stored; the lines of the steps that need a word.
    A store that cannot be read back leaves the result as it is."""
    from tunebench.core.errors import StoreError
    from tunebench.core.step_context import note_lines, step_notes

    if result.get("session_id") is None:
        return []
    try:
        notes = step_notes(store.get_session(result["session_id"]))
    except StoreError:
        return []
    for s in result.get("steps") or ():
        ran, used = notes.get((s["step"], s["group"]), (None, None))
        if ran is not None:
            s["ran_with"] = ran.text()
        if used is not None:
            s["seconds_window"], s["seconds_text"] = used.window, used.text()
    return note_lines(notes)


def cmd_sweep(args: argparse.Namespace) -> int:
    from tunebench.core.results import markdown

    outcome = run_sweep(args)
    if outcome is None:  # --plan
        return 0
    store, result = outcome
    if args.json:
        emit(args, result, "")
    else:
        session = store.get_session(result["session_id"])
        print("\n" + markdown(session))
        if result.get("restored"):
            print("restored: " + ", ".join(f"{r['name']}={r['original']} ({r['state']})" for r in result["restored"]
                                           if r.get("kind") != "probe"))
    return exit_code(result["status"])


def run_sweep(args: argparse.Namespace) -> tuple[Any, dict[str, Any]] | None:
    """The sweep `args` ask for, run (quiet with --json): its store and result; None for --plan (printed)."""
    from dataclasses import replace

    from tunebench.core.probe import parse_probe_list
    from tunebench.load.recipes import load_spec
    from tunebench.run.experiment import Experiment
    from tunebench.run.spec import plan_sweep, sweep_run_spec

    sweep = load_spec(args.file)
    if args.threads:  # in the spec itself: the plan, its time estimate and the session say so
        schedule = parse_threads(args.threads)
        sweep = sweep.with_overrides(groups=tuple(replace(g, threads=schedule) for g in sweep.groups))
    if args.slo_p99 is not None:
        if not 0 < args.slo_p99 <= 86_400_000:
            raise ConfigError(f"--slo-p99 must be a number of milliseconds above 0, got {args.slo_p99:g}")
        if not any(g.rates for g in sweep.groups):
            raise ConfigError("--slo-p99 needs a sweep over rates (rates = [...] in the sweep file, or a rate axis)")
    sweep = sweep.with_overrides(slo_p99_ms=args.slo_p99)
    sweep = sweep.with_overrides(step_seconds=args.step_seconds, warmup_seconds=args.warmup_seconds,
                                 cooldown_seconds=args.cooldown_seconds)
    spec = sweep_run_spec(sweep, transport=args.transport, schema=args.schema, workers=args.workers,
                          probes=parse_probe_list(args.probes), probe_interval=args.probe_interval,
                          client_hosts=tuple(args.client_host or ()), trust_host_key=args.trust_host_key,
                          ssh_keys=tuple(args.ssh_key or ()), remote_python=args.remote_python)
    spec.validate()
    store = open_store(args)
    if args.resume is not None:
        old = store.get_session(args.resume)
        if not sweep.optional and old["config"].get("sweep_fingerprint") != sweep.fingerprint():
            raise ConfigError(f"session {args.resume} was not recorded from this sweep spec; cannot resume it")
    big = sweep.config_count > CONFIRM_CONFIGS or sweep.estimated_seconds > CONFIRM_SECONDS
    if big and not args.plan and not args.yes:  # refused before the server is touched
        raise ConfigError(f"sweep {sweep.name}: {sweep.config_count:,} configurations, about "
                          f"{duration_text(sweep.estimated_seconds)} of load; look at it with --plan, then run it "
                          "with --yes")
    target = resolve_target(args, store)
    plan, _info = plan_sweep(sweep, target, spec.transport, note=lambda m: print(m, file=sys.stderr))
    if args.plan:
        emit(args, plan.to_dict(), plan_text(plan))
        _stop_started(plan)
        return None
    if args.calibrate:
        sweep_calibrations(store, target, spec, quiet=args.json)
    if not args.json:
        print(plan_text(plan), flush=True)
    t0 = time.time()
    quiet = args.json

    def on_interval(iv: Interval) -> None:
        if not quiet:
            print(live_line(iv, t0), flush=True)

    def on_note(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    exp = Experiment(store, target, spec, on_note=on_note, plan=plan, resume=args.resume,
                     reset_data=sweep.reset_data, cooldown_seconds=sweep.cooldown_seconds,
                     **live_hooks(args, on_interval=on_interval))
    return store, exp.run().to_dict()


def _stop_started(plan: Any) -> None:
    """`sweep --plan` of a server axis started the sandboxes it needed to read: stopped again, said."""
    from tunebench.hosts.sandbox import SandboxServer

    for name in plan.started:
        sb = SandboxServer.named(name)
        try:
            sb.stop()
            print(f"{sb.target_name} stopped (started to plan)", file=sys.stderr)
        except TunebenchError as exc:
            print(f"{sb.target_name} is still running (started to plan): {exc}", file=sys.stderr)


def sweep_calibrations(store: Any, target: Any, spec: Any, quiet: bool = False) -> None:
    """`sweep --calibrate`: this machine's noise floor for the first group's load at each of its thread counts,
    on the server as it is before the sweep (the machine's noise, not a configuration's), each a session of its own
    the sweep's single-run ratios then find (their cells say "within this machine's noise" inside it)."""
    from dataclasses import replace

    from tunebench.run.confirm import BLOCK_SECONDS, SETTLE_SECONDS, calibration_text

    group = spec.groups[0]
    for threads in dict.fromkeys(group.schedule):
        one = replace(spec, groups=(replace(group, schedule=(threads,), rates=()),), phases=())
        cal = calibrate_run(store, target, one, BLOCK_SECONDS, SETTLE_SECONDS, quiet=quiet).get("calibration")
        if not quiet:
            print(f"{threads} threads: " + (calibration_text(cal) if cal else "no calibration (see above)"),
                  file=sys.stderr, flush=True)


def cmd_calibrate(args: argparse.Namespace) -> int:
    """An A/A calibration: one step of the load, and on it eight blocks of the same configuration judged as a
    confirmation is (run/confirm.py); the floor goes into the session's summary, where later verdicts on this
    machine, target, workload and threads find it."""
    from tunebench.run.confirm import calibration_text

    threads = parse_threads(args.threads)
    if len(threads) != 1:
        raise ConfigError(f"--threads: a calibration runs at one thread count, got {args.threads}")
    spec = build_run_spec(args.workload, workload_options(args), threads, lua_script=getattr(args, "lua", None),
                          engine=args.engine, warmup_seconds=args.warmup_seconds, transport=args.transport,
                          schema=args.schema, workers=args.workers, probes=args.probes, busy_pct=args.busy_threshold)
    store = open_store(args)
    target = resolve_target(args, store)
    result = calibrate_run(store, target, spec, args.block_seconds, args.settle_seconds, quiet=args.json)
    cal = result.get("calibration")
    text = f"\nsession {result['session_id']} ({result['status']}), target {result['target']} " \
           f"{result['server'].get('flavor')} {result['server'].get('version')}\n"
    text += calibration_text(cal) if cal else "no calibration: the run ended before its blocks did (see above)"
    emit(args, result, text)
    if cal and cal.get("floor_pct") is None:
        return 1
    return exit_code(result["status"]) if cal else max(1, exit_code(result["status"]))


def calibrate_run(store: Any, target: Any, spec: Any, block_seconds: int, settle_seconds: int,
                  quiet: bool = False) -> dict[str, Any]:
    """`spec`'s load (one group, one thread count) for its warm-up, then the A/A blocks: the run's result, whose
    "calibration" is the floor (absent when the run ended first). ConfigError when the blocks could not start."""
    from dataclasses import replace

    from tunebench.core.errors import TunebenchError
    from tunebench.core.verdict import CONFIRM_ORDER
    from tunebench.run.confirm import planned_seconds, start_calibration
    from tunebench.run.experiment import Experiment

    need = planned_seconds(CONFIRM_ORDER, block_seconds, settle_seconds)
    spec = replace(spec, step_seconds=need + 30)
    warmup = spec.warmup_seconds

    def on_note(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    exp = Experiment(store, target, spec, on_note=on_note)
    failed: list[str] = []

    def calibrate() -> None:
        while not exp.stop_event.is_set() and (exp.controller is None or exp._measured_since is None
                                               or time.time() < exp._measured_since + warmup):
            exp.stop_event.wait(0.2)
        if exp.stop_event.is_set():
            return
        try:
            c = start_calibration(exp, block_seconds, settle_seconds)
        except TunebenchError as exc:
            failed.append(str(exc))
            exp.request_stop()
            return
        c.done.wait()
        exp.end_step()

    if not quiet:
        threads = spec.groups[0].schedule[0]
        print(f"calibrating {spec.groups[0].workload.name} at {threads} threads: {warmup} s warm-up, then eight "
              f"{block_seconds}-s blocks of the same configuration (about {need + warmup} s)", file=sys.stderr,
              flush=True)
    th = threading.Thread(target=calibrate, daemon=True)
    th.start()
    result = exp.run().to_dict()
    th.join(10)
    if failed:
        raise ConfigError(failed[0])
    return result


def tune_table(result: dict[str, Any]) -> str:
    """A tune's trials as a table, then its conclusion."""
    from tunebench.run.tune import TABLE_HEADER, TuneResult

    r = TuneResult.from_dict(result)
    rows = [TABLE_HEADER, *r.table_rows()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_HEADER))]
    lines = ["  ".join(c.ljust(w) if i in (1, 8) else c.rjust(w)
                       for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines) + f"\n\n{r.text}"

def cmd_tune(args: argparse.Namespace) -> int:
    from tunebench.run.tune import KnobRange, Trial, TuneSpec, check_tune, parse_duration, run_tune, tune_run_spec

    tune = TuneSpec(knobs=tuple(KnobRange.parse(k) for k in args.knob or ()),
                    budget_seconds=parse_duration(args.budget),
                    trial_seconds=args.trial_seconds, settle_seconds=args.settle_seconds, objective=args.objective,
                    seed=args.seed, warmup_seconds=args.warmup_seconds, calibrate=args.calibrate)
    tune.validate()
    threads = parse_threads(args.threads)
    if len(threads) != 1:
        raise ConfigError(f"--threads: a tune runs at one thread count, got {args.threads}")
    spec = build_run_spec(args.workload, workload_options(args), threads, lua_script=getattr(args, "lua", None),
                          engine=args.engine, transport=args.transport, schema=args.schema, workers=args.workers,
                          probes=args.probes, rate=args.rate, server_wait=args.server_wait)
    if any(len(g.rates) > 1 for g in spec.groups):  # (a second rate ran on for minutes without a search)
        raise ConfigError(f"--rate: a tune runs at one rate, got {args.rate}")
    store = open_store(args)
    target = resolve_target(args, store)
    quiet = args.json
    t0 = time.time()

    def on_interval(iv: Interval) -> None:
        if not quiet and args.verbose:
            print(live_line(iv, t0), flush=True)

    def on_trial(trial: Trial) -> None:
        if not quiet:
            print(trial.line(tune.objective), flush=True)

    def on_note(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    dims = check_tune(target, tune_run_spec(spec, tune), tune)  # refused here, before anything runs or prints
    if not quiet:
        print(f"searching {'; '.join(d.text() for d in dims)}", flush=True)
    hooks = live_hooks(args, on_interval=on_interval)

    def attach(exp: Any) -> None:  # the endpoint's probe readings and session labels
        exp.on_reading, exp.on_session = hooks.get("on_reading"), hooks.get("on_session", exp.on_session)

    outcome = run_tune(store, target, spec, tune, on_interval=hooks["on_interval"], on_note=on_note,
                       on_trial=on_trial, on_event=hooks.get("on_event"), on_experiment=attach)
    result = outcome.to_dict()
    tuned = result.get("tune")
    text = f"\nsession {result['session_id']} ({result['status']}), target {result['target']} " \
           f"{result['server'].get('flavor')} {result['server'].get('version')}\n"
    text += tune_table(tuned) if tuned else "the search did not start (see above)"
    emit(args, result, text)
    return exit_code(result["status"])
