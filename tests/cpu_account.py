"""What each test cost the machine in CPU: the pytest process's own CPU, the children it reaped, and the CPU its live
descendants (its sandboxes' servers, sysbench, sshd, CLI subprocesses) used meanwhile, setup and teardown included.

On two cores the suite's wall time cannot go below its CPU time / 2, however it is split between workers: the
tests that use the most CPU (a closed loop at full speed for a minute) are where a shorter suite comes from, not
the tests that wait longest. Each process writes one line per test to build/test-cpu/<worker>.jsonl; the
controller prints the 25 dearest and the total at the end (after pytest's slowest durations). Per module:
`python tests/cpu_account.py` sums the files of the last hour (tests/durations.json, the workers' order, comes
from the same files: `--write-durations`)."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

import pytest

_TICK = os.sysconf("SC_CLK_TCK")
OUT = Path(__file__).resolve().parents[1] / "build" / "test-cpu"


def _tree_cpu(root: int) -> dict[int, float]:
    """pid -> CPU seconds used so far, of each live descendant of `root` (not `root` itself), found through each
    process's threads' `children` lists (a few ms: scanning all of /proc took twice as long, twice per test)."""
    out: dict[int, float] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        kids: list[int] = []
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/task/{task}/children") as f:
                    kids += [int(x) for x in f.read().split()]
        for kid in kids:
            try:
                with open(f"/proc/{kid}/stat") as f:
                    text = f.read()
                fields = text[text.rindex(")") + 2:].split()
                out[kid] = (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime
            except (OSError, ValueError, IndexError):
                continue
            todo.append(kid)
    return out


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


class CpuAccount:
    def __init__(self) -> None:
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.lines: list[str] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any):
        pid = os.getpid()
        me0, kids0, tree0, t0 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), _tree_cpu(pid), \
            time.monotonic()
        yield
        me1, kids1, tree1 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), _tree_cpu(pid)
        # the live descendants' CPU meanwhile; a descendant reaped meanwhile counts in RUSAGE_CHILDREN with its whole
        # life, less what it had used when the test began (counted in earlier tests: a session's sandbox stopped at
        # the end); one that died under another parent is lost (small: servers and tools are this process's children)
        live = sum(c - tree0.get(p, 0.0) for p, c in tree1.items())
        reaped = max(0.0, (kids1 - kids0) - sum(c for p, c in tree0.items() if p not in tree1))
        used = (me1 - me0) + max(0.0, live) + reaped
        self.lines.append(json.dumps({"test": item.nodeid, "cpu": round(used, 2),
                                      "wall": round(time.monotonic() - t0, 2)}))

    def pytest_sessionfinish(self) -> None:
        with contextlib.suppress(OSError):
            OUT.mkdir(parents=True, exist_ok=True)
            (OUT / f"{self.worker}-{os.getpid()}.jsonl").write_text("".join(line + "\n" for line in self.lines))


class CpuReport:
    """On the controller (or a run without workers): the dearest tests by CPU, from every process's file."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.t0 = time.time()  # this run's files: written since (each process's own: <worker>-<pid>.jsonl)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        rows = []
        for path in OUT.glob("*.jsonl"):
            with contextlib.suppress(OSError, ValueError):
                if path.stat().st_mtime >= self.t0 - 1:
                    rows += [json.loads(line) for line in path.read_text().splitlines() if line]
        if not rows:
            return
        rows.sort(key=lambda r: -r["cpu"])
        total = sum(r["cpu"] for r in rows)
        terminalreporter.write_sep("=", f"dearest 25 tests by CPU (of {total:.0f} CPU s in {len(rows)} tests)")
        for r in rows[:25]:
            terminalreporter.write_line(f"{r['cpu']:7.1f} CPU s {r['wall']:7.1f} s  {r['test']}")


def main(argv: list[str] | None = None) -> int:
    """Per module: CPU and wall seconds summed over the files written in the last hour; with --write-durations,
    tests/durations.json (module -> wall seconds: the order the workers take modules in, longest first)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--write-durations", action="store_true")
    ap.add_argument("--dir", default=str(OUT))
    args = ap.parse_args(argv)
    cpu: dict[str, float] = {}
    wall: dict[str, float] = {}
    for path in Path(args.dir).glob("*.jsonl"):
        if path.stat().st_mtime < time.time() - 3600:
            continue
        for line in path.read_text().splitlines():
            r = json.loads(line)
            m = r["test"].split("::", 1)[0]
            cpu[m] = cpu.get(m, 0.0) + r["cpu"]
            wall[m] = wall.get(m, 0.0) + r["wall"]
    print(f"{sum(cpu.values()):.0f} CPU s, {sum(wall.values()):.0f} s in {len(cpu)} modules")
    for m in sorted(cpu, key=lambda m: -cpu[m])[:40]:
        print(f"{cpu[m]:8.1f} CPU s {wall[m]:8.1f} s  {m}")
    if args.write_durations:
        target = Path(__file__).parent / "durations.json"
        about = {"_about": "wall seconds per module of a clean-clone run with workers, summed by `python "
                           f"tests/cpu_account.py --write-durations` ({time.strftime('%Y-%m-%d')}): the workers take "
                           "the longest modules first (tests/conftest.py)"}
        weights = {m: round(w, 1) for m, w in sorted(wall.items(), key=lambda kv: -kv[1])}
        target.write_text(json.dumps({**about, **weights}, indent=1) + "\n")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
