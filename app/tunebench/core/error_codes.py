"""A run's errors by server error code (issue 44 item 4): the code, a name for the common ones, and the count,
in the step rows, the report and the tooltips alike."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# the codes a load meets most (MySQL and MariaDB alike unless said); others are shown by number
NAMES = {
    0: "no code", 1020: "record changed (MariaDB)", 1040: "too many connections", 1045: "access denied",
    1062: "duplicate key", 1146: "no such table", 1205: "lock wait timeout", 1213: "deadlock",
    1290: "read-only server", 1317: "query interrupted", 1969: "statement time limit (MariaDB)",
    2002: "cannot connect (socket)", 2003: "cannot connect (TCP)", 2006: "server gone away",
    2013: "lost connection", 3024: "execution time limit (MySQL)", 3572: "NOWAIT lock (MySQL)",
    4025: "check constraint", 1180: "commit failed",
}


def clean_codes(codes: Any) -> dict[int, float]:
    """{code: count} of positive finite counts, largest first; anything else in `codes` (an imported session's
    JSON) is left out."""
    out: dict[int, float] = {}
    if not isinstance(codes, Mapping):
        return out
    for k, v in codes.items():
        try:
            code, n = int(k), float(v)
        except (TypeError, ValueError, OverflowError):
            continue
        if 0 <= code < 100_000 and math.isfinite(n) and n > 0:
            out[code] = out.get(code, 0.0) + n
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def codes_text(codes: Any, names: bool = True) -> str:
    """'1213 deadlock: 10, 1205 lock wait timeout: 2' ('' when none are known)."""
    return ", ".join(f"{code}{' ' + NAMES[code] if names and code in NAMES else ''}: {n:,.0f}"
                     for code, n in clean_codes(codes).items())
