"""An Experiment in a child process, talking to its parent over one pipe (no Qt here).

The GUI process only draws: the engine, the probes and the SQLite writes run in this child, so they never
take the GUI's interpreter lock. Records go up as tuples: ("interval", Interval), ("samples", t, values),
("event", Event), ("note", text), ("step", StepResult), then ("finished", result) or ("failed", message).
Commands come down: ("stop",), ("knob", id, name, value), ("restore", id), ("mark", label); knob and
restore are answered with ("reply", id, ok, payload). If the parent goes away, the run stops (and, as
always, puts every knob back).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from tunebench.core.errors import TunebenchError
from tunebench.core.interval import Event
from tunebench.core.sweep import SweepSpec
from tunebench.mysql.target import Target, remember_password


@dataclass(frozen=True)
class RunRequest:
    store_path: str
    target: Target
    spec: Any  # RunSpec
    sweep: SweepSpec | None = None
    password: str | None = None  # typed in the GUI for this target; travels through the pipe only

    def __repr__(self) -> str:
        return f"RunRequest({self.target.name}, sweep={self.sweep is not None})"


def child_main(req: RunRequest, conn: Connection) -> None:
    from tunebench.run.experiment import Experiment, plan_sweep
    from tunebench.store.repo import Store

    # A session of its own: with the kernel's autogroup scheduling (the default on desktop Linux), the load
    # generator's hundreds of threads then share one CPU slot instead of crowding out the window's thread.
    with contextlib.suppress(OSError):
        os.setsid()
    lock = threading.Lock()

    def send(*msg: Any) -> None:
        with lock:
            try:
                conn.send(msg)
            except (BrokenPipeError, OSError):
                pass

    if req.password is not None:
        remember_password(req.target, req.password)
    store = Store(req.store_path)
    exp: Any = None
    try:
        plan = None
        if req.sweep is not None:
            plan, _info = plan_sweep(req.sweep, req.target, req.spec.transport, note=lambda m: send("note", m))
        sweep = req.sweep
        exp = Experiment(store, req.target, req.spec, plan=plan,
                         reset_data=sweep.reset_data if sweep else False,
                         cooldown_seconds=sweep.cooldown_seconds if sweep else 0,
                         on_interval=lambda iv: send("interval", iv), on_note=lambda m: send("note", m),
                         on_samples=lambda t, v: send("samples", t, v), on_event=lambda e: send("event", e),
                         on_step=lambda s: send("step", s))
        threading.Thread(target=_commands, args=(conn, exp, send), daemon=True).start()
        result = exp.run()
    except TunebenchError as exc:
        send("failed", str(exc))
        return
    finally:
        store.close()
    send("finished", result)


def _commands(conn: Connection, exp: Any, send: Any) -> None:
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            exp.request_stop()  # the window went away: stop, and put the knobs back
            return
        kind = msg[0]
        if kind == "stop":
            exp.request_stop()
        elif kind == "mark":
            exp._record(Event(time.time(), "mark", msg[1]))
        elif kind in ("knob", "restore"):
            rid = msg[1]
            try:
                if kind == "knob":
                    payload: Any = exp.change_knob(msg[2], msg[3])
                else:
                    payload = exp.controller.restore() if exp.controller is not None else []
                send("reply", rid, True, payload)
            except TunebenchError as exc:
                send("reply", rid, False, str(exc))
