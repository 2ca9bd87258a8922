"""Knobs set while no run goes (the window's knob panel between runs, issue 46 item 4): journaled like any change
(with what the server moved with them), held by the window's process, put back by "Restore all" or when the window
closes -- and after a kill -9 of the window, at the next start, as any journal row. The next run starts with them
and shows each as a marker at its start ("set before the run").

Blocking calls: the window runs them on its task thread (ui/tasks.py), one at a time.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from tunebench.mysql.connect import introspect, open_connection
from tunebench.mysql.target import Target, conn_params
from tunebench.run.runlock import RunLock
from tunebench.run.tuning import KnobController
from tunebench.store.repo import Store


class IdleKnobs:
    """Per target: the controller of the knobs set between runs, and what they were set to."""

    def __init__(self, store_location: str):
        self.location = store_location
        self._store: Store | None = None
        self._lock = threading.Lock()  # one change or restore at a time, whichever thread asks
        self._controllers: dict[str, KnobController] = {}
        self._changes: dict[str, dict[str, dict[str, Any]]] = {}  # target -> name -> {name, from, to, t}

    def _controller(self, target: Target) -> KnobController:
        ctl = self._controllers.get(target.name)
        if ctl is None:
            if self._store is None:
                self._store = Store(self.location)  # (its own: this thread's, not the window's)
            conn = open_connection(conn_params(target, None), target.name)
            try:
                info = introspect(conn)
            finally:
                conn.close()
            ctl = self._controllers[target.name] = KnobController(self._store, target, info, None)
        return ctl

    def set(self, target: Target, name: str, value: str) -> dict[str, Any]:
        """SET GLOBAL now, journaled (its original, and any variable the server moves with it); refused while a run
        holds the server (the change would land in its configuration)."""
        with self._lock:
            ctl = self._controller(target)
            held = RunLock(conn_params(target, None), target.name, "knob")
            held.acquire()  # TargetBusy names the run that holds it
            try:
                change = ctl.set_live(name, value)
            finally:
                held.release()
            first = self._changes.setdefault(target.name, {}).get(change["name"])
            self._changes[target.name][change["name"]] = {
                "name": change["name"], "from": first["from"] if first else change["from"], "to": change["to"],
                "t": time.time()}
            return {**change, "idle": True}

    def changes(self, target_name: str) -> tuple[dict[str, Any], ...]:
        """What was set on this target between runs (for the next run's markers), in the order set."""
        with self._lock:
            return tuple(sorted(self._changes.get(target_name, {}).values(), key=lambda c: c["t"]))

    def pending(self) -> bool:
        with self._lock:
            return any(self._changes.values())

    def restore(self) -> list[dict[str, Any]]:
        """Every knob set between runs back at its original (the journal marks each row); [] when none."""
        with self._lock:
            done: list[dict[str, Any]] = []
            for name in list(self._controllers):
                ctl = self._controllers.pop(name)
                done += ctl.restore()
            self._changes.clear()
            return done

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
