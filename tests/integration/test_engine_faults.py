"""The load engines under faults: a driver race, a dying worker, a frozen server, a killed tunebench."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading

import pytest

pytestmark = pytest.mark.integration


def _connect_storm(params, nthreads: int) -> None:
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


def test_first_connections_of_fresh_processes_open_at_once(sandbox, sandbox_params):
    """Before the connect lock ~1% of such processes died (SIGSEGV in _mysql_connector) or failed with
    "Authentication plugin ... not initialized": 400 of them fail the old code with ~98% odds."""
    import dataclasses

    params = dataclasses.replace(sandbox_params, database=None)
    # forkserver: each child is a fresh fork of a clean, thread-free process that has imported the
    # driver but never initialised the client library (spawn would take minutes for 400 of them)
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["tunebench.load.driver", _connect_storm.__module__])
    outcomes: dict[int | None, int] = {}
    for _batch in range(40):
        procs = [ctx.Process(target=_connect_storm, args=(params, 32)) for _ in range(10)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
                p.join()
            outcomes[p.exitcode] = outcomes.get(p.exitcode, 0) + 1
    assert outcomes == {0: 400}
