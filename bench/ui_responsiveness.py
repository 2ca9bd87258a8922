"""How long the GUI event loop can stall while the dashboard follows a big run with every probe.

Starts the real window (offscreen unless a display is set), runs oltp_point_select at 512 threads on the
sandbox with all probes at 1 s, and measures the event loop with a 10 ms heartbeat timer: a stall is how
late a heartbeat fires. Prints the longest stall and the 99th percentile. Goals: longest < 50 ms (issue 5),
p99 < 15 ms with every plot on one shared x range (issue 14).

    .venv/bin/python bench/ui_responsiveness.py [--threads 512] [--seconds 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from tunebench.hosts.sandbox import SandboxServer
from tunebench.store.repo import Store
from tunebench.ui.main_window import MainWindow


def main() -> None:
    from tunebench.ui.launch import OWN_SESSION_ENV

    if os.getsid(0) != os.getpid() and os.environ.get(OWN_SESSION_ENV) != "1":
        # as the window does: its own session, so its scheduler favour never touches the terminal's
        import subprocess
        import sys

        env = {**os.environ, OWN_SESSION_ENV: "1"}
        raise SystemExit(subprocess.call([sys.executable, *sys.argv], env=env, start_new_session=True))
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=512)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--follow-step", type=int, default=None,
                    help="seconds the followed window moves at a time (default: the dashboard's own); 1 = every second")
    args = ap.parse_args()
    app = QApplication([])
    from tunebench.ui.app import favour_the_window, settle_heap

    favoured = favour_the_window()
    sb = SandboxServer()
    sb.start()
    tmp = Path(tempfile.mkdtemp(prefix="tb-uibench-"))
    store = Store(tmp / "bench.sqlite")
    window = MainWindow(store, sb, QSettings(str(tmp / "gui.ini"), QSettings.Format.IniFormat))
    window.resize(1600, 1000)
    window.show()
    settle_heap()  # as run_gui does
    w = window.workload
    w.workload.setCurrentText("oltp_point_select")
    if args.follow_step is not None:
        from tunebench.ui import dashboard

        dashboard.FOLLOW_STEP = args.follow_step
    w.threads.setText(str(args.threads))
    w.step_seconds.setValue(args.seconds)
    w.editors["table_size"].setValue(10000)
    lateness: list[float] = []
    worst: list[tuple[float, float]] = []  # (stall ms, seconds into the load)
    state = {"last": time.perf_counter(), "measuring": False, "t0": 0.0}

    def beat() -> None:
        now = time.perf_counter()
        if state["measuring"]:
            late = max(0.0, (now - state["last"]) * 1000 - 10)
            lateness.append(late)
            worst.append((late, now - state["t0"]))
        state["last"] = now

    def on_interval(_iv: object) -> None:
        if not state["measuring"]:
            state["measuring"], state["t0"] = True, time.perf_counter()  # from the first second of load on

    def on_finished(_r: object) -> None:
        state["measuring"] = False  # the load is over: what follows is the window's own shutdown

    heart = QTimer()
    heart.setInterval(10)
    heart.timeout.connect(beat)
    heart.start()
    result: dict[str, object] = {}
    window.run_finished.connect(on_finished)
    window.run_finished.connect(lambda outcome: (result.update(outcome.to_dict()), app.quit()))
    window.run_started.connect(lambda worker: worker.interval.connect(on_interval))
    QTimer.singleShot(200, window.run_workload)
    app.exec()
    heart.stop()
    points = sum(b.n for b in window.timeline.series.values())
    out = {"threads": args.threads, "seconds": args.seconds, "status": result.get("status"),
           "follow_step": args.follow_step,
           "error": result.get("error"), "window_favoured": favoured,
           "series": len(window.timeline.series), "points": points, "beats": len(lateness),
           "max_stall_ms": round(max(lateness, default=0.0), 1),
           "p99_stall_ms": round(statistics.quantiles(lateness, n=100)[98], 1) if len(lateness) > 100 else None,
           "tps": (result.get("steps") or [{}])[0].get("tps"),  # type: ignore[index]
           "worst": [{"stall_ms": round(ms, 1), "at_s": round(at, 1)} for ms, at in sorted(worst)[-3:]]}
    window.close()
    store.close()
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{'window session favoured' if favoured else 'no scheduler favour (needs CAP_SYS_NICE)'}; "
              f"{args.threads} threads x {args.seconds} s, {out['series']} series / {points} points on the dashboard, "
              f"{out['tps']} TPS: longest event-loop stall {out['max_stall_ms']} ms, p99 {out['p99_stall_ms']} ms "
              f"(goal < 50 ms); worst at " + ", ".join(f"{w['stall_ms']} ms @ {w['at_s']} s" for w in out["worst"]))


if __name__ == "__main__":
    main()
