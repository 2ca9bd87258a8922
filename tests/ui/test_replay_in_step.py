"""A replay at 10x keeps every plot, the readouts and the sweep's results grid at one data cut-off, the play
head (issue 30, item 6: the staggered one-panel-per-tick redraw cut each plot's data at another moment, ~8 s
apart at 10x, and the results grid showed a step's result the TPS plot had not drawn yet).

Sessions are written with the store's own writer (tunebench.store.synthetic's series, noise and events); the
replay plays in real time, and the checks run on the play head's own signal, in the frame it moved.
"""

import numpy as np
import pytest

from tunebench.core.interval import Event
from tunebench.core.knobs import KnobInfo
from tunebench.core.results import sweep_tables
from tunebench.core.stats import StepSummary
from tunebench.core.sweep import make_plan, parse_spec
from tunebench.run.records import StepResult
from tunebench.run.session import session_config, steps_json
from tunebench.run.spec import sweep_run_spec
from tunebench.store.synthetic import record, series_names

SAMPLE = 1.0  # seconds between two samples of a series (the synthetic session's rate)
JITTER = 0.01  # the synthetic samples' times are the second's end, within ±3 ms
T0 = 1_790_000_000.0

SWEEP = """name = "flush"
workload = "oltp_point_select"
threads = [4, 16]
step_seconds = 16
warmup_seconds = 2
baseline = { innodb_flush_log_at_trx_commit = 1 }

[axes]
innodb_flush_log_at_trx_commit = [1, 2]
"""


def drawn_ends(win) -> dict[str, float]:
    """The last x drawn by each curve of each visible plot ('plot/series')."""
    out = {}
    for p in win.dashboard.panels:
        if not p.plot.isVisible():
            continue
        for name, curve in p.curves.items():
            x = curve.xData
            if x is not None and len(x):
                out[f"{p.title}/{name}"] = float(np.max(x))
    return out


def shown_up_to(tl, name: str, head: float) -> float | None:
    """The series' last recorded value at or before `head` (what its readout says there)."""
    buf = tl.series[name]
    k = int(np.searchsorted(buf.t, head, side="right"))
    return float(buf.t[k - 1]) if k else None


def check_frame(win, head: float, problems: list[str]) -> None:
    """Every plot's every curve ends at the head: not after it, and not more than one sample before it."""
    ends = drawn_ends(win)
    tl = win.replay_timeline
    expected = {f"{p.title}/{n}": shown_up_to(tl, n, head) for p in win.dashboard.panels if p.plot.isVisible()
                for n in p.curves}
    for key, want in expected.items():
        got = ends.get(key)
        if want is None:
            if got is not None:
                problems.append(f"head {head:.2f}: {key} drew {got:.2f}, nothing recorded by then")
            continue
        if got is None or not (head - SAMPLE - JITTER <= got <= head + 1e-9):
            problems.append(f"head {head:.2f}: {key} ends at {got}")
    if ends and max(ends.values()) - min(ends.values()) > SAMPLE + JITTER:
        problems.append(f"head {head:.2f}: plots end between {min(ends.values()):.2f} and {max(ends.values()):.2f}")
    tps = shown_up_to(tl, "client.main.tps", head)
    if tps is not None:
        buf = tl.series["client.main.tps"]
        value = float(buf.v[int(np.searchsorted(buf.t, head, side="right")) - 1])
        if win.dashboard.tps_label.text() != f"TPS {value:,.0f}":
            problems.append(f"head {head:.2f}: readout {win.dashboard.tps_label.text()!r}, TPS {value:,.0f} there")


def play_and_sample(win, qtbot, heads: list[float], check) -> list[str]:
    """Play at 10x from the start; at the first head signal past each of `heads`, `check(head, problems)` in the
    frame the head moved (before anything repaints)."""
    bar = win.replay_bar
    bar.speed.setCurrentText("10x")
    bar.seek(0.0)
    problems: list[str] = []
    sampled: list[float] = []
    bar.play()
    for h in heads:
        with qtbot.waitSignal(bar.moved, timeout=60000, check_params_cb=lambda x, h=h: x >= h) as blocker:
            pass
        head = float(blocker.args[0])
        sampled.append(head)
        # paused while checking: the bar's clock is the wall's (a late tick does not slow it), so a check that
        # took a busy machine a second would otherwise jump the head 10 s, past the end before the next head
        bar.play(False)
        check(head, problems)
        bar.play(True)
    bar.play(False)
    assert len(sampled) == len(heads)
    return problems


def test_a_10x_replay_draws_every_plot_up_to_the_play_head(win, qtbot):
    sid = record(win.store, 80, 40, knob_at=50, steps=3, verdict=True)
    win.open_replay(sid)
    problems = play_and_sample(win, qtbot, [12.0, 27.0, 41.0, 55.0, 66.0, 74.0],
                               lambda head, out: check_frame(win, head, out))
    assert not problems, "\n".join(problems[:12])


def test_markers_are_drawn_on_every_plot_in_the_same_frame(win, qtbot):
    sid = record(win.store, 80, 40, knob_at=50, steps=3, verdict=True)
    win.open_replay(sid)

    def check(head: float, out: list[str]) -> None:
        tl = win.replay_timeline
        want = len([m for m in tl.all_markers if m.shown_at <= head])
        counts = {p.title: len(p.markers) for p in win.dashboard.panels if p.plot.isVisible()}
        if set(counts.values()) != {want}:
            out.append(f"head {head:.2f}: {want} markers by then, drawn {counts}")
        # the flip's verdict is known at its step's end (53.3 s): before that its change's label has none
        verdict = next(m for m in tl.all_markers if m.kind == "verdict")
        knob = next(ln for ln in win.dashboard.panels[0].markers if getattr(ln, "kind", "") == "knob") \
            if head >= 50 else None
        has = knob is not None and " · " in knob.label.format  # the verdict joins its change's label
        if knob is not None and has != (head >= verdict.known):
            out.append(f"head {head:.2f}: knob label {knob.label.format!r}, verdict known at {verdict.known:.2f}")

    problems = play_and_sample(win, qtbot, [10.0, 28.0, 30.0, 51.0, 52.5, 56.0, 70.0], check)
    assert not problems, "\n".join(problems[:12])


def record_sweep(store) -> tuple[int, list[float]]:
    """A finished sweep session as the run writes one, with every series the dashboard shows at 1 Hz (the
    synthetic session's names): two configurations x two concurrencies. Returns its ID and its steps' ends
    (seconds from its start)."""
    knobs = {"innodb_flush_log_at_trx_commit": KnobInfo("innodb_flush_log_at_trx_commit", "int", True, 0, 3,
                                                        current="1")}
    plan = make_plan(parse_spec(SWEEP), knobs, {"innodb_flush_log_at_trx_commit": "1"})
    rng = np.random.default_rng(3)
    names = series_names(40)
    w = store.new_session(target="sandbox", transport="socket", engine="builtin", workload="oltp_point_select",
                          config=session_config(sweep_run_spec(plan.spec), plan), flavor="mariadb", version="10.11",
                          started_at=T0)
    per_step = plan.spec.warmup_seconds + plan.spec.step_seconds
    results, ends = [], []
    t = T0
    for idx in range(len(plan.configs) * plan.spec.steps):
        cfg = plan.configs[idx // plan.spec.steps]
        threads = plan.spec.groups[0].threads[idx % plan.spec.steps]
        tps = 1000.0 * (1 + idx)
        if idx % plan.spec.steps == 0:
            w.add_event(Event(t, "config", f"configuration {cfg.idx + 1}: {cfg.label()}",
                              {"config": cfg.idx, "knobs": dict(cfg.knobs)}))
        sid = w.start_step(idx, t, t, {"threads": {"main": threads}, "config": cfg.idx,
                                       "step": idx % plan.spec.steps, "knobs": dict(cfg.knobs)})
        w.add_event(Event(t, "step_start", f"step {idx + 1}: main={threads}",
                          {"config": cfg.idx, "threads": {"main": threads}, "step": idx}))
        for s in range(per_step):
            values = {n: float(abs(rng.normal(tps if n.endswith((".tps", ".qps")) else 50.0, 3.0))) for n in names}
            values["client.main.threads"] = float(threads)
            w.add_samples(t + s + 1, values)
        w.flush()
        t += per_step
        summary = StepSummary("main", threads, plan.spec.step_seconds, tps, tps * 9, tps, 0.02, 1.0, 1e5 / tps,
                              2e5 / tps, 5.0, 0, 0, tps * 10)
        results.append(StepResult(idx, (summary,), cfg.idx))
        w.end_step(sid, t, {"main": summary.to_dict()})
        w.add_event(Event(t, "step_end", f"step {idx + 1} done"))
        ends.append(t - T0)
    w.finish("completed", {"steps": steps_json(results), **sweep_tables(plan, steps_json(results), {})}, ended_at=t)
    return w.id, ends


def filled_cells(view) -> int:
    g = view.grid
    return sum(1 for i in range(g.rowCount()) for j in range(1, g.columnCount() - 1)
               if (item := g.item(i, j)) is not None and item.text() not in ("", "measuring…"))


@pytest.mark.parametrize("speed", ["10x"])
def test_a_sweep_replay_shows_a_result_only_with_its_step_drawn(win, qtbot, speed):
    sid, ends = record_sweep(win.store)
    win.open_replay(sid)
    view = win.sweep_results

    def check(head: float, out: list[str]) -> None:
        check_frame(win, head, out)
        ended = len([e for e in ends if e <= head])
        if filled_cells(view) != ended:
            out.append(f"head {head:.2f}: {filled_cells(view)} results shown, {ended} steps ended by then")
        tps_end = drawn_ends(win).get("TPS/client.main.tps", 0.0)
        last = max([e for e in ends if e <= head], default=None)
        if last is not None and tps_end < last - JITTER:
            out.append(f"head {head:.2f}: the step ended at {last} is in the grid, TPS drawn to {tps_end:.2f}")

    # around the steps' ends (18, 36, 54 s): just after each, and between
    problems = play_and_sample(win, qtbot, [10.0, 18.5, 27.0, 36.5, 45.0, 54.5, 63.0], check)
    assert not problems, "\n".join(problems[:12])
