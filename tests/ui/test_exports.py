"""Exports of the session on screen: the whole session unless the visible range is asked for (and the file says
which), a title line on the picture, and a report whose every figure agrees with its step table."""

import csv
import re

import pytest
from PySide6.QtGui import QImage

from tunebench.store.synthetic import record
from tunebench.ui import export


def _zoomed_mid_replay(win):
    """A 40 s session of two steps (4 then 16 threads), replayed, the head in the first step, zoomed on 2-8 s:
    the view as it is when the user pressed Play and exports a few seconds in."""
    sid = record(win.store, 40, 40, knob_at=30)
    win.open_replay(sid)
    win.replay_bar.seek(10)
    win.dashboard.follow_box.setChecked(False)
    win.dashboard.set_x_range(2, 8)
    win.dashboard.redraw()
    return sid


def _report_tables(text):
    """{section title: [row cells]} of the report's Markdown tables."""
    tables, title = {}, None
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("# ").strip()
        elif line.startswith("| ") and not line.startswith("|---") and title:
            tables.setdefault(title, []).append([c.strip() for c in line.strip("|").split("|")])
    return tables


def _num(text):
    return float(text.replace(",", ""))


def test_report_figures_agree_with_the_step_table(win, tmp_path):
    """The report of a replay paused early used to summarise only the seconds up to the play head ("threads max
    4") beside a step table at 16 threads: every figure now comes from the store over the stated range."""
    sid = _zoomed_mid_replay(win)
    session = win.store.get_session(sid)
    text = export.export("md", win.dashboard, tmp_path / "r.md", session, win.store).read_text()
    tables = _report_tables(text)
    steps = tables[next(t for t in tables if t.startswith("Session"))][1:]
    step_threads = [int(r[3]) for r in steps]  # step | ran with | group | threads | TPS
    step_tps = [_num(r[4]) for r in steps]
    assert step_threads == [4, 16]
    series_title = next(t for t in tables if t.startswith("Series plotted"))
    assert "whole session (0-40 s" in series_title
    rows = {r[0]: r for r in tables[series_title][1:]}
    # threads: the series' max is the step table's top concurrency, its min the first step's
    assert _num(rows["client.main.threads"][3]) == max(step_threads)
    assert _num(rows["client.main.threads"][1]) == min(step_threads)
    assert int(rows["client.main.tps"][4]) == 40  # every stored sample, not those up to the head
    # TPS: the whole-session mean is the step means weighted by their seconds (two equal steps here)
    tps = win.store.series(sid, ["client.main.tps"])["client.main.tps"].v
    assert _num(rows["client.main.tps"][2]) == pytest.approx(tps.mean(), abs=0.001)
    assert min(step_tps) <= _num(rows["client.main.tps"][2]) <= max(step_tps)
    assert _num(rows["client.main.tps"][3]) >= max(step_tps)
    assert "innodb_flush_log_at_trx_commit 1 → 2" in text  # the settings it changed
    # the view is as the user left it: head at 10 s, zoomed on 2-8 s
    assert win.replay_timeline.head == pytest.approx(10)
    lo, hi = win.dashboard.panels[0].view.viewRange()[0]
    assert (lo, hi) == (pytest.approx(2, abs=0.01), pytest.approx(8, abs=0.01))


def test_zoomed_csv_holds_the_whole_session_unless_asked(win, tmp_path):
    sid = _zoomed_mid_replay(win)
    session = win.store.get_session(sid)
    whole = export.export("csv", win.dashboard, tmp_path / "whole.csv", session)
    first, *rest = whole.read_text().splitlines()
    assert first.startswith(f"# Session {sid}") and "Range: whole session (0-40 s" in first
    rows = list(csv.reader(rest))
    assert len(rows) - 1 == 40
    visible = export.export("csv", win.dashboard, tmp_path / "visible.csv", session, visible=True)
    first, *rest = visible.read_text().splitlines()
    assert "Range: visible range only: 2-8 s" in first
    rows = list(csv.reader(rest))
    elapsed = [float(r[0]) for r in rows[1:]]
    assert elapsed and min(elapsed) >= 2 - 0.51 and max(elapsed) <= 8 + 0.51


def test_png_carries_its_title_line_and_the_whole_session(win, tmp_path):
    sid = _zoomed_mid_replay(win)
    session = win.store.get_session(sid)
    lines = export.heading(session, export.scope(win.dashboard))
    assert re.match(rf"Session {sid} \(synthetic 40 s x 40 series\) · \d{{4}}-\d\d-\d\d \d\d:\d\d · sandbox · "
                    r"mariadb 10\.11\.19 · oltp_point_select · knobs: innodb_flush_log_at_trx_commit 1 → 2$",
                    lines[0]), lines[0]
    seen = {}

    def grab_range():
        seen["x"] = win.dashboard.panels[0].view.viewRange()[0]
        seen["points"] = len(win.dashboard.panels[0].curves["client.main.tps"].xData)
        return original()

    original = win.dashboard.graphics.grab
    win.dashboard.graphics.grab = grab_range
    try:
        png = export.export("png", win.dashboard, tmp_path / "p.png", session)
    finally:
        del win.dashboard.graphics.grab
    assert seen["x"] == [pytest.approx(0, abs=0.01), pytest.approx(40, abs=0.01)] and seen["points"] == 40
    image = QImage(str(png))
    assert image.height() > win.dashboard.graphics.height() + 20  # the title lines on top
    assert win.replay_timeline.head == pytest.approx(10)
    svg = export.export("svg", win.dashboard, tmp_path / "p.svg", session).read_text()
    assert f"Session {sid}" in svg and "whole session" in svg


def test_the_window_shows_its_own_words_not_cli_flags(win):
    win.show_message("target t has no UNIX socket; use --transport tcp")
    assert win.statusBar().currentMessage() == "target t has no UNIX socket; choose the TCP transport"
    assert win.log.item(win.log.count() - 1).text() == win.statusBar().currentMessage()


def test_title_of_a_sweep_names_its_axes_not_its_own_knob_events():
    """A sweep applies each configuration with a knob event just before its "config" event: that is not a flip."""
    from tunebench.core.results import settings_changed, title_line

    t0 = 1_790_000_000.0
    session = {"id": 6, "name": "", "started_at": t0, "target": "sandbox", "flavor": "mariadb", "version": "10.11.19",
               "workload": "oltp_update_index",
               "summary": {"configs": [{"idx": 0, "knobs": {"innodb_flush_log_at_trx_commit": "1"}},
                                       {"idx": 1, "knobs": {"innodb_flush_log_at_trx_commit": "2"}}]},
               "events": [
                   {"t": t0, "kind": "config", "label": "configuration 1", "data": {
                       "config": 0, "knobs": {"innodb_flush_log_at_trx_commit": "1"}}},
                   {"t": t0 + 10, "kind": "knob", "label": "sync_binlog = 0", "data": {
                       "name": "sync_binlog", "from": "1", "to": "0"}},
                   {"t": t0 + 22.0, "kind": "knob", "label": "innodb_flush_log_at_trx_commit = 2", "data": {
                       "name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2"}},
                   {"t": t0 + 22.1, "kind": "config", "label": "configuration 2", "data": {
                       "config": 1, "knobs": {"innodb_flush_log_at_trx_commit": "2"}}}]}
    assert settings_changed(session) == ["configuration 1: innodb_flush_log_at_trx_commit=1",
                                         "configuration 2: innodb_flush_log_at_trx_commit=2", "sync_binlog 1 → 0"]
    assert title_line(session).endswith(" · oltp_update_index · knobs: sweep of innodb_flush_log_at_trx_commit over "
                                        "2 configurations; sync_binlog 1 → 0")
