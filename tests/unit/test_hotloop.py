"""The compiled hot loop's program (load/hotloop.py): every OLTP workload the loop runs becomes the statements and
ops of load/oltp.py's event, in its order; what it cannot run is left to the Python loop. The extension itself is
built here as in CI (gcc and libmariadb-dev are installed by packaging/ensure-system-deps.sh)."""

import math
import os
import shutil

import pytest

from tunebench.load.hotloop import COUNTS_AS, HAVE_HOT, OP_DELETE_INSERT, OP_OTHER, hot_program, loop_mode
from tunebench.load.workload import load_workload

KINDS = ("read", "write", "other")


def test_the_compiled_loop_is_built():
    """setup.py builds the loop as optional (a user without a compiler gets the Python loop) and `pip -q` hides a
    failed build: `make test` sets TUNEBENCH_REQUIRE_HOTLOOP=1, and wherever libmariadb-dev is installed a loop
    that did not build or does not load fails here."""
    if os.environ.get("TUNEBENCH_REQUIRE_HOTLOOP") != "1" and shutil.which("mariadb_config") is None:
        pytest.skip("no libmariadb-dev here and TUNEBENCH_REQUIRE_HOTLOOP is not set: the Python loop runs")
    assert HAVE_HOT, loop_mode()


@pytest.mark.parametrize("name", ["oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only",
                                  "oltp_update_index", "oltp_update_non_index", "oltp_delete"])
def test_each_event_compiles_to_the_same_statements_and_mix(name):
    wl = load_workload(name)
    opts = wl.options({"tables": 3, "table_size": 1000})
    program = wl.program(opts)
    hot = hot_program(program)
    assert hot is not None and hot.ntables == 3
    mix = dict.fromkeys(KINDS, 0)
    for kind, count, counts_as, stmts, stmts2 in hot.ops:
        assert len(stmts) == 3
        if kind == OP_DELETE_INSERT:
            assert [hot.statements[i] for i in stmts] == [f"DELETE FROM sbtest{t} WHERE id=?" for t in (1, 2, 3)]
            assert hot.statements[stmts2[0]].startswith("INSERT INTO sbtest1 (id, k, c, pad)")
            mix["write"] += 2 * count
        else:
            mix[KINDS[counts_as]] += count
        if kind == OP_OTHER:
            assert hot.statements[stmts[0]] in ("BEGIN", "COMMIT")
        else:
            assert [f"sbtest{t} " in hot.statements[i] for t, i in zip((1, 2, 3), stmts, strict=True)] == [True] * 3
    assert mix == program.statement_mix()
    assert len(hot.statements) == 3 * len(program.prepared_keys()) + (2 if program.has_trx else 0)


def test_what_the_loop_cannot_run_stays_in_python(monkeypatch):
    wl = load_workload("oltp_insert")  # its INSERT is a plain-text query, as oltp_insert.lua sends it
    assert hot_program(wl.program(wl.options({"table_size": 1000}))) is None
    ps = load_workload("oltp_point_select")
    monkeypatch.setenv("TUNEBENCH_HOT_LOOP", "0")
    assert hot_program(ps.program(ps.options({"table_size": 1000}))) is None


def test_distribution_options_reach_the_loop():
    wl = load_workload("oltp_point_select")
    hot = hot_program(wl.program(wl.options({"table_size": 5000, "rand_type": "pareto", "rand_pareto_h": 0.3})))
    assert hot is not None
    kind, a, b, iters, power, _pct, _res = hot.dist
    assert (kind, a, b, iters) == (2, 1, 5000, 12) and power == math.log(0.3) / math.log(0.7)
    assert COUNTS_AS["read"] == 0
