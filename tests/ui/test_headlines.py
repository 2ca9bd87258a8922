"""Issue 30 item 3: families name their headline figure (TPC-C's NOPM, iiBench's rows/s) and the readout shows it
per client group, never one sum of insert transactions and queries."""

from tunebench.core.interval import Interval
from tunebench.core.stats import summarize
from tunebench.load.workload import load_workload
from tunebench.ui.readouts import headline_text
from tunebench.ui.replay import group_headlines
from tunebench.ui.timeline import Timeline


def _second(t: float, group: str, tps: float, trx: dict | None = None) -> Interval:
    return Interval(t, group, 4, tps, tps, 0.0, tps, 0.0, trx=trx or {})


def test_iibench_inserts_read_rows_per_second_and_queries_their_own_rate():
    wl = load_workload("iibench")
    insert = wl.family.headline_of(wl.options({"rows_per_commit": 500}))
    query = wl.family.headline_of(wl.options({"role": "query"}))
    assert insert == ("insert", 500.0, "rows/s")
    assert query is None
    tl = Timeline()
    tl.headlines = {"insert": insert}
    for s in range(3):
        tl.add_interval(_second(1000.0 + s, "insert", 240.0))
        tl.add_interval(_second(1000.0 + s, "query", 736.0))
    # before: "TPS 976", the inserts' and the queries' transactions added up
    assert headline_text(tl, ["insert", "query"]) == "insert rows/s 120,000 · query TPS 736"


def test_one_group_reads_its_headline_and_a_plain_group_reads_tps():
    tl = Timeline()
    tl.headlines = {"main": ("new_order", 60.0, "NOPM")}
    tl.add_interval(_second(1000.0, "main", 200.0, {"new_order": {"tps": 90.0}, "payment": {"tps": 86.0}}))
    assert headline_text(tl, ["main"]) == "NOPM 5,400"
    plain = Timeline()
    plain.add_interval(_second(1000.0, "main", 200.0))
    assert headline_text(plain, ["main"]) == "TPS 200"


def test_a_step_of_inserts_has_rows_per_second_as_its_headline():
    ivs = [_second(1000.0 + s, "main", 100.0) for s in range(8)]
    s = summarize("main", 4, ivs, headline=("insert", 1000.0, "rows/s"))
    assert (s.headline, s.headline_label) == (100_000.0, "rows/s")
    # a multi-type family without the type in a second has no headline, never the group's TPS
    mixed = [_second(1000.0 + k, "main", 100.0, {"payment": {"tps": 50.0}}) for k in range(8)]
    assert summarize("main", 4, mixed, headline=("new_order", 60.0, "NOPM")).headline is None


def test_a_replayed_session_knows_its_groups_headlines_even_before_they_were_recorded():
    session = {"config": {"groups": [
        {"name": "ins", "workload": "iibench", "options": {"role": "insert", "rows_per_commit": 100}},
        {"name": "q", "workload": "iibench", "options": {"role": "query"}},
        {"name": "t", "workload": "tpcc", "headline": ["new_order", 60.0, "NOPM"]},
        {"name": "gone", "workload": "/nowhere/script.lua", "options": {}}]}}
    assert group_headlines(session) == {"ins": ("insert", 100.0, "rows/s"), "t": ("new_order", 60.0, "NOPM")}


def test_an_open_loop_group_reads_its_rate_and_its_service_time_apart():
    """Issue 31: the readout says the rate asked beside the TPS; the latency plot names the service time and
    the schedule lag apart from the latency from the intended start, and the threads plot shows the backlog."""
    from tunebench.ui.plot_panel import latencies, panel_specs

    tl = Timeline()
    for s in range(3):
        tl.add_interval(Interval(1000.0 + s, "main", 8, 1980.0, 1980.0, 1980.0, 0.0, 0.0,
                                 lat_ms={"p95": 3.0, "p99": 9.0}, rate=2000.0, svc_lat_ms={"p95": 0.4, "p99": 0.9},
                                 backlog=12.0, lag_ms=4.5))
    assert headline_text(tl, ["main"]) == "TPS 1,980 of 2,000/s"
    assert sorted(label for _n, label in latencies(tl)) == [
        "main p95", "main p99", "main schedule lag", "main service p95", "main service p99"]
    threads = dict(panel_specs(lambda _t: [])[3][2](tl))
    assert threads["client.main.backlog"] == "main backlog"
