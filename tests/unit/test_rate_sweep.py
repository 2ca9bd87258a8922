"""Issue 31: sweeps over rates. `rates = [...]` is a sweep's step schedule, `rate` an axis; the knee under an SLO
in the tables, the report and the window."""

import pytest

from tunebench.core.errors import ConfigError
from tunebench.core.results import knee_lines, knees
from tunebench.core.sessions import latency_by_rate
from tunebench.core.sweep import parse_spec

KNEE = """
name = "knee"
workload = "oltp_point_select"
threads = [8]
rates = [500, 1000, 2000]
arrival = "fixed"
latency_limit_ms = 250
slo_p99_ms = 5
[axes]
innodb_flush_log_at_trx_commit = [1, 2]
"""


def test_a_rate_schedule_and_its_settings_parse_and_round_trip():
    spec = parse_spec(KNEE)
    assert spec.groups[0].rates == (500.0, 1000.0, 2000.0) and spec.steps == 3
    assert (spec.arrival, spec.latency_limit_ms, spec.slo_p99_ms) == ("fixed", 250.0, 5.0)
    assert parse_spec(spec.to_toml()) == spec
    closed = parse_spec(KNEE.replace("rates = [500, 1000, 2000]\n", "").replace("latency_limit_ms = 250\n", ""))
    assert closed.fingerprint() != spec.fingerprint() and closed.steps == 1


@pytest.mark.parametrize("edit, line", [
    (("rates = [500, 1000, 2000]", "rates = [0]"), "rates are numbers from 0.01"),
    (("rates = [500, 1000, 2000]", "rates = ['fast']"), "rates are numbers from 0.01"),
    (('arrival = "fixed"', 'arrival = "bursty"'), "arrival must be one of poisson, fixed"),
    (("slo_p99_ms = 5", "slo_p99_ms = -1"), "slo_p99_ms must be a number of milliseconds above 0"),
    (("rates = [500, 1000, 2000]\n", ""), "latency_limit_ms needs the first group"),
])
def test_bad_rate_settings_are_one_line(edit, line):
    with pytest.raises(ConfigError, match=line):
        parse_spec(KNEE.replace(*edit))


def test_a_rate_axis_sets_the_first_groups_rate_per_configuration():
    from tunebench.core.sweep import make_plan
    from tunebench.run.spec import config_groups, sweep_run_spec

    spec = parse_spec("workload = 'oltp_point_select'\nthreads = [8]\nrates = [1000]\n[axes]\nrate = [500, 4000]\n")
    plan = make_plan(spec, {}, {})
    assert [c.label() for c in plan.configs] == ["rate=500.0", "rate=4000.0"]
    groups = sweep_run_spec(spec).groups
    assert groups[0].rates == (1000.0,)
    assert [config_groups(groups, c.options)[0].rates for c in plan.configs] == [(500.0,), (4000.0,)]


def test_the_knee_is_the_highest_rate_served_within_the_slo():
    def step(rate, tps, p99):
        return {"threads": 8, "rate": rate, "tps": tps, "lat_p99_ms": p99, "seconds": 10}

    configs = [{"idx": 0, "label": "flush=1", "steps": [step(500, 500, 2.0), step(1000, 998, 4.5),
                                                         step(2000, 1400, 900.0)]},
               {"idx": 1, "label": "flush=2", "steps": [step(500, 501, 1.0), step(1000, 1000, 1.5),
                                                         step(2000, 1999, 3.0)]}]
    k = knees(configs, 5.0)
    assert [c["knee"] for c in k["configs"]] == [1000.0, 2000.0]
    assert [p["served"] for p in k["configs"][0]["points"]] == [True, True, False]
    text = "\n".join(knee_lines({"knee": k}))
    assert "| flush=1 | 2.00 (500) | 4.50 (998) | 900.00 (1,400)* | 1,000/s |" in text
    assert knees(configs, 1.2)["configs"][0]["knee"] is None
    session = {"summary": {"configs": configs, "knee": k}}
    assert latency_by_rate(session)["flush=2"]["knee"] == 2000.0
    single = {"summary": {"steps": [{**step(500, 500, 2.0), "group": "main"}, {**step(1000, 990, 8.0),
                                                                                "group": "main"}]}}
    assert latency_by_rate(single, 5.0)[""]["knee"] == 500.0
    assert latency_by_rate({"summary": {"steps": [{"group": "main", "tps": 1.0}]}}) == {}
