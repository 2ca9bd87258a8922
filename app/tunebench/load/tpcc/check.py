"""TPC-C consistency conditions 1-4 (specification clause 3.3.2.1-3.3.2.4), per table set, in SQL."""

from __future__ import annotations

from typing import Any

from tunebench.core.target import ConnParams
from tunebench.load.family import CheckResult
from tunebench.mysql.connect import open_connection, query_all

# (name, what it says, SQL counting the warehouses/districts that break it; {n} the table set)
CONDITIONS = (
    ("1 W_YTD = sum(D_YTD)", "warehouses whose w_ytd is not the sum of their districts' d_ytd",
     "SELECT COUNT(*) FROM warehouse{n} w JOIN (SELECT d_w_id, SUM(d_ytd) s FROM district{n} GROUP BY d_w_id) d "
     "ON d.d_w_id = w.w_id WHERE w.w_ytd <> d.s"),
    ("2 D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)", "districts where d_next_o_id - 1, max(o_id) and "
     "max(no_o_id) differ",
     "SELECT COUNT(*) FROM district{n} d "
     "LEFT JOIN (SELECT o_w_id, o_d_id, MAX(o_id) m FROM orders{n} GROUP BY o_w_id, o_d_id) o "
     "ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id "
     "LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) m FROM new_orders{n} GROUP BY no_w_id, no_d_id) nw "
     "ON nw.no_w_id = d.d_w_id AND nw.no_d_id = d.d_id "
     "WHERE NOT (d.d_next_o_id - 1 = o.m AND (nw.m IS NULL OR nw.m = o.m))"),
    ("3 max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER", "districts whose new orders are not one "
     "contiguous range",
     "SELECT COUNT(*) FROM (SELECT MAX(no_o_id) - MIN(no_o_id) + 1 span, COUNT(*) n FROM new_orders{n} "
     "GROUP BY no_w_id, no_d_id) x WHERE x.span <> x.n"),
    ("4 sum(O_OL_CNT) = rows in ORDER-LINE", "districts whose orders' line counts do not add up to their "
     "order lines",
     "SELECT COUNT(*) FROM (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) s FROM orders{n} GROUP BY o_w_id, o_d_id) o "
     "LEFT JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) c FROM order_line{n} GROUP BY ol_w_id, ol_d_id) l "
     "ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id WHERE l.c IS NULL OR l.c <> o.s"),
)


def check(params: ConnParams, schema: str, sets: int) -> list[CheckResult]:
    """Every condition on every table set (consistent reads in one REPEATABLE READ snapshot)."""
    conn = open_connection(params)
    out = []
    try:
        cur = conn.cursor()
        cur.execute(f"USE `{schema}`")
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.close()
        for name, what, sql in CONDITIONS:
            bad: list[Any] = []
            for n in range(1, sets + 1):
                count = int(query_all(conn, sql.format(n=n))[0][0])
                if count:
                    bad.append(f"set {n}: {count}")
            out.append(CheckResult(name, not bad, f"{what}: {', '.join(bad)}" if bad else ""))
        conn.rollback()
    finally:
        conn.close()
    return out
