"""The store's JSON columns (configs, summaries, event data) read back: leniently from the store itself (a value
that is no object reads as empty, so one damaged session never takes the list down), strictly from a file to
import (objects of finite numbers, or the file is refused)."""

from __future__ import annotations

import json
from typing import Any

from tunebench.core import record_schema


class NotAnObject(ValueError):
    """A JSON column that does not hold what it must (an object of finite numbers)."""


def _no_constant(name: str) -> Any:
    raise NotAnObject(f"{name} is no number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # 1e999 parses as inf
        raise NotAnObject(f"{text} is no finite number")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 19:  # beyond int64: a float() of it overflows where it is shown
        raise NotAnObject(f"an integer of {len(text)} digits")
    return int(text)


def strict_object(text: object, nullable: bool = False) -> dict[str, Any] | None:
    """The JSON object in `text`: NotAnObject when it is not one (or not valid JSON, nested deeper than
    Python recurses, or holding NaN or Infinity). None for NULL when `nullable`."""
    if text is None and nullable:
        return None
    if not isinstance(text, str):
        raise NotAnObject(f"{type(text).__name__} where JSON text belongs")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except RecursionError:
        raise NotAnObject("JSON nested too deep") from None
    except NotAnObject:
        raise
    except ValueError as exc:  # JSONDecodeError, and integers of more digits than int() takes
        raise NotAnObject(f"not JSON ({str(exc).splitlines()[0][:80]})") from None
    if not isinstance(value, dict):
        raise NotAnObject(f"a JSON {type(value).__name__} where an object belongs")
    return value


def lenient_object(text: object) -> dict[str, Any]:
    """The JSON object in `text`, or {} when it is none (a damaged value shows as empty, not as a traceback)."""
    if not isinstance(text, str) or not text:
        return {}
    try:
        # NaN and Infinity (a store others write, or an older Tunebench's) read as no value: never "nanx" or "inf"
        # in a report, never invalid JSON in an export
        value = json.loads(text, parse_constant=lambda _c: None)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def lenient_event(kind: str, label: str, text: object) -> tuple[str, str, dict[str, Any]]:
    """An event as its readers may take it: (kind, label, data); one whose data is not what record_schema says
    its kind holds (a shared store's crafted row) becomes a note saying so, its data left out (issue 43 item 16:
    it crashed the Markdown export and the replay)."""
    data = lenient_object(text)
    try:
        record_schema.check_event(kind, data)
    except record_schema.Damaged as exc:
        return "note", f"{label} (a damaged record, left out: {exc})"[:500], {}
    return kind, label, data


def session_summary(text: object) -> dict[str, Any]:
    """A session's summary: an object whose "steps", when there, is a list of objects (what `sessions list`,
    the browser and the reports read from every session); a tune or a calibration that is not what record_schema
    says is left out."""
    summary = lenient_object(text)
    for key in ("tune", "calibration"):
        if key in summary:
            try:
                record_schema.check_summary({key: summary[key]})
            except record_schema.Damaged:
                del summary[key]
    steps = summary.get("steps")
    if "steps" in summary and not (isinstance(steps, list) and all(isinstance(s, dict) for s in steps)):
        summary["steps"] = [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []
    return summary
