"""The drift guard's comparison (run/drift.py) and how a drift event shows on the timeline."""

from tunebench.core.interval import Event
from tunebench.run.drift import Drift, drifted


def test_what_tunebench_changed_and_what_moves_by_itself_is_not_drift():
    before = {"innodb_io_capacity": "200", "innodb_flush_log_at_trx_commit": "1", "gtid_binlog_pos": "0-1-5",
              "innodb_monitor_enable": "", "sync_binlog": "0"}
    after = {"innodb_io_capacity": "400", "innodb_flush_log_at_trx_commit": "0", "gtid_binlog_pos": "0-1-9",
             "innodb_monitor_enable": "lock_row_lock_waits", "sync_binlog": "0", "plugin_var": "x"}
    found = drifted(before, after, ours={"INNODB_IO_CAPACITY"})
    assert found == [Drift("innodb_flush_log_at_trx_commit", "1", "0"), Drift("plugin_var", None, "x")]
    assert found[0].text() == "innodb_flush_log_at_trx_commit 1 → 0"
    assert drifted(before, before, ()) == []


def test_a_drift_event_is_a_marker_naming_the_variables():
    from tunebench.ui.timeline import Timeline

    tl = Timeline()
    tl.add(100.0, {"client.main.tps": 1.0})
    m = tl.add_event(Event(101.0, "drift", "server variables changed outside Tunebench (during step 1): "
                                          "innodb_flush_log_at_trx_commit 1 → 0",
                           {"drift": [{"name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "0"}]}))
    assert m is not None and m.kind == "drift"
    assert m.label == "changed outside Tunebench: innodb_flush_log_at_trx_commit"
