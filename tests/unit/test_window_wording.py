"""No CLI flag in a window message: every error the shared code raises with a `--flag` in it (for the CLI) has
the window's own words (ui/wording.py), and the restore line of the sandbox's settings is words, not JSON."""

import ast
import json
import re
from pathlib import Path

from tunebench.run.tuning import OVERLAY, restore_line
from tunebench.ui.wording import for_window

APP = Path(__file__).resolve().parents[2] / "app" / "tunebench"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")
SAYS = {"note", "on_note", "_note", "say", "progress"}


def _text(node):
    """The literal text of a message (its f-string's constant parts, placeholders as {})."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return ""


def messages():
    """(file:line, text) of every message raised, or said as a note, outside the CLI's own package."""
    for path in sorted(APP.rglob("*.py")):
        if path.relative_to(APP).parts[0] == "cli" or path.name == "app.py":  # the command line's own words
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            call = None
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                call = node.exc
            elif isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if name in SAYS:
                    call = node
            if call is not None and call.args:
                text = _text(call.args[0])
                if text:
                    yield f"{path.relative_to(APP)}:{node.lineno}", text


def test_no_cli_flag_reaches_the_window():
    found = [(where, text) for where, text in messages() if FLAG.search(text)]
    assert len(found) >= 8  # the scan sees them (transport, schema, ssh key, client hosts, restart method...)
    left = [(where, for_window(text)) for where, text in found if FLAG.search(for_window(text))]
    assert left == []
    assert for_window("target t has no UNIX socket; use --transport tcp") == \
        "target t has no UNIX socket; choose the TCP transport"
    assert for_window("--step-seconds must be from 1 to 3600, got 0") == "step seconds must be from 1 to 3600, got 0"
    assert for_window("ran sysbench --threads=4 run") == "ran sysbench --threads=4 run"  # a command line as it ran


def test_the_sandbox_restore_line_is_words():
    """It was `@sandbox restored to {"overrides": {}, "cpus": null}` in the Events."""
    line = restore_line({"name": OVERLAY, "original": json.dumps({"overrides": {}, "cpus": None})})
    assert line == "sandbox settings put back: no my.cnf overrides, all CPUs"
    line = restore_line({"name": OVERLAY, "original": json.dumps({"overrides": {"innodb_log_file_size": "48M"},
                                                                  "cpus": "0-1"})})
    assert line == "sandbox settings put back: my.cnf innodb_log_file_size=48M, CPUs 0-1"
    assert restore_line({"name": "sync_binlog", "original": "1"}) == "sync_binlog restored to 1"

