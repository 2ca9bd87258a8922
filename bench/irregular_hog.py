"""Irregular bursts of foreign CPU load, as a shared machine has them (issue 42's must-show): 1-3 busy processes
for 2-15 s, then 2-20 s idle, each drawn at random, until the duration ends or the process is stopped. Regular
bursts would average out over a verdict's blocks and prove nothing; these do not.

    python bench/irregular_hog.py --seconds 600 --seed 1 &
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import signal
import sys
import time


def _spin(until: float) -> None:
    while time.monotonic() < until:
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600.0, help="how long to go on (default 600)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    end = time.monotonic() + args.seconds
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while time.monotonic() < end:
        n, busy, idle = rng.randint(1, 3), rng.uniform(2, 15), rng.uniform(2, 20)
        until = min(end, time.monotonic() + busy)
        print(f"{time.time():.1f} busy {n} x {busy:.1f} s, then idle {idle:.1f} s", flush=True)
        procs = [mp.Process(target=_spin, args=(until,), daemon=True) for _ in range(n)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        time.sleep(max(0.0, min(idle, end - time.monotonic())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
