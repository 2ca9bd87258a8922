"""How values a file supplied are shown: control characters made visible (a name holding ESC ] ... cannot
drive the terminal), and times that are no date shown as '?' instead of raising."""

from __future__ import annotations

import math
import time

# C0 controls, DEL, C1 controls (0x9b is CSI on some terminals) and the bidirectional overrides and isolates
# (text that reads differently from what it is): each shown as its escape, \x1b or \u202e.
_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_LINE = {c: f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}" for c in _CONTROLS}
_TEXT = {c: e for c, e in _LINE.items() if c not in (0x09, 0x0A)}  # a document keeps its tabs and line breaks

# The last second time.localtime takes everywhere (the end of year 9999); a session starts after 1970.
LATEST_TIME = 253_402_300_799.0


def inert_line(value: object) -> str:
    """`value` as text for one line or cell: every control character escaped, line breaks included."""
    return str(value).translate(_LINE)


def inert_text(text: str) -> str:
    """A whole text we print (a table, a report): control characters escaped, except tabs and line breaks."""
    return text.translate(_TEXT)


def rate_text(rate: float) -> str:
    """A rate per second as the timeline, the stage and the events say it: 1,500 / 250 / 1.5 / 0.01 (never "0" for a
    rate under one: issue 43 item 18 read "10,000,000 -> 0/s")."""
    r = float(rate)
    return f"{r:,.0f}" if abs(r) >= 100 or r == 0 else f"{r:.3g}"


def is_time(t: object) -> bool:
    """Whether `t` is a wall-clock time a session can have: a finite number from 1970 to the year 9999."""
    return isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and 0 <= t <= LATEST_TIME


def local_time(t: object, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    """`t` (seconds since the epoch) in local time; '?' when it is no such time (inf, NaN, negative, None)."""
    if not is_time(t):
        return "?"
    try:
        return time.strftime(fmt, time.localtime(float(t)))  # type: ignore[arg-type]
    except (OverflowError, OSError, ValueError):  # a platform whose time_t is narrower
        return "?"


def seconds_between(start: object, end: object) -> float | None:
    """`end - start` when both are times and end is not before start (a duration to show), else None."""
    if not (is_time(start) and is_time(end)) or float(end) < float(start):  # type: ignore[arg-type]
        return None
    return float(end) - float(start)  # type: ignore[arg-type]
