"""Demo plans (issue 45 item 4): the shipped plans read, and a bad plan is one line naming what is wrong."""

from pathlib import Path

import pytest

from tunebench.core.demo_plan import ACTIONS, due, parse_plan
from tunebench.core.errors import ConfigError
from tunebench.load.demo_plans import load_plan
from tunebench.load.recipes import load_spec

GOOD = """name = "t"
title = "a title"
[load]
workload = "oltp_update_index"
threads = 4
rate = 100
[[step]]
at = 0
do = "start"
[[step]]
at = 2.5
do = "flip"
knob = "innodb_flush_log_at_trx_commit"
value = 2
caption = "flush once a second"
[[step]]
at = 4
do = "rate"
factor = 2
[[step]]
at = 4
do = "say"
caption = "same second: in the file's order"
[[step]]
at = 9
do = "stop"
"""


def test_the_shipped_plans_read_and_their_sweep_is_a_sweep():
    root = Path(__file__).resolve().parents[2] / "workloads" / "demos"
    durability = load_plan(root / "durability.toml")
    assert durability.actions[0].do == "start" and durability.actions[-1].do == "stop"
    assert durability.load["workload"] == "oltp_update_index" and durability.load["rate"] > 0
    flips = [a for a in durability.actions if a.do == "flip"]
    assert {a.knob for a in flips} == {"innodb_flush_log_at_trx_commit"} and flips[0].value == "2"
    knee = load_plan(root / "knee.toml")
    assert Path(knee.sweep_file).name == "knee-sweep.toml" and "knee" in [a.do for a in knee.actions]
    spec = load_spec(knee.sweep_file)
    assert spec.groups[0].rates and spec.slo_p99_ms == 20
    # by name, from the install's workloads/demos
    assert load_plan("durability").actions == durability.actions


def test_a_plan_reads_in_order_with_its_parts():
    plan = parse_plan(GOOD)
    assert [a.do for a in plan.actions] == ["start", "flip", "rate", "say", "stop"]
    flip = plan.actions[1]
    assert (flip.knob, flip.value, flip.at, flip.caption) == ("innodb_flush_log_at_trx_commit", "2", 2.5,
                                                              "flush once a second")
    assert flip.text() == "flip innodb_flush_log_at_trx_commit to 2" and plan.actions[2].text() == "rate x2"
    assert plan.length == 9 and plan.rehearsal is None
    assert due(plan, 0, 0.0) == [0] and due(plan, 1, 4.0) == [1, 2, 3] and due(plan, 4, 8.9) == []
    assert parse_plan(GOOD.replace("value = 2", "value = true")).actions[1].value == "ON"
    assert parse_plan(GOOD.replace("threads = 4", "threads = [16, 16]")).load["threads"] == [16, 16]
    assert set(ACTIONS) >= {a.do for a in plan.actions}


@pytest.mark.parametrize(("change", "says"), [
    (("do = \"stop\"", "do = \"explode\""), "step 5: do must be one of start, flip"),
    (("at = 4\ndo = \"say\"", "at = 1\ndo = \"say\""), "step 4: at 1 s comes before step 3's 4 s"),
    (("at = 9", "at = -1"), "step 5: at must be between 0 and 86400"),
    (("at = 9", "at = \"soon\""), "step 5: at must be a number"),
    (("knob = \"innodb_flush_log_at_trx_commit\"\n", ""), "step 2: a flip names its knob and value"),
    (("knob = \"innodb_flush_log_at_trx_commit\"", "knob = \"x; DROP TABLE t\""), "is not a server variable's name"),
    (("factor = 2", "factor = 0"), "step 3: factor must be between 0.01 and 100"),
    (("factor = 2", "factorr = 2"), "step 3 has unknown key 'factorr'"),
    (("[load]", "[lode]"), "unknown key 'lode'"),
    (("threads = 4", "threads = 4.5"), "[load] threads must be a whole number"),
    (("threads = 4", "threads = [4, 0]"), "[load] threads must be between 1"),
    (("threads = 4", "threads = []"), "[load] threads must list 1 to 64 steps"),
    (("rate = 100", "rate = -5"), "[load] rate must be between 0"),
    (("title = \"a title\"", "rehearsal = 0"), "rehearsal must be a session ID"),
    (("caption = \"same second: in the file's order\"", ""), "step 4: a say step has a caption"),
    (("[[step]]\nat = 9", "[[step]]\nat = 9\nknob = \"a\""), "knob and value belong to a flip, not to stop"),
    (("name = \"t\"", "name = "), "not valid TOML"),
])
def test_a_bad_plan_is_one_line(change, says):
    old, new = change
    assert old in GOOD
    with pytest.raises(ConfigError) as e:
        parse_plan(GOOD.replace(old, new, 1), "plan.toml")
    assert says in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_a_plan_that_starts_twice_or_without_a_load_is_refused():
    with pytest.raises(ConfigError, match="the load starts once"):
        parse_plan(GOOD.replace("do = \"stop\"", "do = \"start\""))
    with pytest.raises(ConfigError, match="a start step needs a \\[load\\]"):
        parse_plan("[[step]]" + GOOD.split("[[step]]", 1)[1])
    with pytest.raises(ConfigError, match="no \\[\\[step\\]\\]"):
        parse_plan("name = \"x\"\n")
    with pytest.raises(ConfigError, match="both a workload and a sweep"):
        parse_plan(GOOD.replace("threads = 4", "threads = 4\nsweep = \"s.toml\""))


def test_a_missing_or_unreadable_plan_file_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="demo plan nope not found"):
        load_plan("nope")
    with pytest.raises(ConfigError, match="is a directory"):
        load_plan(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"name = \"\xff\"")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_plan(bad)
