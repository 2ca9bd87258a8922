"""How far a load is: the numbers, the terminal bar (redrawn in place on a TTY, a few plain lines otherwise)."""

import io
import threading

import pytest

from tunebench.cli.progress import ProgressBar, ctrl_c_sets
from tunebench.load.prepare import RowsProgress


def test_rows_progress_rate_and_time_left():
    p = RowsProgress(40_000, 100_000, 2.0)
    assert (p.rate, p.eta, p.fraction) == (20_000, 3.0, 0.4)
    assert p.line() == "40,000 of 100,000 rows (40 %), 20,000 rows/s, 0:03 left"
    assert RowsProgress(0, 10, 0.0).eta is None and "left" not in RowsProgress(0, 10, 0.0).line()
    assert RowsProgress(5, 5, 3700 / 1).line().endswith("0:00 left")


def test_bar_on_a_tty_redraws_one_line():
    out = io.StringIO()
    bar = ProgressBar(out, tty=True)
    bar(RowsProgress(50_000, 100_000, 1.0))
    bar(RowsProgress(100_000, 100_000, 2.0))
    bar.end()
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    assert "[###############---------------] 50,000 of 100,000 rows (50 %)" in text
    assert "[##############################] 100,000 of 100,000 rows (100 %)" in text


def test_plain_lines_off_a_tty_every_few_seconds_and_the_last():
    now = [0.0]
    out = io.StringIO()
    bar = ProgressBar(out, tty=False, clock=lambda: now[0])
    for i in range(1, 11):  # ten reports over 2.5 s, then the last
        now[0] = i * 0.25
        bar(RowsProgress(i * 1000, 20_000, now[0]))
    now[0] = 3.0
    bar(RowsProgress(20_000, 20_000, 3.0))
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines == ["1,000 of 20,000 rows (5 %), 4,000 rows/s, 0:05 left",
                     "20,000 of 20,000 rows (100 %), 6,667 rows/s, 0:00 left"]


def test_first_ctrl_c_cancels_the_second_interrupts():
    import os
    import signal

    # as a terminal's Ctrl-C finds it (a shell's background job inherits SIGINT ignored, and Python keeps that)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_twice(os, signal)
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_twice(os, signal):
    cancel = threading.Event()
    with ctrl_c_sets(cancel):
        os.kill(os.getpid(), signal.SIGINT)
        assert cancel.wait(5)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            threading.Event().wait(5)  # the handler raises here
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
