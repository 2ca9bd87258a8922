"""SweepSpec.to_toml writes every field: parse(to_toml(spec)) == spec for every recipe and the odd cases."""

import dataclasses

import pytest

from tunebench.core.sweep import parse_spec
from tunebench.load.recipes import load_spec
from tunebench.paths import workloads_dir

RECIPES = sorted((workloads_dir() / "recipes").glob("*.toml"))


def test_there_are_recipes():
    assert len(RECIPES) >= 7


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_every_recipe_round_trips(path):
    spec = load_spec(path)
    text = spec.to_toml()
    again = parse_spec(text, spec.source)
    assert again == spec
    assert again.to_toml() == text
    assert again.fingerprint() == spec.fingerprint()


def test_every_field_round_trips():
    text = '''
name = "odd \\"one\\""
description = """two lines,
a tab\there and a backslash \\\\ """
workload = "oltp_read_write"
threads = [1, 2, 4]
step_seconds = 7
warmup_seconds = 0
cooldown_seconds = 3
repeats = 2
order = "random"
seed = 42
reset_data = true
engine = "sysbench"
transport = "tcp"
schema = "other"
optional_axes = ["innodb_thread_concurrency"]
baseline = { innodb_flush_log_at_trx_commit = 1, transport = "socket" }

[options]
tables = 2
table_size = 1000
skip_trx = false
ratio = 0.25

[axes]
innodb_flush_log_at_trx_commit = [1, 2]
innodb_thread_concurrency = [0, 64]
innodb_adaptive_hash_index = ["ON", "OFF"]
transport = ["socket", "tcp"]
cpus = ["all", "0-1"]

[[group]]
name = "readers"
workload = "oltp_point_select"
threads = [8]
options = { table_size = 5000 }
'''
    spec = parse_spec(text, "/tmp/odd.toml")
    assert spec.groups[1].options == {"tables": 2, "table_size": 5000, "skip_trx": False, "ratio": 0.25}
    assert parse_spec(spec.to_toml(), spec.source) == spec
    # groups only: no top-level workload, each group's options in full
    solo = dataclasses.replace(spec, groups=(dataclasses.replace(spec.groups[1], options={"tables": 1}),
                                             dataclasses.replace(spec.groups[0], name="main", options={})))
    assert parse_spec(solo.to_toml(), solo.source) == solo


def test_phase_plans_parse_round_trip_and_refuse_what_does_not_fit():
    import re

    from tunebench.core.errors import ConfigError
    from tunebench.load.recipes import load_spec
    from tunebench.run.spec import sweep_run_spec

    spec = load_spec("iibench-phases")
    assert [(p.name, p.action) for p in spec.phases] == [("l.i0", None), ("l.x", "create_indexes"), ("l.i1", None),
                                                         ("qr100", None), ("qp100", None)]
    assert parse_spec(spec.to_toml(), spec.source) == spec
    run = sweep_run_spec(spec)
    run.validate()
    assert run.action_family("create_indexes").name == "load"
    head = 'name = "p"\nstep_seconds = 5\n[[group]]\nname = "a"\nworkload = "iibench"\n'
    cases = [
        ("threads = [1, 0]\n", "0, a group idle in a step, is for [[phase]] plans"),
        ('threads = [1, 0]\n[[phase]]\nname = "x"\n', "1 [[phase]] tables for 2 steps"),
        ('threads = [1, 1]\n[[phase]]\nname = "x"\n[[phase]]\nname = "y"\naction = "create_indexes"\n',
         "phase y runs the action create_indexes and no load: group a has threads there"),
        ('threads = [1, 0]\n[[phase]]\nname = "x"\n[[phase]]\nname = "y"\n', "phase y: every group has 0 threads"),
        ('threads = [1]\n[[phase]]\nname = "x;y"\n', "[[phase]] name must be up to 32 letters"),
        ('threads = [1, 1]\n[[phase]]\nname = "x"\n[[phase]]\nname = "x"\n', "phase names must be unique"),
    ]
    for body, message in cases:
        with pytest.raises(ConfigError, match=re.escape(message)):
            parse_spec(head + body, "p.toml")
    oltp = parse_spec('name = "p"\nworkload = "oltp_point_select"\nthreads = [0]\n[[phase]]\nname = "x"\n'
                      'action = "create_indexes"\n', "p.toml")
    with pytest.raises(ConfigError, match="no client group's family has the action 'create_indexes'"):
        sweep_run_spec(oltp).validate()
