"""Sweep recipes: a sweep file by path, or by name from the install's workloads/recipes/ (core stays free of
where Tunebench is installed)."""

from __future__ import annotations

from pathlib import Path

from tunebench.core.errors import ConfigError
from tunebench.core.sweep import SweepSpec, parse_spec
from tunebench.paths import workloads_dir


def load_spec(path: str | Path) -> SweepSpec:
    p, text = read_named(path, "recipes", "sweep file")
    return parse_spec(text, str(p))


def read_named(path: str | Path, folder: str, what: str) -> tuple[Path, str]:
    """A TOML file by path, or by name from the install's workloads/<folder>/: where it is and its text.
    ConfigError (one line) when it is missing, a directory, unreadable or not UTF-8."""
    p = Path(path)
    if not p.is_file():
        alt = workloads_dir() / folder / f"{path}.toml"
        if p.is_dir():
            raise ConfigError(f"{what} {path} is a directory")
        if not alt.is_file():
            raise ConfigError(f"{what} {path} not found" + (f" (a file, or a name in workloads/{folder})"
                                                             if folder != "recipes" else ""))
        p = alt
    try:
        return p, p.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {p}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {p} is not UTF-8 text (byte {exc.start})") from None
