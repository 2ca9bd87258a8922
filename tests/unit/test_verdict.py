"""The knob A/B verdict's statistics (core/verdict.py) on series whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from tunebench.core.verdict import (
    Verdict,
    ab_verdict,
    dependence,
    lag1,
    pair_verdict,
    ratio_ci,
    settled_from,
    t_quantile,
)


def ar1(n: int, phi: float, sigma: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = rng.normal(0, sigma, n)
    x = np.empty(n)
    x[0] = e[0] / np.sqrt(1 - phi**2)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


def test_known_ratio_is_covered() -> None:
    rng = np.random.default_rng(1)
    before = 1000 + rng.normal(0, 20, 60)
    after = 1240 + rng.normal(0, 25, 60)
    ratio, low, high, _ = ratio_ci(before, after)
    assert low < 1.24 < high
    assert low > 1.2 and high < 1.28  # 60 quiet seconds a side: a tight interval
    assert ratio == pytest.approx(after.mean() / before.mean())


def test_no_difference_spans_one() -> None:
    rng = np.random.default_rng(2)
    before, after = 500 + rng.normal(0, 30, 40), 500 + rng.normal(0, 30, 40)
    ratio, low, high, _ = ratio_ci(before, after)
    assert low < 1.0 < high
    v = Verdict(500, 500 * ratio, ratio, low, high, 40, 40, 3)
    assert not v.clear
    assert v.text().startswith("no clear difference in TPS (")


def test_autocorrelated_noise_widens_the_interval() -> None:
    noise_b, noise_a = ar1(90, 0.8, 10, 3), ar1(90, 0.8, 10, 4)
    before, after = 1000 + noise_b, 1000 + noise_a
    assert lag1(before) > 0.5
    assert dependence(before) >= 5  # (1+r)/(1-r): 9 for r = 0.8, estimated from 90 s
    _, lo, hi, seconds = ratio_ci(before, after)
    _, nlo, nhi, nseconds = ratio_ci(before, after, naive=True)
    assert nseconds == 1 and seconds >= 5
    assert hi - lo > 2 * (nhi - nlo)


def test_independent_noise_moves_together_little() -> None:
    x = 100 + np.random.default_rng(5).normal(0, 5, 64)
    assert 1.0 <= dependence(x) < 1.6  # raised by one standard error of r: never below independent


def test_too_dependent_seconds_are_not_judged() -> None:
    """A side whose seconds move together so long that it holds fewer than three effectively independent ones:
    no interval, and the verdict says why rather than a number."""
    before, after = 1000 + ar1(27, 0.9, 10, 11), 1100 + ar1(27, 0.9, 10, 12)
    ratio, lo, hi, seconds = ratio_ci(before, after)
    assert np.isnan(lo) and np.isnan(hi) and seconds > 9
    v = Verdict(float(before.mean()), float(after.mean()), ratio, lo, hi, 27, 27, seconds)
    assert not v.judged and not v.clear
    assert v.text().startswith(f"not judged: {ratio:.2f}x TPS, but the seconds move together over ~{seconds} s")
    assert Verdict.from_dict(v.to_dict()).text() == v.text() and v.to_dict()["ci_low"] is None


def test_t_quantiles_are_students() -> None:
    for df, q in ((1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (10, 2.228), (30, 2.042), (1000, 1.962)):
        assert t_quantile(0.975, df) == pytest.approx(q, abs=1e-3)


def test_reproducible() -> None:
    rng = np.random.default_rng(6)
    b, a = 100 + rng.normal(0, 9, 30), 110 + rng.normal(0, 9, 30)
    assert ratio_ci(b, a) == ratio_ci(list(b), list(a))


def test_settle_skips_fixed_seconds_then_the_ramp() -> None:
    values = [0, 10, 20, 50, 60, 100, 101, 99, 100, 102, 98, 100, 100, 101]
    assert settled_from(values, 3) == 5  # 3 fixed, then 50 and 60 below the steady level
    assert settled_from([100.0] * 10, 3) == 3
    assert settled_from([100.0] * 4, 3) == 3  # never shortened: too few seconds left means no verdict
    assert settled_from([100.0] * 2, 3) == 2


def series_of(t0: float, values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    # stamped at the end of each second, as the run's intervals are
    return np.arange(len(values)) + t0 + 1.0, np.asarray(values, dtype=float)


def test_ab_verdict_on_series() -> None:
    rng = np.random.default_rng(7)
    tps = [*(1000 + rng.normal(0, 10, 20)), 400, 700, 900, *(2000 + rng.normal(0, 10, 20))]
    p95 = [12.0] * 20 + [30, 20, 15] + [6.0] * 20
    series = {"client.main.tps": series_of(100.0, tps), "client.main.lat.p95": series_of(100.0, p95),
              "waits.wait/synch/mutex/innodb/log_sys_mutex.ms": series_of(100.0, [50.0] * 20 + [9.0] * 23),
              "waits.wait/io/file/innodb/innodb_log_file.ms": series_of(100.0, [0.0] * 43)}
    v = ab_verdict(series, "main", 100.0, 120.0, 143.0)
    assert v is not None
    assert v.seconds_before == 20 and v.seconds_after == 20  # the 3 s after the change left out
    assert v.ratio == pytest.approx(2.0, rel=0.02) and v.clear
    assert v.ci_low < v.ratio < v.ci_high
    assert v.p95_before == 12.0 and v.p95_after == 6.0 and v.p99_before is None
    assert [w.name for w in v.waits] == ["waits.wait/synch/mutex/innodb/log_sys_mutex.ms"]  # all-zero left out
    assert v.windows == ((100.0, 120.0), (123.0, 143.0))
    text = v.text(waits=True)
    assert text.startswith(f"{v.ratio:.2f}x TPS (95 % CI {v.ci_low:.2f}-{v.ci_high:.2f}), p95 12.0 → 6.00 ms")
    assert "log_sys_mutex 50.0 → 9.00 ms/s" in text
    assert Verdict.from_dict(v.to_dict()) == v


def test_ab_verdict_needs_seconds_on_both_sides() -> None:
    series = {"client.main.tps": series_of(0.0, [100.0] * 10)}
    assert ab_verdict(series, "main", 0.0, 8.0, 10.0) is None  # 2 s after, all settling
    assert ab_verdict(series, "other", 0.0, 5.0, 10.0) is None


def test_pair_verdict() -> None:
    rng = np.random.default_rng(8)
    v = pair_verdict(list(100 + rng.normal(0, 2, 20)), list(150 + rng.normal(0, 2, 20)))
    assert v is not None and v.clear and v.ci_low < 1.5 < v.ci_high
    assert pair_verdict([100.0, 100.0], [100.0] * 10) is None


def test_synthetic_verdict_equals_a_recomputation(tmp_path) -> None:
    from tunebench.core.verdict import recompute
    from tunebench.store.repo import Store
    from tunebench.store.synthetic import record

    store = Store(tmp_path / "s.db")
    sid = record(store, 120, n_series=30, knob_at=90, verdict=True)
    ev = next(e for e in store.get_session(sid)["events"] if e["kind"] == "verdict")
    v = recompute({n: (d.t, d.v) for n, d in store.series(sid).items()}, ev["data"])
    assert v is not None and v == Verdict.from_dict(ev["data"]["verdict"])
    assert v.ci_low < 1.15 < v.ci_high and v.clear  # the synthetic flip's +15 %
    assert ev["label"].startswith(f"innodb_flush_log_at_trx_commit 1 → 2: {v.ratio:.2f}x TPS (95 % CI ")
    store.close()


def test_markdown_report_has_the_verdict(tmp_path) -> None:
    from tunebench.core.results import markdown
    from tunebench.store.repo import Store
    from tunebench.store.synthetic import record

    store = Store(tmp_path / "s.db")
    sid = record(store, 120, n_series=30, knob_at=90, verdict=True)
    session = store.get_session(sid)
    v = Verdict.from_dict(next(e for e in session["events"] if e["kind"] == "verdict")["data"]["verdict"])
    md = markdown(session)
    assert "## A/B verdicts of live changes" in md
    # the verdicts' row (the steps' table names the flip too, in its "ran with" column)
    row = next(line for line in md.splitlines() if "innodb_flush_log_at_trx_commit 1 → 2" in line
               and line.startswith("| +"))
    assert f"| {v.ratio:.2f}x ({v.ci_low:.2f}-{v.ci_high:.2f}) |" in row
    assert f"| {v.tps_before:,.1f} | {v.tps_after:,.1f} |" in row
    assert row.startswith("| +90 s |")
    store.close()


def test_sweep_ratio_to_baseline_carries_the_verdict() -> None:
    from tests.unit.test_sweep_plan import CURRENT, KNOBS, make_plan, parse_spec, spec

    from tunebench.core.results import markdown, sweep_tables

    s = parse_spec(spec('innodb_spin_wait_delay = [6, 96]', "baseline = { innodb_spin_wait_delay = 6 }"))
    plan = make_plan(s, KNOBS, CURRENT)
    rng = np.random.default_rng(9)
    seconds = {1: 1000 + rng.normal(0, 20, 20), 2: 3000 + rng.normal(0, 40, 20),
               3: 1000 + rng.normal(0, 20, 20), 4: 3600 + rng.normal(0, 40, 20)}
    steps = [{"step": n, "config": (n - 1) // 2, "group": "main", "threads": 1 if n % 2 else 4,
              "tps": float(seconds[n].mean()), "qps": 1.0, "lat_p95_ms": 1.0, "lat_p99_ms": 2.0, "cv": 0.01,
              "tps_median": 1.0} for n in seconds]
    t = sweep_tables(plan, steps, {}, seconds)
    cells = next(r for r in t["ratios"] if r["config"] == 1)["steps"]
    at1, at4 = (Verdict.from_dict(c["verdict"]) for c in cells)
    assert at1 == pair_verdict(seconds[1], seconds[3]) and not at1.clear
    assert at4 == pair_verdict(seconds[2], seconds[4]) and at4.clear and at4.ci_low < 1.2 < at4.ci_high
    assert all("verdict" not in c for c in next(r for r in t["ratios"] if r["config"] == 0)["steps"])
    md = markdown({"id": 7, "workload": "w", "target": "sandbox", "engine": "builtin", "transport": "socket",
                   "status": "completed", "summary": t})
    assert f"({at4.ci_low:.2f}-{at4.ci_high:.2f}, single run) |" in md
    assert f"({at1.ci_low:.2f}-{at1.ci_high:.2f}, single run, no clear difference) |" in md


def test_run_flip_verdicts_two_changes_in_one_step(tmp_path) -> None:
    """What the run records at a step's end: one verdict per change, each between its neighbours, the second
    settled 3 s after the first too; every one equals a recomputation from the stored series."""
    from tunebench.core.interval import Interval
    from tunebench.core.verdict import recompute
    from tunebench.run.session import flip_verdicts
    from tunebench.store.repo import Store

    store = Store(tmp_path / "s.db")
    w = store.new_session(target="sandbox", transport="socket", engine="builtin", workload="w", config={},
                          started_at=1000.0)
    rng = np.random.default_rng(10)
    t0 = 1000.123456
    level = [100.0] * 30 + [150.0] * 30 + [120.0] * 30  # sides long enough for batches (core/verdict.py)
    ivs = [Interval(t0 + s + 1, "main", 4, level[s] + rng.normal(0, 2), 1.0, 1.0, 0.0, 0.0,
                    {"p95": 10.0 - s / 10, "p99": 20.0}) for s in range(90)]
    for iv in ivs:
        w.add_interval(iv)
    w.flush()
    marks = [(t0 + 29.9, {"name": "sort_buffer_size", "from": "262144", "to": "1048576"}),
             (t0 + 60.0, {"name": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2"})]
    events = flip_verdicts(store, w.id, marks, {"main": ivs[2:]}, t0 + 90.5)
    assert [e.kind for e in events] == ["verdict", "verdict"]
    first, second = (e.data for e in events)
    assert (first["start"], first["at"], first["end"]) == (ivs[2].t - 1.5, marks[0][0], marks[1][0])
    assert (second["start"], second["settle_before"]) == (marks[0][0], 3)
    assert first["new_sessions_only"] and "applies to new connections only" in events[0].label
    assert not second["new_sessions_only"]
    stored = {n: (d.t, d.v) for n, d in store.series(w.id).items()}
    for e in events:
        assert recompute(stored, e.data) == Verdict.from_dict(e.data["verdict"])
    a, b = (Verdict.from_dict(d["verdict"]) for d in (first, second))
    assert a.seconds_before == 27 and a.seconds_after == 27 and a.ci_low < 1.5 < a.ci_high  # flip's second: neither
    assert b.seconds_before == 27 and b.seconds_after == 27 and b.ci_low < 0.8 < b.ci_high
    store.close()


def test_seconds_without_the_server_are_left_out() -> None:
    """A server outage after a flip (0 TPS while it was down, then a slow restart) used to count as the knob's
    effect: the verdict called a neutral change a big loss."""
    from tunebench.core.verdict import outages, recompute, verdict_event

    rng = np.random.default_rng(4)
    tps = list(1000 + rng.normal(0, 10, 60))
    tps[39:49] = [0.0] * 10  # down from t=39 to t=49: the samples stamped 40..49
    series = {"client.main.tps": series_of(0.0, tps)}
    events = [{"t": 39.0, "kind": "gap", "data": {"server": "down", "why": "frozen"}},
              {"t": 49.0, "kind": "note", "data": {"server": "up", "seconds": 10.0}}]
    down = outages(events, 60.0)
    assert down == [(39.0, 49.0)]
    blind = ab_verdict(series, "main", 0.0, 30.0, 60.0)
    assert blind is not None and blind.ratio < 0.9  # what the verdict said before
    v = ab_verdict(series, "main", 0.0, 30.0, 60.0, excluded=down)
    assert v is not None and v.left_out == 10 and not v.clear
    assert v.seconds_after <= 20 and 0.98 < v.ratio < 1.02
    assert v.text().endswith("(10 s without the server left out)")
    ev = verdict_event(series, "main", {"name": "x", "from": "1", "to": "2"}, 0.0, 30.0, 60.0, 0, 60.0,
                       excluded=down)
    assert ev.data["excluded"] == [[39.0, 49.0]] and recompute(series, ev.data) == v
    assert outages(events[:1], 60.0) == [(39.0, 60.0)]  # never came back: to the end


def _bursts(tps: np.ndarray, other: np.ndarray, rng: np.random.Generator, first: int, length: tuple[int, int],
            idle: tuple[int, int], cut: tuple[float, float], cpu: tuple[float, float]) -> None:
    """Another process's bursts, in place: the first starts before `first`; each lasts `length` s (integers drawn
    in [lo, hi)), takes `cut` of the TPS and shows `cpu` % as other CPU, then `idle` s pass."""
    n = len(tps)
    i = int(rng.integers(0, first))
    while i < n:
        span = int(rng.integers(*length))
        tps[i:i + span] *= 1 - rng.uniform(*cut)
        other[i:i + span] = rng.uniform(*cpu, size=len(other[i:i + span]))
        i += span + int(rng.integers(*idle))


def _bursty_flip(seed: int, effect: float = 1.0) -> dict:
    """60 s of AR(1) TPS around 1,000 with a live change at 30 s, and bursts of another process's load (2-8 s, at
    random: what produced false verdicts on a shared machine) that take 30-60 % of the TPS while they last and
    show in `proc.local.other.cpu`; `effect` multiplies the TPS after the change."""
    rng = np.random.default_rng(seed)
    n = 60
    tps = 1000 + ar1(n, 0.5, 15, seed)
    tps[30:] *= effect
    other = rng.uniform(0, 4, n)
    _bursts(tps, other, rng, first=6, length=(2, 9), idle=(8, 25), cut=(0.3, 0.6), cpu=(30, 60))
    t = np.arange(1.0, n + 1.0)
    return {"client.main.tps": (t, tps), "proc.local.other.cpu": (t + 0.3, other)}


def test_busy_seconds_left_out_give_the_verdict_of_a_quiet_machine() -> None:
    """200 simulated flips with bursts of another process's load: judged blind, a true 1.05x is never found (the
    bursts' seconds bury it); with the busy seconds left out, in ~50 % (the same noise without bursts: ~70 %; a
    single 30-s flip of 1.5 %-noisy seconds that move together over ~3 s cannot do much better honestly). With no
    effect, leaving them out claims a difference no more often than on the quiet machine: the bursts add no false
    claim. (The moving-block bootstrap this statistic replaced claimed 16 % here, and found the 1.05x in 100 %.)"""
    runs = 200
    rates = {}
    for effect in (1.0, 1.05):
        quiet = blind = left_out = 0
        for seed in range(runs):
            series = _bursty_flip(seed, effect)
            t = series["client.main.tps"][0]
            calm = 1000 + ar1(60, 0.5, 15, seed)
            calm[30:] *= effect

            def claims(v: Verdict | None, effect: float = effect) -> bool:
                return bool(v and v.clear and (effect == 1.0 or v.ratio > 1))

            quiet += claims(ab_verdict({"client.main.tps": (t, calm)}, "main", 0.0, 30.0, 60.0))
            blind += claims(ab_verdict(series, "main", 0.0, 30.0, 60.0))
            left_out += claims(ab_verdict(series, "main", 0.0, 30.0, 60.0, busy_pct=10.0))
        rates[effect] = (quiet / runs, blind / runs, left_out / runs)
    print("claims (quiet machine, bursts judged blind, busy seconds left out): "
          f"no effect {rates[1.0]}, a true 1.05x {rates[1.05]}")
    quiet, blind, left_out = rates[1.05]
    # measured: 70.5 %, 0 %, 49 % (a quarter of the seconds fewer, and the quiet machine's own noise)
    assert blind <= 0.05 and left_out >= 0.35 and quiet >= 0.6
    quiet, blind, left_out = rates[1.0]
    assert left_out <= 0.05 and left_out <= quiet  # measured: 2.5 % quiet, 2 % with the busy seconds left out


def test_a_flip_in_a_busy_machine_is_not_judged_and_says_so() -> None:
    from tunebench.core.verdict import recompute, verdict_event

    series = _bursty_flip(3)
    t, other = series["proc.local.other.cpu"]
    series["proc.local.other.cpu"] = (t, np.where(t > 28, 50.0, other))  # busy from the change on
    ev = verdict_event(series, "main", {"name": "x", "from": "1", "to": "2"}, 0.0, 30.0, 60.0, 0, 60.0)
    assert ev.data["verdict"] is None and ev.data["busy_pct"] == 10.0
    assert "not judged: the machine was busy (" in ev.label and "over 10 % of its CPU used by other" in ev.label
    assert ev.label.endswith(ev.data["text"])  # the card and the knob panel say the Events' words
    assert recompute(series, ev.data) is None
    # and a verdict with busy seconds left out says how many
    v = ab_verdict(_bursty_flip(5), "main", 0.0, 30.0, 60.0, busy_pct=10.0)
    assert v is not None and v.busy_left_out > 0 and v.text().endswith(f"({v.busy_left_out} busy s left out)")


# ---- issue 42, item 4: each verdict kind against the noise users' machines have -------------------------------
RUNS = 500


def _machine(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n seconds of TPS around 1,000 as a shared machine gives them: AR(1) noise of 2 % whose lag-1
    autocorrelation is drawn from 0.2-0.8, a linear drift of up to +-5 % over the run, and bursts of another
    process's load (2-15 s, then 2-20 s idle, drawn at random: regular bursts would average out) that take 20-60 %
    of the TPS while they last and show in the hosts' other CPU (30-90 %; 0-4 % otherwise)."""
    phi = rng.uniform(0.2, 0.8)
    e = rng.normal(0, 0.02 * np.sqrt(1 - phi**2), n)
    x = np.empty(n)
    x[0] = rng.normal(0, 0.02)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    tps = 1000 * (1 + x) * (1 + rng.uniform(-0.05, 0.05) * np.arange(n) / n)
    other = rng.uniform(0, 4, n)
    _bursts(tps, other, rng, first=20, length=(2, 16), idle=(2, 21), cut=(0.2, 0.6), cpu=(30, 90))
    return tps, other


def _live_flip(seed: int, effect: float) -> Verdict | None:
    """A live flip at 30 s of a 60-s step (the default busy threshold)."""
    tps, other = _machine(60, np.random.default_rng(seed))
    tps[30:] *= effect
    t = np.arange(1.0, 61.0)
    series = {"client.main.tps": (t, tps), "proc.local.other.cpu": (t + 0.3, other)}
    return ab_verdict(series, "main", 0.0, 30.0, 60.0, busy_pct=10.0)


def _confirmation(seed: int, effect: float) -> tuple[float, float, float, int]:
    """The tune's confirmation at its defaults (trials of 20 s: blocks of 10 s, 5 s to settle after each change),
    busy seconds left out of each block, judged by core.verdict.paired_blocks."""
    from tunebench.core.verdict import CONFIRM_ORDER, paired_blocks

    block, settle = 10, 5
    tps, other = _machine(len(CONFIRM_ORDER) * (block + settle) + settle, np.random.default_rng(seed))
    blocks, pos = [], settle
    for side in CONFIRM_ORDER:
        seg = tps[pos:pos + block] * (effect if side == "B" else 1.0)
        blocks.append((side, list(seg[other[pos:pos + block] <= 10.0])))
        pos += block + settle
    return paired_blocks(blocks)


def _sweep_repeats(seed: int, effect: float, repeats: int) -> Verdict | None:
    """A sweep of the baseline and one configuration, 20-s steps, `repeats` repeats in order (baseline, then the
    configuration, each repeat): each step's mean TPS over its quiet seconds, judged from the repeats' spread
    (core.verdict.repeats_verdict, as core.results.sweep_tables does)."""
    from tunebench.core.verdict import MIN_QUIET_SECONDS, repeats_verdict

    step = 20
    tps, other = _machine(2 * repeats * step, np.random.default_rng(seed))
    # the steps in order: baseline then configuration in even repeats, the other way round in odd ones (the plan
    # reverses each other repeat, core/sweep/plan.py: a drift cancels over two repeats)
    config_step = [2 * r + (1 if r % 2 == 0 else 0) for r in range(repeats)]
    is_config = np.isin(np.arange(len(tps)) // step, config_step)
    tps = tps * np.where(is_config, effect, 1.0)
    # each step's mean over its quiet seconds (busy ones left out, as run/session.steps_per_second does); a step
    # with fewer than MIN_QUIET_SECONDS is left out with its pair (core.results.sweep_tables)
    means = [float(s[o <= 10.0].mean()) if (o <= 10.0).sum() >= MIN_QUIET_SECONDS else float("nan")
             for s, o in zip(tps.reshape(2 * repeats, step), other.reshape(2 * repeats, step), strict=True)]
    pairs = [(means[2 * r], means[2 * r + 1]) if r % 2 == 0 else (means[2 * r + 1], means[2 * r])
             for r in range(repeats)]  # (baseline, configuration)
    return repeats_verdict([(b, c) for b, c in pairs if np.isfinite(b) and np.isfinite(c)])


def test_no_verdict_kind_claims_noise_and_the_confirmation_finds_a_true_10_percent() -> None:
    """500 simulated runs of each verdict kind on the noise above: with no effect, a clear difference ("1.24x",
    an interval that excludes 1) at most 5 % of the time at the 95 % level; with a true 10 % effect, the tune's
    confirmation (the same statistic a Confirm action would use) finds it at least 80 % of the time. A single live
    flip under bursts this dense is mostly "not judged" (its few quiet seconds move together): honest, and why the
    confirmation exists. Printed for the README."""
    found: dict[tuple[str, float], tuple[float, float]] = {}
    for effect in (1.0, 1.1):
        claims = unjudged = 0
        for seed in range(RUNS):
            v = _live_flip(seed, effect)
            if v is None or not v.judged:
                unjudged += 1
            elif v.clear and (effect == 1.0 or v.ratio > 1):
                claims += 1
        found[("live flip", effect)] = (claims / RUNS, unjudged / RUNS)
        claims = unjudged = 0
        for seed in range(RUNS):
            ratio, low, high, _pairs = _confirmation(seed, effect)
            if np.isnan(low):
                unjudged += 1
            elif (low > 1 or high < 1) and (effect == 1.0 or ratio > 1):
                claims += 1
        found[("confirmation", effect)] = (claims / RUNS, unjudged / RUNS)
        for repeats in (3, 5):
            claims = unjudged = 0
            for seed in range(RUNS):
                v = _sweep_repeats(seed, effect, repeats)
                if v is None or not v.judged:
                    unjudged += 1
                elif v.clear and (effect == 1.0 or v.ratio > 1):
                    claims += 1
            found[(f"sweep ratio, {repeats} repeats", effect)] = (claims / RUNS, unjudged / RUNS)
    for (kind, effect), (rate, unjudged) in found.items():
        what = "false claims" if effect == 1.0 else "found the true 1.10x"
        judged = rate / (1 - unjudged) if unjudged < 1 else 0.0
        print(f"{kind}, {RUNS} runs, effect {effect:.2f}: {what} {rate:.1%} ({judged:.1%} of those judged), "
              f"not judged {unjudged:.1%}")
    assert found[("live flip", 1.0)][0] <= 0.05
    assert found[("confirmation", 1.0)][0] <= 0.05
    assert found[("confirmation", 1.1)][0] >= 0.80
    assert found[("sweep ratio, 3 repeats", 1.0)][0] <= 0.05 and found[("sweep ratio, 5 repeats", 1.0)][0] <= 0.05


def test_a_confirmed_flip_is_judged_from_its_blocks_and_recomputed_from_the_series() -> None:
    """The Confirm action's verdict (core.verdict.confirm_verdict): the TPS seconds inside each block, busy ones
    left out, judged by the pairs' spread; a verdict event's data gives the same Verdict back (recompute), and
    with fewer than three pairs that keep seconds on both sides it is "not judged", saying why."""
    from tunebench.core.verdict import MIN_PAIRS, confirm_verdict, recompute

    rng = np.random.default_rng(5)
    order = "BAABABBA"
    t0, block, settle = 1000.0, 5, 2
    blocks, t, v = [], [], []
    now = t0
    for side in order:
        lo = now + settle
        blocks.append((side, lo, lo + block))
        for k in range(settle + block):
            t.append(now + k + 1)
            v.append((150.0 if side == "B" else 100.0) * (1 + 0.03 * rng.standard_normal()))
        now += settle + block
    t_arr, v_arr = np.array(t), np.array(v)
    other = np.zeros(len(t))
    other[(t_arr > blocks[1][1]) & (t_arr <= blocks[1][1] + 2)] = 40.0  # two busy seconds in the second block
    series = {"client.main.tps": (t_arr, v_arr), "proc.localhost.other.cpu": (t_arr, other)}
    got = confirm_verdict(series, "main", blocks, busy_pct=10.0)
    assert got is not None and got.judged and got.clear and got.repeats == 4 and got.order == order
    assert 1.4 < got.ratio < 1.6 and got.busy_left_out == 2
    assert got.seconds_before + got.seconds_after == 8 * block - 2
    assert got.tps_text().endswith("; confirmed over 4 pairs of blocks, BAAB ABBA)")
    data = {"group": "main", "blocks": [list(b) for b in blocks], "busy_pct": 10.0, "excluded": []}
    assert recompute(series, data) == got
    # the A blocks of two pairs wholly busy: two pairs left, too few for an interval
    for _side, lo, hi in [blocks[1], blocks[3]]:
        other[(t_arr > lo) & (t_arr <= hi)] = 40.0
    few = confirm_verdict(series, "main", blocks, busy_pct=10.0)
    assert few is not None and not few.judged and few.repeats == MIN_PAIRS - 1
    assert few.tps_text().startswith("not judged: 1.5") and "the machine was busy" in few.tps_text()


def test_a_noise_floor_is_this_machines_own_and_says_so() -> None:
    """`tunebench calibrate`'s floor is found for the same target, workload and threads, recorded on this machine,
    completed, and plausible (a shared or imported store is untrusted input); a verdict inside it says so."""
    from dataclasses import replace

    from tunebench.core.verdict import Verdict
    from tunebench.run.confirm import find_floor

    def session(i, floor, **kw):
        return {"id": i, "status": "completed", "target": "sandbox", "host": "here", "started_at": 1.0,
                "summary": {"calibration": {"floor_pct": floor, "workload": "oltp_point_select", "threads": 2}}, **kw}

    sessions = [session(1, 6.0), session(2, 4.0), session(3, 1.0, host="elsewhere"), session(4, 1.0, status="failed"),
                session(5, 1001.0), session(6, float("nan")), session(7, True), session(8, 2.0, target="other")]
    assert find_floor(sessions, "sandbox", "here", "oltp_point_select", 2)["floor_pct"] == 4.0
    assert find_floor(sessions, "sandbox", "here", "oltp_point_select", 4) is None
    assert find_floor(sessions, "sandbox", "here", "oltp_read_write", 2) is None
    v = Verdict(tps_before=100, tps_after=103, ratio=1.03, ci_low=1.01, ci_high=1.05, seconds_before=30,
                seconds_after=30, block=1)
    assert v.tps_text() == "1.03x TPS (95 % CI 1.01-1.05)"
    assert replace(v, floor_pct=4.0).tps_text() == "1.03x TPS (95 % CI 1.01-1.05) -- within this machine's noise (±4 %)"
    assert replace(v, ratio=1.2, ci_low=1.1, ci_high=1.3, floor_pct=4.0).tps_text().endswith(
        "(this machine's noise: ±4 %)")


def _open_loop_flip(seed: int, effect: float, bursts: bool = True) -> Verdict | None:
    """An open-loop flip at 30 s of a 60-s step at 300/s: TPS is the rate (give or take 2 %), the per-second p95
    ~10 ms with autocorrelated lognormal noise (AR(1), phi 0.2-0.8, 15 % a second) and, with `bursts`, the same
    bursts of foreign load as _machine (latency x1.5-3 while they last); `effect` multiplies the p95 after the
    flip."""
    rng = np.random.default_rng(seed)
    _tps, other = _machine(60, rng)
    if not bursts:
        other = rng.uniform(0, 4, 60)
    phi = rng.uniform(0.2, 0.8)
    e = rng.normal(0, 0.15 * np.sqrt(1 - phi**2), 60)
    x = np.empty(60)
    x[0] = rng.normal(0, 0.15)
    for i in range(1, 60):
        x[i] = phi * x[i - 1] + e[i]
    p95 = 10.0 * np.exp(x)
    p95[other > 10.0] *= rng.uniform(1.5, 3.0)
    p95[30:] *= effect
    t = np.arange(1.0, 61.0)
    served = 300.0 * (1 + rng.normal(0, 0.02, 60))
    series = {"client.main.tps": (t, served), "client.main.rate": (t, np.full(60, 300.0)),
              "client.main.lat.p95": (t, p95), "proc.local.other.cpu": (t + 0.3, other)}
    return ab_verdict(series, "main", 0.0, 30.0, 60.0, busy_pct=10.0)


def test_an_open_loop_verdict_is_about_latency_and_claims_no_noise() -> None:
    """Issue 45 item 2: in open loop TPS is the rate's, so the verdict is the p95 at the asked rate. Simulated
    (the noise above, RUNS runs each): with no effect, a clear latency difference at most 5 % of the time, with and
    without bursts of foreign load; a true halving of the p95 (11.1 → 5.15 ms was seen) found in at least 90 % of
    the flips judged, and at least half judged without bursts (a flip whose seconds move together over ~9 s, phi
    0.8, has too few independent ones in 27 s: "not judged", as for TPS -- why Confirm exists). Printed for the
    README."""
    found = {}
    for bursts in (False, True):
        for effect in (1.0, 0.5):
            claims = unjudged = 0
            for seed in range(RUNS):
                v = _open_loop_flip(seed, effect, bursts)
                if v is None or not v.lat_judged:
                    unjudged += 1
                elif v.lat_clear and (effect == 1.0 or v.lat_ratio < 1):
                    claims += 1
            found[(bursts, effect)] = (claims / RUNS, unjudged / RUNS)
            what = "false claims" if effect == 1.0 else "found the true 0.5x p95"
            print(f"open-loop flip{' under bursts' if bursts else ''}, {RUNS} runs, p95 effect {effect:.2f}: {what} "
                  f"{claims / RUNS:.1%}, not judged {unjudged / RUNS:.1%}")
    assert found[(False, 1.0)][0] <= 0.05 and found[(True, 1.0)][0] <= 0.05
    for bursts in (False, True):
        rate, unjudged = found[(bursts, 0.5)]
        assert rate / (1 - unjudged) >= 0.90, (bursts, rate, unjudged)
    assert found[(False, 0.5)][1] <= 0.5
    v = _open_loop_flip(1, 0.5)
    assert v is not None and v.open_loop and v.rate == 300.0 and v.served
    assert v.headline().startswith("p95 ") and "at 300/s, served" in v.headline()
    from tunebench.core.verdict import flip_text

    assert flip_text(v).startswith(v.headline()) and "TPS" in v.check_text()
    assert v.better() in (0, 1) and Verdict.from_dict(v.to_dict()) == v


def test_the_series_a_verdict_reads_back_hold_the_rate():
    """The open-loop verdict passed its simulation but a real run's was judged on TPS: the series the run reads
    back from the store for it (series_names) left the rate out."""
    from tunebench.core.verdict import series_names

    names = ["client.main.tps", "client.main.rate", "client.main.lat.p95", "client.main.qps"]
    assert "client.main.rate" in series_names("main", names) and "client.main.qps" not in series_names("main", names)
