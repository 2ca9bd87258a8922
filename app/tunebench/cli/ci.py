"""`tunebench ci RECIPE --baseline NAME`: run a recipe, add its result to the series NAME, and exit 1 only when the
new result is a regression beyond that series' own noise (core/history.py regression_check), 0 otherwise; a
Markdown summary on stdout (or --markdown FILE) and JUnit XML for CI systems (--junit FILE)."""

from __future__ import annotations

import argparse
import math
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from tunebench.core.errors import ConfigError

TAG = "ci:"
REPEATS_MAX = 20


def _check_name(name: str) -> str:
    from tunebench.run.history import MAX_NAME

    if not name or len(name) > MAX_NAME or any(c.isspace() or c == "," for c in name) or name.startswith("-"):
        raise ConfigError(f"--baseline is a name of 1-{MAX_NAME} characters without spaces or commas, not "
                          f"starting with '-', got {name!r}")
    return name


def _writable(path: str | None, what: str) -> Path | None:
    """A file the command will write: its folder must exist (refused before anything runs)."""
    if path is None:
        return None
    p = Path(path)
    if not p.parent.is_dir():
        raise ConfigError(f"{what} {path}: no folder {p.parent}")
    if p.is_dir():
        raise ConfigError(f"{what} {path} is a folder")
    return p


def _sweep_argv(args: argparse.Namespace) -> list[str]:
    argv = [*(["--db", args.db] if getattr(args, "db", None) else []), "sweep", args.recipe, "--json"]
    for flag, value in (("--target", args.target), ("--server", args.server),
                        ("--transport", args.transport), ("--threads", args.threads),
                        ("--step-seconds", args.step_seconds), ("--warmup-seconds", args.warmup_seconds),
                        ("--probes", args.probes), ("--schema", args.schema)):
        if value is not None:
            argv += [flag, str(value)]
    return argv


def _tags(session: dict[str, Any]) -> list[str]:
    return [t for t in (session.get("tags") or "").replace(",", " ").split() if t]


def cmd_ci(args: argparse.Namespace) -> int:
    from tunebench.cli import build_parser
    from tunebench.cli.output import exit_code
    from tunebench.cli.resolve import open_store
    from tunebench.cli.runs import run_sweep
    from tunebench.core import history
    from tunebench.run.history import differed

    name = _check_name(args.baseline)
    junit, md_file = _writable(args.junit, "--junit"), _writable(args.markdown, "--markdown")
    sweep_args = build_parser().parse_args(_sweep_argv(args))  # (its values checked like `sweep`'s)
    store = open_store(args)
    try:
        earlier = [s for s in store.list_sessions() if s.get("status") == "completed"]
        earlier = [store.get_session(int(s["id"]), events=False) for s in earlier]
        earlier = sorted((s for s in earlier if TAG + name in _tags(s)), key=lambda s: (s["started_at"] or 0, s["id"]))
        new: list[dict[str, Any]] = []
        for _ in range(args.repeats):
            outcome = run_sweep(sweep_args)
            assert outcome is not None  # (never --plan)
            _store, result = outcome
            session = store.get_session(int(result["session_id"]), events=False)
            store.update_session(session["id"], tags=",".join([*_tags(session), TAG + name]))
            if result["status"] != "completed":
                print(f"tunebench ci: the run ended {result['status']} (session {session['id']}): nothing judged",
                      file=sys.stderr)
                return exit_code(result["status"])
            new.append(session)
        report = judge(name, earlier, new, history, differed)
    finally:
        store.close()
    text = markdown(report)
    if md_file is not None:
        md_file.write_text(text)
        print(f"wrote {md_file}", file=sys.stderr)
    else:
        print(text)
    if junit is not None:
        junit.write_bytes(junit_xml(report))
        print(f"wrote {junit}", file=sys.stderr)
    return 1 if report["regression"] else 0


def judge(name: str, earlier: list[dict[str, Any]], new: list[dict[str, Any]], history: Any,
          differed: Any) -> dict[str, Any]:
    """The new sessions' points against the series' earlier ones, per load."""
    key = history.series_key(history.identity(new[0]))
    same = [s for s in earlier if history.series_key(history.identity(s)) == key]
    other = [s for s in earlier if s not in same]
    report: dict[str, Any] = {"baseline": name, "sessions": [s["id"] for s in new], "history": [s["id"] for s in same],
                              "experiment": history.describe(history.identity(new[0])), "loads": [],
                              "regression": False, "differed": [], "notes": []}
    if other:
        report["notes"].append(f"{len(other)} earlier session(s) under {name} ran another experiment (the recipe or "
                               "the server's major version changed): left out")
    if same:
        report["differed"] = differed(same[-1], new[0])
    for load in dict.fromkeys(p.load for s in new for p in history.points(s)):
        mine = [p for s in new for p in history.points(s) if p.load == load]
        all_before = [p for s in same for p in history.points(s) if p.load == load]
        before = [p.value for p in all_before if not p.busy]
        if len(before) < history.MIN_SEGMENT <= len(all_before):
            # a machine busy in most sessions (a shared CI runner): judged with them, and said
            before = [p.value for p in all_before]
            report["notes"].append(f"{load}: the machine was busy with other work in "
                                   f"{sum(p.busy for p in all_before)} of the {len(all_before)} earlier sessions: "
                                   "judged with them (their spread is in the series' noise)")
        quiet = [p for p in mine if not p.busy]
        row: dict[str, Any] = {"load": load, "metric": mine[0].metric, "new": [p.value for p in mine],
                               "history": len(before)}
        if not quiet:
            # the new run's own seconds were not the server's alone: no claim either way (a run beside two CPU hogs
            # came out at 0.38x and was called a regression)
            busy = ", ".join(f"{p.busy_seconds} of {p.seconds} s" for p in mine)
            row["verdict"] = (f"not judged: the machine was busy with other work during the new run ({busy}); "
                              "run it again on a quiet machine")
            row["regression"] = False
        elif len(before) < history.MIN_SEGMENT:
            row["verdict"] = (f"not judged: {len(before)} earlier session(s) in the series, "
                              f"{history.MIN_SEGMENT} needed")
            row["regression"] = False
        else:
            worse, ratio, low, high, z = history.regression_check(before, [p.value for p in quiet],
                                                                  mine[0].higher_is_better)
            if len(quiet) < len(mine):
                report["notes"].append(f"{load}: {len(mine) - len(quiet)} of the new run's repeats were beside a "
                                       "busy machine: judged without them")
            row.update(ratio=ratio, low=low, high=high, z=z, regression=worse)
            way = "regression" if worse else "no regression beyond the series' noise"
            row["verdict"] = f"{way}: {ratio:.2f}x {mine[0].metric} (95 % CI {low:.2f}-{high:.2f}, z {z:.1f})"
            report["regression"] = report["regression"] or worse
        report["loads"].append(row)
    if not same:
        report["notes"].append(f"the first run under {name}: it starts the series")
    return report


def markdown(report: dict[str, Any]) -> str:
    from tunebench.core.history import number

    verdict = "**regression**" if report["regression"] else "no regression"
    out = [f"## tunebench ci: {report['baseline']} -- {verdict}", "",
           f"Experiment: {report['experiment']}", "",
           f"New session(s): {', '.join(str(i) for i in report['sessions'])}; "
           f"earlier in the series: {len(report['history'])}", "",
           "| load | metric | new | earlier sessions | verdict |", "|---|---|---|---|---|"]
    for row in report["loads"]:
        new = ", ".join(number(v) for v in row["new"])
        out.append(f"| {row['load']} | {row['metric']} | {new} | {row['history']} | {row['verdict']} |")
    if report["differed"]:
        out += ["", "What else differed from the series' last session:", ""]
        out += [f"    {line}" for line in report["differed"]]
    for note in report["notes"]:
        out += ["", f"Note: {note}"]
    return "\n".join(out) + "\n"


def junit_xml(report: dict[str, Any]) -> bytes:
    """One test case per load; a regression is a failure with the verdict and what differed."""
    fails = sum(1 for r in report["loads"] if r.get("regression"))
    suite = ET.Element("testsuite", name=f"tunebench ci {report['baseline']}", tests=str(len(report["loads"])),
                       failures=str(fails), errors="0", skipped="0")
    for row in report["loads"]:
        case = ET.SubElement(suite, "testcase", classname=f"tunebench.{report['baseline']}",
                             name=f"{row['load']} {row['metric']}")
        if row.get("regression"):
            fail = ET.SubElement(case, "failure", message=row["verdict"], type="regression")
            fail.text = "\n".join([row["verdict"], *report["differed"]])
        elif "ratio" not in row or not math.isfinite(row.get("ratio", math.nan)):
            ET.SubElement(case, "system-out").text = row["verdict"]
    suites = ET.Element("testsuites")
    suites.append(suite)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)
