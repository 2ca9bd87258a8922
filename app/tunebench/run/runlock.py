"""One run at a time per server: two runs at once measure each other and tune under each other's knobs.

Two locks, both taken before anything is changed: a local one (flock on a file named after the server's own
identity, so the sandbox's socket and its TCP port are one server) that names the holder's pid and session,
and a server-side GET_LOCK that every Tunebench using that server sees, from any machine. The server lock
lives on a connection of its own; a restart of the server releases it and the run takes it again after.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from typing import Any

import mysql.connector

from tunebench import paths
from tunebench.core.errors import TargetError
from tunebench.mysql.connect import open_connection, query_all
from tunebench.mysql.target import ConnParams

SERVER_LOCK = "tunebench.run"


class TargetBusy(TargetError):
    """Another Tunebench run holds this server."""


class RunLock:
    def __init__(self, params: ConnParams, target_name: str, what: str):
        self.params, self.target_name, self.what = params, target_name, what
        self._file: Any = None
        self._conn: Any = None
        self.key = ""

    def acquire(self, session_id: int | None = None) -> None:
        self._conn = open_connection(self.params, self.target_name, timeout=5, read_timeout=10)
        try:
            host, port, datadir = query_all(self._conn, "SELECT @@hostname, @@port, @@datadir")[0]
            self.key = hashlib.sha1(f"{_text(host)}:{port}:{_text(datadir)}".encode()).hexdigest()[:16]
            self._lock_file(session_id)
            self._lock_server()
        except BaseException:
            self.release()
            raise

    def _lock_file(self, session_id: int | None) -> None:
        path = paths.data_dir() / "locks" / f"{self.key}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path, "a+")  # noqa: SIM115 - held for the whole run
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = _holder(f.read())
            f.close()
            raise TargetBusy(f"target {self.target_name} is in use by another Tunebench run ({holder}); wait for it "
                             "to end or stop it first") from None
        f.seek(0)
        f.truncate()
        f.write(json.dumps({"pid": os.getpid(), "what": self.what, "target": self.target_name,
                            "session": session_id, "since": time.time()}))
        f.flush()
        self._file = f

    def _lock_server(self) -> None:
        got = query_all(self._conn, "SELECT GET_LOCK(%s, 0)", (SERVER_LOCK,))[0][0]
        if got == 1:
            return
        who = ""
        with contextlib.suppress(mysql.connector.Error, IndexError):
            holder = query_all(self._conn, "SELECT IS_USED_LOCK(%s)", (SERVER_LOCK,))[0][0]
            user, host, secs = query_all(self._conn, "SELECT USER, HOST, TIME FROM information_schema.PROCESSLIST "
                                                     "WHERE ID = %s", (holder,))[0]
            who = f": connection {holder} of {_text(user)} from {_text(host)}, for {secs} s"
        raise TargetBusy(f"target {self.target_name} is in use by a Tunebench run on another machine{who}; wait "
                         "for it to end or stop it first")

    def name_session(self, session_id: int) -> None:
        """The holder's session, once it exists (what a refused run then names)."""
        if self._file is not None:
            with contextlib.suppress(OSError, ValueError):
                self._file.seek(0)
                d = json.loads(self._file.read() or "{}")
                self._file.seek(0)
                self._file.truncate()
                self._file.write(json.dumps({**d, "session": session_id}))
                self._file.flush()

    def after_restart(self) -> None:
        """The server restarted (a static knob): the server lock went with the old connection; take it again."""
        if self._conn is None:
            return
        with contextlib.suppress(Exception):
            self._conn.close()
        try:
            self._conn = open_connection(self.params, f"{self.target_name} (lock)", timeout=5, read_timeout=10)
            query_all(self._conn, "SELECT GET_LOCK(%s, 0)", (SERVER_LOCK,))
        except (TargetError, mysql.connector.Error):
            self._conn = None  # the local lock still holds; the run goes on

    def release(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                query_all(self._conn, "SELECT RELEASE_LOCK(%s)", (SERVER_LOCK,))
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.truncate(0)
                fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, (bytes, bytearray)) else str(v)


def _holder(text: str) -> str:
    try:
        d = json.loads(text)
    except ValueError:
        return "holder unknown"
    since = time.strftime("%H:%M:%S", time.localtime(d.get("since", 0)))
    session = f", session {d['session']}" if d.get("session") else ""
    return f"{d.get('what', 'a run')}, pid {d.get('pid')}{session}, since {since}"
