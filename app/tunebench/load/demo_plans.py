"""Demo plans by path, or by name from the install's workloads/demos/ (core stays free of where Tunebench is
installed; the plan itself: core/demo_plan.py)."""

from __future__ import annotations

from pathlib import Path

from tunebench.core.demo_plan import DemoPlan, parse_plan
from tunebench.load.recipes import read_named


def load_plan(path: str | Path) -> DemoPlan:
    """A plan file by path, or by name from the install's workloads/demos/."""
    p, text = read_named(path, "demos", "demo plan")
    return parse_plan(text, str(p), p.parent)
