"""Changing knobs on a target and always putting them back.

Before the first change of a knob, its original value goes into the store's journal; the journal is
replayed at the end of the run, on abort, on SIGTERM, and after a crash by `tunebench restore` (or
automatically at the next start). Dynamic knobs use SET GLOBAL with a read-back; static knobs and CPU
binding restart the sandbox with a my.cnf overlay; on an external target with a restart method (db_host,
option_file, restart_command: hosts/remote_restart.py) static knobs go into that option file over SSH and
the server restarts with its command; other external targets refuse static knobs before anything runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import mysql.connector

from tunebench.core.errors import ConfigError, StoreError, TargetError, TunebenchError
from tunebench.core.interval import Event
from tunebench.core.kinds import JournalKind, JournalState
from tunebench.core.knobs import KnobInfo, cnf_entry, server_set
from tunebench.core.sessions import probe_variable
from tunebench.core.sweep import ConfigPlan
from tunebench.core.sweep.plan import human
from tunebench.hosts.remote_restart import OPTION_FILE, RemoteRestart, overlay_text, wait_for_server
from tunebench.hosts.sandbox import SandboxServer
from tunebench.mysql.connect import ServerInfo, introspect, open_connection
from tunebench.mysql.knobs import describe_knobs, read_global, set_global
from tunebench.mysql.probes import undo_probe_setting
from tunebench.mysql.target import Target, conn_params
from tunebench.run.drift import MOVING, Drift, read_variables
from tunebench.run.runlock import RunLock, TargetBusy
from tunebench.store import ledger
from tunebench.store.owner import owner_alive, proc_start
from tunebench.store.repo import Store

OVERLAY = "@sandbox"  # journal name of the sandbox's my.cnf overlay + CPU binding
NULL = "\0NULL"  # a NULL original in the journal (a real value never holds NUL: core.knobs refuses it)


def to_journal(value: str | None) -> str:
    return NULL if value is None else value


def from_journal(text: str) -> str | None:
    return None if text == NULL else text


def shown(text: str | None) -> str:
    """An original as the user reads it."""
    return "NULL" if text is None or text == NULL else text


class ProbeJournal:
    """What the probes switch on at the server (InnoDB monitor counters, performance_schema instruments and
    consumers), journaled like knobs (kind 'probe') so a killed run's settings are put back at the next start.
    `add` before the change; `settle` once it is undone (or was refused)."""

    def __init__(self, controller: KnobController):
        self.controller = controller

    def add(self, name: str, original: str) -> int | None:
        return self.controller.journal(name, "probe", original)

    def settle(self, row: int | None, state: JournalState = "restored") -> None:
        if row is not None:
            _mark(self.controller.store, row, state)


def sandbox_for(target: Target) -> SandboxServer | None:
    """The Tunebench sandbox behind this target, if it is one (its socket lives in a sandbox dir)."""
    if not target.socket:
        return None
    base = Path(target.socket).parent
    if Path(target.socket).name == "mysqld.sock" and (base / "state.json").is_file():
        return SandboxServer(base)
    return None


SEAL_WAIT = 5.0  # seconds the final restore waits for a live change it killed


class KnobController:
    def __init__(self, store: Store, target: Target, info: ServerInfo, session_id: int | None,
                 event: Callable[[Event], None] | None = None, note: Callable[[str], None] | None = None,
                 around_restart: tuple[Callable[[], None], Callable[[], None]] | None = None,
                 ssh_keys: tuple[str, ...] = ()):
        self.store, self.target, self.info, self.session_id = store, target, info, session_id
        # (before, after): the run pauses its probes so a planned restart is not reported as a failure
        self.around_restart = around_restart or (lambda: None, lambda: None)
        self.sandbox = sandbox_for(target)
        self.event = event or (lambda _e: None)
        self.note = note or (lambda _m: None)
        self.remote = (RemoteRestart(target, self.note, key_files=ssh_keys)
                       if self.sandbox is None and target.restart_command else None)
        self._written: str | None = None  # the option file's content as this run last wrote it
        self.owner = (os.getpid(), proc_start(os.getpid()))
        self._journaled: list[dict[str, Any]] = []  # the journal rows this run wrote, as journal_pending reads them
        self.knobs: dict[str, KnobInfo] = {}
        self.touched: set[str] = set()  # every setting this run changed (the drift guard leaves them out)
        self.expected: dict[str, str | None] = {}  # each knob's value as this run set it (the drift guard checks it)
        # variables the server moved when a knob changed, found by reading them all before and after: name -> its
        # original (journaled with the knob, put back after it, reset before each configuration, never drift)
        self.companions: dict[str, str | None] = {}
        # variables that move by themselves (core MOVING, and what the drift guard learns in the warm-up)
        self.moving: set[str] = set()
        self._family_facts: dict[str, bool] = {}  # a family variable -> whether a SET GLOBAL can put it back
        self.restarts = 0
        self._password: str | None = None
        # the final restore seals the controller: no live change starts after it, and one in flight is killed
        # (a SET that lands after the restore would leave the server changed; issue 43 item 8)
        self._seal_lock = threading.Lock()
        self._sealed = False
        self._in_flight: dict[int, int] = {}  # id(conn) -> its server thread id

    # -- connections --
    def connect(self) -> Any:
        params = conn_params(self.target, None, password=self._password)
        self._password = params.password
        return open_connection(params, self.target.name)

    def describe(self, names: Iterable[str]) -> dict[str, KnobInfo]:
        conn = self.connect()
        try:
            found = describe_knobs(conn, self.info, names)
        finally:
            conn.close()
        self.knobs.update(found)
        return found

    def check_restartable(self, configs: Iterable[ConfigPlan]) -> None:
        if self.sandbox is not None:
            return
        for c in configs:
            if c.static and self.remote is None:
                name = next(iter(c.static))
                raise ConfigError(f"{name} is static (needs a server restart) and target {self.target.name} has no "
                                  "restart method: `tunebench target add` with --db-host, --option-file and "
                                  "--restart-command gives it one")
            if c.cpus:
                raise ConfigError(f"the cpus axis binds the sandbox server; target {self.target.name} is not it")

    # -- journal --
    def journal(self, name: str, kind: JournalKind, original: str | None, touch: bool = True) -> int | None:
        """A journal row for a setting about to change (its original, kind dynamic, static or probe); kept in
        memory too, so that the run puts it back even when its (server) store went away. `touch`: the run
        changes it (a provisional row of a knob's family does not, unless the server moves it)."""
        if touch:
            self.touched.add(name)
        when = time.time()
        row_id = self.store.journal_add(session_id=self.session_id, target=self.target, name=name, kind=kind,
                                        original=to_journal(original), owner_pid=self.owner[0],
                                        owner_start=self.owner[1], created_at=when)
        if row_id is not None:
            self._journaled.append({"id": row_id, "session_id": self.session_id, "target": self.target.to_dict(),
                                    "target_name": self.target.name, "name": name, "kind": kind,
                                    "original": to_journal(original), "owner_pid": self.owner[0],
                                    "owner_start": self.owner[1], "created_at": when})
        return row_id

    def probe_journal(self) -> ProbeJournal:
        return ProbeJournal(self)

    # -- applying --
    def apply_config(self, cfg: ConfigPlan) -> dict[str, str | None]:
        """Bring the server to this configuration; returns the read-back value of every knob (None: NULL)."""
        readback: dict[str, str | None] = {}
        self.touched.update(cfg.knobs)  # (static ones change by a restart, journaled as the option file)
        if self.sandbox is not None:
            self._restart_sandbox(cfg)  # restarts only when the overlay or the CPU binding must change
        elif self.remote is not None and cfg.static:
            self._restart_remote(cfg)
        conn = self.connect()
        try:
            for name, value in cfg.knobs.items():
                info = self.knobs[name]
                if not info.dynamic:
                    readback[name] = read_global(conn, name)
                    if not info.same(readback[name], value):
                        raise TargetError(f"{name}: the server restarted but reads back {readback[name]!r}, "
                                          f"not {value!r}")
                    self.expected[name] = readback[name]
                    continue
                readback[name] = self._set(conn, info, value)
            self.reset_companions(conn, cfg.knobs)
        finally:
            conn.close()
        return readback

    def unexpected(self, now: Mapping[str, str | None]) -> list[Drift]:
        """This run's knobs whose value on the server (SHOW GLOBAL VARIABLES, `now`) is not the one it set."""
        out = []
        for name, want in self.expected.items():
            got = now.get(name.lower())
            info = self.knobs.get(name)
            if got is None or want is None or info is None:
                continue
            try:
                same = info.same(got, want)
            except (TunebenchError, ValueError):
                same = got == want
            if not same:
                out.append(Drift(name, want, got))
        return out

    def _set(self, conn: Any, info: KnobInfo, value: Any) -> str | None:
        current = read_global(conn, info.name)
        # Journaled before the change (a kill right after the SET must not lose the original); a refused
        # change is discarded so nothing is "restored" that was never changed.
        row = self.journal(info.name, "dynamic", current)
        before = read_variables(conn)  # every variable: what else the server moves with this one
        # the knob's family journaled too, before the SET: a kill between the SET and the reading after it must
        # not lose the original of a variable the server moved with it (innodb_io_capacity_max)
        provisional = self._journal_family(conn, info.name, before)
        try:
            got = set_global(conn, info, value)
        except (TunebenchError, mysql.connector.Error):
            if row is not None:
                _mark(self.store, row, "discarded", "the server refused the change")
            self._discard(provisional, info.name)
            raise
        moved = self._companions_of(info.name, before, read_variables(conn), provisional)
        self._discard({n: r for n, r in provisional.items() if n not in self.companions}, info.name)
        self.expected[info.name] = got
        if not info.same(got, value):
            self.note(f"{info.name}: asked for {sized(value)}, the server reads back {sized(got)}")
        if not info.same(got, current) or moved:
            # the marker's label the way people write sizes (innodb_buffer_pool_size = 640M); the values as read
            self.event(Event(time.time(), "knob", f"{info.name} = {sized(got)}",
                             {"name": info.name, "from": current, "to": got, "asked": value,
                              **({"moved": {n: [a, b] for n, (a, b) in moved.items()}} if moved else {})}))
        return got

    def _journal_family(self, conn: Any, knob: str, before: Mapping[str, str | None]) -> dict[str, int]:
        """Provisional journal rows (original = the reading before the SET) for the settable variables of the
        knob's family (the same first two words) that this run has not journaled yet; discarded right after the
        SET for those the server did not move. Their restore after a kill in between changes nothing that did not
        move (an unchanged variable is not set)."""
        family = _family(knob)
        names = [n for n in sorted(before) if _family(n) == family and n != knob.lower()
                 and n not in self.companions and n not in self.touched and n not in MOVING and n not in self.moving
                 and not server_set(n) and not probe_variable(n)]
        todo = [n for n in names if n not in self._family_facts]
        if todo:
            self._family_facts.update(dict.fromkeys(todo, False))
            self._family_facts.update(dict.fromkeys(self._settable(todo, conn), True))
        rows: dict[str, int] = {}
        for name in names:
            if self._family_facts.get(name):
                row = self.journal(name, "dynamic", before[name], touch=False)
                if row is not None:
                    rows[name] = row
        return rows

    def _discard(self, rows: Mapping[str, int], knob: str) -> None:
        for row in rows.values():
            _mark(self.store, row, "discarded", f"did not move with {knob}")
            self._journaled = [r for r in self._journaled if r["id"] != row]

    def _companions_of(self, knob: str, before: Mapping[str, str | None], after: Mapping[str, str | None],
                       provisional: Mapping[str, int] | None = None) -> dict[str, tuple[str | None, str | None]]:
        """The variables that moved between the two readings around a knob's SET (MySQL lowers
        innodb_max_dirty_pages_pct_lwm with innodb_max_dirty_pages_pct, MariaDB raises innodb_io_capacity_max with
        innodb_io_capacity, InnoDB adapts innodb_thread_sleep_delay): each new one journaled with its original
        (the reading before), put back after the knob, and no drift. Variables that move by themselves and those
        the server computes are not companions."""
        moved: dict[str, tuple[str | None, str | None]] = {}
        for name in sorted(set(before) | set(after)):
            was, now = before.get(name), after.get(name)
            if was == now or name == knob.lower() or name in MOVING or name in self.moving or server_set(name) \
                    or probe_variable(name):
                continue
            moved[name] = (was, now)
        new = [n for n in moved if n not in self.companions and n not in self.touched]  # (the first original wins)
        settable = self._settable(new)
        for name in new:
            was, now = moved[name]
            if name not in settable:  # the server's own state, moving under the load: neither put back nor drift
                self.moving.add(name)
                continue
            self.companions[name] = was
            if provisional and name in provisional:  # journaled before the SET already
                self.touched.add(name)
            else:
                self.journal(name, "dynamic", was)
            self.note(f"{name} moved {sized(was)} → {sized(now)} with {knob}: journaled, put back with it")
        return {n: v for n, v in moved.items() if n not in self.moving}

    def _settable(self, names: list[str], conn: Any = None) -> set[str]:
        """Those of `names` a SET GLOBAL can put back (dynamic, not read-only)."""
        if not names:
            return set()
        try:
            own = conn is None
            conn = self.connect() if own else conn
            try:
                facts = describe_knobs(conn, self.info, [n for n in names if n in self.info.variables])
            finally:
                if own:
                    conn.close()
        except (TunebenchError, mysql.connector.Error):
            return set(names)  # unknown: journaled (a restore that fails says so)
        return {n for n, k in facts.items() if k.dynamic and not k.fixed}

    def delayed_companion(self, name: str, was: str | None, now: str | None) -> bool:
        """A variable seen moving at a drift check, after a knob of this run changed: the companion of the knob of
        its family (the same first two words: innodb_thread_sleep_delay of innodb_thread_concurrency, which InnoDB
        adapts under load) -- journaled with the value it had before (put back with the knob) and no drift. One of
        no changed knob's family is drift (someone's SET GLOBAL)."""
        if name in self.companions:
            return True
        if server_set(name) or probe_variable(name) or name in MOVING:
            return False
        mine = [k for k in self.expected if _family(k) == _family(name) and k.lower() != name]
        if not mine:
            return False
        self.companions[name] = was
        self.journal(name, "dynamic", was)
        self.note(f"{name} moved {sized(was)} → {sized(now)} under load with {mine[0]} changed: its companion, "
                  "journaled and put back with it")
        return True

    def reset_companions(self, conn: Any, keep: Iterable[str]) -> None:
        """Before a configuration: the companions an earlier one moved, back at their originals (but those the
        configuration sets itself, `keep`), so that a configuration runs with what the server does for its own
        knobs only. One the server will not take back (its knob's value bounds it) stays, and is said."""
        keep = {k.lower() for k in keep}
        todo = {n: v for n, v in self.companions.items() if n not in keep and v is not None}
        if not todo:
            return
        now = read_variables(conn)
        stale = [n for n, v in todo.items() if now.get(n) != v]
        if not stale:
            return
        facts = describe_knobs(conn, self.info, stale)
        for name in stale:
            try:
                got = set_global(conn, facts[name], facts[name].normalize(todo[name])
                                 if facts[name].type != "string" else todo[name])
            except (TunebenchError, mysql.connector.Error, KeyError) as exc:
                self.note(f"{name} stays at {sized(now.get(name))} (its original {sized(todo[name])} refused: "
                          f"{getattr(exc, 'msg', None) or exc})")
                continue
            if got != todo[name]:
                self.note(f"{name} reads back {sized(got)}, not its original {sized(todo[name])}, under this "
                          "configuration's knobs")

    def set_live(self, name: str, value: Any) -> dict[str, Any]:
        """A dynamic knob change while the load runs (the GUI's knob panel)."""
        info = self.knobs.get(name) or self.describe([name])[name]
        info.check_settable()
        if not info.dynamic:
            raise ConfigError(f"{name} is static: it cannot change while the load runs")
        norm = info.normalize(value)
        conn = self.connect()
        try:
            with self._seal_lock:
                if self._sealed:
                    raise TargetError(f"{name}: the run is ending and its knobs are going back; no change now")
                self._in_flight[id(conn)] = int(conn.connection_id or 0)
            try:
                before = read_global(conn, name)
                after = self._set(conn, info, norm)
            finally:
                with self._seal_lock:
                    self._in_flight.pop(id(conn), None)
        finally:
            conn.close()
        return {"name": name, "from": before, "to": after}

    def seal(self, wait: float = SEAL_WAIT) -> None:
        """No live change from now on; one still waiting for the server is killed (KILL QUERY) and waited for up to
        `wait` seconds, so that nothing is set after the knobs go back."""
        with self._seal_lock:
            self._sealed = True
            ids = [t for t in self._in_flight.values() if t]
        if not ids:
            return
        with contextlib.suppress(TunebenchError, mysql.connector.Error):
            conn = open_connection(conn_params(self.target, None, password=self._password), self.target.name,
                                   timeout=5, read_timeout=5)
            try:
                cur = conn.cursor()
                for t in ids:
                    with contextlib.suppress(mysql.connector.Error):
                        cur.execute(f"KILL QUERY {int(t)}")
                cur.close()
            finally:
                conn.close()
        end = time.monotonic() + wait
        while time.monotonic() < end:
            with self._seal_lock:
                if not self._in_flight:
                    return
            time.sleep(0.05)
        self.note("a live knob change did not end within "
                  f"{wait:.0f} s of the run's end; the restore that follows may run before it")

    def _restart_sandbox(self, cfg: ConfigPlan) -> None:
        sb = self.sandbox
        assert sb is not None
        st = sb.status()
        original = self._original_overlay()
        if original is None:
            original = {"overrides": st.overrides, "cpus": st.cpus}
            self.journal(OVERLAY, "static", json.dumps(original))
        # Only what differs from the server as it was: a static knob at its original value needs no overlay.
        changed = {k: v for k, v in cfg.static.items()
                   if not (k in self.knobs and self.knobs[k].same(v, self.knobs[k].current))}
        overrides = {**original["overrides"], **dict(cnf_entry(k, v) for k, v in changed.items())}
        cpus = cfg.cpus if cfg.cpus is not None else original["cpus"]  # no cpus axis: as it was
        if overrides == st.overrides and cpus == st.cpus and st.running:
            return
        if not st.running:
            raise TargetError("the sandbox server is not running")
        t0 = time.time()
        self.around_restart[0]()
        try:
            sb.start(overrides, cpus)
        finally:
            self.around_restart[1]()
        self.restarts += 1
        self.event(Event(time.time(), "restart", f"sandbox restarted ({time.time() - t0:.1f} s): "
                         + (", ".join(f"{k}={v}" for k, v in cfg.static.items()) or "original settings")
                         + (f", cpus {cfg.cpus}" if cfg.cpus else ""),
                         {"static": dict(cfg.static), "cpus": cfg.cpus, "seconds": round(time.time() - t0, 2)}))

    def _original_overlay(self, name: str = OVERLAY) -> dict[str, Any] | None:
        for r in self.store.journal_pending():
            if r["name"] == name and r["target_name"] == self.target.name:
                return json.loads(r["original"])
        return None

    def _restart_remote(self, cfg: ConfigPlan) -> None:
        """The static knobs into the target's option file on its host, then its restart command."""
        remote = self.remote
        assert remote is not None
        original = self._original_overlay(OPTION_FILE)
        if original is None:
            original = remote.read_original()
            self.journal(OPTION_FILE, "static", json.dumps(original))
            self._written = original["content"]
        changed = {k: v for k, v in cfg.static.items()
                   if not (k in self.knobs and self.knobs[k].same(v, self.knobs[k].current))}
        content = overlay_text(dict(cnf_entry(k, v) for k, v in changed.items())) if changed else original["content"]
        if content == (self._written if self._written is not None else original["content"]):
            return
        self.around_restart[0]()
        try:
            took = remote.restart(content, lambda: wait_for_server(self.connect))
        finally:
            self.around_restart[1]()
        self._written = content
        self.restarts += 1
        self.event(Event(time.time(), "restart", f"{self.target.name} restarted over SSH ({took:.1f} s): "
                         + (", ".join(f"{k}={v}" for k, v in cfg.static.items()) or "original settings"),
                         {"static": dict(cfg.static), "seconds": round(took, 2), "option_file": remote.path}))

    # -- restoring --
    def restore(self, final: bool = True) -> list[dict[str, Any]]:
        """Put back every knob this process journaled (static first, then dynamic); `final` (the run's end): no
        live change after it."""
        if final:
            self.seal()
        store: Store | None = self.store
        # what this run journaled and this machine's ledger still vouches for (not yet restored or discarded):
        # from memory, so a shared store's rows changed meanwhile do not decide what is put back
        rows = [r for r in self._journaled if ledger.vouched(ledger.digest(r))]
        try:
            self.store.journal_pending()  # (the store's row ids, so that each is marked when put back)
        except StoreError as exc:  # gone (a server store down): marked there at the next start
            store = None
            self.note(f"{exc}: the knobs this run changed are put back from its memory (the journal there keeps "
                      "them pending; putting an original back twice is harmless)")
        self.expected.clear()  # from here on the originals are what the server should read
        self.around_restart[0]()
        try:
            done = restore_rows(store, rows, self.note)
        finally:
            self.around_restart[1]()
        self.restarts += sum(1 for d in done if d["name"] in (OVERLAY, OPTION_FILE) and d.get("restarted"))
        for d in done:
            if d["name"] in (OVERLAY, OPTION_FILE) and d.get("restarted"):
                what = "sandbox" if d["name"] == OVERLAY else self.target.name
                self.event(Event(time.time(), "restart", f"{what} restarted: original settings", d))
            # (one at its original already -- a restart put it back -- is said too; a provisional row of a knob's
            # family that nothing moved is not)
            if d["state"] == "restored" and d.get("kind") != "probe" and (
                    not d.get("unchanged") or d["name"] in self.touched):
                self.event(Event(time.time(), "restore", restore_line(d), d))
            elif d.get("unreachable") or d["state"] == "restored":
                continue  # one note said it for the whole target
            else:
                self.event(Event(time.time(), "error", f"could not restore {d['name']}: {d['message']}", d))
        return done


def _same(k: KnobInfo, got: str | None, want: str) -> bool:
    try:
        return got is not None and k.same(got, want)
    except (TunebenchError, ValueError):
        return got == want


def _family(name: str) -> str:
    """A variable's family: its first two words (innodb_thread, innodb_io, innodb_max)."""
    return "_".join(name.lower().split("_")[:2])


def sized(value: Any) -> str:
    """A value as a label says it: a size in bytes the way my.cnf writes it (67108864 -> 64M, 671088640 -> 640M),
    anything else as it is."""
    text = str(value)
    return human(int(text)) if text.isdigit() else text


def _mark(store: Store | None, row: int | Mapping[str, Any], state: JournalState, message: str | None = None
          ) -> None:
    """Journal bookkeeping never stops a restore: a store that cannot be written (disk full), or is gone (None),
    leaves the row pending, and putting back an original twice is harmless. A row done here (restored, discarded)
    is no longer vouched for by this machine's ledger, whatever the store took."""
    if not isinstance(row, int) and state in ("restored", "discarded"):
        ledger.withdraw(ledger.digest(row))
    if store is None:
        return
    with contextlib.suppress(StoreError):
        store.journal_mark(row if isinstance(row, int) else row["id"], state, message)


def restore_line(d: Mapping[str, Any]) -> str:
    """A restored journal row in words (the Events, the window): the sandbox's overlay and a remote option file
    are described, not shown as their journal JSON."""
    if d["name"] == OVERLAY:
        orig = json.loads(d["original"]) if isinstance(d["original"], str) else d["original"]
        overrides = ", ".join(f"{k}={v}" for k, v in (orig.get("overrides") or {}).items())
        cpus = orig.get("cpus")
        return ("sandbox settings put back: " + (f"my.cnf {overrides}" if overrides else "no my.cnf overrides")
                + (f", CPUs {cpus}" if cpus else ", all CPUs"))
    if d["name"] == OPTION_FILE:
        return f"{d.get('target', 'the target')}: its option file put back as it was"
    return f"{d['name']} restored to {d['original']}"


def restore_rows(store: Store | None, rows: list[dict[str, Any]], note: Callable[[str], None],
                 lock: bool = False) -> list[dict[str, Any]]:
    """Put back journaled settings, per target. `lock`: take the server's run lock first (a restore from outside
    a run); a server another run holds is left alone, its rows pending, and said in one line naming the holder
    (restoring under a live run changes its configuration and is undone by that run's own restore)."""
    out: list[dict[str, Any]] = []
    by_target: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_target.setdefault(r["target_name"], []).append(r)
    for target_rows in by_target.values():
        target = Target(**target_rows[0]["target"])
        held = None
        if lock:
            try:
                held = _lock_for_restore(target)
            except TargetBusy as exc:
                for r in target_rows:
                    out.append({"id": r["id"], "target": target.name, "name": r["name"],
                                "original": shown(r["original"]), "kind": r["kind"], "state": "busy",
                                "message": str(exc)})
                note(f"not restored now: {exc}; the journal keeps them for `tunebench restore` once it is free")
                continue
        try:
            out += _restore_target(store, target, target_rows, note)
        finally:
            if held is not None:
                held.release()
    return out


def _lock_for_restore(target: Target) -> RunLock | None:
    """The run lock of the target's server, or None when the server cannot be reached (nothing runs there then;
    a stopped sandbox is started by the restore itself)."""
    try:
        params = conn_params(target, None)
    except TunebenchError:
        return None
    held = RunLock(params, target.name, "restore")
    try:
        held.acquire()
    except TargetBusy:
        raise
    except TunebenchError:
        return None
    return held


def _restore_target(store: Store | None, target: Target, target_rows: list[dict[str, Any]], note: Callable[[str], None]
                    ) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    statics = [r for r in target_rows if r["kind"] == "static"]
    dynamics = [r for r in target_rows if r["kind"] == "dynamic"]
    for r in statics:
        result = {"id": r["id"], "target": target.name, "name": r["name"], "original": r["original"]}
        try:
            if r["name"] == OPTION_FILE:
                result.update(_restore_remote(target, json.loads(r["original"]), note))
                _mark(store, r, "restored")
                out.append({**result, "state": "restored"})
                continue
            sb = sandbox_for(target)
            if sb is None:
                raise TargetError("not a sandbox: restart it with its original settings by hand")
            orig = json.loads(r["original"])
            st = sb.status()
            restarted = not (st.running and st.overrides == orig["overrides"] and st.cpus == orig["cpus"])
            if restarted:
                sb.start(orig["overrides"], orig["cpus"])
            _mark(store, r, "restored")
            out.append({**result, "state": "restored", "restarted": restarted})
        except TunebenchError as exc:
            _mark(store, r, "failed", str(exc))
            out.append({**result, "state": "failed", "message": str(exc)})
    probes = [r for r in target_rows if r["kind"] == "probe"]
    if not dynamics and not probes:
        return out
    try:
        conn = open_connection(conn_params(target, None), target.name)
    except TunebenchError as exc:
        for r in (*dynamics, *probes):  # still pending: restored at the next start or `tunebench restore`
            out.append({"id": r["id"], "target": target.name, "name": r["name"], "original": shown(r["original"]),
                        "kind": r["kind"], "state": "failed", "message": str(exc), "unreachable": True})
        note(f"cannot restore knobs on {target.name}: {exc}; the journal keeps them for `tunebench restore`")
        return out
    try:
        out += _restore_dynamic(store, conn, target, dynamics)
        for r in probes:
            result = {"id": r["id"], "target": target.name, "name": r["name"], "original": r["original"],
                      "kind": "probe"}
            try:
                undo_probe_setting(conn, r["name"], r["original"])
                _mark(store, r, "restored")
                out.append({**result, "state": "restored"})
            except (TunebenchError, mysql.connector.Error) as exc:
                _mark(store, r, "failed", str(exc))
                out.append({**result, "state": "failed", "message": str(exc)})
    finally:
        with contextlib.suppress(Exception):
            conn.close()
    return out


def _restore_dynamic(store: Store | None, conn: Any, target: Target,
                     rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not rows:
        return []
    out: list[dict[str, Any]] = []
    try:
        info = introspect(conn)
        facts = describe_knobs(conn, info, [r["name"] for r in rows])
    except (TunebenchError, mysql.connector.Error) as exc:  # the server failed between two rows (issue 43 item 8)
        message = getattr(exc, "msg", None) or str(exc)
        for r in rows:  # each stays for `tunebench restore` (a failed row is retried there)
            _mark(store, r, "failed", message)
            out.append({"id": r["id"], "target": target.name, "name": r["name"],
                        "original": shown(from_journal(r["original"])), "state": "failed", "message": message})
        return out
    for r in rows:
        original = from_journal(r["original"])
        result = {"id": r["id"], "target": target.name, "name": r["name"], "original": shown(original)}
        try:
            k = facts[r["name"]]
            if original is not None and _same(k, read_global(conn, k.name), original):
                # nothing to put back (a provisional row of a knob's family the server did not move): not set
                _mark(store, r, "restored")
                out.append({**result, "state": "restored", "unchanged": True})
                continue
            value = original if original is None or k.type == "string" else k.normalize(original)
            got = set_global(conn, k, value)
            ok = k.same(got, original)
            _mark(store, r, "restored" if ok else "failed", None if ok else f"reads back {shown(got)}")
            out.append({**result, "state": "restored" if ok else "failed", "now": got})
        except (TunebenchError, KeyError, mysql.connector.Error) as exc:
            _mark(store, r, "failed", str(exc))
            out.append({**result, "state": "failed", "message": str(exc)})
    return out


def _restore_remote(target: Target, original: dict[str, Any], note: Callable[[str], None]) -> dict[str, Any]:
    """The option file as it was (or gone, if it was not there), and one restart so the server reads it."""
    remote = RemoteRestart(target, note)
    try:
        def up() -> None:
            wait_for_server(lambda: open_connection(conn_params(target, None), target.name, timeout=5))

        took = remote.restart(original.get("content"), up)
    finally:
        remote.close()
    return {"restarted": True, "seconds": round(took, 2)}


def restore_pending(store: Store, force: bool = False, note: Callable[[str], None] | None = None,
                    failed: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Restore journal entries whose run is gone (crash, kill -9), and with `failed` those an earlier restore could
    not put back (`tunebench restore`). Entries of a live run are left to it unless `force`. Returns
    (restored-or-failed, skipped-because-in-use)."""
    rows = store.journal_pending(failed=failed)
    live = [r for r in rows if owner_alive(r["owner_pid"], r["owner_start"]) and r["owner_pid"] != os.getpid()]
    todo = rows if force else [r for r in rows if r not in live]
    done = restore_rows(store, todo, note or (lambda _m: None), lock=True)
    for sid in {r["session_id"] for r in todo if r["session_id"] is not None}:
        store.mark_interrupted(sid)
    return done, ([] if force else live)


def restored_lines(done: Iterable[Mapping[str, Any]]) -> list[str]:
    """What restoring a killed run's journal did, a line per knob and one for all probe settings of a target;
    targets that could not be reached were said by restore_rows' note already."""
    lines: list[str] = []
    probes: Counter[str] = Counter()
    for d in done:
        if d["state"] == "restored" and d.get("kind") == "probe":
            probes[d["target"]] += 1
        elif d["state"] == "restored" and d.get("unchanged"):
            continue  # nothing was changed: nothing to say
        elif d["state"] == "restored":
            lines.append(f"restored {d['name']} = {d['original']} on {d['target']} "
                         "(left changed by an interrupted run)")
        elif not d.get("unreachable") and d["state"] != "busy":  # both said in one line per target already
            lines.append(f"could not restore {d['name']} on {d['target']}: {d.get('message')}; "
                         "run `tunebench restore`")
    lines += [f"put back {n} probe setting(s) on {t} (InnoDB monitors, performance_schema) left by an interrupted run"
              for t, n in probes.items()]
    return lines


def describe_pending(rows: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(f"{r['name']}={r['original']} on {r['target']}" for r in rows)
