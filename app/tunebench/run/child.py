"""An Experiment in a child process, talking to its parent over one pipe (no Qt here).

The GUI process only draws: the engine, the probes and the SQLite writes run in this child, so they never
take the GUI's interpreter lock. Up the pipe go typed records (run/records.py): a sweep's Plan first (what the
window's sweep results view fills in), Interval, Samples, Event, Note, StepResult, then exactly one
RunOutcome (a failure is an outcome with a RunError, never text to parse); RunSession once the session is open, and
with `live_metrics` each probe reading as a LiveReading (for the window's --metrics-listen endpoint). Down come
commands: Stop, Mark, ChangeKnob, ChangeRate, ConfirmKnob, RestoreKnobs; the last four are answered with a
Reply. A tune
(RunRequest.tune) runs run/tune.py's search on the one load instead of a plain run, and sends each finished Trial
up the pipe too.
If the parent goes away, the run stops (and, as always, puts every knob back).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from tunebench.core.errors import TunebenchError
from tunebench.core.sweep import SweepSpec
from tunebench.mysql.target import Target, remember_password
from tunebench.run.confirm import plan_text as confirm_plan
from tunebench.run.records import (
    ChangeKnob,
    ChangeRate,
    ConfirmKnob,
    Mark,
    Note,
    Reply,
    RestoreKnobs,
    RunError,
    RunOutcome,
    Samples,
    Stop,
)
from tunebench.run.spec import RunSpec, plan_sweep
from tunebench.run.tune import TuneSpec

if TYPE_CHECKING:
    from tunebench.run.experiment import Experiment


@dataclass(frozen=True)
class RunRequest:
    store_path: str
    target: Target
    spec: RunSpec
    sweep: SweepSpec | None = None
    password: str | None = None  # typed in the GUI for this target; travels through the pipe only
    live_metrics: bool = False  # the window serves --metrics-listen: the probes' readings come up the pipe too
    tune: TuneSpec | None = None  # a live knob search on the one load of `spec` (run/tune.py)
    preset: tuple[dict[str, Any], ...] = ()  # knobs the window set between runs: markers at the run's start

    def __repr__(self) -> str:
        return f"RunRequest({self.target.name}, sweep={self.sweep is not None}, tune={self.tune is not None})"


def child_main(req: RunRequest, conn: Connection) -> None:
    from tunebench.run.experiment import Experiment
    from tunebench.store.repo import Store

    # A session of its own: with the kernel's autogroup scheduling (the default on desktop Linux), the load
    # generator's hundreds of threads then share one CPU slot instead of crowding out the window's thread.
    with contextlib.suppress(OSError):
        os.setsid()
    lock = threading.Lock()

    def send(record: object) -> None:
        with lock:
            try:
                conn.send(record)
            except (BrokenPipeError, OSError):
                pass

    if req.password is not None:
        remember_password(req.target, req.password)
    exp: Experiment | None = None
    try:
        store = Store(req.store_path)
    except TunebenchError as exc:
        send(RunOutcome("failed", None, error=RunError.from_exception(exc)))
        return
    try:
        if req.tune is not None:
            from tunebench.run.tune import run_tune

            def started(e: Experiment) -> None:
                nonlocal exp
                exp = e
                e.on_reading = send if req.live_metrics else None
                e.on_session = send
                threading.Thread(target=_commands, args=(conn, e, send), daemon=True).start()

            # a knob the server refuses (check_tune) raises ConfigError before anything runs: handled below
            outcome = run_tune(store, req.target, req.spec, req.tune, on_interval=send,
                               on_note=lambda m: send(Note(m)), on_trial=send, on_event=send,
                               on_samples=lambda t, v: send(Samples(t, v)), on_step=send, on_experiment=started)
        else:
            plan = None
            if req.sweep is not None:
                plan, _info = plan_sweep(req.sweep, req.target, req.spec.transport, note=lambda m: send(Note(m)))
                send(plan)
            sweep = req.sweep
            exp = Experiment(store, req.target, req.spec, plan=plan,
                             reset_data=sweep.reset_data if sweep else False,
                             cooldown_seconds=sweep.cooldown_seconds if sweep else 0,
                             on_interval=send, on_note=lambda m: send(Note(m)),
                             on_samples=lambda t, v: send(Samples(t, v)), on_event=send, on_step=send,
                             on_reading=send if req.live_metrics else None, on_session=send,
                             preset=req.preset)
            threading.Thread(target=_commands, args=(conn, exp, send), daemon=True).start()
            outcome = exp.run()
    except TunebenchError as exc:
        error = RunError.from_exception(exc)
        send(exp.outcome("failed", error) if exp is not None else RunOutcome("failed", None, error=error))
        return
    except BaseException as exc:  # a bug: the window hears of it as one outcome; the traceback goes to stderr
        send(RunOutcome("failed", exp.writer.id if exp and exp.writer else None,
                        error=RunError.from_exception(exc)))
        raise
    finally:
        store.close()
    send(outcome)


def _commands(conn: Connection, exp: Experiment, send: Callable[[object], None]) -> None:
    while True:
        try:
            cmd = conn.recv()
        except (EOFError, OSError):
            exp.request_stop()  # the window went away: stop, and put the knobs back
            return
        if isinstance(cmd, Stop):
            exp.request_stop(by_user=cmd.by_user)
        elif isinstance(cmd, Mark):
            exp.mark(cmd.label)
        elif isinstance(cmd, ChangeKnob | RestoreKnobs | ChangeRate | ConfirmKnob):
            try:
                payload = (exp.change_knob(cmd.name, cmd.value) if isinstance(cmd, ChangeKnob)
                           else confirm_plan(exp.confirm_knob(cmd.name, None, cmd.block_seconds))
                           if isinstance(cmd, ConfirmKnob)
                           else exp.change_rate(cmd.group, cmd.rate) if isinstance(cmd, ChangeRate)
                           else exp.restore_knobs())
                send(Reply(cmd.rid, payload))
            except TunebenchError as exc:
                send(Reply(cmd.rid, error=RunError.from_exception(exc)))
