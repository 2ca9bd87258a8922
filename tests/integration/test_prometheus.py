"""A real Prometheus (Debian's 2.42) scraping a `tunebench run --metrics-listen`: what its query API returns for
tunebench_client_tps is the store's per-second series, second for second (one sample of slack at each edge)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import ROOT, _free_port

from tunebench.store.repo import Store

pytestmark = pytest.mark.integration

RUN_SECONDS = 30
EDGE = 1  # seconds Prometheus may lack at each end of the run


class Prometheus:
    """Debian's prometheus binary with a config, a TSDB and a loopback port of its own (not the packaged service)."""

    def __init__(self, root: Path, target: str):
        binary = shutil.which("prometheus") or "/usr/bin/prometheus"
        if not os.access(binary, os.X_OK):
            pytest.fail("prometheus is not installed (packaging/ensure-system-deps.sh installs it)")
        self.port = _free_port()
        (root / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            f"scrape_configs:\n  - job_name: tunebench\n    static_configs:\n      - targets: ['{target}']\n")
        self.log = (root / "prometheus.log").open("w")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={root / 'prometheus.yml'}", f"--storage.tsdb.path={root / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.root = root
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("prometheus did not become ready: " + (root / "prometheus.log").read_text()[-1500:])
            time.sleep(0.2)

    def api(self, path: str, **params: object) -> dict:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.loads(r.read())
        assert body["status"] == "success", body
        return body["data"]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.log.close()


def as_of(t: np.ndarray, v: np.ndarray, when: float) -> float | None:
    """The series' value a query at `when` sees: its latest sample at or before it."""
    i = int(np.searchsorted(t, when, side="right")) - 1
    return float(v[i]) if i >= 0 else None


def side_by_side(rows: list[tuple[str, object, object]]) -> str:
    return "\n".join(f"{a:>26}  {b!s:>14}  {c!s:>14}" for a, b, c in
                     [("time", "prometheus", "store"), *rows])


def test_prometheus_scrapes_the_runs_seconds(sandbox, tmp_path):
    metrics_port = _free_port()
    prom = Prometheus(tmp_path, f"127.0.0.1:{metrics_port}")
    try:
        db = tmp_path / "store.sqlite"
        run = subprocess.run(
            [sys.executable, "-m", "tunebench", "--db", str(db), "run", "--workload", "oltp_point_select",
             "--tables", "1", "--table-size", "10000",
             # an open loop at 400/s: what is compared is each second's value as stored and as scraped, whatever
             # the rate (a closed loop at full speed took both cores for the 30 s: 52 CPU s of the suite's ~2,200)
             "--threads", "2", "--rate", "400", "--step-seconds", str(RUN_SECONDS), "--probes", "status",
             "--metrics-listen", f"127.0.0.1:{metrics_port}", "--json"],
            capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        assert f"live metrics: http://127.0.0.1:{metrics_port}/metrics" in run.stderr
        sid = json.loads(run.stdout)["session_id"]
        store = Store(str(db))
        try:
            stored = store.series(sid, ["client.main.tps", "server.questions"])
        finally:
            store.close()
        st, sv = stored["client.main.tps"].t, stored["client.main.tps"].v
        assert len(st) >= RUN_SECONDS - 1 and sv.min() > 0

        # every raw sample Prometheus holds, with its timestamp
        raw = prom.api("query", query=f'tunebench_client_tps{{session="{sid}",group="main"}}[10m]',
                       time=f"{st[-1] + 5:.3f}")["result"]
        assert len(raw) == 1, raw
        labels = raw[0]["metric"]
        assert labels["workload"] == "oltp_point_select" and labels["target"] == "sandbox" and labels["host"]
        pt = np.array([float(t) for t, _v in raw[0]["values"]])
        pv = np.array([float(v) for _t, v in raw[0]["values"]])

        # query_range over the run, a step a second, half a second after each stored second's end: Prometheus's
        # answer at each step against the store's value as of that time
        start, end = round(st[0] + 0.5, 3), round(st[-1] + 0.5, 3)
        ranged = prom.api("query_range", query=f'tunebench_client_tps{{session="{sid}",group="main"}}',
                          start=f"{start:.3f}", end=f"{end:.3f}", step="1s")["result"]
        got = {round(float(t), 3): float(np.float32(v)) for t, v in (ranged[0]["values"] if ranged else [])}
        steps = np.round(np.arange(start, end + 1e-6, 1.0), 3)
        rows = [(f"{s:.3f}", got.get(s), as_of(st, sv, s)) for s in steps]
        table = side_by_side(rows)
        print(f"\nsession {sid}: tunebench_client_tps from Prometheus's query_range (step 1s) against the store's "
              f"client.main.tps as of the same time\n{table}", flush=True)
        (tmp_path / "comparison.txt").write_text(table + "\n")

        # the same seconds: each Prometheus sample is a stored second (its time to the ms, its value exactly: the
        # store keeps float32, the endpoint the engine's float64) ...
        def stored_at(t: float) -> int | None:
            i = int(np.argmin(np.abs(st - t)))
            return i if abs(st[i] - t) <= 1.5e-3 else None  # Prometheus keeps ms; the store, µs

        matched = [stored_at(t) for t in pt]
        wrong = [(f"{t:.3f}", v, None if i is None else sv[i]) for t, v, i in zip(pt, pv, matched, strict=True)
                 if i is None or sv[i] != np.float32(v)]
        assert not wrong, f"Prometheus samples that are not the store's:\n{side_by_side(wrong)}\n\n{table}"
        # ... and every stored second is in Prometheus, but for one at each edge
        missing = sorted(set(range(len(st))) - set(matched))
        print(f"{len(st)} stored seconds, {len(pt)} samples in Prometheus, each one of them (time to the ms, value "
              f"exact); stored seconds Prometheus lacks: {[f'{st[i]:.3f}' for i in missing] or 'none'}", flush=True)
        inner = [i for i in missing if EDGE <= i < len(st) - EDGE]
        assert not inner and len(missing) <= 2 * EDGE, \
            f"stored seconds Prometheus lacks: {[f'{st[i]:.3f}' for i in missing]}\n{table}"
        # the step-1s query agrees with the store wherever the store had a second by then (the edges aside)
        disagree = [r for r in rows[EDGE:len(rows) - EDGE] if r[1] != r[2]]
        assert not disagree, f"query_range and the store disagree at:\n{side_by_side(disagree)}\n\n{table}"

        # server counters are counters: Prometheus's cumulative samples give the store's per-second rate
        qraw = prom.api("query", query=f'tunebench_server_questions_total{{session="{sid}"}}[10m]',
                        time=f"{st[-1] + 5:.3f}")["result"]
        assert len(qraw) == 1, qraw
        qt = np.array([float(t) for t, _v in qraw[0]["values"]])
        qv = np.array([float(v) for _t, v in qraw[0]["values"]])
        assert np.all(np.diff(qv) >= 0) and qv[-1] - qv[0] > len(st) * 100
        rt, rv = stored["server.questions"].t, stored["server.questions"].v
        compared = 0
        for k in range(1, len(qt)):
            i = int(np.argmin(np.abs(rt - qt[k])))
            if abs(rt[i] - qt[k]) > 1.5e-3:
                continue  # the first reading: a counter, no rate yet
            # Prometheus keeps times to the ms: the rate from its samples is the store's within that rounding
            assert math.isclose((qv[k] - qv[k - 1]) / (qt[k] - qt[k - 1]), rv[i], rel_tol=5e-3), (k, rv[i])
            compared += 1
        assert compared >= len(st) - 2 * EDGE - 2
    finally:
        prom.stop()
    assert prom.proc.returncode is not None
