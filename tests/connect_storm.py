"""The child of tests/integration/test_engine_faults.py's connect storm, in a module of its own: the forkserver
preloads it, and a child that had to import it anyway would not import the test module, pytest and tests/conftest.py
(400 children each importing those took ~20 CPU-s in 12 s and made a test home each; beside it, other xdist
workers' runs lost their connections to starved servers)."""

from __future__ import annotations

import os
import sys
import threading


def connect_storm(params, nthreads: int) -> None:
    """A fresh process whose first connections all open at once, the way new Slot threads do."""
    from tunebench.load.driver import DriverError, open_session

    barrier = threading.Barrier(nthreads)
    errors: list[str] = []

    def one() -> None:
        barrier.wait()
        try:
            s = open_session(params)
            s.query(b"SELECT 1")
            s.close()
        except DriverError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=one) for _ in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print(errors[0], file=sys.stderr, flush=True)
        os._exit(3)
