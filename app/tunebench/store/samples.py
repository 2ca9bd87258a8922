"""Samples as stored: a series' kind (rate or gauge), chunks encoded as byte-shuffled zlib (times as
microsecond deltas, values as float32), and a series read back."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from tunebench.core.errors import StoreError

# Rates are per second; gauges are instantaneous values.
GAUGE_SUFFIXES = (".threads", ".lat.p50", ".lat.p95", ".lat.p99", ".lat.max")


def series_kind(name: str) -> str:
    return "gauge" if name.endswith(GAUGE_SUFFIXES) else "rate"


CODEC = "z1"


def _shuffle(a: np.ndarray) -> bytes:
    """Byte planes one after another: the high bytes of similar numbers then compress to almost nothing."""
    return zlib.compress(np.ascontiguousarray(a.view(np.uint8).reshape(-1, a.itemsize).T).tobytes(), 6)


def _unshuffle(blob: bytes, dtype: str, n: int) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    planes = np.frombuffer(zlib.decompress(blob), dtype=np.uint8).reshape(size, n)
    return np.ascontiguousarray(planes.T).view(dtype).reshape(n)


def encode_chunk(t: np.ndarray, v: np.ndarray) -> tuple[bytes, bytes]:
    """Times as microsecond deltas (int64), values as float32, each byte-shuffled and zlib'd."""
    us = np.round(np.asarray(t, dtype=np.float64) * 1e6).astype("<i8")
    deltas = np.diff(us, prepend=np.int64(0)).astype("<i8")
    return _shuffle(deltas), _shuffle(np.asarray(v, dtype="<f4"))


def decode_chunk(codec: str | None, n: int, ts: bytes, vs: bytes) -> tuple[np.ndarray, np.ndarray]:
    if codec is None:  # schema 2: raw float64
        return np.frombuffer(ts, dtype="<f8"), np.frombuffer(vs, dtype="<f8")
    if codec != CODEC:
        raise StoreError(f"unknown sample encoding {codec!r}: written by a newer Tunebench?")
    t = np.cumsum(_unshuffle(ts, "<i8", n)) / 1e6
    return t, _unshuffle(vs, "<f4", n).astype(np.float64)


@dataclass(frozen=True, slots=True)
class SeriesData:
    name: str
    kind: str
    t: np.ndarray
    v: np.ndarray
