"""Mergeable latency histograms with sysbench's bucket layout (1024 log buckets, 1 us .. 100 s)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

BUCKETS = 1024
MIN_MS = 0.001
MAX_MS = 100_000.0
_LOG_RANGE = np.log(MAX_MS / MIN_MS)
# Upper edge of each bucket in nanoseconds; a value goes to the first bucket whose edge >= value.
EDGES_NS: npt.NDArray[np.float64] = MIN_MS * 1e6 * np.exp(np.arange(1, BUCKETS + 1) * _LOG_RANGE / BUCKETS)
EDGES_MS: npt.NDArray[np.float64] = EDGES_NS / 1e6


class LatencyHistogram:
    """Counts per bucket plus the exact maximum; merging is adding counts."""

    __slots__ = ("counts", "max_ns")

    def __init__(self) -> None:
        self.counts: npt.NDArray[np.int64] = np.zeros(BUCKETS, dtype=np.int64)
        self.max_ns = 0

    def add_ns(self, samples_ns: npt.ArrayLike) -> None:
        arr = np.asarray(samples_ns, dtype=np.float64)
        if arr.size == 0:
            return
        idx = np.searchsorted(EDGES_NS, arr, side="left")
        np.minimum(idx, BUCKETS - 1, out=idx)
        self.counts += np.bincount(idx, minlength=BUCKETS)
        self.max_ns = max(self.max_ns, int(arr.max()))

    def merge(self, other: LatencyHistogram) -> None:
        self.counts += other.counts
        self.max_ns = max(self.max_ns, other.max_ns)

    def add_sparse(self, idx: npt.ArrayLike, counts: npt.ArrayLike, max_ns: int) -> None:
        np.add.at(self.counts, np.asarray(idx, dtype=np.int64), np.asarray(counts, dtype=np.int64))
        self.max_ns = max(self.max_ns, int(max_ns))

    def sparse(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        nz = np.flatnonzero(self.counts)
        return nz, self.counts[nz]

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def percentile_ms(self, pct: float) -> float | None:
        """sysbench's definition: the upper edge of the bucket holding the pct-th percentile."""
        total = self.total
        if total == 0:
            return None
        rank = np.ceil(total * pct / 100.0)
        i = int(np.searchsorted(np.cumsum(self.counts), rank, side="left"))
        return min(float(EDGES_MS[i]), self.max_ms)

    @property
    def max_ms(self) -> float:
        return self.max_ns / 1e6

    def summary_ms(self) -> dict[str, float | None]:
        if self.total == 0:
            return {"p50": None, "p95": None, "p99": None, "max": None}
        return {
            "p50": self.percentile_ms(50),
            "p95": self.percentile_ms(95),
            "p99": self.percentile_ms(99),
            "max": self.max_ms,
        }
