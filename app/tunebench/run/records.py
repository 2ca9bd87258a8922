"""What crosses the run's process boundary: typed records up, typed commands down, and one RunOutcome.

The window reads these by type; it never parses a message's text back (an unknown SSH host key arrives as
`RunError(kind="host_key_unknown", host="ssh://…")`, not as a sentence to match).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tunebench.core.errors import TunebenchError
from tunebench.core.kinds import RunStatus
from tunebench.core.stats import StepSummary


@dataclass(frozen=True, slots=True)
class StepResult:
    """One step's measured summary per client group, as the run reports it when the step ends."""

    idx: int
    summaries: tuple[StepSummary, ...]
    config: int = 0
    segments: tuple[dict[str, Any], ...] = ()
    incomplete: bool = False  # a client host or worker was lost, or the server did not answer
    efficiency: dict[str, dict[str, Any]] = field(default_factory=dict)  # group -> per-operation costs
    phase: str | None = None  # a phase plan's name of the step (l.i0, l.x, qr100 ...)
    action: dict[str, Any] | None = None  # an action step's result (no load: `summaries` is empty)
    # a step that ended when its work was done (max_rows): {why, transactions: {group: n}, seconds: {group: s}},
    # each group's transactions from the step's start (its ramp too) to the end of its last busy second
    finished: dict[str, Any] | None = None
    # its busy seconds (core/busy.py): {seconds, of, other_pct, host, threshold_pct}, None when not measured
    busy: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Samples:
    """Probe (or client-host) samples of one second: {series: value}."""

    t: float
    values: dict[str, float]


@dataclass(frozen=True, slots=True)
class RunSession:
    """The session a run records into, once it is opened: what a live metrics endpoint labels its series with."""

    session_id: int
    workload: str
    target: str
    host: str  # the machine the run runs on


@dataclass(frozen=True, slots=True)
class Note:
    """A line for the user (a step verdict, a restart, a probe that stopped working)."""

    text: str


@dataclass(frozen=True, slots=True)
class RunError:
    """Why a run (or a request to it) failed, as data: `kind` says what failed, `host` where.

    kinds: the environment error's class (config, workload, target, sandbox, store, engine, ssh) and, for
    SSH, the finer host_key_unknown / host_key_mismatch / auth / unreachable; `bug` for anything else (its
    message then carries the exception type: a bug surfaces, it is not dressed up as an environment error).
    """

    kind: str
    message: str
    host: str | None = None

    @staticmethod
    def from_exception(exc: BaseException) -> RunError:
        if isinstance(exc, TunebenchError):
            return RunError(exc.kind, str(exc), getattr(exc, "host", None))
        return RunError("bug", f"{type(exc).__name__}: {exc}")

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run ended: status, its session, the steps' summaries, the knobs put back, and the error if any.

    `details` holds the rest of the CLI's JSON result (server facts, probe status, sweep tables, restarts);
    `to_dict()` is that JSON, unchanged in shape.
    """

    status: RunStatus
    session_id: int | None
    steps: tuple[StepResult, ...] = ()
    restored: tuple[dict[str, Any], ...] = ()
    error: RunError | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def best_tps(self) -> float:
        return max((s.tps for r in self.steps for s in r.summaries), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"session_id": self.session_id, "status": self.status, **self.details}
        if self.restored:
            out["restored"] = list(self.restored)
        if self.error is not None:
            out["error"] = self.error.message
            out["error_kind"] = self.error.kind
            if self.error.host:
                out["error_host"] = self.error.host
        return out


# -- commands, from the window to the run --

@dataclass(frozen=True, slots=True)
class Stop:
    by_user: bool = True  # the window's Stop ("stopped"); False: the window closed under the run ("aborted")


@dataclass(frozen=True, slots=True)
class Mark:
    label: str


@dataclass(frozen=True, slots=True)
class ChangeKnob:
    rid: int
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class ConfirmKnob:
    """Confirm a live flip (the last one when `name` is None): ABBA BAAB blocks on the running load (run/confirm.py);
    the Reply is the plan, the verdict comes later as a "verdict" event."""

    rid: int
    name: str | None = None
    block_seconds: int = 10


@dataclass(frozen=True, slots=True)
class ChangeRate:
    """An open-loop group's rate, changed while the load runs (the stage's keys, the window)."""

    rid: int
    group: str
    rate: float


@dataclass(frozen=True, slots=True)
class RestoreKnobs:
    rid: int


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to a ChangeKnob / RestoreKnobs: `payload` when it worked, `error` when not."""

    rid: int
    payload: Any = None
    error: RunError | None = None
