"""Demo plans by path, or by name from the install's workloads/demos/ (core stays free of where Tunebench is
installed; the plan itself: core/demo_plan.py)."""

from __future__ import annotations

from pathlib import Path

from tunebench.core.demo_plan import DemoPlan, parse_plan
from tunebench.core.errors import ConfigError
from tunebench.paths import workloads_dir


def load_plan(path: str | Path) -> DemoPlan:
    """A plan file by path, or by name from the install's workloads/demos/."""
    p = Path(path)
    if not p.is_file():
        alt = workloads_dir() / "demos" / f"{path}.toml"
        if p.is_dir():
            raise ConfigError(f"demo plan {path} is a directory")
        if not alt.is_file():
            raise ConfigError(f"demo plan {path} not found (a file, or a name in workloads/demos)")
        p = alt
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read demo plan {p}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"demo plan {p} is not UTF-8 text (byte {exc.start})") from None
    return parse_plan(text, str(p), p.parent)
