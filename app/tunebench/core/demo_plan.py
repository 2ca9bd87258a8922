"""A demo plan: what happens when during a talk, so the demo runs while the speaker talks (issue 45 item 4).

    name = "durability"
    title = "What does a durable commit cost?"
    rehearsal = 12                      # optional: the recorded session to continue on if the server dies

    [load]                              # the run the plan starts (or `sweep = "file.toml"`: a sweep spec)
    workload = "oltp_update_index"
    threads = 16
    rate = 0                            # open loop at this rate (0: closed loop)
    step_seconds = 150
    warmup_seconds = 5
    table_size = 10000

    [[step]]
    at = 0
    do = "start"
    caption = "oltp_update_index, 16 users, every commit flushed"
    [[step]]
    at = 20
    do = "flip"
    knob = "innodb_flush_log_at_trx_commit"
    value = "2"
    caption = "flush the redo log once a second instead"

Actions (`do`): start, flip (knob, value), confirm (the last flip, ABBA BAAB), rate (factor: the open-loop
rate times it), knee (the rate sweep's p99 against rate, on stage), mark, say (a caption only), stop. Each step
has `at` (seconds from the plan's start, not decreasing) and an optional caption. The plan is read whole and
checked before anything runs: a bad plan is one line, and nothing starts.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunebench.core.errors import ConfigError

ACTIONS = ("start", "flip", "confirm", "rate", "knee", "mark", "say", "stop")
STEP_KEYS = {"at", "do", "caption", "knob", "value", "factor"}
LOAD_KEYS = {"workload", "threads", "rate", "step_seconds", "warmup_seconds", "table_size", "tables", "sweep"}
TOP_KEYS = {"name", "title", "rehearsal", "load", "step"}
MAX_SECONDS = 24 * 3600


@dataclass(frozen=True, slots=True)
class Action:
    at: float
    do: str
    caption: str = ""
    knob: str = ""
    value: str = ""
    factor: float = 0.0

    def text(self) -> str:
        """What it does, in the words of the countdown: "flip innodb_flush_log_at_trx_commit to 2"."""
        return {"start": "start the load", "flip": f"flip {self.knob} to {self.value}",
                "confirm": "confirm the last flip (ABBA BAAB)", "rate": f"rate x{self.factor:g}",
                "knee": "show the knee (p99 against rate)", "mark": "a marker", "say": "",
                "stop": "stop the load"}[self.do]


@dataclass(frozen=True, slots=True)
class DemoPlan:
    name: str
    title: str
    load: dict[str, Any]
    actions: tuple[Action, ...]
    rehearsal: int | None = None
    source: str = ""
    sweep_file: str = field(default="")  # the load's sweep spec, resolved against the plan's folder

    @property
    def length(self) -> float:
        return self.actions[-1].at if self.actions else 0.0


def _number(value: object, what: str, low: float = 0.0, high: float = MAX_SECONDS) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{what} must be a number, not {value!r}")
    if not low <= float(value) <= high:
        raise ConfigError(f"{what} must be between {low:g} and {high:g}, not {value!r}")
    return float(value)


def _text(value: object, what: str, limit: int = 300) -> str:
    if not isinstance(value, str) or len(value) > limit or any(ord(c) < 32 and c not in "\n\t" for c in value):
        raise ConfigError(f"{what} must be a text of at most {limit} characters")
    return value.strip()


def _only(table: dict[str, Any], known: set[str], where: str) -> None:
    """ConfigError naming the first key of `table` not in `known` (and the known ones)."""
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{where} unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")


def parse_plan(text: str, source: str = "this demo plan", folder: Path | None = None) -> DemoPlan:
    """The plan in `text` (TOML), checked whole: ConfigError with one line naming what is wrong."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML ({exc})") from None
    _only(doc, TOP_KEYS, f"{source}:")
    name = _text(doc.get("name", Path(source).stem), f"{source}: name", 80)
    title = _text(doc.get("title", ""), f"{source}: title")
    rehearsal = doc.get("rehearsal")
    if rehearsal is not None and (isinstance(rehearsal, bool) or not isinstance(rehearsal, int) or rehearsal < 1):
        raise ConfigError(f"{source}: rehearsal must be a session ID (a positive integer), not {rehearsal!r}")
    load = doc.get("load", {})
    if not isinstance(load, dict):
        raise ConfigError(f"{source}: [load] must be a table")
    _only(load, LOAD_KEYS, f"{source}: [load] has")
    threads = load.get("threads")
    if isinstance(threads, list):  # one step per entry ([16, 16]: two steps of 16, a verdict at each's end)
        if not threads or len(threads) > 64:
            raise ConfigError(f"{source}: [load] threads must list 1 to 64 steps")
        for n in threads:
            _number(n, f"{source}: [load] threads", 1, 10 ** 6)
            if not isinstance(n, int):
                raise ConfigError(f"{source}: [load] threads must be whole numbers, not {n!r}")
    for key in ("step_seconds", "warmup_seconds", "table_size", "tables", *(() if isinstance(threads, list)
                                                                            else ("threads",))):
        if key in load:
            _number(load[key], f"{source}: [load] {key}", 0 if key == "warmup_seconds" else 1, 10 ** 9)
            if not isinstance(load[key], int):
                raise ConfigError(f"{source}: [load] {key} must be a whole number, not {load[key]!r}")
    if "rate" in load:
        _number(load["rate"], f"{source}: [load] rate", 0, 10 ** 7)
    for key in ("workload", "sweep"):
        if key in load:
            _text(load[key], f"{source}: [load] {key}", 200)
    sweep_file = ""
    if "sweep" in load:
        if "workload" in load:
            raise ConfigError(f"{source}: [load] has both a workload and a sweep: one of them")
        p = Path(str(load["sweep"]))
        sweep_file = str(p if p.is_absolute() or folder is None else folder / p)
    steps = doc.get("step", [])
    if not isinstance(steps, list) or not steps:
        raise ConfigError(f"{source}: no [[step]]: a plan lists what happens when")
    actions: list[Action] = []
    for i, s in enumerate(steps, 1):
        where = f"{source}: step {i}"
        if not isinstance(s, dict):
            raise ConfigError(f"{where} must be a table")
        _only(s, STEP_KEYS, f"{where} has")
        do = s.get("do")
        if do not in ACTIONS:
            raise ConfigError(f"{where}: do must be one of {', '.join(ACTIONS)}, not {do!r}")
        if "at" not in s:
            raise ConfigError(f"{where}: at (seconds from the plan's start) is missing")
        at = _number(s["at"], f"{where}: at")
        if actions and at < actions[-1].at:
            raise ConfigError(f"{where}: at {at:g} s comes before step {i - 1}'s {actions[-1].at:g} s")
        caption = _text(s.get("caption", ""), f"{where}: caption")
        knob = value = ""
        factor = 0.0
        if do == "flip":
            if "knob" not in s or "value" not in s:
                raise ConfigError(f"{where}: a flip names its knob and value")
            knob = _text(s["knob"], f"{where}: knob", 64)
            if not knob.replace("_", "").isalnum():
                raise ConfigError(f"{where}: knob {knob!r} is not a server variable's name")
            raw = s["value"]
            value = str(raw).upper() if isinstance(raw, bool) else _text(str(raw), f"{where}: value", 64)
            if isinstance(raw, bool):
                value = "ON" if raw else "OFF"
        elif "knob" in s or "value" in s:
            raise ConfigError(f"{where}: knob and value belong to a flip, not to {do}")
        if do == "rate":
            factor = _number(s.get("factor"), f"{where}: factor", 0.01, 100)
        elif "factor" in s:
            raise ConfigError(f"{where}: factor belongs to a rate step, not to {do}")
        if do == "say" and not caption:
            raise ConfigError(f"{where}: a say step has a caption")
        actions.append(Action(at, do, caption, knob, value, factor))
    starts = [a for a in actions if a.do == "start"]
    if len(starts) > 1:
        raise ConfigError(f"{source}: the load starts once (steps with do = \"start\": {len(starts)})")
    if starts and not load:
        raise ConfigError(f"{source}: a start step needs a [load] (the workload or sweep it runs)")
    return DemoPlan(name, title, dict(load), tuple(actions), rehearsal, source, sweep_file)


def due(plan: DemoPlan, done: int, t: float) -> list[int]:
    """The indexes of the actions due at plan time `t`, after the first `done` ones ran."""
    return [i for i in range(done, len(plan.actions)) if plan.actions[i].at <= t]
