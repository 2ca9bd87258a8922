"""Issue 42 item 1 in the window: the busy seconds (another process over 10 % of the machine's CPU, the seconds every
verdict leaves out) are hatched spans on every plot, at the same x and with the same cut-off as the curves; a
theme change restyles them and a replay's head shows only those up to it."""

import numpy as np

from tunebench.ui.dashboard import Dashboard
from tunebench.ui.theme import THEMES
from tunebench.ui.timeline import Timeline


def _timeline() -> Timeline:
    """A recorded session's: 40 s, two bursts of another process (seconds 10-14 and 30-31)."""
    tl = Timeline()
    t = 1000.0 + np.arange(1, 41, dtype=float)
    other = np.where(((t - 1000 >= 10) & (t - 1000 <= 14)) | np.isin(t - 1000, (30, 31)), 35.0, 2.0)
    tl.load(1000.0, {"client.main.tps": (t, 1000.0 - 10 * (other > 10)), "proc.local.other.cpu": (t, other)}, [])
    return tl


def test_busy_seconds_are_spans_on_every_plot_with_the_curves_cut(qtbot):
    tl = _timeline()
    assert tl.busy_spans() == [(9.0, 14.0), (29.0, 31.0)]  # x of each sample: the end of its second
    d = Dashboard(tl, THEMES["light"])
    qtbot.addWidget(d)
    d.resize(1100, 700)
    d.show()
    qtbot.waitExposed(d)
    d.redraw()
    shown = [p for p in d.panels if p.plot.isVisible()]
    assert shown
    for p in shown:
        assert [tuple(r.getRegion()) for r in p.busy_regions] == [(9.0, 14.0), (29.0, 31.0)], p.title
        assert "leaves them out" in p.busy_regions[0].toolTip()
    light = shown[0].busy_regions[0].brush.color().name()
    d.set_appearance(THEMES["dark"], 1.0)
    assert shown[0].busy_regions[0].brush.color().name() != light
    # a replay's head at 20 s: the second burst is not shown yet, as its curves are not
    tl.seek(20.0)
    d.redraw_data()  # what a move of the replay's head does
    for p in shown:
        assert [tuple(r.getRegion()) for r in p.busy_regions] == [(9.0, 14.0)], p.title


def test_a_steps_busy_seconds_are_in_the_sessions_details(win, qtbot):
    """The step rows say how much of the machine other processes took, beside the figures (as the CLI's table
    and the report do)."""
    from tunebench.store.synthetic import record

    busy = {"seconds": 12, "of": 30, "other_pct": 34.0, "threshold_pct": 10.0, "host": "local"}
    sid = record(win.store, 60, 30, busy={2: busy})
    win.sessions.refresh()
    win.sessions.select([sid])
    rows = [line for line in win.sessions.details.toPlainText().splitlines() if "busy" in line]
    assert len(rows) == 1 and "busy 12 of 30 s: 34 % of the CPU used by other processes" in rows[0], rows
