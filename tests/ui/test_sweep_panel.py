"""The sweep panel edits the CLI's own SweepSpec: a recipe loaded and saved is the spec `tunebench sweep` runs,
field for field, and the plan it shows is `tunebench sweep --plan` (same planner, same target)."""

import dataclasses
import json

import pytest
from tests.conftest import run_cli

from tunebench.core.sweep import parse_spec
from tunebench.load.recipes import load_spec
from tunebench.paths import workloads_dir
from tunebench.ui.sweep_panel import SweepPanel

RECIPES = sorted((workloads_dir() / "recipes").glob("*.toml"))


@pytest.fixture
def panel(qtbot):
    p = SweepPanel()
    qtbot.addWidget(p)
    return p


def load_recipe(panel, name):
    panel.load_recipe(name)


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_a_recipe_saved_from_the_panel_is_the_cli_spec(panel, path, tmp_path):
    cli_spec = load_spec(path.stem)  # what `tunebench sweep NAME` loads
    load_recipe(panel, path.stem)
    assert panel.current_spec() == cli_spec
    out = tmp_path / f"{path.stem}.toml"
    panel.save(str(out))
    assert parse_spec(out.read_text(), cli_spec.source) == cli_spec


def test_editing_a_field_keeps_every_other_field(panel, tmp_path):
    load_recipe(panel, "spin-delay-concurrency")
    cli_spec = load_spec("spin-delay-concurrency")
    assert cli_spec.baseline and cli_spec.optional and cli_spec.groups[0].options  # what the old panel dropped
    panel.step_seconds.setValue(10)
    panel.threads.setText("8,32")
    want = dataclasses.replace(cli_spec, step_seconds=10,
                               groups=(dataclasses.replace(cli_spec.groups[0], threads=(8, 32)),))
    assert panel.current_spec() == want
    out = tmp_path / "edited.toml"
    panel.save(str(out))
    assert parse_spec(out.read_text(), cli_spec.source) == want
    # a field that does not make a spec: said, and nothing saved or run from it
    panel.threads.setText("8,x")
    assert panel.error and "⚠" in panel.summary.text()
    with pytest.raises(Exception, match="concurrency steps"):
        panel.save(str(out))
    panel.threads.setText("8,32")
    assert panel.error is None and panel.current_spec() == want


def test_a_phase_plan_edited_in_the_panel_keeps_its_phases(panel, tmp_path):
    """The insert benchmark's phases loaded, then any field edited: the panel said "concurrency steps must be
    integers >= 1" (the first group is idle, 0, in four of the five phases) and nothing could run."""
    load_recipe(panel, "iibench-phases")
    cli_spec = load_spec("iibench-phases")
    panel.step_seconds.setValue(20)
    want = dataclasses.replace(cli_spec, step_seconds=20)
    assert panel.error is None and panel.current_spec() == want
    assert [p.name for p in want.phases] == ["l.i0", "l.x", "l.i1", "qr100", "qp100"]
    panel.threads.setText("2,0,0,0,0")
    want = dataclasses.replace(want, groups=(dataclasses.replace(cli_spec.groups[0], threads=(2, 0, 0, 0, 0)),
                                             *cli_spec.groups[1:]))
    assert panel.error is None and panel.current_spec() == want
    out = tmp_path / "phases.toml"
    panel.save(str(out))
    assert parse_spec(out.read_text(), cli_spec.source) == want
    # what the phases do not allow is still refused: the load phase with nobody loading
    panel.threads.setText("0,0,0,0,0")
    assert panel.error and "l.i0" in panel.error
    # and outside a phase plan a 0 is refused as before
    load_recipe(panel, "spin-delay-concurrency")
    panel.threads.setText("0,4")
    assert panel.error and "integers >= 1" in panel.error


def test_removing_an_axis_takes_it_out_of_the_baseline(panel):
    load_recipe(panel, "spin-delay-concurrency")
    row = next(r for r in range(panel.grid.rowCount()) if panel.grid.item(r, 0).text() == "innodb_spin_wait_delay")
    panel.grid.setCurrentCell(row, 0)
    panel._on_remove_axis()
    spec = panel.current_spec()
    assert "innodb_spin_wait_delay" not in spec.axes and not spec.baseline
    assert spec.optional == ("innodb_thread_concurrency",)


@pytest.mark.integration
@pytest.mark.parametrize("recipe", ["spin-delay-concurrency", "trx-commit-doublewrite"])
def test_the_panel_plan_is_the_cli_plan(window, qtbot, recipe):
    sweep = window.sweep
    load_recipe(sweep, recipe)
    qtbot.waitUntil(lambda: sweep.plan is not None, timeout=30000)
    cli_json = run_cli("sweep", recipe, "--plan", "--json")
    assert cli_json.returncode == 0, cli_json.stderr[-2000:]
    cli = json.loads(cli_json.stdout)
    ours = sweep.plan.to_dict()
    assert len(ours["configs"]) == len(cli["configs"]) and ours["restarts"] == cli["restarts"]
    assert [c["label"] for c in ours["configs"]] == [c["label"] for c in cli["configs"]]
    assert ours["baseline"] == cli["baseline"]
    # the words on the panel are the CLI's words, line for line
    cli_text = run_cli("sweep", recipe, "--plan")
    assert cli_text.returncode == 0
    shown = sweep.summary.text().splitlines()
    assert shown[:len(cli_text.stdout.splitlines())] == cli_text.stdout.splitlines()
    if recipe == "spin-delay-concurrency":  # MariaDB 10.6+ has no innodb_thread_concurrency: left out, said
        assert "no innodb_thread_concurrency" in sweep.summary.text()
        assert "no innodb_thread_concurrency" in cli_text.stderr


def test_an_option_axis_is_a_workload_option_not_a_variable(panel):
    """option.NAME is not looked up on the server (it asked for facts of a variable "option.rows_per_commit")."""
    asked = []
    panel.wants_facts.connect(asked.append)
    panel.load_recipe("iibench-buffer-pool")
    panel.add_axis("option.rows_per_commit", "100, 1000")
    assert all("option.rows_per_commit" not in names for names in asked)
    row = next(r for r in range(panel.grid.rowCount()) if panel.grid.item(r, 0).text() == "option.rows_per_commit")
    assert panel.grid.item(row, 2).text() == "workload option"
    spec = panel.current_spec()
    assert spec.axes["option.rows_per_commit"] == (100, 1000) and "option.rows_per_commit" not in spec.knob_axes


def test_a_variable_the_server_sets_itself_is_shown_read_only(panel):
    """`version` was offered as a restart axis; it is no knob at all (the CLI's plan refuses it too)."""
    from tunebench.core.knobs import KnobInfo

    panel.load_recipe("iibench-buffer-pool")
    panel.add_axis("version", "10.11.6-MariaDB, 5.7.0")
    panel.add_facts({"version": KnobInfo("version", "string", False, current="10.11.6-MariaDB", fixed=True)})
    row = next(r for r in range(panel.grid.rowCount()) if panel.grid.item(r, 0).text() == "version")
    assert panel.grid.item(row, 2).text() == "read-only"


def test_the_cpu_profile_tick_reaches_the_sweeps_run_request(win, monkeypatch):
    """Issue 30 item 16: ticked, a sweep run from the window recorded no profile (the tick was read for a plain
    run only). The Sweep tab has the tick too, one setting with the Workload tab's; either way the sweep's run
    asks for the profile probe, and unticked for the default probes only (perf costs CPU)."""
    from tunebench.core.probe import DEFAULT_PROBES
    from tunebench.mysql.target import Target

    sent = []
    monkeypatch.setattr(win.targets, "current_target", lambda: Target("lab", host="127.0.0.1", port=3306, user="u"))
    monkeypatch.setattr(win.controller, "start_run", lambda request: sent.append(request) or True)
    monkeypatch.setattr(win.controller, "running", lambda: False)
    win.sweep.load_recipe("trx-commit-doublewrite")
    win.run_sweep()
    assert sent[-1].sweep is not None and sent[-1].spec.probes is None
    win.workload.profile.setChecked(True)  # ticked in the Workload tab (the one tick there was), then the sweep run
    win.run_sweep()
    assert sent[-1].sweep is not None and sent[-1].spec.probes == (*DEFAULT_PROBES, "profile")
    assert win.sweep.profile.isChecked()  # one setting, seen from both tabs
    win.sweep.profile.setChecked(False)
    assert not win.workload.profile.isChecked()
    win.run_sweep()
    assert sent[-1].spec.probes is None
    win.sweep.profile.setChecked(True)
    assert win.workload.profile.isChecked()
    win.run_sweep()
    assert sent[-1].spec.probes == (*DEFAULT_PROBES, "profile")
    assert len(sent) == 4


@pytest.mark.integration
def test_a_sweep_run_from_the_window_with_the_cpu_profile_ticked_profiles_each_step(window, qtbot):
    """Issue 30 item 16, the user's way: CPU profile ticked, a sweep run from the window (2 configurations x 1
    step on the real sandbox); every step keeps the server's stacks, as `sessions profile` lists them."""
    from tests.integration.test_profile import assert_every_step_profiled

    window.workload.profile.setChecked(True)
    window.sweep.load_toml('name = "profiled"\nworkload = "oltp_read_only"\nthreads = [4]\nstep_seconds = 4\n'
                           'warmup_seconds = 0\n[options]\ntable_size = 10000\n[axes]\n'
                           'innodb_spin_wait_delay = [4, 50]\n', "profiled.toml")
    notes: list[str] = []
    window.controller.message.connect(notes.append)
    with qtbot.waitSignal(window.run_finished, timeout=180000) as finished:
        window.run_sweep()
    outcome = finished.args[0]
    assert outcome.status == "completed", outcome.error
    assert_every_step_profiled(outcome.session_id, "\n".join(notes), run_cli)


def test_an_error_in_the_panel_names_the_sweep_not_a_widget(qtbot):
    """Issue 46 item 5: "<sweep panel>: invalid server variable name ..." named a widget; the panel's own sweep is
    "this sweep" (a loaded file, its path), and align without a server axis is one line too."""
    from tunebench.ui.sweep_panel import SweepPanel

    panel = SweepPanel()
    qtbot.addWidget(panel)
    panel.load_toml('workload = "oltp_point_select"\nthreads = [1]\n[axes]\ninnodb_spin_wait_delay = [4]\n')
    panel.align.setChecked(True)
    text = panel.summary.text()
    assert "<" not in text and "this sweep: align = true aligns the servers of a server axis" in text, text
