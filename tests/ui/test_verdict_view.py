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
    assert text[0] == "innodb_flush_log_at_trx_commit 1 → 2"
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
    assert "font-size:46px" in help_card.text()
    assert win.rect().contains(help_card.geometry())


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
    win.replay_bar.seek(95.0)  # played past the change
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
