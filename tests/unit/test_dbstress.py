"""The dbSTRESS-like family without a server: schema variants (+HPK), the mixes, refs per connection, the
statements of each transaction, the loader's chunks."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tunebench.core.errors import ConfigError
from tunebench.load.dbstress import DbstressConnection, create_sql, load_statements, ref
from tunebench.load.family import ConnectionContext
from tunebench.load.workload import load_workload


def test_history_keys_follow_the_option():
    o = load_workload("dbstress_ro").options()
    history = create_sql(1, o)[-1]
    assert "id BIGINT NOT NULL AUTO_INCREMENT" in history and "KEY history_ref (ref_object, horder)" in history
    pk = create_sql(2, {**o, "history_pk": "pk"})[-1]
    assert pk.startswith("CREATE TABLE history2 (ref_object CHAR(10)") and "PRIMARY KEY (ref_object, horder)" in pk
    assert "PARTITION BY KEY (ref_object) PARTITIONS 16" in create_sql(1, {**o, "history_pk": "hash"})[-1]
    assert ref(42) == "O000000042"


def test_mixes_and_presets():
    fam = load_workload("dbstress_ro").family
    weights = {name: [(t.name, t.weight) for t in fam.transactions(load_workload(name).options())]
               for name in ("dbstress_ro", "dbstress_ro_sel1", "dbstress_ro_sel2", "dbstress_rw1")}
    assert weights == {"dbstress_ro": [("sel1", 1), ("sel2", 1)], "dbstress_ro_sel1": [("sel1", 1)],
                       "dbstress_ro_sel2": [("sel2", 1)],
                       "dbstress_rw1": [("sel1", 1), ("sel2", 1), ("write", 2)]}
    with pytest.raises(ConfigError, match="option history_pk: 'yes' is not one of none, pk, hash"):
        load_workload("dbstress_ro").options({"history_pk": "yes"})
    assert fam.shape(load_workload("dbstress_ro").options({"datasets": 10, "objects": 1000, "history_pk": "pk"})) \
        == "10 x 1,000 objects x 20 history records, +HPK"


class _Session:
    def __init__(self):
        self.sent = []

    def query(self, sql):
        self.sent.append(sql.decode())

    def query_rows(self, sql):
        self.sent.append(sql.decode())
        return []


def _conn(options, slot=0, slots=1):
    counts = SimpleNamespace(reads=0, writes=0, other=0, current=0)
    plan = load_workload("dbstress_rw1").family.plan(None, options)
    ctx = ConnectionContext(_Session(), counts, np.random.default_rng(5), options, slot, slots, plan)
    return DbstressConnection(ctx, *plan), ctx


def test_transactions_by_object_ref():
    o = load_workload("dbstress_rw1").options({"objects": 1000, "datasets": 3})
    c, ctx = _conn(o)
    kinds = [c.work() for _ in range(400)]
    assert 0.4 < kinds.count(2) / 400 < 0.6  # RW1: reads and writes 1:1
    sel1 = next(s for s in ctx.session.sent if "JOIN zone" in s)
    assert sel1.startswith("SELECT o.ref, o.name, o.price, s.name, z.name FROM object") and "WHERE o.ref = 'O" in sel1
    sel2 = next(s for s in ctx.session.sent if "JOIN history" in s)
    assert sel2.endswith("ORDER BY h.horder")
    i = ctx.session.sent.index("BEGIN")
    _begin, delete, insert, update, commit = ctx.session.sent[i:i + 5]
    assert delete.startswith("DELETE FROM history") and insert.startswith("INSERT INTO history")
    assert update.startswith("UPDATE history") and commit == "COMMIT"
    obj = delete.split("'")[1]
    assert obj in insert and obj in update
    assert {s.split(" ")[2] for s in ctx.session.sent if s.startswith("DELETE")} == {
        "history1", "history2", "history3"}


def test_ref_ranges_give_each_connection_its_own_objects():
    o = load_workload("dbstress_rw1").options({"objects": 1000, "ref_ranges": True})
    c, ctx = _conn(o, slot=2, slots=4)
    assert (c.lo, c.hi) == (501, 750)
    for _ in range(50):
        c.work()
    refs = {int(s.split("'O")[1][:9]) for s in ctx.session.sent if "'O" in s}
    assert refs and all(501 <= r <= 750 for r in refs)


@pytest.mark.parametrize(("objects", "slots"), [(10, 16), (1000, 3), (1000, 1000), (11, 4)])
def test_ref_ranges_cover_the_objects_with_more_connections_than_objects(objects, slots):
    """16 connections on 10 objects ended in numpy's "low >= high": the connections past the 10th share the
    ranges of one object each; every object is some connection's, every range within the data set."""
    o = load_workload("dbstress_rw1").options({"objects": objects, "ref_ranges": True})
    covered = set()
    for slot in range(slots):
        c, _ctx = _conn(o, slot=slot, slots=slots)
        assert 1 <= c.lo <= c.hi <= objects, (slot, c.lo, c.hi)
        c.work()
        covered |= set(range(c.lo, c.hi + 1))
    assert covered == set(range(1, objects + 1))


def test_the_loader_fills_history_from_objects_in_chunks():
    o = load_workload("dbstress_ro").options({"objects": 120_000})
    batches = load_statements(1, o)
    assert len(batches) == 1 + 3  # the dimensions, then 3 chunks of at most 50,000 objects
    assert batches[1][0].startswith("INSERT INTO object1 (ref, name, ref_section, price, updated) SELECT CONCAT('O'")
    assert "CROSS JOIN" in batches[1][1] and "< 20) hh" in batches[1][1]
