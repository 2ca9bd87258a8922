"""A flip's A/B verdict where the user looks: the Events line, the knob panel, the TPS plot at the change, stage
mode (live when the verdict arrives, and in a replay played past the change). The numbers are the recorded
verdict event's, which equal a recomputation from the stored series (tests/unit/test_verdict.py)."""

from tunebench.core.interval import Event
from tunebench.core.verdict import Verdict
from tunebench.store.synthetic import record


def verdict_event(win, sid):
    e = next(e for e in win.store.get_session(sid)["events"] if e["kind"] == "verdict")
    return Event(e["t"], e["kind"], e["label"], e["data"]), Verdict.from_dict(e["data"]["verdict"])


def test_events_and_knob_panel_show_the_verdict_line(win, qtbot):
    sid = record(win.store, 120, 30, knob_at=90, verdict=True)
    ev, v = verdict_event(win, sid)
    win.controller.timeline_event.emit(ev)
    last = win.log.item(win.log.count() - 1).text()
    assert last.endswith(ev.label)
    assert f"innodb_flush_log_at_trx_commit 1 → 2: {v.ratio:.2f}x TPS (95 % CI {v.ci_low:.2f}-{v.ci_high:.2f})" \
        in last
    text = win.knobs.result.text().splitlines()
    assert text[0] == "innodb_flush_log_at_trx_commit 1 → 2 (a single flip)"
    assert text[1] == v.tps_text() and text[2] == v.latency_text() and text[2].startswith("p95 ")
    assert text[3] == v.waits_text()
    assert not win.stage.help.isVisible()  # off stage the Events and the knob panel say it


def test_stage_shows_the_verdict_big_when_it_arrives(win, qtbot):
    sid = record(win.store, 120, 30, knob_at=90, verdict=True)
    ev, v = verdict_event(win, sid)
    win.stage.set(True, full_screen=False)
    win.controller.timeline_event.emit(ev)
    help_card = win.stage.help
    assert help_card.isVisible()
    assert f"{v.ratio:.2f}x TPS (95 % CI {v.ci_low:.2f}-{v.ci_high:.2f})" in help_card.text()
    assert f"font-size:{help_card.px['big']}px" in help_card.text() and help_card.px["big"] >= 40  # (1000 px high)
    assert win.rect().contains(help_card.geometry())


def test_a_confirmed_verdict_says_so_and_confirm_without_a_run_is_one_line(win, qtbot):
    """Issue 42: the Confirm action's verdict (ABBA BAAB blocks) is told apart from a single flip in the knob panel
    and on the stage card; the button and stage's C without a run say why in one line and change nothing."""
    from dataclasses import replace

    sid = record(win.store, 120, 30, knob_at=90, verdict=True)
    ev, v = verdict_event(win, sid)
    confirmed = replace(v, order="BAABABBA", repeats=4)
    data = {**ev.data, "confirmed": True, "order": "BAABABBA", "verdict": confirmed.to_dict()}
    win.controller.timeline_event.emit(Event(ev.t, "verdict", "confirmed", data))
    text = win.knobs.result.text().splitlines()
    assert text[0] == "innodb_flush_log_at_trx_commit 1 → 2 (Confirm, BAAB ABBA)"
    assert text[1] == confirmed.tps_text() and "confirmed over 4 pairs of blocks, BAAB ABBA" in text[1]
    win.stage.set(True, full_screen=False)
    win.controller.timeline_event.emit(Event(ev.t, "verdict", "confirmed", data))
    assert "innodb_flush_log_at_trx_commit 1 → 2 · Confirm, BAAB ABBA" in win.stage.help.text()
    win.controller.timeline_event.emit(ev)
    assert "· a single flip (C confirms it)" in win.stage.help.text()
    c = next(a for a in win.stage.actions if a.shortcut().toString() == "C")
    c.trigger()
    assert "C: Confirm works on a running load" in win.stage.help.text()
    win.stage.set(False)
    assert not win.knobs.confirm_button.isEnabled()  # no run
    messages = []
    win.confirm_flip(on_failed=messages.append)
    assert messages == ["Confirm works on a running load: flip a knob during a run, then Confirm"]


def test_new_connections_only_variable_warns(win, qtbot):
    win.knobs.show_change({"name": "sort_buffer_size", "from": "262144", "to": "2097152"})
    assert "Only new connections take this value" in win.knobs.result.text()
    win.knobs.show_change({"name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2"})
    assert "new connections" not in win.knobs.result.text()


def test_replay_annotates_the_tps_plot_at_the_change_and_stage_flashes_it(win, qtbot):
    sid = record(win.store, 120, 30, knob_at=90, verdict=True)
    ev, v = verdict_event(win, sid)
    win.open_replay(sid)
    tps = win.dashboard.panels[0]
    t0 = win.replay_timeline.t0
    qtbot.waitUntil(lambda: any((getattr(m, "label", None) is not None
                                 and m.label.toPlainText().endswith(" · " + v.short_text())) for m in tps.markers),
                    timeout=5000)
    line = next(m for m in tps.markers if getattr(m, "label", None) is not None
                and m.label.toPlainText().endswith(" · " + v.short_text()))
    # the change's own label carries it: at the change, not at the step's end when it became known
    assert line.kind == "knob" and line.label.toPlainText().startswith("flush_log_at_trx_commit")
    assert line.value() == ev.data["at"] - t0
    win.replay_bar.seek(80.0)  # back before the change: its label without the verdict
    qtbot.waitUntil(lambda: all(v.short_text() not in m.label.toPlainText() for m in tps.markers
                                if getattr(m, "label", None) is not None), timeout=5000)
    assert v.short_text().startswith(f"{v.ratio:.2f}x TPS (CI ")
    win.stage.set(True, full_screen=False)
    win.stage.help.hide()
    win.replay_bar.seek(80.0)
    win.replay_bar.seek(95.0)  # played past the change: its verdict not known yet (issue 45 item 3)
    assert not win.stage.help.isVisible()
    win.replay_bar.seek(120.0)  # past the step's end, when it was known (as live)
    assert win.stage.help.isVisible() and v.tps_text() in win.stage.help.text()


def test_a_late_change_keeps_its_verdict_label_inside_the_plot(win, qtbot):
    """Seen in the README's screenshot: a change near the run's end had its verdict cut at the plot's edge
    (drawn right of its line); live, the newest change is always near the right edge."""
    sid = record(win.store, 120, 30, knob_at=112, verdict=True)
    _ev, v = verdict_event(win, sid)
    win.open_replay(sid)
    tps = win.dashboard.panels[0]
    qtbot.waitUntil(lambda: any(getattr(m, "label", None) is not None and v.short_text() in m.label.toPlainText()
                                for m in tps.markers), timeout=5000)
    line = next(m for m in tps.markers if getattr(m, "label", None) is not None
                and v.short_text() in m.label.toPlainText())
    view = tps.view.sceneBoundingRect()
    label = line.label.sceneBoundingRect()
    assert view.contains(label), (view, label)


def test_a_flip_says_when_its_verdict_comes_and_the_stage_card_stays(win, qtbot):
    """Issue 30 item 12: a flip 3 s into a step said "too few settled seconds" only 30 s later, and the verdict
    card vanished after ~9 s. The change's outlook is said at the change; the verdict card stays until H or the
    next flip."""
    from PySide6.QtCore import Qt

    from tunebench.run.session import verdict_outlook

    early = verdict_outlook(1003.0, 1001.0, 1031.0, [])
    assert early["verdict_in"] is None and early["outlook"].startswith("no A/B verdict for this change: 2 s")
    win.knobs.show_change({"name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2", **early})
    assert win.knobs.result.text().splitlines()[1].startswith("No A/B verdict for this change: 2 s of steady")
    fine = verdict_outlook(1011.0, 1001.0, 1031.0, [])
    assert fine == {"outlook": "the A/B verdict comes at the step's end, in about 20 s", "verdict_in": 20}
    late = verdict_outlook(1027.0, 1001.0, 1031.0, [])
    assert late["verdict_in"] is None and "the step ends in 4 s" in late["outlook"]
    warm = verdict_outlook(999.0, None, None, [])
    assert "before the step's measured seconds began" in warm["outlook"]
    again = verdict_outlook(1016.0, 1001.0, 1031.0, [1011.0])  # 5 s after a change: 2 s once it settled
    assert again["verdict_in"] is None and again["outlook"].startswith("no A/B verdict for this change: 2 s")
    # a sweep's configuration being applied (a "knob" event) changes the value box, not the verdict line
    win.knobs.result.setText("kept")
    win.controller.timeline_event.emit(Event(1.0, "knob", "innodb_flush_log_at_trx_commit = 0",
                                             {"name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "0"}))
    assert win.knobs.result.text() == "kept"
    assert win.knobs.current["innodb_flush_log_at_trx_commit"].text() == "0"
    # on stage the verdict card stays until dismissed
    sid = record(win.store, 120, 30, knob_at=90, verdict=True)
    ev, _v = verdict_event(win, sid)
    win.stage.set(True, full_screen=False)
    win.controller.timeline_event.emit(ev)
    card = win.stage.help
    assert card.isVisible() and not card._timer.isActive() and "H: dismiss" in card.text()
    qtbot.keyClick(win, Qt.Key.Key_H)
    assert not card.isVisible()
    win.controller.timeline_event.emit(ev)
    card.flash("F5: innodb_flush_log_at_trx_commit 2 → 1")  # the next flip replaces it
    assert card.isVisible() and card._timer.isActive() and "46px" not in card.text()
    win.stage.set(False)


def test_a_verdict_not_judged_says_why_on_the_card_and_in_the_knob_panel_as_the_events_do(win, qtbot):
    """Seen on stage beside a busy machine: the Events said "not judged: the machine was busy (60 of 60 s ...)"
    and the stage card and the knob panel "too few settled seconds for a verdict"."""
    why = "not judged: the machine was busy (60 of 60 s with over 10 % of its CPU used by other processes)"
    data = {"name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2", "group": "main", "at": 1.0,
            "verdict": None, "text": why}
    ev = Event(1_790_000_100.0, "verdict", f"innodb_flush_log_at_trx_commit 1 → 2: {why}", data)
    win.stage.set(True, full_screen=False)
    win.controller.timeline_event.emit(ev)
    assert why in win.stage.help.text().replace("&amp;", "&")
    assert why in win.knobs.result.text()
    win.stage.set(False)
