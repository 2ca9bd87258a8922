"""What crosses the SSH channel between Tunebench and a client host's builtin workers: one JSON value per line.

JSON, not pickle: whatever the other end sends, reading it builds only plain values and Tunebench's own frozen
dataclasses and enums (a class named by its `tunebench.` module and name), never calls anything else.
Tuples, bytes, non-string keys and numpy arrays are tagged so that they come back as they went.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import importlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

MAX_LINE = 64 * 1024 * 1024  # a line longer than this is not one of ours


def encode(obj: Any) -> Any:
    """`obj` as JSON-able values (tagged where JSON has no such type)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, enum.Enum):
        return {"__enum__": _name_of(type(obj)), "v": encode(obj.value)}
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else {"__float__": repr(f)}
    if isinstance(obj, np.ndarray):
        return [encode(x) for x in obj.tolist()]
    if isinstance(obj, (bytes, bytearray)):
        return {"__bytes__": base64.b64encode(bytes(obj)).decode()}
    if isinstance(obj, tuple):
        return {"__tuple__": [encode(x) for x in obj]}
    if isinstance(obj, list):
        return [encode(x) for x in obj]
    if isinstance(obj, (frozenset, set)):
        return {"__set__": [encode(x) for x in obj], "frozen": isinstance(obj, frozenset)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"__dc__": _name_of(type(obj)),
                "f": {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}}
    if isinstance(obj, Mapping):
        if all(isinstance(k, str) and not k.startswith("__") for k in obj):
            return {k: encode(v) for k, v in obj.items()}
        return {"__map__": [[encode(k), encode(v)] for k, v in obj.items()]}
    raise TypeError(f"cannot send a {type(obj).__name__} to a client host")


def decode(obj: Any) -> Any:
    """What `encode` made, back."""
    if isinstance(obj, list):
        return [decode(x) for x in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tuple__" in obj:
        return tuple(decode(x) for x in obj["__tuple__"])
    if "__dc__" in obj:
        cls = _class(obj["__dc__"])
        if not (dataclasses.is_dataclass(cls) and isinstance(cls, type)):
            raise ValueError(f"not a dataclass: {obj['__dc__']!r}")
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        if not isinstance(obj.get("f"), dict):
            raise ValueError(f"no fields for {obj['__dc__']!r}")
        fields = {k: decode(v) for k, v in obj["f"].items() if k in names}
        try:
            return cls(**fields)
        except TypeError as exc:  # a field missing or of a shape the class refuses
            raise ValueError(f"not a {obj['__dc__']}: {exc}") from None
    if "__enum__" in obj:
        cls = _class(obj["__enum__"])
        if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
            raise ValueError(f"not an enum: {obj['__enum__']!r}")
        try:
            return cls(decode(obj["v"]))
        except TypeError as exc:
            raise ValueError(f"not a {obj['__enum__']}: {exc}") from None
    try:
        if "__map__" in obj:
            return {_hashable(decode(k)): decode(v) for k, v in obj["__map__"]}
        if "__bytes__" in obj:
            return base64.b64decode(obj["__bytes__"], validate=True)
        if "__float__" in obj:
            return float(obj["__float__"])
        if "__set__" in obj:
            items = [_hashable(decode(x)) for x in obj["__set__"]]
            return frozenset(items) if obj.get("frozen") else set(items)
    except (TypeError, binascii.Error) as exc:  # a tag over a value of another shape (unhashable keys too)
        raise ValueError(f"a malformed tagged value: {exc}") from None
    return {k: decode(v) for k, v in obj.items()}


def dumps(obj: Any) -> str:
    """One line (no newline inside)."""
    return json.dumps(encode(obj), separators=(",", ":"), allow_nan=False)


def loads(line: str | bytes) -> Any:
    if len(line) > MAX_LINE:
        raise ValueError(f"a line of {len(line):,} bytes")
    return decode(json.loads(line))


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def _name_of(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _class(name: Any) -> Any:
    """A class of Tunebench's own, by `module:qualname`; nothing outside the package is ever imported."""
    if not isinstance(name, str) or ":" not in name:
        raise ValueError(f"not a class name: {name!r}")
    module, _, qual = name.partition(":")
    parts = module.split(".")
    # never a private or dunder module (`tunebench.__main__` runs the CLI when imported), never a dunder name
    if parts[0] != "tunebench" or any(p.startswith("_") or not p.isidentifier() for p in parts) or "__" in qual:
        raise ValueError(f"not one of Tunebench's classes: {name!r}")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError:
        raise ValueError(f"no such module in Tunebench: {name!r}") from None
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    if obj is None:
        raise ValueError(f"no such class in Tunebench: {name!r}")
    return obj
