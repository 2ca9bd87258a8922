"""This machine's word for the knob journal rows it wrote: a file per pending row in the user's data dir, named by
a digest of everything a restore acts on (target, knob, original, owner, times).

The journal lives in the store, and a store can be a shared database others write (issue 43 item 1: a crafted row
there, host = this machine, a dead owner pid, a local socket and `innodb_flush_log_at_trx_commit` original '0',
made a plain `tunebench sessions list` here SET the knob). A restore acts only on rows vouched for here: written by
a Tunebench of this user on this machine, with the content it wrote, still pending by its own account (the file
goes when the row is restored or discarded, so an old row set back to pending is not acted on again). What a store
says beyond that is shown, never acted on."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tunebench import paths

FIELDS = ("target", "target_name", "name", "kind", "original", "owner_pid", "owner_start", "session_id")


def _dir() -> Path:
    d = paths.data_dir() / "journal"
    d.mkdir(mode=0o700, exist_ok=True)
    return d


def digest(row: Mapping[str, Any]) -> str:
    """The row as a restore reads it (journal_pending's dict: the target parsed), its creation time to the bit."""
    target = row["target"] if isinstance(row["target"], str) else json.dumps(row["target"])
    values = [target if f == "target" else row[f] for f in FIELDS] + [float(row["created_at"]).hex()]
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


def vouch(d: str) -> None:
    """Before the row is written (a kill between the two leaves a file and no row: nothing acts on it)."""
    fd = os.open(_dir() / d, os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)


def vouched(d: str) -> bool:
    return (_dir() / d).is_file()


def withdraw(d: str | None) -> None:
    if d:
        with contextlib.suppress(FileNotFoundError):
            (_dir() / d).unlink()
