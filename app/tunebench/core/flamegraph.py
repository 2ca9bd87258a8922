"""A flame graph of folded stacks as SVG (Brendan Gregg's layout: roots at the bottom, a frame as wide as its
samples, siblings sorted by name), small and dependency-free, for a step's CPU profile."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape

from tunebench.core.flame import warm_colour

ROW = 16  # pixels per stack level
WIDTH = 1200
MIN_PX = 0.5  # frames narrower than this are not drawn


@dataclass(slots=True)
class Node:
    n: int = 0
    kids: dict[str, Node] = field(default_factory=dict)

    def depth(self) -> int:
        return 1 + max((k.depth() for k in self.kids.values()), default=0)


def _tree(folded: Mapping[str, int]) -> Node:
    root = Node()
    for stack, count in folded.items():
        node = root
        node.n += count
        for frame in stack.split(";"):
            node = node.kids.setdefault(frame, Node())
            node.n += count
    return root


def _colour(name: str) -> str:
    return "rgb({},{},{})".format(*warm_colour(name))


def svg(folded: Mapping[str, int], title: str) -> str:
    tree = _tree(folded)
    total = tree.n
    height = (tree.depth() + 2) * ROW + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="monospace" font-size="11">',
           f'<text x="{WIDTH / 2}" y="{ROW}" text-anchor="middle" font-size="14">{escape(title)}</text>']
    scale = (WIDTH - 20) / total if total else 0.0

    def draw(node: Node, name: str, x: float, level: int) -> None:
        w = node.n * scale
        if w < MIN_PX:
            return
        if level >= 0:
            y = height - (level + 2) * ROW
            label = escape(name)
            out.append(f'<g><title>{label} ({node.n} samples, {100.0 * node.n / total:.1f} %)</title>'
                       f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{ROW - 1}" fill="{_colour(name)}"/>')
            chars = int(w / 7)
            if chars >= 3:
                text = name if len(name) <= chars else name[:chars - 2] + ".."
                out.append(f'<text x="{x + 2:.1f}" y="{y + ROW - 4}">{escape(text)}</text>')
            out.append("</g>")
        cx = x
        for kid_name in sorted(node.kids):
            draw(node.kids[kid_name], kid_name, cx, level + 1)
            cx += node.kids[kid_name].n * scale

    draw(tree, "all", 10.0, -1)
    out.append("</svg>")
    return "\n".join(out) + "\n"
