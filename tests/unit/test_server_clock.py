"""tests/server_clock.py's reading of a counter at an instant, without a server: the truth tests' own yardstick."""

import pytest

from server_clock import ServerCounters


def counters(readings: list[tuple[float, float, int]]) -> ServerCounters:
    sc = object.__new__(ServerCounters)
    sc.sent = [r[0] for r in readings]
    sc.read = [r[1] for r in readings]
    sc.values = [{"Com_commit": r[2]} for r in readings]
    return sc


@pytest.mark.parametrize("when", ["sent", "read"])
def test_a_slow_reading_moves_the_count_at_an_edge_by_half_its_time_at_most(when):
    """A counter rising 1,000/s, read by queries that took 100 ms (a loaded server): its value is of some instant
    between the query's sending and the answer's reading. Placed at the answer (before), a value taken when the query
    arrived put the count at an edge 100 short; the middle is off by half the query's time at most, either way."""
    rate, slow = 1000.0, 0.1
    readings = []
    for k in range(5):
        sent = 10.0 + 0.2 * k
        instant = sent if when == "sent" else sent + slow
        readings.append((sent, sent + slow, round(rate * instant)))
    sc = counters(readings)
    edge = 10.31  # between the second reading's answer (10.3) and the third one's sending (10.4)
    assert abs(sc.at(edge, "Com_commit") - rate * edge) <= rate * slow / 2 + 1
    assert sc.width(edge) == pytest.approx(0.4 + slow - 0.2 * 1)  # from the second's sending to the third's answer
