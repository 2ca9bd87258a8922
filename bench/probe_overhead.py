"""What recording every probe costs: oltp_point_select with all probes at 1 s vs no probes.

One builtin engine keeps the same load running while the probes are switched on and off in
alternating blocks (on, off, off, on, ...), so engine start-up and the drift of this shared machine
fall on both sides equally. Probe samples are written to a session store as in a real run. Prints each
block's TPS, the ratio TPS(probes)/TPS(none) per pair of blocks, its mean with its standard error, and
the block-to-block noise of the no-probe blocks: a difference below that cannot be told from noise.
Goal (issue 3): overhead <= 1 %.

    .venv/bin/python bench/probe_overhead.py [--pairs 20] [--block-seconds 3] [--threads 4] [--interval 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench_sandbox import point_select_sandbox

from tunebench.load.builtin import BuiltinEngine
from tunebench.load.engine import ClientGroup
from tunebench.run.monitor import ProbeSampler, build_probes, local_server_pid
from tunebench.store.repo import Store


def block_tps(engine: BuiltinEngine, threads: int, seconds: int) -> float:
    tps: list[float] = []
    engine.run_step({"main": threads}, seconds, lambda iv: tps.append(iv.tps), threading.Event())
    return statistics.fmean(tps)


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def probe_costs(probes, server_pid: int | None, reads: int) -> dict[str, dict[str, float]]:
    """Direct cost of one sample of each probe: wall time, our CPU, the server's CPU (idle server)."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    for p in probes:
        p.read()
        w0, c0 = time.perf_counter(), time.process_time()
        s0 = cpu_ticks(server_pid) if server_pid else 0
        for _ in range(reads):
            p.read()
        wall = (time.perf_counter() - w0) / reads * 1e3
        ours = (time.process_time() - c0) / reads * 1e3
        server = ((cpu_ticks(server_pid) - s0) / hz / reads * 1e3) if server_pid else 0.0
        out[p.name] = {"wall_ms": round(wall, 3), "tunebench_cpu_ms": round(ours, 3), "server_cpu_ms": round(server, 3)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--block-seconds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--table-size", type=int, default=100000)
    ap.add_argument("--cost-reads", type=int, default=200, help="reads per probe for the direct cost")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    bs = point_select_sandbox(args.table_size)
    target, admin, params, info, wl, opts = bs.target, bs.admin, bs.params, bs.info, bs.workload, bs.options
    group = ClientGroup("main", wl, opts, (args.threads,))
    store = Store(Path(tempfile.mkdtemp(prefix="tb-bench-")) / "bench.sqlite")
    writer = store.new_session(target="sandbox", transport="socket", engine="builtin", workload=wl.name,
                               config={"bench": "probe_overhead"})

    def sink(t: float, values: dict[str, float], kinds: dict[str, str]) -> None:
        writer.add_samples(t, values, kinds)
        writer.maybe_flush()

    engine = BuiltinEngine(params, [group])
    engine.open()
    pid, why = local_server_pid(target, info, "socket")
    sampler = ProbeSampler(build_probes(None, admin, "sandbox", info, pid, engine.client_pids, why), args.interval,
                           sink, lambda _k, _p, _m: None)
    opened = sampler.open()
    costs = probe_costs(sampler.active, pid, args.cost_reads)
    cpu_ms_per_s = sum(c["tunebench_cpu_ms"] + c["server_cpu_ms"] for c in costs.values()) / args.interval
    cpu_share = cpu_ms_per_s / (1000 * (os.cpu_count() or 1))
    blocks: list[dict[str, object]] = []
    try:
        block_tps(engine, args.threads, args.block_seconds)  # warm-up, not counted
        for pair in range(args.pairs):
            order = ("all", "none") if pair % 2 == 0 else ("none", "all")
            tps = {}
            for mode in order:
                if mode == "all":
                    sampler.start()
                tps[mode] = block_tps(engine, args.threads, args.block_seconds)
                if mode == "all":
                    sampler.stop()
                blocks.append({"pair": pair + 1, "probes": mode, "tps": round(tps[mode], 1)})
            blocks[-1]["ratio"] = round(tps["all"] / tps["none"], 4)
    finally:
        sampler.close()
        engine.close()
        writer.finish("completed")
    ratios = [float(b["ratio"]) for b in blocks if "ratio" in b]
    none = [float(b["tps"]) for b in blocks if b["probes"] == "none"]
    mean = statistics.fmean(ratios)
    sem = statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else 0.0
    noise = statistics.stdev(none) / statistics.fmean(none) if len(none) > 1 else 0.0
    summary = {"workload": "oltp_point_select", "threads": args.threads, "block_seconds": args.block_seconds,
               "pairs": args.pairs, "probe_interval": args.interval, "cpus": os.cpu_count(),
               "server": f"{info.flavor} {info.version}", "probes": [s.name for s in opened if s.ok],
               "ratio_mean": round(mean, 4), "ratio_sem": round(sem, 4), "overhead_pct": round((1 - mean) * 100, 2),
               "block_noise_cv_pct": round(noise * 100, 2), "probe_costs": costs,
               "cpu_share_pct": round(cpu_share * 100, 3), "blocks": blocks}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"oltp_point_select x{args.threads} threads, {args.pairs} pairs of {args.block_seconds} s blocks, probes "
          f"({', '.join(summary['probes'])}) every {args.interval} s, {os.cpu_count()} CPUs, {summary['server']}")
    for b in blocks:
        print(f"  pair {b['pair']:>2}  probes={b['probes']:4}  tps {b['tps']:>10}" +
              (f"   ratio all/none {b['ratio']:.4f}" if "ratio" in b else ""))
    print("direct cost of one sample (idle server):")
    for name, c in costs.items():
        print(f"  {name:8} wall {c['wall_ms']:7.3f} ms  tunebench cpu {c['tunebench_cpu_ms']:7.3f} ms  "
              f"server cpu {c['server_cpu_ms']:7.3f} ms")
    print(f"-> all probes every {args.interval} s use {cpu_ms_per_s:.1f} ms CPU per second = {cpu_share * 100:.2f} % "
          f"of this machine's {os.cpu_count()} CPUs (the expected TPS cost on a CPU-bound load)")
    print(f"TPS ratio probes/none: {mean:.4f} ± {sem:.4f} (standard error, {len(ratios)} pairs) -> overhead "
          f"{(1 - mean) * 100:.2f} %; block-to-block noise without probes: {noise * 100:.2f} % CV")


if __name__ == "__main__":
    main()
