"""Where Tunebench keeps its files: the user data dir (platformdirs), or $TUNEBENCH_HOME."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs


def data_dir() -> Path:
    override = os.environ.get("TUNEBENCH_HOME")
    path = Path(override) if override else Path(platformdirs.user_data_dir("tunebench", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_db_path() -> Path:
    return data_dir() / "sessions.sqlite"


def sandbox_dir(server: str | None = None) -> Path:
    """The default sandbox (the system's server) at sandbox/, another server's at sandboxes/NAME/."""
    return data_dir() / "sandbox" if not server else data_dir() / "sandboxes" / server


def kits_dir() -> Path:
    """Server kits (fetched or added); $TUNEBENCH_KITS shares one folder between data dirs (the tests do)."""
    override = os.environ.get("TUNEBENCH_KITS")
    return Path(override) if override else data_dir() / "servers"


def _bundle_root() -> Path:
    # PyInstaller unpacks data next to the executable (sys._MEIPASS); a source checkout has them at the top.
    meipass = getattr(sys, "_MEIPASS", None)
    if meipass:
        return Path(meipass)
    return Path(__file__).resolve().parents[2]


def resources_dir() -> Path:
    return Path(os.environ.get("TUNEBENCH_RESOURCES", _bundle_root() / "resources"))


def workloads_dir() -> Path:
    return Path(os.environ.get("TUNEBENCH_WORKLOADS", _bundle_root() / "workloads"))
