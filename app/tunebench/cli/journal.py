"""The knob journal from the command line: `tunebench restore`, and the restore every start does."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tunebench.cli.output import emit
from tunebench.cli.resolve import db_path, open_store


def cmd_restore(args: argparse.Namespace) -> int:
    from tunebench.run.tuning import restore_pending, shown

    store = open_store(args)
    done, live = restore_pending(store, force=args.force, note=lambda m: print(m, file=sys.stderr), failed=True)
    busy = [d for d in done if d["state"] == "busy"]
    failed = [d for d in done if d["state"] not in ("restored", "busy")]
    lines = [f"restored {d['name']} = {d['original']} on {d['target']}" if d["state"] == "restored" else
             f"FAILED {d['name']} on {d['target']}: {d.get('message')}" for d in done
             if d["state"] != "busy" and not d.get("unchanged")]  # (an unchanged one was not set: nothing to say)
    lines += [f"left alone (run in progress, pid {r['owner_pid']}): {r['name']} on {r['target_name']}" for r in live]
    # rows naming this machine that it did not write as they read: a store others can write is no order to a server
    foreign = store.journal_unvouched()
    lines += [f"left alone (not written by this machine's Tunebench as it reads, store/ledger.py): "
              f"{_plain(r['name'])} = {_plain(shown(r['original']))} on {_plain(r['target_name'])} "
              f"(journal row {r['id']})" for r in foreign]
    if lines or not busy or getattr(args, "json", False):
        emit(args, {"restored": done, "in_progress": live, "not_vouched": foreign},
             "\n".join(lines) or "nothing to restore")
    if busy:  # the note said which run holds the server: its rows stay in the journal
        return 2
    return 1 if failed else 0


def _plain(text: object) -> str:
    """A value read from a store others can write, as a terminal shows it: printable, one line, bounded."""
    out = "".join(c if c.isprintable() else "?" for c in str(text))
    return out if len(out) <= 80 else out[:77] + "..."


def auto_restore(args: argparse.Namespace, knobs: bool = True) -> None:
    """At every start: sessions whose process died are marked interrupted, and (unless `knobs` is off) knobs
    and probe settings a crashed or killed run left changed are put back; each said in one line."""
    path = db_path(args)
    if "://" not in path and not Path(path).exists():
        return
    from tunebench.run.tuning import restore_pending, restored_lines
    from tunebench.store.repo import Store

    store = Store(path)
    try:
        orphans = store.mark_orphans()
        if orphans:
            print(f"tunebench: session {', '.join(map(str, orphans))} marked interrupted (its process is gone)",
                  file=sys.stderr)
        if not knobs:
            return
        failed = [r for r in store.journal_pending(failed=True) if r["state"] == "failed"]
        if failed:  # said at every start until put back: a server left changed (issue 43 item 5)
            print("tunebench: not put back yet (an earlier restore failed): "
                  + ", ".join(f"{r['name']} on {r['target_name']}" for r in failed) + "; run `tunebench restore`",
                  file=sys.stderr)
        if not store.journal_pending():
            return
        done, _live = restore_pending(store, note=lambda m: print(m, file=sys.stderr))
    finally:
        store.close()
    for line in restored_lines(done):
        print(f"tunebench: {line}", file=sys.stderr)
