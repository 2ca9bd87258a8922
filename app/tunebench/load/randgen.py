"""sysbench 1.0's random distributions (sb_rand.c), generated in batches with numpy."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

BATCH = 2048


def draw(rng: np.random.Generator, kind: str, a: int, b: int, n: int, opts: Mapping[str, Any]) -> np.ndarray:
    """n values in [a, b] following sysbench's --rand-type, with its integer arithmetic."""
    if b <= a:
        return np.full(n, a, dtype=np.int64)
    t = b - a
    iters = int(opts.get("rand_spec_iter", 12))
    if kind == "uniform":
        return a + rng.integers(0, t + 1, size=n, dtype=np.int64)
    if kind == "gaussian":
        s = rng.random((n, iters)).sum(axis=1)
        return a + np.floor(s * t / iters).astype(np.int64)
    if kind == "pareto":
        h = float(opts.get("rand_pareto_h", 0.2))
        power = math.log(h) / math.log(1 - h)
        return a + np.floor((t + 1) * rng.random(n) ** power).astype(np.int64)
    if kind == "special":
        pct = int(opts.get("rand_spec_pct", 1))
        res_pct = int(opts.get("rand_spec_res", 75))
        range_size = t * (100 // (100 - res_pct))  # C integer division, as in sb_rand_special()
        res = rng.integers(0, range_size, size=n, dtype=np.int64)
        out = np.empty(n, dtype=np.int64)
        gauss = res < t
        k = int(gauss.sum())
        if k:
            s = rng.random((k, iters)).sum(axis=1)
            out[gauss] = a + np.floor(s * t / iters).astype(np.int64)
        if k < n:
            d = max(1, t * pct // 100)
            special = res[~gauss] % d + (t // 2 - t * pct // 200)
            out[~gauss] = a + special
        return out
    raise ValueError(f"unknown distribution {kind}")


def id_stream(rng: np.random.Generator, kind: str, a: int, b: int, opts: Mapping[str, Any]) -> Iterator[int]:
    """An endless iterator of ints; batches keep the per-value cost at a list-iterator step."""
    while True:
        yield from draw(rng, kind, a, b, BATCH, opts).tolist()


def template_strings(rng: np.random.Generator, template: str, n: int) -> list[bytes]:
    """sysbench.rand.string(): '#' -> random digit, '@' -> random lowercase letter."""
    tpl = np.frombuffer(template.encode(), dtype=np.uint8)
    out = np.tile(tpl, (n, 1))
    digits = tpl == ord("#")
    letters = tpl == ord("@")
    out[:, digits] = rng.integers(ord("0"), ord("9") + 1, size=(n, int(digits.sum())), dtype=np.uint8)
    if letters.any():
        out[:, letters] = rng.integers(ord("a"), ord("z") + 1, size=(n, int(letters.sum())), dtype=np.uint8)
    width = len(tpl)
    flat = out.tobytes()
    return [flat[i * width:(i + 1) * width] for i in range(n)]


def string_stream(rng: np.random.Generator, template: str) -> Iterator[bytes]:
    while True:
        yield from template_strings(rng, template, 256)


def scatter32(x: int) -> int:
    """A one-to-one map of the 32-bit integers that sends neighbours far apart (xor-shifts and odd multipliers,
    each invertible: C. Wellons' "lowbias32" constants)."""
    x &= 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


class UniqueIds:
    """sysbench.rand.unique() as oltp_insert uses it without auto_inc: INT ids that never repeat in a run, scattered
    over the whole range. Position i of the run's sequence is scatter32(start + i); connection `slot` of `slots`
    takes positions slot, slot + slots, ... (no two connections share one, in any worker process), carrying on
    where it was after a reconnect (`kept` outlives the connection). `start` differs in every run (the run's
    nonce, not the seed): a run's ids then miss an earlier run's rows unless their stretches of the 2**32
    positions overlap; where they do, `clash()` moves the connection to another place of its own positions. Ids
    in 1..`skip_to` (rows a prepare loaded into tables shared with another group) are passed over."""

    def __init__(self, start: int, slot: int, slots: int, kept: dict[str, Any], skip_to: int = 0):
        self.start, self.slot, self.slots, self.kept, self.skip_to = start, slot, max(1, slots), kept, skip_to
        kept.setdefault("unique_ids_next", 0)

    def __call__(self) -> int:
        while True:
            j = self.kept["unique_ids_next"]
            self.kept["unique_ids_next"] = j + 1
            value = scatter32(self.start + self.slot + j * self.slots) - 2**31
            if not 1 <= value <= self.skip_to:
                return value

    def clash(self) -> None:
        """The last id was taken (by an earlier run, whose stretch of the sequence this one met): jump ahead to a
        far place among this connection's own positions rather than walk through that run's ids one by one."""
        j = self.kept["unique_ids_next"]
        self.kept["unique_ids_next"] = j + 1 + scatter32(self.start ^ j ^ 0x9E3779B9) % (2**32 // self.slots)
