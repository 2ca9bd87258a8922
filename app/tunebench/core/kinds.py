"""The words the run seam passes as data (how a run ended, what an event is, what a knob journal row holds), as
types, so a misspelt kind fails the type check where it is written. What a store hands back is plain text."""

from __future__ import annotations

from typing import Literal

# How a run ended (RunOutcome.status, the session's last status, the CLI's exit code): "stopped" is the
# window's Stop, "aborted" a signal or a lost window, "incomplete" a step the server's outage cut short.
RunStatus = Literal["completed", "incomplete", "stopped", "aborted", "failed"]
# A session's status: "running" while its run writes it, "interrupted" once its process died mid-run (found
# at the next start, or imported that way), else how its run ended.
SessionStatus = Literal[RunStatus, "running", "interrupted"]

# What the probe sampler reports about a probe (run/monitor.py); "probe" alone is news, not a failure.
ProbeEventKind = Literal["probe", "probe_unavailable", "probe_error", "probe_slow", "probe_stalled"]
# What an Event is (core/interval.py).
EventKind = Literal[
    "step_start", "step_end", "ramp", "config",  # the steps, and a sweep's configurations
    "knob", "restart", "restore", "drift",  # the server's settings: ours, put back, or changed by someone else
    "rate",  # an open-loop group's rate, changed while the load ran
    "trial", "tune",  # a knob search's trials (their seconds: a band), and its result
    "verdict", "mark", "note", "error", "gap", "server", "engine",
    "statement",  # a statement digest's text (the statements probe), once per session
    ProbeEventKind,
]

# What a knob journal row holds: a dynamic knob's value, a static one's option overlay or file, a probe's
# server setting.
JournalKind = Literal["dynamic", "static", "probe"]
# Where a journal row stands: "discarded" is a change the server refused (nothing to put back).
JournalState = Literal["pending", "restored", "failed", "discarded"]
