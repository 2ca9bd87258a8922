"""The window's words for what the shared code says in the command line's terms: an error that tells a CLI
user which flag to give (`use --transport tcp`) tells a window user which field or choice to change. The
CLI keeps its flags; every message the window shows passes through `for_window`."""

from __future__ import annotations

import re

# (what the shared code says, what the window says instead); the longest first where one contains another
WINDOW_WORDS: tuple[tuple[str, str], ...] = (
    ("restart method: `tunebench target add` with --db-host, --option-file and --restart-command gives it one",
     "restart method: fill in its DB host (SSH), option file and restart command in Targets"),
    ("use --transport tcp", "choose the TCP transport"),
    ("use --transport socket", "choose the socket transport"),
    ("(use another --schema)", "(choose another schema in the workload options)"),
    ("(use e.g. --schema tunebench)", "(choose another schema in the workload options, e.g. tunebench)"),
    ("give a key with --ssh-key FILE", "give a key in the target's SSH key field"),
    ("each --client-host once", "each client host once"),
    ("(--engine sysbench)", "(choose the sysbench engine)"),
    ("prepare needs --workload NAME (a workloads/*.toml name or a .toml path)", "choose a workload first"),
    ("give --workload NAME (or --group NAME=WORKLOAD:THREADS)", "choose a workload first"),
    ("; give a file with --db", ""),
    (" or use --db PATH", ""),
    ("the journal keeps them for `tunebench restore`",
     "the journal keeps them: they are put back at the next start"),
    ("(--plan --json lists them all)", ""),
    ("check it and trust it explicitly with --trust-host-key", "check it and trust it when the window asks"),
    ("--cpus ", "CPU binding "),
    ("--option wants", "an option wants"),
    ("--group wants", "a client group wants"),
)
# Any other flag names a setting the window shows under the same words: --step-seconds -> step seconds (not an
# option with its value, --threads=4: that is a sysbench command line quoted as it ran)
FLAG = re.compile(r"(?<![\w-])--([a-z][a-z-]+)(?![\w-]*=)")


def for_window(text: str) -> str:
    for cli, window in WINDOW_WORDS:
        text = text.replace(cli, window)
    return FLAG.sub(lambda m: m.group(1).replace("-", " "), text)
