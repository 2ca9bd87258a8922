"""`tunebench tune`'s pieces without a server: the --knob grammar, the search space checked against a knob's
catalog entry, the time plan, the trials' conclusion in words, and the sampler's determinism."""

from __future__ import annotations

import pytest

from tunebench.core.errors import ConfigError
from tunebench.core.knobs import KnobInfo
from tunebench.run.tune import (
    MIN_GAIN,
    KnobRange,
    Trial,
    TuneResult,
    TuneSpec,
    parse_duration,
    resolve,
    result_text,
    size_text,
)

BP = KnobInfo("innodb_buffer_pool_size", "int", True, 2 * 2**20, 2**63, current="67108864")
IO = KnobInfo("innodb_io_capacity", "int", True, 100, 2**32, current="200")
FLUSH = KnobInfo("innodb_flush_log_at_trx_commit", "enum", True, choices=("0", "1", "2"), current="1")
STATIC = KnobInfo("innodb_log_file_size", "int", False, 2**20, 2**40)
FIXED = KnobInfo("version", "string", False, fixed=True)


def test_knob_grammar():
    assert KnobRange.parse("innodb_buffer_pool_size=64M..1G") == KnobRange("innodb_buffer_pool_size", "64M", "1G")
    assert KnobRange.parse("Innodb_IO_capacity = 100..20000:log") == KnobRange("innodb_io_capacity", "100", "20000",
                                                                                 True)
    assert KnobRange.parse("innodb_flush_log_at_trx_commit=0,1,2").choices == ("0", "1", "2")
    for bad in ("innodb_io_capacity", "=1..2", "x=1..", "x=..2", "x=1", "x=1..2:lin", "x=1,1", "x="):
        with pytest.raises(ConfigError):
            KnobRange.parse(bad)


def test_a_range_is_checked_against_the_catalog():
    d = resolve(KnobRange.parse("innodb_buffer_pool_size=64M..1G:log"), BP)
    assert (d.kind, d.low, d.high, d.log) == ("int", 64 * 2**20, 2**30, True)
    assert resolve(KnobRange.parse("innodb_flush_log_at_trx_commit=2,0"), FLUSH).choices == ("2", "0")
    with pytest.raises(ConfigError, match="static"):
        resolve(KnobRange.parse("innodb_log_file_size=1G..4G"), STATIC)
    with pytest.raises(ConfigError, match="read-only"):
        resolve(KnobRange.parse("version=a,b"), FIXED)
    with pytest.raises(ConfigError, match="out of range"):
        resolve(KnobRange.parse("innodb_io_capacity=1..2000"), IO)
    with pytest.raises(ConfigError, match="below its high end"):
        resolve(KnobRange.parse("innodb_io_capacity=2000..200"), IO)
    with pytest.raises(ConfigError, match="list of values"):
        resolve(KnobRange.parse("innodb_flush_log_at_trx_commit=0..2"), FLUSH)
    with pytest.raises(ConfigError, match="not one of"):
        resolve(KnobRange.parse("innodb_flush_log_at_trx_commit=1,3"), FLUSH)


def test_the_time_plan_and_its_limits():
    spec = TuneSpec((KnobRange.parse("innodb_io_capacity=100..2000"),), budget_seconds=300)
    # baseline 10 s; a trial: settle 5 + trial 20 + settle 5 + baseline 10; the confirmation: 8 blocks of 10 s and
    # 6 settles of 5 s (ABBA BAAB changes the values 5 times, and the first block follows a trial's baseline)
    assert (spec.baseline_seconds, spec.trial_cost, spec.planned_trials, spec.confirm_seconds) == (10, 40, 7, 110)
    spec.validate()
    with pytest.raises(ConfigError, match="fewer than 2 trials"):
        TuneSpec(spec.knobs, budget_seconds=60).validate()
    with pytest.raises(ConfigError, match="twice"):
        TuneSpec(spec.knobs * 2).validate()
    with pytest.raises(ConfigError, match="objective"):
        TuneSpec(spec.knobs, objective="qps").validate()
    assert [parse_duration(t) for t in ("10m", "90s", "1h", "300", "1.5m")] == [600, 90, 3600, 300, 90]
    for bad in ("", "m", "-5m", "0", "1.3s", "ten", "nan", "infm"):
        with pytest.raises(ConfigError):
            parse_duration(bad)
    assert [size_text(v) for v in (2**30, 64 * 2**20, 200, 1.5, 3 * 2**20 + 1)] == ["1G", "64M", "200", "1.5",
                                                                                      str(3 * 2**20 + 1)]


def _result(confirm: tuple[float, float, float] | None, verdict: str = "no clear improvement") -> TuneResult:
    best = Trial(2, {"innodb_buffer_pool_size": str(2**30)}, {}, 0.0, objective=2.5, ci_low=2.2, ci_high=2.8)
    r = TuneResult({"objective": "tps"}, {"innodb_buffer_pool_size": str(64 * 2**20)}, [best], best=2,
                   verdict=verdict)
    if confirm:
        r.confirm = dict(zip(("ratio", "ci_low", "ci_high"), confirm, strict=True))
    return r


def test_the_conclusion_says_what_the_confirmation_found():
    assert result_text(_result((2.4, 2.2, 2.6), "improvement")).startswith(
        "improvement: innodb_buffer_pool_size=1G gives 2.40x (95 % CI 2.20-2.60)")
    assert "the interval holds 1" in result_text(_result((1.01, 0.97, 1.05)))
    assert "worse than the baseline" in result_text(_result((0.9, 0.85, 0.95)))
    small = 1 + MIN_GAIN / 2
    assert f"under the {MIN_GAIN:.0%} worth a change" in result_text(_result((small, 1.001, 1.02)))
    none = TuneResult({"objective": "tps"}, {"innodb_io_capacity": "200"}, [Trial(1, {}, {}, 0.0, objective=0.98)])
    assert result_text(none) == "no clear improvement: no trial beat its baseline; the knobs stay at " \
                                "innodb_io_capacity=200"
    # and it survives the store's JSON
    r = _result((2.4, 2.2, 2.6), "improvement")
    assert TuneResult.from_dict(r.to_dict()) == r


def test_the_sampler_is_seeded():
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    d = resolve(KnobRange.parse("innodb_buffer_pool_size=64M..1G:log"), BP)

    def draws(seed: int) -> list[int]:
        study = optuna.create_study(direction="maximize",
                                    sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=2))
        out = []
        for i in range(5):
            t = study.ask({d.name: d.distribution()})
            out.append(t.params[d.name])
            study.tell(t, float(i % 3))
        return out

    assert draws(7) == draws(7) != draws(8)
    assert all(64 * 2**20 <= v <= 2**30 for v in draws(7))


def test_a_size_on_a_marker_reads_as_my_cnf_writes_it():
    """A tune of the buffer pool put `innodb_buffer_pool_size = 67108864` on every plot's markers and said
    "asked for 555745280, the server reads back 671088640": sizes read as people write them now."""
    from tunebench.run.tuning import sized

    assert [sized(v) for v in ("67108864", 671088640, 555745280, "200", "ON", None, "-1", 1048577)] == \
        ["64M", "640M", "530M", "200", "ON", "None", "-1", "1048577"]
