"""The drift guard: a server variable that changed while a run went, and not by Tunebench, is said on the
timeline (a `drift` event, a marker on the plots) and flagged on the step. Someone else's SET GLOBAL, or a
script's side effect (sysbench-tpcc's prepare leaves innodb_flush_log_at_trx_commit=0 behind), makes a step
measure another server than the one the session says, e.g. results 8x too good."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import mysql.connector

from tunebench.core.errors import TunebenchError
from tunebench.core.interval import Event
from tunebench.mysql.connect import query_all, text_of

# Variables that move by themselves on a busy server (replication positions) or that the probes write as
# commands (the InnoDB monitor counters' enable/disable/reset take a counter name, and show the last one).
# Others (whatever the next version exposes as a variable and moves) are learned in the first step's warm-up.
MOVING = frozenset({
    "gtid_binlog_pos", "gtid_binlog_state", "gtid_current_pos", "gtid_slave_pos", "gtid_executed", "gtid_purged",
    "gtid_owned",
    "innodb_monitor_enable", "innodb_monitor_disable", "innodb_monitor_reset", "innodb_monitor_reset_all",
})


@dataclass(frozen=True, slots=True)
class Drift:
    name: str
    before: str | None
    after: str | None

    def text(self) -> str:
        return f"{self.name} {self.before} → {self.after}"


def read_variables(conn: Any) -> dict[str, str | None]:
    rows = query_all(conn, "SHOW GLOBAL VARIABLES")
    return {text_of(k).lower(): (None if v is None else text_of(v)) for k, v in rows}


def drifted(before: Mapping[str, str | None], after: Mapping[str, str | None], ours: Iterable[str],
            moving: Iterable[str] = ()) -> list[Drift]:
    """What changed from `before` to `after`, less the variables Tunebench changed (`ours`) and those that move
    by themselves (MOVING and `moving`, learned); a variable that appeared or went away (a plugin loaded) counts
    too."""
    mine = {n.lower() for n in ours} | MOVING | set(moving)
    names = sorted((set(before) | set(after)) - mine)
    return [Drift(n, before.get(n), after.get(n)) for n in names if before.get(n) != after.get(n)]


class DriftGuard:
    """Snapshots of SHOW GLOBAL VARIABLES at each step's start and end (`check`); a change between two
    snapshots that Tunebench did not make becomes a `drift` event. `ours()` names what Tunebench changed so
    far (knobs and probe settings: the knob journal's names)."""

    def __init__(self, connect: Callable[[], Any], ours: Callable[[], Iterable[str]],
                 record: Callable[[Event], None],
                 expected: Callable[[Mapping[str, str | None]], list[Drift]] | None = None,
                 companion: Callable[[str, str | None, str | None], bool] | None = None):
        self.connect = connect
        self.last: dict[str, str | None] | None = None  # none before the first snapshot
        self.ours = ours
        self.record = record
        # Tunebench's own knobs are left out of the comparison, and checked instead against the value it set:
        # someone's SET GLOBAL of a knob of the configuration is drift at every check where it still differs
        # (each step that ran with another value than its label is flagged)
        self.expected = expected or (lambda _now: [])
        # a variable that moved later than its knob's SET (InnoDB adapts innodb_thread_sleep_delay under load while
        # innodb_thread_concurrency > 0): the controller takes it as that knob's companion (journaled, put back),
        # not drift (KnobController.delayed_companion)
        self.companion = companion or (lambda _n, _b, _a: False)
        self.moving: set[str] = set()  # learned in the first warm-up: variables the server moves by itself
        self.learned = False
        self._lock = threading.Lock()  # check (the run) and learn (a timer in the first warm-up)

    def _snapshot(self) -> dict[str, str | None] | None:
        """SHOW GLOBAL VARIABLES now; None when the server does not answer."""
        try:
            conn = self.connect()
            try:
                return read_variables(conn)
            finally:
                conn.close()
        except (TunebenchError, mysql.connector.Error, OSError):
            return None

    def learn(self) -> list[str]:
        """In the first step's warm-up, with no knob changed since the last snapshot: the variables that moved
        meanwhile move by themselves (GTID sets, counters a version exposes as variables): never drift, never a
        knob's companion. Said in one event."""
        with self._lock:
            if self.learned or self.last is None:
                return []
            self.learned = True
            now = self._snapshot()
            if now is None:
                return []
            # a knob's delayed companion first (the first configuration's innodb_thread_concurrency moves
            # innodb_thread_sleep_delay in the warm-up: journaled and put back, not learned as moving)
            found = [d.name for d in drifted(self.last, now, self.ours(), self.moving)
                     if not self.companion(d.name, d.before, d.after)]
            self.moving.update(found)
            self.last = now
        if found:
            self.record(Event(time.time(), "note", "server variables that move by themselves under load (not drift, "
                              "never put back): " + ", ".join(found), {"moving": found}))
        return found

    def check(self, when: str) -> list[Drift]:
        """Compare the server's variables now with the last snapshot; `when` says where ("during step 2"). A
        server that does not answer is the server watch's to report: no snapshot then, the next compares."""
        now = self._snapshot()
        if now is None:  # an outage: the watch reports it
            return []
        with self._lock:
            found = [] if self.last is None else drifted(self.last, now, self.ours(), self.moving)
            found = [d for d in found if not self.companion(d.name, d.before, d.after)]
            found += self.expected(now)
            self.last = now
        if found:
            self.record(Event(time.time(), "drift", f"server variables changed outside Tunebench ({when}): "
                              + ", ".join(d.text() for d in found),
                              {"drift": [{"name": d.name, "from": d.before, "to": d.after} for d in found],
                               "when": when}))
        return found
