"""One schema for what a session's events and summary hold, checked where a session comes from outside (a session
file imported, a shared store's rows): every field of every event kind the readers use (tune, trial, rate,
statement, verdict) and the summary's tune and calibration, typed from the dataclasses the readers rebuild
(Trial, TuneResult, Verdict) plus the plain records below. A value of another type, a number that is not finite
or not plausible, a time that is no date, a missing field a reader needs: `Damaged`, saying which and where
(issue 43 item 16: strings for numbers, lists for objects and 1e308 times passed the import, then crashed the
Markdown export and the replay).

Unknown fields pass (a newer Tunebench's additions are not read here); what is read is what is checked.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from tunebench.core.display import is_time
from tunebench.core.tune import Trial, TuneResult
from tunebench.core.verdict import Verdict, WaitShift

MAX_NUMBER = 1e15  # beyond any count, rate, size or ms a session holds (and far from float overflow)
MAX_TEXT = 1_000_000
# the fields that are instants (seconds since the epoch): checked as dates, not only as numbers
TIME_FIELDS = frozenset({"changed_at", "measure_from", "ended_at", "started_at", "t0", "t1", "at", "start", "end"})


class Damaged(ValueError):
    """A value of a session's record that is not what the schema says."""


Scalar = Union[str, int, float, bool, None]  # noqa: UP007 - a runtime value, checked by _check


@dataclass(frozen=True)
class _Optional:
    inner: Any


@dataclass(frozen=True)
class Fields:
    """A JSON object's schema: each field's type; those in `required` must be there."""

    types: Mapping[str, Any]
    required: frozenset[str] = field(default_factory=frozenset)

    def __or__(self, other: None) -> _Optional:  # CONFIRM | None
        return _Optional(self)


CONFIRM = Fields({"ratio": float | None, "ci_low": float | None, "ci_high": float | None, "pairs": int,
                  "order": str, "tps_a": float | None, "tps_b": float | None, "p99_a": float | None,
                  "p99_b": float | None, "seconds": list[int], "busy_left_out": int, "busy_pct": float | None,
                  "windows": list[list[Scalar]], "values": dict[str, Scalar], "floor_pct": float | None},
                 frozenset())
CALIBRATION = Fields({"floor_pct": float | None, "ratio": float | None, "ci_low": float | None,
                      "ci_high": float | None, "pairs": int, "busy_left_out": int, "block_seconds": int,
                      "settle_seconds": int, "group": str, "blocks": list[list[Scalar]], "busy_pct": float | None,
                      "workload": str | None, "threads": int | None})
# what a dataclass's JSON holds where it differs from its annotation
OVERRIDES: dict[tuple[type, str], Any] = {
    (TuneResult, "confirm"): CONFIRM | None,
    (TuneResult, "calibration"): CALIBRATION | None,
    (TuneResult, "spec"): dict[str, Any],
    (Trial, "asked"): dict[str, Scalar],
    (Trial, "values"): dict[str, Scalar],
    (Verdict, "ci_low"): float | None,  # to_dict writes an interval not judged as None
    (Verdict, "ci_high"): float | None,
    (Verdict, "windows"): list[list[float]] | None,
    (Verdict, "waits"): list[WaitShift],
}

EVENT_DATA: dict[str, Fields] = {
    "tune": Fields({"tune": TuneResult}, frozenset({"tune"})),
    "trial": Fields({"n": int, "t0": float, "t1": float, "baseline": bool, "confirm": str, "name": str,
                     "trial": Trial}),
    "rate": Fields({"group": str, "from": float, "to": float}, frozenset({"group", "from", "to"})),
    "statement": Fields({"probe": str, "digest": str, "full": str, "text": str, "schema": str},
                        frozenset({"digest"})),
    "verdict": Fields({"name": str, "from": Scalar, "to": Scalar, "group": str, "at": float, "start": float,
                       "end": float, "settle_before": int, "new_sessions_only": bool,
                       "excluded": list[list[float]], "busy_pct": float | None, "floor_pct": float | None,
                       "verdict": Verdict | None, "blocks": list[list[Scalar]], "order": str, "confirmed": bool,
                       "calibration": bool, "calibrated_floor_pct": float | None},
                      frozenset({"name", "group"})),
    "note": Fields({"n": int, "calibration": CALIBRATION | None}),
}
SUMMARY = Fields({"tune": TuneResult | None, "calibration": CALIBRATION | None})


def check_event(kind: str, data: Any, what: str = "the event") -> None:
    """Damaged unless an event's data holds what its kind's readers read."""
    schema = EVENT_DATA.get(kind)
    if schema is not None:
        _fields(schema, {} if data is None else data, f"{what} ({kind})")


def check_summary(summary: Any, what: str = "the summary") -> None:
    if summary is not None:
        _fields(SUMMARY, summary, what)


def check_dataclass(cls: type, value: Any, what: str) -> None:
    """Damaged unless `value` is the JSON of a `cls` (its to_dict), field by field."""
    if not isinstance(value, Mapping):
        raise Damaged(f"{what} is {_kind(value)}, not an object")
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.name not in value:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise Damaged(f"{what} has no {f.name}")
            continue
        tp = OVERRIDES.get((cls, f.name), hints[f.name])
        _check(value[f.name], tp, f"{what}'s {f.name}", f.name)


def _fields(schema: Fields, value: Any, what: str) -> None:
    if not isinstance(value, Mapping):
        raise Damaged(f"{what} is {_kind(value)}, not an object")
    for name in schema.required:
        if name not in value:
            raise Damaged(f"{what} has no {name}")
    for name, tp in schema.types.items():
        if name in value:
            _check(value[name], tp, f"{what}'s {name}", name)


def _check(value: Any, tp: Any, what: str, name: str = "") -> None:
    if tp is Any:
        return
    if isinstance(tp, Fields):
        _fields(tp, value, what)
        return
    if isinstance(tp, _Optional):
        if value is not None:
            _check(value, tp.inner, what, name)
        return
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        arms = [a for a in args if a is not type(None)]
        if value is None and len(arms) < len(args):
            return
        if len(arms) == 1:
            _check(value, arms[0], what, name)
            return
        for arm in arms:
            try:
                _check(value, arm, what, name)
                return
            except Damaged:
                continue
        raise Damaged(f"{what} is {_kind(value)}, not a plain value")
    if tp is type(None):
        if value is not None:
            raise Damaged(f"{what} is {_kind(value)}, not null")
        return
    if tp is bool:
        if not isinstance(value, bool):
            raise Damaged(f"{what} is {_kind(value)}, not true or false")
        return
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool) or abs(value) >= 2**63:
            raise Damaged(f"{what} is {_kind(value)}, not a whole number")
        return
    if tp is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise Damaged(f"{what} is {_kind(value)}, not a number")
        if not math.isfinite(value) or abs(value) > MAX_NUMBER:
            raise Damaged(f"{what} is {value!r:.40}, not a plausible number")
        if name in TIME_FIELDS and not is_time(value):
            raise Damaged(f"{what} is {value!r:.40}, not a date")
        return
    if tp is str:
        if not isinstance(value, str) or len(value) > MAX_TEXT:
            raise Damaged(f"{what} is {_kind(value)}, not text")
        return
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        check_dataclass(tp, value, what)
        return
    if origin is dict:
        if not isinstance(value, Mapping):
            raise Damaged(f"{what} is {_kind(value)}, not an object")
        _k, v_tp = typing.get_args(tp)
        for k, v in value.items():
            if not isinstance(k, str):
                raise Damaged(f"{what} has a key that is not text")
            _check(v, v_tp, f"{what}[{k!r:.30}]", k)
        return
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise Damaged(f"{what} is {_kind(value)}, not a list")
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise Damaged(f"{what} has {len(value)} items, not {len(args)}")
            for i, (v, a) in enumerate(zip(value, args, strict=True)):
                _check(v, a, f"{what}[{i}]", name)
            return
        item = args[0] if args else Any
        for i, v in enumerate(value):
            _check(v, item, f"{what}[{i}]", name)
        return
    raise TypeError(f"record_schema: no check for {tp!r}")  # a bug here, not in the file


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, str):
        return f"text ({value!r:.30})"
    if isinstance(value, (int, float)):
        return f"the number {value!r:.30}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__
