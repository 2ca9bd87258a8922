"""Issue 30 item 17: the statements probe on the real servers (MariaDB 10.11, MySQL 9, MariaDB 11.8) under
oltp_read_write on the builtin engine: the busiest digests are the workload's statements, their calls agree with
the server's own Com_ counters, and what the probe switched on is put back."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import SERVERS, run_cli, server_under_test
from tests.integration.test_probes import _amount, _rows

from tunebench.core.statements import texts_of
from tunebench.mysql.target import conn_params
from tunebench.store.repo import Store

pytestmark = pytest.mark.integration

# sysbench's oltp_read_write statements as the servers digest them (MySQL: "EXECUTE " before a prepared one's)
WORKLOAD = ("SELECT `c` FROM `sbtest1` WHERE `id` = ?", "SELECT SUM ( `k` ) FROM `sbtest1` WHERE `id` BETWEEN ? AND ?",
            "UPDATE `sbtest1` SET `k` = `k` + ? WHERE `id` = ?", "DELETE FROM `sbtest1` WHERE `id` = ?",
            "INSERT INTO `sbtest1` ( `id` , `k` , `c` , `pad` ) VALUES (...)")
OFF = ("statement/sql/select", "statement/sql/delete")  # switched off before the run: the probe enables them


def settings(admin):
    return (_rows(admin, "SELECT NAME, ENABLED FROM performance_schema.setup_consumers ORDER BY NAME"),
            _rows(admin, "SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments "
                         "WHERE NAME LIKE 'statement/%%' ORDER BY NAME"))


@pytest.fixture(scope="module", params=SERVERS)
def stmt_run(request, sandbox, kit_sandboxes):
    server = server_under_test(request.param, sandbox, kit_sandboxes)
    admin = conn_params(server.sandbox.target(), "socket")
    found = settings(admin)
    _rows(admin, "UPDATE performance_schema.setup_consumers SET ENABLED='NO' WHERE NAME='statements_digest'")
    _rows(admin, "UPDATE performance_schema.setup_instruments SET ENABLED='NO', TIMED='NO' WHERE NAME IN (%s, %s)", OFF)
    before_settings = settings(admin)
    try:
        # (closed loop: an open loop at 250/s made 35,000-47,000 executes where 20,000 are asked on a quiet machine,
        # but 14,865 on MySQL 9 beside six workers, issue 41: the count asked needs the load's full speed)
        out = run_cli("run", *server.args, "--workload", "oltp_read_write", "--threads", "4", "--step-seconds", "8",
                      "--table-size", "10000", "--probes", "status,statements", "--json")
        after_settings = settings(admin)
    finally:
        _rows(admin, "UPDATE performance_schema.setup_consumers SET ENABLED=%s WHERE NAME=%s",
              (dict(found[0])["statements_digest"], "statements_digest"))
        for name, enabled, timed in found[1]:
            if name in OFF:
                _rows(admin, "UPDATE performance_schema.setup_instruments SET ENABLED=%s, TIMED=%s WHERE NAME=%s",
                      (enabled, timed, name))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    store = Store(Path(os.environ["TUNEBENCH_HOME"]) / "sessions.sqlite")
    try:
        session = store.get_session(result["session_id"])
        series = store.series(result["session_id"])
    finally:
        store.close()
    return {"server": server, "result": result, "session": session, "series": series,
            "settings": (before_settings, after_settings)}


def _span(series, *names):
    """Where every one of the series has samples: the statements probe and the status probe read at their own
    moments, and `_amount` weighs each sample by its overlap with the span."""
    return max(float(series[n].t[0]) for n in names), min(float(series[n].t[-1]) for n in names)


def test_the_busiest_statements_are_the_workloads_and_agree_with_the_servers_counters(stmt_run):
    series = stmt_run["series"]
    detail = stmt_run["result"]["probes"]["statements"]
    assert detail["ok"], detail
    texts = texts_of(stmt_run["session"]["events"])
    # the server's own counters (the status probe's), over the seconds both probes cover; Com_select also counts the
    # probes' own SELECTs: a few a second against thousands
    lo, hi = _span(series, "stmt.total.calls", "server.com_select")
    amount = {d: _amount(series, f"stmt.{d}.calls", lo, hi) for d in texts}
    com_select, com_execute = (_amount(series, f"server.{n}", lo, hi) for n in ("com_select", "com_stmt_execute"))
    assert com_execute > 20_000, com_execute  # the load ran
    if stmt_run["server"].flavor == "mysql":
        # each of the workload's statements has its own digest, as a prepared statement's EXECUTE
        by_text = {texts[d].removeprefix("EXECUTE "): n for d, n in amount.items()}
        for text in WORKLOAD:
            assert by_text.get(text, 0) > 1000, (text, sorted(by_text))
        selects = sum(n for d, n in amount.items() if texts[d].startswith("EXECUTE SELECT"))
        assert selects / com_select == pytest.approx(1.0, abs=0.03), (selects, com_select)
        executes = sum(n for d, n in amount.items() if texts[d].startswith("EXECUTE "))
        assert executes / com_execute == pytest.approx(1.0, abs=0.03), (executes, com_execute)
    else:
        # MariaDB digests no prepared statement: they are one bucket, counted as the server counts them
        assert "no digest on MariaDB" in detail["detail"]
        prepared = _amount(series, "stmt.prepared.calls", lo, hi)
        assert prepared / com_execute == pytest.approx(1.0, abs=0.03), (prepared, com_execute)
        assert not any(t in WORKLOAD for t in texts.values())
    # every statement counts once in the total: the digests, the rest, the prepared bucket, each sample over the time
    # since the probe's read before it (a digest's series starts when it enters the top 10: beside other load the
    # ranking moves, and its first sample counted as one second lost 1.3 % when reads were 2 s apart)
    calls = [n for n in series if n.startswith("stmt.") and n.endswith(".calls")]
    grid = np.unique(np.concatenate([np.asarray(series[n].t, float) for n in calls]))
    parts = sum(_amount(series, n, lo, hi, grid=grid) for n in calls if n != "stmt.total.calls")
    ids = {n.split(".")[1] for n in series if n.startswith("stmt.") and n.endswith(".calls")}
    assert ids - {"other", "prepared", "total"} == set(texts)  # each digest's text, said once
    assert ("prepared" in ids) == (stmt_run["server"].flavor == "mariadb")
    assert parts / _amount(series, "stmt.total.calls", lo, hi, grid=grid) == pytest.approx(1.0, abs=0.01)


def test_latency_and_rows_examined_per_call_are_the_workloads(stmt_run):
    series = stmt_run["series"]
    texts = texts_of(stmt_run["session"]["events"])
    if stmt_run["server"].flavor != "mysql":
        lat = series["stmt.prepared.lat_us"].v
        assert 1 < float(lat.mean()) < 100_000
        return
    rows = {texts[d].removeprefix("EXECUTE "): series[f"stmt.{d}.rows_examined"].v for d in texts
            if f"stmt.{d}.rows_examined" in series}
    # a point select examines one row; SUM over a range of 100 ids examines 100
    assert float(rows[WORKLOAD[0]].mean()) == pytest.approx(1.0, abs=0.01)
    assert float(rows[WORKLOAD[1]].mean()) == pytest.approx(100.0, abs=1.0)


def test_what_the_probe_switched_on_is_put_back(stmt_run):
    before, after = stmt_run["settings"]
    assert before == after
    assert dict(before[0])["statements_digest"] == "NO"
    detail = stmt_run["result"]["probes"]["statements"]["detail"]
    assert "statement instruments enabled for the session" in detail
