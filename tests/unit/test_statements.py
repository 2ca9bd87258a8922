"""The statements probe against a stand-in digest table: rates, the top digests and the buckets, gaps (never a
negative or partial rate) where someone truncated the table, the settings it changes journaled and put back; and
what a span of its series says per statement (the panel's and the diff's numbers)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import numpy as np
import pytest

from tunebench.core.probe import ProbeUnavailable, parse_probe_list
from tunebench.core.statements import digest_id, statements, texts_of
from tunebench.mysql.connect import ServerInfo
from tunebench.mysql.probes.settings import undo_probe_setting
from tunebench.mysql.probes.statements import StatementsProbe
from unit.fake_mysql import MultiStatements

PS = 1_000_000  # picoseconds in a µs


def info(flavor: str = "mysql", pfs: bool = True) -> ServerInfo:
    version = "9.7.4" if flavor == "mysql" else "10.11.19"
    return ServerInfo(flavor=flavor, version=version, version_full=version, version_comment="",
                      performance_schema=pfs, variables={"performance_schema_digests_size": "10000"})


class Digests:
    """events_statements_summary_by_digest, setup_consumers, setup_instruments and the global summary."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str | None, str | None], list] = {}
        self.execute = [0, 0, 0]
        self.consumers = {"global_instrumentation": "YES", "statements_digest": "NO", "events_waits_current": "NO"}
        self.instruments = {"statement/sql/select": ("YES", "YES"), "statement/sql/insert": ("NO", "NO"),
                            "statement/com/Execute": ("YES", "NO"), "wait/io/file/x": ("NO", "NO")}
        self.log: list[str] = []
        self.fail_on: str | None = None
        self.clock: Callable[[], float] = time.time  # SYSDATE(6)

    def run(self, digest: str | None, calls: int, us_per_call: float, rows_per_call: float = 1.0,
            schema: str | None = "tb", first_seen: str = "2025-01-01 00:00:00", text: str = "") -> None:
        row = self.rows.setdefault((schema, digest), [0, 0, 0, first_seen, text or f"SELECT {digest}"])
        row[0] += calls
        row[1] += int(calls * us_per_call * PS)
        row[2] += int(calls * rows_per_call)

    def truncate(self) -> None:
        self.rows.clear()

    def connect(self) -> Conn:
        return Conn(self)


class Conn:
    def __init__(self, server: Digests):
        self.server = server

    def cursor(self) -> Cursor:
        return Cursor(self.server)

    def close(self) -> None:
        pass


class Cursor(MultiStatements):
    def __init__(self, server: Digests):
        self.s = server
        self.rows: list[tuple] = []
        self.with_rows = True

    def server_clock(self) -> float:
        return self.s.clock()

    def one(self, sql: str, args: tuple = ()) -> None:
        s = self.s
        s.log.append(sql)
        if s.fail_on and s.fail_on in sql:
            import mysql.connector
            raise mysql.connector.ProgrammingError(msg="Unknown column 'FIRST_SEEN'", errno=1054)
        if "FROM performance_schema.events_statements_summary_by_digest" in sql and "WHERE DIGEST IN" in sql:
            self.rows = [(d, r[4], sch) for (sch, d), r in s.rows.items() if d in args]
        elif "FROM performance_schema.events_statements_summary_by_digest" in sql:
            self.rows = [(sch, d, *r[:4]) for (sch, d), r in s.rows.items()]
        elif "events_statements_summary_global_by_event_name" in sql:
            self.rows = [tuple(s.execute)]
        elif sql.startswith("SELECT NAME, ENABLED FROM performance_schema.setup_consumers"):
            self.rows = [(n, e) for n, e in s.consumers.items() if n in args]
        elif sql.startswith("SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments"):
            self.rows = [(n, *v) for n, v in s.instruments.items() if n.startswith("statement/")]
        elif sql.startswith("UPDATE performance_schema.setup_consumers"):
            if "ENABLED='YES'" in sql:
                s.consumers[args[0]] = "YES"
            else:
                s.consumers[args[1]] = args[0]
            self.rows, self.with_rows = [], False
        elif sql.startswith("UPDATE performance_schema.setup_instruments"):
            if "ENABLED='YES'" in sql:
                for n in args:
                    s.instruments[n] = ("YES", "YES")
            else:
                for n in args[2:]:
                    s.instruments[n] = (args[0], args[1])
            self.rows, self.with_rows = [], False
        else:
            raise AssertionError(f"unexpected SQL {sql}")

    def fetchall(self) -> list[tuple]:
        return self.rows

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def opened(server: Digests, top: int = 2, flavor: str = "mysql") -> tuple[StatementsProbe, Clock]:
    probe = StatementsProbe(server.connect, info(flavor), top=top)
    clock = Clock()
    probe.clock = server.clock = clock  # the reads' time here, their server's instants there
    probe.open()
    assert not probe.read().rates  # the first read is the base
    return probe, clock


D1, D2, D3 = "a1" * 32, "b2" * 32, "c3" * 32


def test_rates_latency_rows_and_the_buckets_add_up():
    s = Digests()
    for d in (D1, D2, D3):
        s.run(d, 1, 10)
    probe, clock = opened(s, top=2)
    s.run(D1, 1000, 50, 1)  # 50 ms in all
    s.run(D2, 200, 500, 100)  # 100 ms
    s.run(D3, 3000, 5, 0)  # 15 ms: third by time, in other
    s.run(D2, 100, 300, 10, schema="other_schema")  # the same digest in another schema counts with it
    clock.t += 2.0
    r = probe.read()
    d1, d2 = digest_id(D1), digest_id(D2)
    assert r.rates[f"stmt.{d1}.calls"] == pytest.approx(500.0)
    assert r.gauges[f"stmt.{d1}.lat_us"] == pytest.approx(50.0)
    assert r.rates[f"stmt.{d2}.calls"] == pytest.approx(150.0)
    assert r.gauges[f"stmt.{d2}.lat_us"] == pytest.approx((200 * 500 + 100 * 300) / 300)
    assert r.gauges[f"stmt.{d2}.rows_examined"] == pytest.approx((200 * 100 + 100 * 10) / 300)
    assert r.rates["stmt.other.calls"] == pytest.approx(1500.0)
    assert r.gauges["stmt.other.lat_us"] == pytest.approx(5.0)
    assert r.rates["stmt.total.calls"] == pytest.approx(500 + 150 + 1500)
    assert f"stmt.{digest_id(D3)}.calls" not in r.rates
    # each tracked digest's text, once
    texts = [e for e in r.events if e.kind == "statement"]
    assert sorted(e.data["digest"] for e in texts) == sorted([d1, d2])
    assert {e.data["text"] for e in texts} == {f"SELECT {D1}", f"SELECT {D2}"}
    clock.t += 1.0
    r = probe.read()
    assert r.rates[f"stmt.{d1}.calls"] == 0.0 and f"stmt.{d1}.lat_us" not in r.gauges  # idle: 0 calls, no latency
    assert not [e for e in r.events if e.kind == "statement"]


def test_truncate_by_someone_else_is_a_gap_never_a_negative_or_partial_rate():
    s = Digests()
    s.run(D1, 1, 10)
    s.run(D2, 1, 10)
    probe, clock = opened(s, top=1)
    s.run(D1, 1000, 50)
    s.run(D2, 10, 5)
    clock.t += 1.0
    assert probe.read().rates[f"stmt.{digest_id(D1)}.calls"] == 1000.0
    s.truncate()
    s.run(D1, 300, 50, first_seen="2025-01-01 00:00:09")  # re-created: 300 since the TRUNCATE, not in 1 s
    clock.t += 1.0
    r = probe.read()
    assert not any(k.startswith((f"stmt.{digest_id(D1)}", "stmt.total", "stmt.other")) for k in r.rates), r.rates
    assert all(v >= 0 for v in r.rates.values())
    s.run(D1, 700, 50, first_seen="2025-01-01 00:00:09")
    clock.t += 1.0
    r = probe.read()  # resumes from the new base
    assert r.rates[f"stmt.{digest_id(D1)}.calls"] == 700.0 and r.rates["stmt.total.calls"] == 700.0


def test_a_counter_that_went_down_with_the_same_first_seen_is_a_gap():
    s = Digests()
    s.run(D1, 100, 10)
    probe, clock = opened(s, top=1)
    s.rows[("tb", D1)][0] = 5  # a restart within the same second as FIRST_SEEN
    clock.t += 1.0
    assert not any(k.startswith(f"stmt.{digest_id(D1)}") for k in probe.read().rates)


def test_a_full_digest_table_counts_in_other_and_is_said_once():
    s = Digests()
    s.run(D1, 1, 10)
    s.run(None, 0, 0, schema=None)
    probe, clock = opened(s, top=1)
    s.run(D1, 100, 10)
    s.run(None, 40, 20, schema=None)
    clock.t += 1.0
    r = probe.read()
    assert r.rates["stmt.other.calls"] == 40.0 and r.rates["stmt.total.calls"] == 140.0
    assert [e.kind for e in r.events].count("note") == 1
    s.run(None, 40, 20, schema=None)
    clock.t += 1.0
    assert not [e for e in probe.read().events if e.kind == "note"]


def test_mariadb_prepared_statements_are_a_bucket_of_their_own():
    s = Digests()
    s.run(D1, 1, 10)
    probe, clock = opened(s, top=1, flavor="mariadb")
    s.run(D1, 10, 10)
    s.execute = [5000, 5000 * 80 * PS, 5000 * 3]
    clock.t += 1.0
    r = probe.read()
    assert r.rates["stmt.prepared.calls"] == 5000.0 and r.gauges["stmt.prepared.lat_us"] == pytest.approx(80.0)
    assert r.rates["stmt.total.calls"] == 5010.0 and r.rates["stmt.other.calls"] == 0.0


def test_consumers_and_instruments_journaled_set_again_after_a_restart_and_put_back():
    class Journal:
        def __init__(self):
            self.rows, self.settled = [], []

        def add(self, name, original):
            self.rows.append((name, original))
            return len(self.rows)

        def settle(self, row, state="restored"):
            self.settled.append((row, state))

    s = Digests()
    before = (dict(s.consumers), dict(s.instruments))
    journal = Journal()
    probe = StatementsProbe(s.connect, info(), journal=journal)
    assert "2 statement instruments enabled" in probe.open()
    assert s.consumers["statements_digest"] == "YES"
    assert s.instruments["statement/sql/insert"] == ("YES", "YES")
    assert s.instruments["wait/io/file/x"] == ("NO", "NO")  # not ours
    names = [n for n, _ in journal.rows]
    assert names == ["pfs_consumer:statements_digest", "pfs_instruments"]
    # a restart puts the server's settings back to its my.cnf: set again
    s.consumers["statements_digest"] = "NO"
    s.instruments["statement/sql/insert"] = ("NO", "NO")
    probe.reapply()
    assert s.consumers["statements_digest"] == "YES" and s.instruments["statement/sql/insert"] == ("YES", "YES")
    # a killed run: the journal's rows put back what was found
    killed = Digests()
    killed.consumers["statements_digest"] = "YES"
    killed.instruments = dict.fromkeys(killed.instruments, ("YES", "YES"))
    for name, original in journal.rows:
        undo_probe_setting(killed.connect(), name, original)
    assert killed.consumers["statements_digest"] == "NO"
    assert killed.instruments["statement/sql/insert"] == ("NO", "NO")
    assert killed.instruments["statement/com/Execute"] == ("YES", "NO")
    assert json.loads(journal.rows[1][1])  # the instruments as found
    probe.close()
    assert (s.consumers, s.instruments) == before
    assert sorted(r for r, _ in journal.settled) == [1, 2]


def test_unavailable_with_one_clear_reason():
    with pytest.raises(ProbeUnavailable, match=r"performance_schema is OFF .*restart the server"):
        StatementsProbe(Digests().connect, info("mariadb", pfs=False)).open()
    s = Digests()
    s.fail_on = "FIRST_SEEN"
    with pytest.raises(ProbeUnavailable, match="events_statements_summary_by_digest not readable: Unknown column"):
        StatementsProbe(s.connect, info()).open()
    assert s.consumers["statements_digest"] == "NO"  # nothing changed


def test_statements_is_asked_for_not_a_default():
    assert parse_probe_list("all,statements")[-1] == "statements" and "statements" in parse_probe_list("all,statements")
    assert parse_probe_list(None) is None
    from tunebench.core.probe import DEFAULT_PROBES
    assert "statements" not in DEFAULT_PROBES


def test_a_span_weights_latency_by_calls_and_shares_the_time():
    t = np.arange(10.0)
    calls = np.array([100.0] * 5 + [300.0] * 5)
    series = {
        "stmt.aaa.calls": (t, calls),
        "stmt.aaa.lat_us": (t, np.array([10.0] * 5 + [50.0] * 5)),
        "stmt.aaa.rows_examined": (t, np.ones(10)),
        "stmt.bbb.calls": (t[:4], np.array([10.0, 0.0, 10.0, 10.0])),  # tracked late, idle once
        "stmt.bbb.lat_us": (np.array([0.0, 2.0, 3.0]), np.array([1000.0, 1000.0, 1000.0])),
        "stmt.bbb.rows_examined": (np.array([0.0, 2.0, 3.0]), np.array([5.0, 5.0, 5.0])),
        "stmt.total.calls": (t, calls + np.array([10, 0, 10, 10, 0, 0, 0, 0, 0, 0.0])),
        "stmt.total.lat_us": (t, np.ones(10)),
    }
    series["stmt.total.lat_us"] = (t, (calls * np.array([10.0] * 5 + [50.0] * 5) + np.array(
        [10000, 0, 10000, 10000, 0, 0, 0, 0, 0, 0.0])) / series["stmt.total.calls"][1])
    rows = statements(series, 0.0, 9.0, {"aaa": "SELECT a"})
    a, b, total = rows
    assert (a.digest, a.text, b.text, total.digest) == ("aaa", "SELECT a", "bbb", "total")
    assert a.calls == pytest.approx(200.0)
    assert a.lat_us == pytest.approx((500 * 10 + 1500 * 50) / 2000)  # not the mean of the seconds (30)
    assert b.lat_us == pytest.approx(1000.0) and b.rows_examined == pytest.approx(5.0) and b.seconds == 4
    assert a.time_pct + b.time_pct == pytest.approx(100.0)
    # a span where nothing of b was recorded: no row for it
    assert [r.digest for r in statements(series, 5.0, 9.0, {})] == ["aaa", "total"]


def test_texts_from_the_session_events():
    events = [{"kind": "statement", "data": {"digest": "abc", "text": "SELECT 1"}},
              {"kind": "note", "data": {"digest": "x"}}, {"kind": "statement", "data": "damaged"}]
    assert texts_of(events) == {"abc": "SELECT 1"}


def test_a_big_digest_table_is_read_less_often_one_slow_read_is_no_trend():
    s = Digests()
    s.run(D1, 1, 10)
    probe, clock = opened(s, top=1)
    slow = {"n": 0}
    real_read = probe._read_rows

    def timed():
        rows = real_read()
        clock.t += 0.12 if slow["n"] else 0.001  # a read of 120 ms: the budget is 50
        return rows

    probe._read_rows = timed
    slow["n"] = 1
    clock.t += 1.0
    probe.read()
    slow["n"] = 0
    for _ in range(3):
        clock.t += 1.0
        probe.read()
    assert probe.every == 1  # one slow read among quick ones
    slow["n"] = 1
    notes = []
    for _ in range(2):  # the second slow read in a row makes the median of three slow
        clock.t += 1.0
        s.run(D1, 100, 10)
        notes += [e for e in probe.read().events if e.kind == "note"]
    assert probe.every == 3 and len(notes) == 1 and "read every 3 intervals" in notes[0].label
    slow["n"] = 0
    s.run(D1, 300, 10)
    for _ in range(2):
        clock.t += 1.0
        assert probe.read().rates == {}  # skipped
    clock.t += 1.0
    r = probe.read()  # its rates span the skipped intervals
    assert r.rates[f"stmt.{digest_id(D1)}.calls"] == pytest.approx(300 / 3.0, rel=0.05)
