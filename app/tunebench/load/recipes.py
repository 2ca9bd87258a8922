"""Sweep recipes: a sweep file by path, or by name from the install's workloads/recipes/ (core stays free of
where Tunebench is installed)."""

from __future__ import annotations

from pathlib import Path

from tunebench.core.errors import ConfigError
from tunebench.core.sweep import SweepSpec, parse_spec
from tunebench.paths import workloads_dir


def load_spec(path: str | Path) -> SweepSpec:
    p = Path(path)
    if not p.is_file():
        alt = workloads_dir() / "recipes" / f"{path}.toml"
        if p.is_dir():
            raise ConfigError(f"sweep file {path} is a directory")
        if alt.is_file():
            p = alt
        else:
            raise ConfigError(f"sweep file {path} not found")
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read sweep file {p}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"sweep file {p} is not UTF-8 text (byte {exc.start})") from None
    return parse_spec(text, str(p))
