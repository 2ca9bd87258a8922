"""Samples as stored: a series' kind (rate or gauge), chunks encoded as byte-shuffled zlib (times as
microsecond deltas, values as float32), and a series read back."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from tunebench.core.display import LATEST_TIME
from tunebench.core.errors import StoreError

# Rates are per second; gauges are instantaneous values.
GAUGE_SUFFIXES = (".threads", ".lat.p50", ".lat.p95", ".lat.p99", ".lat.max")


def series_kind(name: str) -> str:
    return "gauge" if name.endswith(GAUGE_SUFFIXES) else "rate"


CODEC = "z1"
# The writer's chunks hold a minute of samples, merged up to an hour's (COMPACT_EVERY, 3600 in writer.py); a
# chunk that says it holds more is refused before a byte of it is inflated (a file of 1 MB could say 10^8).
MAX_CHUNK_SAMPLES = 1_000_000
ZLIB_MAX_RATIO = 1032  # deflate's best: 258 bytes from one 2-bit code


def _shuffle(a: np.ndarray) -> bytes:
    """Byte planes one after another: the high bytes of similar numbers then compress to almost nothing."""
    return zlib.compress(np.ascontiguousarray(a.view(np.uint8).reshape(-1, a.itemsize).T).tobytes(), 6)


def _inflate(blob: bytes, size: int) -> bytes:
    """`blob` inflated, when it is exactly `size` bytes; never more than size + 1 of them in memory."""
    if size > len(blob) * ZLIB_MAX_RATIO + 64:
        raise StoreError(f"a sample chunk says it holds {size} bytes in {len(blob)}: more than zlib can")
    d = zlib.decompressobj()
    try:
        out = d.decompress(blob, size + 1)
    except zlib.error as exc:
        raise StoreError(f"a sample chunk is damaged ({exc})") from None
    if len(out) != size or d.unconsumed_tail or not d.eof:
        raise StoreError(f"a sample chunk is damaged (it does not inflate to the {size} bytes its row says)")
    return out


def _unshuffle(blob: bytes, dtype: str, n: int) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    planes = np.frombuffer(_inflate(blob, size * n), dtype=np.uint8).reshape(size, n)
    return np.ascontiguousarray(planes.T).view(dtype).reshape(n)


def as_stored(t: float, v: float) -> tuple[float, float]:
    """A sample as it reads back from the store (its time to the microsecond, its value as float32): what a
    verdict computed in memory must use to equal its recomputation from the stored series."""
    return float(np.round(t * 1e6)) / 1e6, float(np.float32(v))


def encode_chunk(t: np.ndarray, v: np.ndarray) -> tuple[bytes, bytes]:
    """Times as microsecond deltas (int64), values as float32, each byte-shuffled and zlib'd."""
    us = np.round(np.asarray(t, dtype=np.float64) * 1e6).astype("<i8")
    deltas = np.diff(us, prepend=np.int64(0)).astype("<i8")
    return _shuffle(deltas), _shuffle(np.asarray(v, dtype="<f4"))


def decode_chunk(codec: str | None, n: int, ts: bytes, vs: bytes) -> tuple[np.ndarray, np.ndarray]:
    """A chunk's times and values; StoreError (one line) for a chunk that is not what its row says: a count
    out of bounds, bytes that do not inflate to it, times that are no date."""
    if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= MAX_CHUNK_SAMPLES:
        raise StoreError(f"a sample chunk says it holds {n!r} samples (1 to {MAX_CHUNK_SAMPLES} can be read)")
    if not isinstance(ts, bytes) or not isinstance(vs, bytes):
        raise StoreError("a sample chunk is damaged (its samples are not bytes)")
    if codec is None:  # schema 2: raw float64
        if len(ts) != 8 * n or len(vs) != 8 * n:
            raise StoreError(f"a sample chunk is damaged ({len(ts)} and {len(vs)} bytes for {n} samples)")
        t, v = np.frombuffer(ts, dtype="<f8"), np.frombuffer(vs, dtype="<f8")
    elif codec != CODEC:
        raise StoreError(f"unknown sample encoding {codec!r}: written by a newer Tunebench?")
    else:
        deltas = _unshuffle(ts, "<i8", n)
        # microseconds: a sum beyond 2^63 would wrap silently, and no date is that far
        if np.abs(deltas.astype(np.float64)).sum() > LATEST_TIME * 2e6:
            raise StoreError("a sample chunk's times are no dates")
        t = np.cumsum(deltas) / 1e6
        v = _unshuffle(vs, "<f4", n).astype(np.float64)
    if not (np.all(np.isfinite(t)) and t.min() >= 0 and t.max() <= LATEST_TIME):
        raise StoreError("a sample chunk's times are no dates (negative, infinite or after the year 9999)")
    return t, v


@dataclass(frozen=True, slots=True)
class SeriesData:
    name: str
    kind: str
    t: np.ndarray
    v: np.ndarray
