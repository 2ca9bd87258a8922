"""What a step row says it ran with (core/step_context.py)."""


def test_a_knob_flipped_back_and_forth_is_one_entry_of_the_step_row():
    """A Confirm's blocks flip one knob between two values 7 times in a step: its row said each of them (a line of
    ~450 characters); a run of 4 or more is now one entry, shorter runs each as before."""
    from tunebench.core.step_context import Flip, StepKnobs

    back_and_forth = [Flip(18 + 15 * i, "innodb_flush_log_at_trx_commit", *(("1", "2") if i % 2 == 0 else ("2", "1")))
                      for i in range(7)]
    flips = (*back_and_forth, Flip(140, "sync_binlog", "0", "1"))
    ran = StepKnobs({}, frozenset(), flips, 150.0)
    assert ran.text() == ("as configured; innodb_flush_log_at_trx_commit 1 ↔ 2 x7 at 18-108 s; "
                          "sync_binlog 0 → 1 at 140 s of 150 measured")
    assert StepKnobs({}, frozenset(), flips[:2], 150.0).text() == (
        "as configured; innodb_flush_log_at_trx_commit 1 → 2 at 18 s; innodb_flush_log_at_trx_commit 2 → 1 at 33 s"
        " of 150 measured")
