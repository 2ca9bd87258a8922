"""The geometry and arithmetic of the window's flame graph: one step's folded stacks, or two steps' (a differential
graph: widths from one side, colour from the change in each frame's share of its profile's samples). Pure; the
widget (ui/flame_graph.py) only paints the frames this lays out and asks it what a point is."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Side = Literal["a", "b"]
ROOT = "all"
NOISE_Z = 2.0  # a change in share within 2 standard errors is sampling noise: drawn white
MIN_SCALE = 1e-9  # (a colour scale of zero: nothing changed)


@dataclass(slots=True)
class FlameNode:
    """A frame in the merged call tree: its samples (self + children) in profile A and in profile B."""

    name: str
    a: int = 0
    b: int = 0
    kids: dict[str, FlameNode] = field(default_factory=dict)

    def count(self, side: Side) -> int:
        return self.a if side == "a" else self.b

    def depth(self) -> int:
        return 1 + max((k.depth() for k in self.kids.values()), default=0)


@dataclass(frozen=True, slots=True)
class FlameTree:
    """The merged tree of two profiles (`differential`), or of one (the same stacks on both sides)."""

    root: FlameNode
    differential: bool

    @property
    def total_a(self) -> int:
        return self.root.a

    @property
    def total_b(self) -> int:
        return self.root.b

    def total(self, side: Side) -> int:
        return self.root.count(side)

    def node(self, path: tuple[str, ...]) -> FlameNode | None:
        node = self.root
        for name in path:
            kid = node.kids.get(name)
            if kid is None:
                return None
            node = kid
        return node


def _valid(folded: Mapping[str, Any]) -> Iterator[tuple[list[str], int]]:
    """A stored profile's stacks as (frames, samples): the counts come from a file or a store, so anything but a
    positive whole number of samples is left out rather than trusted."""
    for stack, count in folded.items():
        if isinstance(count, bool) or not isinstance(count, int) or count <= 0 or not isinstance(stack, str):
            continue
        yield stack.split(";"), count


def build(b: Mapping[str, Any], a: Mapping[str, Any] | None = None) -> FlameTree:
    """The tree of profile `b`; with `a`, the differential tree of A (before) and B (after)."""
    root = FlameNode(ROOT)
    for side, folded in (("b", b), ("a", b if a is None else a)):
        for frames, count in _valid(folded):
            node = root
            node.a += count if side == "a" else 0
            node.b += count if side == "b" else 0
            for frame in frames:
                node = node.kids.setdefault(frame, FlameNode(frame))
                if side == "a":
                    node.a += count
                else:
                    node.b += count
    return FlameTree(root, a is not None)


@dataclass(frozen=True, slots=True)
class Frame:
    """A frame as laid out: `x` and `w` in fractions of the graph's width, `depth` 0 the root row; `path` names the
    frames from the root's child down to this one (() is the root). `above` marks the frames below the zoomed one
    in the call chain (its callers), drawn at full width."""

    path: tuple[str, ...]
    depth: int
    x: float
    w: float
    a: int
    b: int
    parent_a: int
    parent_b: int
    above: bool = False

    @property
    def name(self) -> str:
        return self.path[-1] if self.path else ROOT


def focus_path(tree: FlameTree, path: tuple[str, ...], side: Side) -> tuple[str, ...]:
    """The longest start of `path` that exists with samples on `side` (a zoom kept across a change of steps or
    of side falls back to the nearest frame that is still there)."""
    node, kept = tree.root, []
    for name in path:
        kid = node.kids.get(name)
        if kid is None or kid.count(side) <= 0:
            break
        node = kid
        kept.append(name)
    return tuple(kept)


def layout(tree: FlameTree, focus: tuple[str, ...] = (), side: Side = "b", min_w: float = 0.0) -> list[Frame]:
    """Every frame to draw, zoomed into `focus` (which spans the full width, its callers too), widths from `side`'s
    samples; frames with no samples on that side, or narrower than `min_w`, are left out (and their callees)."""
    focus = focus_path(tree, focus, side)
    out: list[Frame] = []
    node, parent = tree.root, None
    for depth in range(len(focus) + 1):
        if depth:
            parent, node = node, node.kids[focus[depth - 1]]
        out.append(Frame(focus[:depth], depth, 0.0, 1.0, node.a, node.b, parent.a if parent else node.a,
                         parent.b if parent else node.b, above=depth < len(focus)))
    whole = node.count(side)
    if whole <= 0:
        return out

    def place(n: FlameNode, path: tuple[str, ...], x: float, depth: int) -> None:
        for name in sorted(n.kids):
            kid = n.kids[name]
            count = kid.count(side)
            if count <= 0:
                continue
            w = count / whole
            if w >= min_w:
                out.append(Frame((*path, name), depth, x, w, kid.a, kid.b, n.a, n.b))
                place(kid, (*path, name), x, depth + 1)
            x += w

    place(node, focus, 0.0, len(focus) + 1)
    return out


def frame_at(frames: list[Frame], x: float, depth: int) -> Frame | None:
    """The frame at `x` (a fraction of the width) on row `depth`, or None."""
    for f in frames:
        if f.depth == depth and f.x <= x < f.x + f.w:
            return f
    return None


def share(count: int, total: int) -> float:
    return count / total if total > 0 else 0.0


def delta(tree: FlameTree, a: int, b: int) -> float:
    """The change in a frame's share of its profile's samples, B minus A (0.05: five points more of the CPU in B);
    each side over its own total, so profiles of different sample counts compare."""
    return share(b, tree.total_b) - share(a, tree.total_a)


def noise(tree: FlameTree, a: int, b: int) -> float:
    """How big a change in share sampling alone makes (NOISE_Z standard errors of the difference of two
    proportions, pooled)."""
    na, nb = tree.total_a, tree.total_b
    if na <= 0 or nb <= 0:
        return math.inf
    p = (a + b) / (na + nb)
    return NOISE_Z * math.sqrt(p * (1.0 - p) * (1.0 / na + 1.0 / nb))


def change(tree: FlameTree, a: int, b: int) -> float:
    """The change in share that counts (0.0 when it is within sampling noise)."""
    d = delta(tree, a, b)
    return d if abs(d) > noise(tree, a, b) else 0.0


def walk(node: FlameNode, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], FlameNode]]:
    yield path, node
    for name, kid in node.kids.items():
        yield from walk(kid, (*path, name))


def colour_scale(tree: FlameTree) -> float:
    """The change drawn at full colour: the largest one beyond noise of any frame."""
    return max((abs(change(tree, n.a, n.b)) for _p, n in walk(tree.root)), default=0.0)


def diff_colour(d: float, scale: float) -> tuple[int, int, int]:
    """White for no change, redder as a frame takes more of the CPU in B, bluer as it takes less; full at `scale`.
    Light enough at full for dark text on it, in both themes."""
    t = min(1.0, abs(d) / max(scale, MIN_SCALE))
    fade = round(255 - 160 * t)
    if d > 0:
        return (255, fade, fade)
    if d < 0:
        return (fade, round(255 - 100 * t), 255)
    return (255, 255, 255)


def warm_colour(name: str) -> tuple[int, int, int]:
    """A one-profile graph's frame colour: warm, stable per name (the same function the same colour in every
    graph), kernel frames redder."""
    h = hashlib.md5(name.encode(), usedforsecurity=False).digest()
    if name.startswith("[k] "):
        return (200 + h[0] % 55, 90 + h[1] % 60, 60 + h[2] % 40)
    return (225 + h[0] % 30, 110 + h[1] % 100, 40 + h[2] % 40)


def matches(name: str, term: str) -> bool:
    return bool(term) and term.casefold() in name.casefold()


def matched(tree: FlameTree, term: str, side: Side) -> int:
    """Samples on `side` in frames whose name contains `term` (case-insensitive): a matching frame's callees are
    in it already, so they are not counted again."""
    if not term:
        return 0

    def count(node: FlameNode) -> int:
        return sum(kid.count(side) if matches(name, term) else count(kid) for name, kid in node.kids.items())

    return count(tree.root)


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f} %"


def _points(d: float) -> str:
    return f"{100.0 * d:+.1f} points"


def search_text(tree: FlameTree, term: str) -> str:
    """What a search found, in % of all samples (of each side in a differential graph)."""
    if not term:
        return ""
    b = matched(tree, term, "b")
    if not tree.differential:
        return f"'{term}': {_pct(share(b, tree.total_b))} of the samples ({b:,})"
    a = matched(tree, term, "a")
    d = share(b, tree.total_b) - share(a, tree.total_a)
    return (f"'{term}': A {_pct(share(a, tree.total_a))} → B {_pct(share(b, tree.total_b))} of the samples "
            f"({_points(d)})")


def describe(tree: FlameTree, frame: Frame, side: Side = "b") -> str:
    """A frame's hover text: its name, samples, % of all samples, % of its caller's; in a differential graph,
    A % → B % and the change (or that it is within sampling noise)."""
    lines = [frame.name]
    if not tree.differential:
        n, parent = frame.b, frame.parent_b
        lines.append(f"{n:,} samples, {_pct(share(n, tree.total_b))} of all, {_pct(share(n, parent))} of its caller's"
                     if frame.path else f"{n:,} samples")
        return "\n".join(lines)
    sa, sb = share(frame.a, tree.total_a), share(frame.b, tree.total_b)
    d = sb - sa
    lines.append(f"A {_pct(sa)} → B {_pct(sb)} of all samples ({_points(d)})")
    lines.append(f"samples: A {frame.a:,} of {tree.total_a:,}, B {frame.b:,} of {tree.total_b:,}")
    if frame.path:
        lines.append(f"of its caller's: A {_pct(share(frame.a, frame.parent_a))}, "
                     f"B {_pct(share(frame.b, frame.parent_b))}")
        if not frame.a:
            lines.append("only in B")
        elif not frame.b:
            lines.append("only in A (drawn from A's widths)" if side == "a" else "only in A")
        elif abs(d) <= noise(tree, frame.a, frame.b):
            lines.append(f"the same within sampling noise (±{100.0 * noise(tree, frame.a, frame.b):.1f} points)")
    return "\n".join(lines)


def hidden_on(tree: FlameTree, side: Side) -> tuple[int, int]:
    """Frames with samples only on the other side (not drawn at `side`'s widths): how many of the topmost such
    frames, and their samples on the other side."""
    other: Side = "a" if side == "b" else "b"
    frames = samples = 0
    for _path, node in walk(tree.root):
        for kid in node.kids.values():
            if kid.count(side) <= 0 < kid.count(other) and node.count(side) > 0:
                frames += 1
                samples += kid.count(other)
    return frames, samples


@dataclass(frozen=True, slots=True)
class ProfiledStep:
    """A step with a recorded CPU profile, as the window's pickers list it."""

    session: int
    idx: int
    label: str
    folded: Mapping[str, Any]
    threads: str = ""  # the client groups' threads ("main=8"): steps at the same concurrency match on it


PROFILE_KEYS = {"server": "_profile", "client": "_profile_client"}  # (the profile probe's step summary keys)


def profiled_steps(session: Mapping[str, Any], whose: str = "server") -> list[ProfiledStep]:
    """A stored session's steps that have `whose` CPU profile ("server" or "client"), each labelled with its
    threads and the knob values it ran with."""
    from tunebench.core.step_context import step_knobs

    ran = step_knobs(session) if session.get("events") else {}
    out = []
    for st in session.get("steps") or []:
        folded = (st.get("summary") or {}).get(PROFILE_KEYS[whose])
        if not isinstance(folded, Mapping) or not folded:
            continue
        config = st.get("config") or {}
        threads = ", ".join(f"{g}={t}" for g, t in (config.get("threads") or {}).items())
        knobs = ", ".join(f"{k}={v}" for k, v in (config.get("knobs") or {}).items())
        label = f"step {st['idx'] + 1}: " + "; ".join(p for p in (threads, knobs) if p)
        here = ran.get(int(st["idx"]) + 1)
        if here is not None and here.flips:  # its stacks mix the values before and after
            label = label.rstrip(": ") + f" ⚑ a live flip mid-step ({'; '.join(f.text() for f in here.flips)})"
        out.append(ProfiledStep(int(session["id"]), int(st["idx"]), label.rstrip(": "), folded, threads))
    return out
