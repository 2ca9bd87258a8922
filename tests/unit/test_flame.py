"""The flame graph's geometry and the differential arithmetic (core/flame.py): widths, zoom, hit test, shares of
each profile's own samples, sampling noise, colours, search, hover text; on synthetic stacks with numbers worked out
by hand, and on a real perf profile of the sandbox (innodb_flush_log_at_trx_commit 1 vs 2)."""

import gzip
import json
from pathlib import Path

import pytest

from tunebench.core.flame import (
    build,
    change,
    colour_scale,
    describe,
    diff_colour,
    focus_path,
    frame_at,
    hidden_on,
    layout,
    matched,
    noise,
    profiled_steps,
    search_text,
)

# A: 100 samples; B: 200. In B `fsync` is gone and `net` is new; `compute` grows from 60 % to 75 % of the CPU
A = {"main;work;compute": 60, "main;work;fsync": 30, "main;idle": 10}
B = {"main;work;compute": 150, "main;idle": 40, "main;net": 10}
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "trx_commit_1_vs_2.json.gz"


def boxes(frames):
    return {f.path: (f.depth, round(f.x, 6), round(f.w, 6)) for f in frames}


def test_widths_from_b_leave_out_what_b_does_not_have():
    tree = build(B, A)
    assert (tree.total_a, tree.total_b, tree.differential) == (100, 200, True)
    assert boxes(layout(tree, side="b")) == {
        (): (0, 0.0, 1.0), ("main",): (1, 0.0, 1.0),
        ("main", "idle"): (2, 0.0, 0.2), ("main", "net"): (2, 0.2, 0.05), ("main", "work"): (2, 0.25, 0.75),
        ("main", "work", "compute"): (3, 0.25, 0.75)}


def test_widths_from_a_draw_the_frames_gone_in_b():
    tree = build(B, A)
    assert boxes(layout(tree, side="a")) == {
        (): (0, 0.0, 1.0), ("main",): (1, 0.0, 1.0),
        ("main", "idle"): (2, 0.0, 0.1), ("main", "work"): (2, 0.1, 0.9),
        ("main", "work", "compute"): (3, 0.1, 0.6), ("main", "work", "fsync"): (3, 0.7, 0.3)}
    assert hidden_on(tree, "b") == (1, 30)  # fsync: 30 of A's samples not drawn at B's widths
    assert hidden_on(tree, "a") == (1, 10)  # net


def test_zoom_spans_the_frame_over_the_full_width_its_callers_too():
    tree = build(B, A)
    frames = layout(tree, ("main", "work"), side="a")
    assert boxes(frames) == {(): (0, 0.0, 1.0), ("main",): (1, 0.0, 1.0), ("main", "work"): (2, 0.0, 1.0),
                             ("main", "work", "compute"): (3, 0.0, 0.666667),
                             ("main", "work", "fsync"): (3, 0.666667, 0.333333)}
    assert [f.above for f in frames[:3]] == [True, True, False]
    # zoomed into a frame B does not have, at B's widths: the nearest caller B has
    assert focus_path(tree, ("main", "work", "fsync"), "b") == ("main", "work")
    assert focus_path(tree, ("nowhere",), "b") == ()


def test_narrow_frames_are_left_out_with_their_callees():
    frames = layout(build(B, A), side="b", min_w=0.1)
    assert ("main", "net") not in boxes(frames)
    assert ("main", "work") in boxes(frames)


def test_frame_at():
    frames = layout(build(B, A), side="b")
    assert frame_at(frames, 0.3, 2).path == ("main", "work")
    assert frame_at(frames, 0.22, 2).path == ("main", "net")
    assert frame_at(frames, 0.3, 3).path == ("main", "work", "compute")
    assert frame_at(frames, 0.1, 3) is None  # nothing above idle
    assert frame_at(frames, 0.5, 0).path == ()


def test_change_is_of_each_profiles_own_share():
    """B has twice A's samples: compute's 60 -> 150 samples is 60 % -> 75 %, +15 points, not +90 samples."""
    tree = build(B, A)
    assert change(tree, 60, 150) == pytest.approx(0.15)
    assert change(tree, 30, 0) == pytest.approx(-0.30)
    assert change(tree, 100, 200) == 0.0  # the root: 100 % on both sides
    # noise: 2 standard errors of the difference of two proportions (pooled p = 210/300)
    assert noise(tree, 60, 150) == pytest.approx(2 * (0.7 * 0.3 * (1 / 100 + 1 / 200)) ** 0.5)
    assert colour_scale(tree) == pytest.approx(0.30)


def test_a_change_within_sampling_noise_is_no_change():
    tree = build({"x;y": 52, "x;z": 48}, {"x;y": 50, "x;z": 50})  # 50 % -> 52 % of 100 samples each: noise
    assert change(tree, 50, 52) == 0.0
    assert colour_scale(tree) == 0.0
    big = build({"x;y": 5200, "x;z": 4800}, {"x;y": 5000, "x;z": 5000})  # the same shares over 10,000 samples
    assert change(big, 5000, 5200) == pytest.approx(0.02)


def test_colour_sign_and_scale():
    assert diff_colour(0.15, 0.30) == (255, 175, 175)  # half-way to full red
    assert diff_colour(0.30, 0.30) == (255, 95, 95)
    assert diff_colour(0.90, 0.30) == (255, 95, 95)  # saturates
    assert diff_colour(-0.30, 0.30) == (95, 155, 255)  # blue: less of the CPU in B
    assert diff_colour(0.0, 0.30) == (255, 255, 255)
    assert diff_colour(0.0, 0.0) == (255, 255, 255)


def test_search_counts_a_frame_once_and_says_its_share():
    tree = build(B, A)
    assert matched(tree, "FSYNC", "a") == 30 and matched(tree, "fsync", "b") == 0
    # main matches "m", and so does compute under it: counted once, in main
    assert matched(tree, "m", "a") == 100
    assert matched(tree, "", "a") == 0
    assert search_text(tree, "work") == "'work': A 90.0 % → B 75.0 % of the samples (-15.0 points)"
    assert search_text(build(B), "work") == "'work': 75.0 % of the samples (150)"


def test_hover_text():
    tree = build(B, A)
    frames = {f.path: f for f in layout(tree, side="a")}
    assert describe(tree, frames[("main", "work", "compute")]) == (
        "compute\nA 60.0 % → B 75.0 % of all samples (+15.0 points)\nsamples: A 60 of 100, B 150 of 200\n"
        "of its caller's: A 66.7 %, B 100.0 %")
    assert describe(tree, frames[("main", "work", "fsync")], "a").endswith("only in A (drawn from A's widths)")
    assert describe(tree, frames[("main", "idle")]).endswith("of its caller's: A 10.0 %, B 20.0 %")
    one = build(B)
    single = {f.path: f for f in layout(one)}
    assert describe(one, single[("main", "work", "compute")]) == \
        "compute\n150 samples, 75.0 % of all, 100.0 % of its caller's"
    assert describe(one, single[()]) == "all\n200 samples"
    same = build({"x;y": 52, "x;z": 48}, {"x;y": 50, "x;z": 50})
    y = next(f for f in layout(same) if f.path == ("x", "y"))
    assert describe(same, y).endswith("the same within sampling noise (±14.1 points)")


def test_bad_counts_are_left_out():
    tree = build({"a;b": 5, "c": -3, "d": 2.5, "e": True, "f": "7", "g": 0})
    assert tree.total_b == 5 and list(tree.root.kids) == ["a"]


def test_profiled_steps():
    session = {"id": 7, "steps": [
        {"idx": 0, "config": {"threads": {"main": 8}, "knobs": {"innodb_flush_log_at_trx_commit": 1}},
         "summary": {"_profile": {"a;b": 3}, "_profile_client": {"c": 1}}},
        {"idx": 1, "config": {"threads": {"main": 8}}, "summary": {"main": {}}},
        {"idx": 2, "config": {"threads": {"main": 16}}, "summary": None}]}
    steps = profiled_steps(session)
    assert [(s.session, s.idx, s.label, s.threads) for s in steps] == \
        [(7, 0, "step 1: main=8; innodb_flush_log_at_trx_commit=1", "main=8")]
    assert profiled_steps(session, "client")[0].folded == {"c": 1}


def test_a_real_profile_shows_the_knobs_effect():
    """perf on the sandbox's mariadbd (stripped: kernel and libc frames named), oltp_write_only at 8 threads:
    with innodb_flush_log_at_trx_commit=2 the commit no longer waits for fdatasync; its share of the server's
    CPU goes from 8 % to nothing, and the frame stays visible at A's widths."""
    steps = json.loads(gzip.decompress(FIXTURE.read_bytes()))["steps"]
    assert [s["knobs"] for s in steps] == [{"innodb_flush_log_at_trx_commit": 1}, {"innodb_flush_log_at_trx_commit": 2}]
    tree = build(steps[1]["_profile"], steps[0]["_profile"])
    assert (tree.total_a, tree.total_b) == (2001, 1964)
    assert (matched(tree, "fdatasync", "a"), matched(tree, "fdatasync", "b")) == (161, 0)
    assert search_text(tree, "trans_commit") == "'trans_commit': A 17.0 % → B 11.3 % of the samples (-5.7 points)"
    commit = next(f for f in layout(tree, side="a") if f.path[-1:] == ("fdatasync",))
    assert change(tree, commit.a, commit.b) < 0 and commit.b == 0
    assert not any(f.path[-1:] == ("fdatasync",) for f in layout(tree, side="b"))
