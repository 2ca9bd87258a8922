"""`tunebench sessions`: list, show, export, import, rename, tag, note and delete recorded sessions, and push or
pull one between this store and another (a shared server store)."""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
from pathlib import Path
from typing import Any

from tunebench.cli.output import emit, json_text
from tunebench.cli.resolve import open_store
from tunebench.core.display import inert_line, inert_text, local_time
from tunebench.core.errors import ConfigError
from tunebench.core.sessions import best_tps, servers_text

MAX_ID = 2**63 - 1  # SQLite's INTEGER



def session_id(text: str) -> int:
    """A session ID as typed: ConfigError for anything but a number in range."""
    try:
        sid = int(text)
    except ValueError:
        raise ConfigError(f"a session ID is a number, not {text!r}") from None
    if not 1 <= sid <= MAX_ID:
        raise ConfigError(f"no session {text} (IDs are from 1 to {MAX_ID})")
    return sid

def cmd_sessions(args: argparse.Namespace) -> int:
    if getattr(args, "host", None) is not None and args.action != "list":
        raise ConfigError("--host filters `sessions list`")
    if args.action in ("push", "pull"):
        return _transfer(args)
    store = open_store(args)
    if args.action == "list":
        host = getattr(args, "host", None)
        if host is not None and not host.strip():
            raise ConfigError("--host needs a machine's name ('-': sessions recorded before names were kept)")
        sessions = store.list_sessions(host=host)
        for s in sessions:
            s["best_tps"] = best_tps(s)
            s["server"] = servers_text(s)  # every server of a server axis
        lines = [f"{'id':>4}  {'started':19}  {'status':9}  {'host':12}  {'engine':8}  {'workload':22}  "
                 f"{'target':10}  {'server':18}  best tps"]
        for s in sessions:
            started = local_time(s["started_at"])
            best = "-" if s["best_tps"] is None else f"{s['best_tps']:.1f}"
            # each field escaped on its own: a line break in a name would otherwise fake a row
            f = {k: inert_line(s[k] or "") for k in ("status", "engine", "workload", "target", "server", "host")}
            lines.append(f"{s['id']:>4}  {started:19}  {f['status']:9}  {(f['host'] or '-')[:12]:12}  "
                         f"{f['engine']:8}  {f['workload'][:22]:22}  {f['target'][:10]:10}  "
                         f"{f['server']:18}  {best}")
        emit(args, sessions, "\n".join(lines))
        return 0
    if args.id is None:
        raise ConfigError(f"sessions {args.action} needs a session {'file' if args.action == 'import' else 'ID'}")
    if args.action == "import":
        done = store.import_sessions(args.id, again=args.again)
        lines = done.skipped_lines()
        if done.ids or not done.skipped:
            lines.append(f"imported {len(done.ids)} session(s) from {args.id}: {', '.join(map(str, done.ids))}")
        # nothing new is not a failure: the file's sessions are here, which is what the command is for
        emit(args, {"imported": done.ids, "skipped": [{"file": f, "here": h} for f, h in done.skipped]},
             "\n".join(lines))
        return 0
    sid = session_id(args.id)
    if args.action == "diff":
        return _diff(args, store, sid)
    if args.action == "profile":
        return _profile(args, store, sid)
    if args.action in ("rename", "tag", "note"):
        if args.text is None:
            raise ConfigError(f"sessions {args.action} {sid} needs the text ('' clears)")
        field = {"rename": "name", "tag": "tags", "note": "notes"}[args.action]
        store.update_session(sid, **{field: args.text})
        return 0
    if args.action == "delete":
        store.get_session(sid)
        store.delete_session(sid)
        shrunk = store.shrink()
        print(f"deleted session {sid}" + (" (store file compacted)" if shrunk else ""))
        return 0
    if args.action == "export":
        if args.format == "sqlite" and not args.output:
            raise ConfigError("--format sqlite writes a file: give it with --output FILE.tbsession")
        if args.output:
            _check_output(Path(args.output), overwrite=args.format != "sqlite")
        store.get_session(sid)
    if args.action == "export" and args.format == "sqlite":
        out_path = store.export_session(sid, args.output)
        print(f"wrote {out_path}: import it with `tunebench sessions import {out_path}`", file=sys.stderr)
        return 0
    session = store.get_session(sid)
    series = store.series(sid)
    if args.action == "show":
        session["series"] = {
            name: {"kind": d.kind, "points": len(d.v), "min": float(d.v.min()), "mean": float(d.v.mean()),
                   "max": float(d.v.max())} for name, d in sorted(series.items()) if len(d.v)
        }
        session["variables_count"] = len(session.pop("variables"))
        text = json.dumps({k: v for k, v in session.items() if k not in ("series", "events")}, indent=2,
                          default=str) + "\n\nseries:\n" + "\n".join(
            f"  {n:40} {s['points']:6} pts  min {s['min']:.3f}  mean {s['mean']:.3f}  max {s['max']:.3f}"
            for n, s in session["series"].items())
        emit(args, session, text)
        return 0
    # export
    if args.format == "json":
        session["series"] = {n: {"kind": d.kind, "t": d.t.tolist(), "v": d.v.tolist()} for n, d in series.items()}
        out = json_text(session)
    elif args.format == "md":
        from tunebench.core.results import markdown

        out = markdown(session)
    else:
        from tunebench.store.export import to_csv

        out = to_csv(session, series)
    out = inert_text(out)  # names from the file, read on a terminal sooner or later
    if args.output:
        try:
            Path(args.output).write_text(out)
        except OSError as exc:
            raise ConfigError(f"cannot write {args.output}: {exc.strerror}") from None
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(out)
    return 0


def _transfer(args: argparse.Namespace) -> int:
    """`sessions push ID --to STORE` / `sessions pull ID --from STORE`: one session copied whole between this
    store (--db) and another, a shared server store as a rule; one already there is said and skipped."""
    from tunebench.store.repo import Store
    from tunebench.store.session_transfer import transfer_session

    other = args.to if args.action == "push" else args.from_
    flag = "--to" if args.action == "push" else "--from"
    if not other:
        raise ConfigError(f"sessions {args.action} ID needs {flag} STORE (a file, or a server database's URL)")
    if (args.to if args.action == "pull" else args.from_):
        raise ConfigError(f"sessions {args.action} takes {flag}, not {'--from' if flag == '--to' else '--to'}")
    if args.id is None:
        raise ConfigError(f"sessions {args.action} needs a session ID")
    sid = session_id(args.id)
    here = open_store(args)
    there = Store(other)
    src, dst = (here, there) if args.action == "push" else (there, here)
    try:
        done = transfer_session(src, dst, sid)
    finally:
        there.close()
    lines = [f"session {sid} is already in {dst.where} as {h}: skipped" for _t, h in done.skipped]
    lines += [f"session {sid} of {src.where} copied into {dst.where} as session {i}" for i in done.ids]
    emit(args, {"from": src.where, "to": dst.where, "session": sid, "copied": done.ids,
                "skipped": [h for _t, h in done.skipped]}, "\n".join(lines))
    return 0


def _diff(args: argparse.Namespace, store: Any, sid: int) -> int:
    """`sessions diff A B`: waits and counters per transaction, profile functions, efficiency of one step each."""
    from tunebench.core.confdiff import between_sessions
    from tunebench.core.diff import default_pair, diff, step_choices, text, to_dict
    from tunebench.run.session import diff_side

    if args.text is None:
        raise ConfigError("sessions diff A B needs two session IDs (the same one twice, with --step and --step-b, "
                          "compares two of its steps)")
    try:
        other = int(args.text)
    except ValueError:
        raise ConfigError(f"a session ID is a number, not {args.text!r}") from None
    step_a, step_b = args.step, args.step_b
    if step_b is None:
        # never two concurrencies when the same one exists on both sides: B's step at A's threads
        sa, sb = store.get_session(sid, events=False), store.get_session(other, events=False)
        ca, cb = step_choices(sa), step_choices(sb)
        if step_a is None:
            pair = default_pair(ca, baseline=int((sa.get("summary") or {}).get("baseline") or 0)) if sid == other \
                else default_pair(ca, cb)
            if pair is not None:
                step_a, step_b = pair
        else:
            threads = next((c.threads for c in ca if c.step == step_a), None)
            same = [c for c in cb if c.threads == threads and (other != sid or c.step != step_a)]
            step_b = max(same, key=lambda c: c.tps).step if same else step_a
    a = diff_side(store, sid, step_a)
    b = diff_side(store, other, step_b)
    sections = diff(a, b)
    # what else differed between the two sessions' servers (one session against itself: its knobs, in the labels)
    config = between_sessions(store.get_session(sid, events=False), store.get_session(other, events=False)) \
        if other != sid else None
    tail = "\n\n" + "\n".join(config.lines()) if config is not None else ""
    emit(args, {"a": a.label, "b": b.label, **({"configuration": config.to_dict()} if config else {}),
                **to_dict(sections)}, text(a, b, sections).rstrip() + tail)
    return 0


def _profile(args: argparse.Namespace, store: Any, sid: int) -> int:
    """`sessions profile ID [--step N] [--top N] [--svg FILE] [--of client]`: the server's (or the load
    generator's) top functions by self time per profiled step (the `profile` probe's folded stacks), and a step's
    flame graph."""
    from tunebench.core.flamegraph import svg
    from tunebench.hosts.profile import self_top

    if not 1 <= args.top <= 1000:
        raise ConfigError(f"--top must be from 1 to 1000, got {args.top}")
    session = store.get_session(sid)
    key, whose = ("_profile_client", "client CPU") if args.of == "client" else ("_profile", "server CPU")
    steps = [st for st in session["steps"] if (st.get("summary") or {}).get(key)]
    if args.step is not None:
        steps = [st for st in steps if st["idx"] + 1 == args.step]
    if not steps:
        which = f"step {args.step}" if args.step is not None else "any step"
        raise ConfigError(f"session {sid} has no {whose} profile of {which} (record one with --probes ...,profile)")
    if args.svg and len(steps) > 1:
        raise ConfigError("--svg draws one step: give it with --step N")
    data, lines = [], []
    for st in steps:
        folded = st["summary"][key]
        top = self_top(collections.Counter(folded), args.top)
        samples = sum(folded.values())
        data.append({"step": st["idx"] + 1, "samples": samples, "top": [{"function": f, "pct": p} for f, p in top]})
        lines.append(f"step {st['idx'] + 1}: {samples} samples")
        lines += [f"  {p:5.1f} %  {f}" for f, p in top]
    if args.svg:
        _check_output(Path(args.svg), overwrite=True)
        st = steps[0]
        title = f"session {sid} step {st['idx'] + 1}: {session['workload']}, {whose} (self + children)"
        try:
            Path(args.svg).write_text(svg(st["summary"][key], title))
        except OSError as exc:
            raise ConfigError(f"cannot write {args.svg}: {exc.strerror}") from None
        lines.append(f"wrote {args.svg}")
    emit(args, data, "\n".join(lines))
    return 0


def _check_output(path: Path, overwrite: bool) -> None:
    """An export's destination, checked before anything is computed or written."""
    if path.is_dir():
        raise ConfigError(f"--output {path} is a directory; give a file name")
    if not path.parent.is_dir():
        raise ConfigError(f"--output {path}: the directory {path.parent} does not exist")
    if path.exists() and not overwrite:
        raise ConfigError(f"--output {path} exists; choose another name")
    if not os.access(path if path.exists() else path.parent, os.W_OK):
        raise ConfigError(f"--output {path}: not writable")
