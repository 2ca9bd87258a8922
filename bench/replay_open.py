"""How long opening a long session in the replay view takes, and how big its store file is.

Writes a synthetic 24 h x 200-series session at 1 Hz with the store's own writer (tunebench.store.synthetic:
the names, kinds, noise and events of a real run), then opens it in the real window's replay view
(offscreen unless a display is set): read + decode the series the dashboard can show (client, server
questions and threads running, waits, CPU), load the timeline, draw every plot once. Also times reading all
the series (what `sessions export` does). Goal (issue 6): under 1 s to open, under 100 MB on disk.
Then a 1 h session with a million notes and 20,000 knob changes (issue 29: it took minutes): under 2 s to open.
Exits 1 when a goal is missed.

    .venv/bin/python bench/replay_open.py [--hours 24] [--series 200] [--repeat 3] [--notes N] [--knobs N] [--json]
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

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from tunebench.store.repo import Store
from tunebench.store.synthetic import record
from tunebench.ui.main_window import MainWindow


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--series", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--notes", type=int, default=1_000_000)
    ap.add_argument("--knobs", type=int, default=20_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tb-replay-bench-"))
    db = tmp / "sessions.sqlite"
    store = Store(db)
    t = time.perf_counter()
    sid = record(store, int(args.hours * 3600), args.series)
    written = time.perf_counter() - t
    busy = record(store, 3600, 20)
    store.close()
    add_events(db, busy, args.notes, args.knobs)
    size_mb = sum(p.stat().st_size for p in tmp.iterdir() if p.name.startswith("sessions.sqlite")) / 1e6
    app = QApplication([])
    store = Store(db)
    window = MainWindow(store, settings=QSettings(str(tmp / "gui.ini"), QSettings.Format.IniFormat))
    window.resize(1600, 1000)
    window.show()
    app.processEvents()
    opens = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        window.open_replay(sid)
        app.processEvents()  # the first paint of every plot
        opens.append(time.perf_counter() - t)
    busy_opens = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        window.open_replay(busy)
        app.processEvents()
        busy_opens.append(time.perf_counter() - t)
    window.open_replay(sid)
    points = sum(len(b.t) for b in window.replay_timeline.series.values())
    t = time.perf_counter()
    everything = store.series(sid)
    read_all = time.perf_counter() - t
    out = {"hours": args.hours, "series": len(everything), "series_shown": len(window.replay_timeline.series),
           "points_shown": points, "points": sum(len(d.t) for d in everything.values()),
           "read_all_s": round(read_all, 2),
           "write_s": round(written, 1), "file_mb": round(size_mb, 1),
           "open_s": [round(x, 3) for x in opens], "open_median_s": round(statistics.median(opens), 3),
           "events": {"notes": args.notes, "knob_changes": args.knobs, "open_s": [round(x, 3) for x in busy_opens],
                      "open_median_s": round(statistics.median(busy_opens), 3)}}
    out["goals"] = {"open_under_1_s": out["open_median_s"] < 1.0, "file_under_100_mb": size_mb < 100,
                    "open_with_events_under_2_s": out["events"]["open_median_s"] < 2.0}
    window.close()
    store.close()
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{args.hours:g} h x {out['series']} series ({out['points']:,} points): store file {size_mb:.1f} MB "
              f"(goal < 100), written in {written:.0f} s; open in the replay view (reads the {out['series_shown']} "
              f"series the dashboard shows, {points:,} points) {out['open_median_s']:.2f} s median of "
              f"{args.repeat} (goal < 1 s): {', '.join(f'{x:.2f}' for x in opens)}; reading all "
              f"{out['series']} series {read_all:.2f} s; with {args.notes:,} notes and {args.knobs:,} knob changes "
              f"{out['events']['open_median_s']:.2f} s (goal < 2 s)")
    if not all(out["goals"].values()):
        raise SystemExit(1)


def add_events(db: Path, session_id: int, notes: int, knobs: int) -> None:
    """Notes and knob changes spread over the session, written straight into the store (the writer takes minutes
    for a million events, and this measures the reading)."""
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        t0, t1 = conn.execute("SELECT started_at, ended_at FROM sessions WHERE id = ?", (session_id,)).fetchone()
        span = max(1.0, (t1 or t0 + 3600) - t0)
        conn.executemany("INSERT INTO events (session_id, t, kind, label, data) VALUES (?, ?, 'note', ?, '{}')",
                         ((session_id, t0 + (i * 7919 % int(span)) + 0.5, f"note {i}") for i in range(notes)))
        conn.executemany("INSERT INTO events (session_id, t, kind, label, data) VALUES (?, ?, 'knob', ?, ?)",
                         ((session_id, t0 + i * span / max(knobs, 1), f"innodb_spin_wait_delay = {i % 50}",
                           json.dumps({"name": "innodb_spin_wait_delay", "from": "6", "to": str(i % 50)}))
                          for i in range(knobs)))
        conn.commit()
    finally:
        conn.close()


if __name__ == "__main__":
    main()
