import re
from types import SimpleNamespace

import numpy as np
import pytest

from tunebench.core.errors import ConfigError, WorkloadError
from tunebench.load.oltp import create_table_sql
from tunebench.load.workload import available, load_workload

# sysbench 1.0 statement counts per event: (reads, writes, other)
EXPECTED = {
    "oltp_point_select": (1, 0, 0),
    "oltp_read_only": (14, 0, 2),
    "oltp_read_write": (14, 4, 2),
    "oltp_write_only": (0, 4, 2),
    "oltp_update_index": (0, 1, 0),
    "oltp_update_non_index": (0, 1, 0),
    "oltp_insert": (0, 1, 0),
    "oltp_delete": (0, 1, 0),
}


@pytest.mark.parametrize(("name", "mix"), EXPECTED.items())
def test_statement_mix_matches_sysbench(name, mix):
    wl = load_workload(name)
    m = wl.program(wl.options()).statement_mix()
    assert (m["read"], m["write"], m["other"]) == mix


def test_all_shipped_workloads_load():
    assert set(EXPECTED) <= set(available())


def test_switches_follow_sysbench():
    wl = load_workload("oltp_read_write")
    m = wl.program(wl.options({"skip_trx": "on", "range_selects": "off", "point_selects": 3})).statement_mix()
    assert m == {"read": 3, "write": 4, "other": 0}
    # oltp_point_select forces one select per event whatever the user asks
    ps = load_workload("oltp_point_select")
    assert ps.program(ps.options({"point_selects": 10})).statement_mix()["read"] == 1


def test_schema_is_sysbench_schema():
    wl = load_workload("oltp_read_write")
    sql = create_table_sql(3, wl.options())
    assert "CREATE TABLE sbtest3(" in sql
    assert "id INTEGER NOT NULL AUTO_INCREMENT" in sql
    assert "c CHAR(120) DEFAULT '' NOT NULL" in sql and "pad CHAR(60) DEFAULT '' NOT NULL" in sql
    assert "PRIMARY KEY (id)" in sql and "/*! ENGINE = innodb */" in sql
    assert "KEY xid (id)" in create_table_sql(1, wl.options({"secondary": True}))


def test_unknown_workload_lists_available():
    with pytest.raises(WorkloadError) as e:
        load_workload("oltp_nope")
    assert "oltp_point_select" in str(e.value) and "oltp_read_write" in str(e.value)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("name = 'x'\nevent = [", "not valid TOML"),
        ("name = 'x'\nevent = ['begin', 'dance']", "unknown event item 'dance'"),
        ("name = 'x'\nevent = ['point_selects']\n[defaults]\nwarp = 3", "unknown option 'warp'"),
        ("name = 'x'\nevent = ['point_selects']\n[defaults]\ntables = 'many'", "expected an integer"),
        ("name = 'x'\nspeed = 1\nevent = ['point_selects']", "unknown keys speed"),
    ],
)
def test_malformed_workload_file(tmp_path, content, needle):
    f = tmp_path / "bad.toml"
    f.write_text(content)
    with pytest.raises(WorkloadError) as e:
        load_workload(str(f))
    assert needle in str(e.value)


def test_option_validation():
    wl = load_workload("oltp_read_write")
    with pytest.raises(ConfigError, match="rand_type"):
        wl.options({"rand_type": "zipf-ish"})
    with pytest.raises(ConfigError, match="below the minimum"):
        wl.options({"tables": 0})
    with pytest.raises(ConfigError, match="plain identifier"):
        wl.options({"mysql_storage_engine": "innodb; DROP DATABASE x"})


class _InsertSession:
    """Takes oltp_insert's plain INSERTs; refuses as a duplicate (1062) an id it already holds."""

    def __init__(self, held: set[int]):
        self.held = held

    def prepare(self, sql):
        return sql

    def execute(self, stmt, *args):
        raise AssertionError("oltp_insert sends plain queries")

    def query(self, sql: bytes) -> None:
        from tunebench.load.driver import DriverError

        i = int(re.search(rb"VALUES \((-?\d+),", sql).group(1))
        if i in self.held:
            raise DriverError(1062, f"Duplicate entry '{i}' for key 'PRIMARY'")
        self.held.add(i)


def test_oltp_insert_without_auto_inc_never_repeats_an_id():
    """Connections of one group, a reconnect (a new connection's work, the same kept state), and a second run
    (another nonce, the same seed) over the first run's rows: every INSERT makes a row, none in the prepared
    1..table_size, and only a real clash is retried (counted as an error)."""
    from tunebench.load.family import ConnectionContext
    from tunebench.load.oltp_family import OltpFamily

    wl = load_workload("oltp_insert")
    opts = wl.options({"auto_inc": "off", "table_size": 1000})
    plan = OltpFamily().plan(wl, opts)
    held: set[int] = set()
    counts = [SimpleNamespace(reads=0, writes=0, other=0, errors=0, retry=None) for _ in range(3)]
    for c in counts:
        c.retry = (lambda code=None, c=c: setattr(c, "errors", c.errors + 1))
    for nonce in (11, 2**31 + 5):
        kept: list[dict] = [{}, {}, {}]
        for _connect in range(2):  # the second time: after a reconnect
            for slot in range(3):
                ctx = ConnectionContext(_InsertSession(held), counts[slot], np.random.default_rng(7), opts, slot, 3,
                                        plan, nonce, kept[slot])
                work = OltpFamily().connection_work(ctx)
                for _ in range(500):
                    work()
    assert sum(c.writes for c in counts) == len(held) == 2 * 2 * 3 * 500
    assert not any(1 <= i <= 1000 for i in held) and 0 not in held
    assert sum(c.errors for c in counts) == 0
    # a clash with a row already there: the next id, the clash an error the family retried
    ctx = ConnectionContext(_InsertSession(held), counts[0], np.random.default_rng(7), opts, 0, 3, plan, 11, {})
    work = OltpFamily().connection_work(ctx)
    work()
    assert counts[0].errors == 1 and len(held) == 6001
