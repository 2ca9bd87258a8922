"""The Statements dock (issue 30 item 17): the statements probe's digests over the step at the head, never past
the head in a replay, the most time first, each statement's whole text on hover; shown once there are any."""

from tunebench.core.interval import Event

SELECT = "SELECT `c` FROM `sbtest1` WHERE `id` = ?"
UPDATE = "UPDATE `sbtest1` SET `k` = `k` + ? WHERE `id` = ?" + " AND `pad` = ?" * 20  # long: elided in the table


def second(s: int) -> dict[str, float]:
    """Step 1 (s < 20): the select busy; step 2: the update slow."""
    sel, upd = (1000.0, 50.0) if s < 20 else (800.0, 40.0), (100.0, 100.0) if s < 20 else (100.0, 2000.0)
    calls = sel[0] + upd[0]
    return {"client.main.tps": 100.0,
            "stmt.aaaaaaaaaaaa.calls": sel[0], "stmt.aaaaaaaaaaaa.lat_us": sel[1],
            "stmt.aaaaaaaaaaaa.rows_examined": 1.0,
            "stmt.bbbbbbbbbbbb.calls": upd[0], "stmt.bbbbbbbbbbbb.lat_us": upd[1],
            "stmt.bbbbbbbbbbbb.rows_examined": 3.0,
            "stmt.total.calls": calls, "stmt.total.lat_us": (sel[0] * sel[1] + upd[0] * upd[1]) / calls,
            "stmt.total.rows_examined": (sel[0] + 3 * upd[0]) / calls}


def events(t0: float) -> list[Event]:
    return [Event(t0, "step_start", "step 1: main=4"), Event(t0 + 20, "step_start", "step 2: main=16"),
            Event(t0 + 1, "statement", "statement aaaaaaaaaaaa", {"digest": "aaaaaaaaaaaa", "text": SELECT}),
            Event(t0 + 1, "statement", "statement bbbbbbbbbbbb", {"digest": "bbbbbbbbbbbb", "text": UPDATE})]


def table(win) -> list[tuple[str, ...]]:
    t = win.statements.table
    return [tuple(t.item(r, c).text() for c in range(t.columnCount())) for r in range(t.rowCount())]


def test_live_statements_of_the_running_step_the_most_time_first(win, qtbot):
    assert not win.statements_dock.isVisible()  # no statements yet: the plots keep the height
    tl = win.timeline
    for ev in events(1000.0)[:1] + events(1000.0)[2:]:
        win.controller._on_event(ev)
    for s in range(10):
        tl.add(1000.0 + s, second(s))
    qtbot.waitUntil(win.statements_dock.isVisible, timeout=3000)
    win.statements.refresh(force=True)
    rows = table(win)
    assert rows[0][:4] == (SELECT, "1,000", "50.0 µs", "1.00")
    assert rows[1][0].startswith("UPDATE `sbtest1`") and "…" in rows[1][0] and rows[1][2] == "100.0 µs"
    assert rows[0][4].startswith(" 83.3 %") and rows[1][4].startswith(" 16.7 %")  # 50 ms/s and 10 ms/s
    assert rows[-1][:3] == ("(all statements)", "1,100", "54.5 µs")
    assert win.statements.table.item(1, 0).toolTip().startswith(UPDATE)  # the whole text on hover
    assert win.statements.head.text().startswith("Statements of step 1, ")


def test_replay_stops_at_the_head_as_the_plots_do(win, qtbot, tmp_path):
    w = win.store.new_session(target="sandbox", transport="socket", engine="builtin", workload="oltp_read_write",
                              config={}, started_at=999.0)
    for ev in events(1000.0):
        w.add_event(ev)
    for s in range(40):
        kinds = {n: "gauge" if n.endswith(("lat_us", "rows_examined")) else "rate" for n in second(s)}
        w.add_samples(1000.0 + s, second(s), kinds)
    w.finish("completed", {"steps": []}, ended_at=1040.0)
    win.open_replay(w.id)
    qtbot.waitUntil(win.statements_dock.isVisible, timeout=3000)
    # at the end: step 2, where the update took 2 ms a call
    win.statements.refresh(force=True)
    assert table(win)[0][0].startswith("UPDATE") and table(win)[0][2] == "2.00 ms"
    # the head back in step 1: nothing of step 2 (the slow update) in the table, as on the plots
    win.replay_bar.seek(15.5)
    assert win.replay_timeline.head == 15.5
    rows = table(win)  # (the seek refreshed it: no wait for its timer)
    assert rows[0][:3] == (SELECT, "1,000", "50.0 µs") and rows[1][2] == "100.0 µs"
    assert "00:01-00:15" in win.statements.head.text()
    # the head a few seconds into step 2: only those seconds
    win.replay_bar.seek(23.5)
    rows = {r[0][:6]: r for r in table(win)}
    assert rows["UPDATE"][2] == "2.00 ms" and rows["SELECT"][1] == "800"
    assert "step 2, 00:21-00:23" in win.statements.head.text()
    # the visible range instead of the step: both steps' seconds, up to the head
    win.statements.span.setCurrentIndex(1)
    win.dashboard.set_x_range(0.0, 40.0)
    win.statements.refresh(force=True)
    rows = {r[0][:6]: r for r in table(win)}
    assert rows["SELECT"][1] == f"{(20 * 1000 + 3 * 800) / 23:.0f}"  # its seconds 1-23: 20 of step 1, 3 of step 2
