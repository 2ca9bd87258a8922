"""Why two steps differ: the InnoDB waits and the server's counters per transaction, the CPU profile's functions
and the per-operation efficiency, side by side ("lock_latch waits per trx 0.8 -> 0.1"). Each side is one
recorded step's measured seconds (of a session, or two steps of one session)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tunebench.core.efficiency import LABELS, step_efficiency
from tunebench.core.statements import BUCKETS, PREFIX, TOTAL, elide, statements
from tunebench.core.verdict import window

TOP = 10  # rows per section
# Less than this per transaction on both sides (a connection per 100,000 transactions, a wait of 0.01 µs):
# moving from 0 to that is not why a step is faster, and it would crowd out what is.
NEGLIGIBLE = 0.01


@dataclass(frozen=True, slots=True)
class Side:
    """One step of one session: its series (name -> (t, v)), kinds (counter/gauge), window and client group."""

    label: str
    series: Mapping[str, tuple[Any, Any]]
    kinds: Mapping[str, str]
    lo: float
    hi: float
    group: str
    efficiency: Mapping[str, float | None]  # the step summary's (used where the series give none)
    texts: Mapping[str, str] = field(default_factory=dict)  # statement digest -> its text (`statement` events)


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    a: float | None
    b: float | None
    detail: str = ""  # what the name shortens (a statement's whole text)

    @property
    def change(self) -> float:
        """How much it moved, relative to the larger side (0 when neither has it)."""
        a, b = self.a or 0.0, self.b or 0.0
        top = max(abs(a), abs(b))
        return abs(b - a) / top if top else 0.0


def _seconds(side: Side, name: str) -> np.ndarray | None:
    """The finite per-second values of `name` in the side's window (None: no such series or no seconds)."""
    if name not in side.series:
        return None
    t, v = side.series[name]
    w = window(np.asarray(t, dtype=np.float64), np.asarray(v, dtype=np.float64), side.lo, side.hi)
    w = w[np.isfinite(w)]
    return w if len(w) else None


def _total(side: Side, name: str) -> float | None:
    w = _seconds(side, name)
    return None if w is None else float(w.sum())


def _mean(side: Side, name: str) -> float | None:
    w = _seconds(side, name)
    return None if w is None else float(w.mean())


def per_trx(side: Side, name: str) -> float | None:
    """A counter's total over the step's transactions (its per-second rates summed, over the TPS summed)."""
    num, trx = _total(side, name), _total(side, f"client.{side.group}.tps")
    return num / trx if num is not None and trx else None


def diff(a: Side, b: Side) -> dict[str, list[Row]]:
    """The sections, each sorted by how much its rows moved: waits (ms and count per transaction), server
    counters per transaction, profile functions (% of samples), efficiency (the step summaries')."""
    names = sorted(set(a.series) | set(b.series))
    waits = [n for n in names if n.startswith("waits.") and n.endswith((".ms", ".count"))
             and not n.startswith(("waits.total.", "waits.other."))]
    counters = [n for n in names if n.startswith(("server.", "innodb.")) and
                (a.kinds.get(n) or b.kinds.get(n)) == "rate"]
    profile = [n for n in names if n.startswith("profile.")]
    # from the series (so a session recorded before summaries kept it has it too), else the summary's
    ea, eb = (step_efficiency(x.series, x.group, x.lo, x.hi) or x.efficiency for x in (a, b))
    out = {
        "waits per transaction": [Row(_wait_name(n), _wait(a, n), _wait(b, n)) for n in waits],
        "server counters per transaction": [Row(n, per_trx(a, n), per_trx(b, n)) for n in counters],
        "profile (% of samples)": [Row(n.removeprefix("profile."), _mean(a, n), _mean(b, n)) for n in profile],
        "efficiency": [Row(LABELS[k], ea.get(k), eb.get(k)) for k in LABELS],
    }
    if any(n.startswith(PREFIX) for n in names):
        out[STATEMENTS] = statement_rows(a, b)
    for key, floor in (("waits per transaction", NEGLIGIBLE), ("server counters per transaction", NEGLIGIBLE),
                       ("profile (% of samples)", 0.0)):
        rows = [r for r in out[key] if max(abs(r.a or 0.0), abs(r.b or 0.0)) > floor]
        if key == "waits per transaction":  # the time waited is the story: the largest shift in µs first
            rows.sort(key=lambda r: (not r.name.endswith("µs"), -abs((r.b or 0.0) - (r.a or 0.0))))
        else:  # counters of any unit (bytes, pages, rows): by how much they moved, relatively
            rows.sort(key=lambda r: -r.change)
        out[key] = rows[:TOP]
    return out


STATEMENTS = "statements (calls/s, µs per call)"
TOP_STATEMENTS = 6  # statements in the section (two rows each), then the buckets


def statement_rows(a: Side, b: Side) -> list[Row]:
    """The statements that took the most time on either side: calls/s and mean latency a -> b; then MariaDB's
    undigested prepared statements, everything else, and all statements."""
    sa, sb = ({s.digest: s for s in statements(x.series, x.lo, x.hi, x.texts)} for x in (a, b))
    texts = {**b.texts, **a.texts}

    def busiest(d: str) -> float:
        return max((x[d].calls * (x[d].lat_us or 0.0)) if d in x else 0.0 for x in (sa, sb))

    digests = sorted((d for d in set(sa) | set(sb) if d not in BUCKETS), key=lambda d: -busiest(d))
    rows = []
    shown = digests[:TOP_STATEMENTS] + [d for d in BUCKETS if d in sa or d in sb]
    names: dict[str, str] = {}
    for d in shown:
        st = sa.get(d) or sb.get(d)
        names[d] = "all statements" if d == TOTAL else elide(st.text if st is not None else texts.get(d, d), 48)
    for d in shown:
        x, y = sa.get(d), sb.get(d)
        st = x or y
        text = st.text if st is not None else texts.get(d, d)
        name = names[d]
        if list(names.values()).count(name) > 1:  # two statements alike as far as the name shows: their digests
            name = f"{name} [{d[:6]}]"
        full = "" if d == TOTAL else f"{text} (digest {d})" if d not in BUCKETS else text
        rows.append(Row(f"{name} calls/s", x.calls if x else None, y.calls if y else None, full))
        rows.append(Row(f"{name} µs/call", x.lat_us if x else None, y.lat_us if y else None, full))
    return rows


def ratio(r: Row) -> str:
    """b / a as the tables show it ("" where a side has none or a is 0)."""
    return "" if r.a is None or r.b is None or not r.a else f"{r.b / r.a:.2f}x"


def _wait(side: Side, name: str) -> float | None:
    """µs of waiting (a `.ms` series) or waits (`.count`) per transaction."""
    return _us(per_trx(side, name)) if name.endswith(".ms") else per_trx(side, name)


def _us(ms: float | None) -> float | None:
    return None if ms is None else ms * 1000.0


def _wait_name(series: str) -> str:
    """`waits.rwlock/lock_latch.ms` -> `lock_latch (rwlock) µs`; `.count` -> `... waits`."""
    inst = series.removeprefix("waits.")
    base, _, unit = inst.rpartition(".")
    kind, _, name = base.rpartition("/")
    return f"{name} ({kind}) " + ("µs" if unit == "ms" else "waits")


def fmt(v: float | None) -> str:
    if v is None:
        return "n/a"
    a = abs(v)
    return f"{v:,.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}" if a >= 0.1 else f"{v:.3g}"


def text(a: Side, b: Side, sections: Mapping[str, Sequence[Row]]) -> str:
    lines = [f"A: {a.label}", f"B: {b.label}", ""]
    for title, rows in sections.items():
        lines.append(f"{title}:")
        if not rows:
            lines.append("  (none recorded)")
        width = max([len(r.name) for r in rows] + [10])
        for r in rows:
            lines.append(f"  {r.name:{width}}  {fmt(r.a):>10} → {fmt(r.b):<10} {ratio(r)}".rstrip())
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def to_dict(sections: Mapping[str, Sequence[Row]]) -> dict[str, list[dict[str, Any]]]:
    return {k: [{"name": r.name, "a": r.a, "b": r.b, **({"text": r.detail} if r.detail else {})} for r in rows]
            for k, rows in sections.items()}


@dataclass(frozen=True, slots=True)
class StepChoice:
    """A finished step one side of a diff can be: its number, the main group's threads and TPS, its configuration."""

    step: int  # 1-based, as `sessions diff --step` takes it
    threads: int | None
    config: int
    label: str  # the configuration's knobs ("" for a run of one configuration)
    tps: float

    def text(self) -> str:
        where = f"{self.label}, " if self.label else ""
        threads = f"{self.threads} thr" if self.threads is not None else "? thr"
        return f"step {self.step}: {where}{threads}, {self.tps:,.0f} TPS"


def step_choices(session: Mapping[str, Any]) -> list[StepChoice]:
    """The finished steps of a session, as a diff's side picker lists them."""
    groups = [g["name"] for g in (session.get("config") or {}).get("groups") or []] or ["main"]
    labels = {c["idx"]: c["label"] for c in (session.get("summary") or {}).get("configs") or []}
    out = []
    for st in session.get("steps") or []:
        main = (st.get("summary") or {}).get(groups[0])
        if st.get("ended_at") is None or not main:
            continue
        config = int((st.get("config") or {}).get("config", 0))
        out.append(StepChoice(int(st["idx"]) + 1, main.get("threads"), config, labels.get(config, ""),
                              float(main.get("tps") or 0.0)))
    return out


def default_pair(a: Sequence[StepChoice], b: Sequence[StepChoice] | None = None,
                 baseline: int = 0) -> tuple[int, int] | None:
    """Which steps a diff starts with: never two concurrencies when the same one exists on both sides (the
    concurrency would pass for the knob's effect).

    Two sessions (`b` given): A's best step, and B's best step at A's threads (its best when it has none).
    One session (a sweep): B is its best step, A the baseline configuration's step at B's threads,
    else the best other step at B's threads, else the best other step. None: nothing to pair."""
    if not a:
        return None
    if b is not None:
        if not b:
            return None
        pa = max(a, key=lambda c: c.tps)
        same = [c for c in b if c.threads == pa.threads]
        return pa.step, max(same or b, key=lambda c: c.tps).step
    if len(a) < 2:
        return None
    pb = max(a, key=lambda c: c.tps)
    others = [c for c in a if c.step != pb.step]
    at_threads = [c for c in others if c.threads == pb.threads]
    base = [c for c in at_threads if c.config == baseline]
    return max(base or at_threads or others, key=lambda c: c.tps).step, pb.step
