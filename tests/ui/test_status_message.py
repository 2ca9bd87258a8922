"""Issue 45 item 3: after leaving stage the status bar's text (the stage's key list) overprinted the permanent
labels on its right. A message is elided to the room they leave; whole in the Events and on hover."""


def test_a_long_message_never_runs_over_the_status_labels(win):
    win.resize(1024, 700)
    text = "stage mode: " + ", ".join(f"F{i} innodb_flush_log_at_trx_commit={i}" for i in range(1, 9))
    win.show_message(text)
    bar = win.statusBar()
    shown = bar.currentMessage()
    assert shown != text and shown.endswith("…")
    assert bar.fontMetrics().horizontalAdvance(shown) <= win.status.message_room(bar)
    assert bar.toolTip() == text and win.log.item(win.log.count() - 1).text() == text
