"""mode=sysbench-tpcc: the five transactions as Percona-Lab/sysbench-tpcc sends them, its simplifications and
known bugs included, so that a figure compares with one measured with sysbench-tpcc (the seeds' charts).
Written from a description of its behaviour (README, "TPC-C: two modes"), not from its code.

What differs from mode=spec (trx.py), all of it on purpose:
- NURand's C is drawn again at every call (sysbench-tpcc means to draw it once, but its test never fails);
- a "remote" warehouse is the home one (its other_ware() loops until it draws the home warehouse), yet the
  order is still marked not all-local;
- NewOrder: the unused item (i_id = -1) is the second-to-last line; the stock row is read with the one
  s_dist_DD column of the order's district and updated in s_quantity only (s_quantity > qty, else + 91);
  ol_amount is truncated to an integer;
- Payment: a whole amount of 1..5000, no c_payment_cnt, its own c_data and h_data formats, and the customer
  of a last name one row further than the specification's (count rounded up to even, then n/2 + 1);
- OrderStatus: the customer's orders without LIMIT, and the lines of order number = the district id;
- a deadlock or lock wait timeout ends the transaction (ROLLBACK, an error) and the next one draws anew;
- the connection runs with FOREIGN_KEY_CHECKS=0 and autocommit=0.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from tunebench.load.family import ConnectionContext
from tunebench.load.tpcc.schema import CUST_PER_DIST, DIST_PER_WARE, MAX_ITEMS
from tunebench.load.tpcc.trx import NEW_ORDER, PAYMENT, SQL, TpccConnection, lastname, text

# The statements of mode=spec, where sysbench-tpcc's differ (column lists, aliases, LIMIT): replaced. The stock
# read names one s_dist column, the district's: one statement per district.
SYSBENCH_SQL: dict[str, tuple[str, str]] = {
    **{k: v for k, v in SQL.items() if k not in ("no_stock", "pay_cust_bc", "pay_cust_upd")},
    **{f"no_stock_{d}": (f"SELECT s_quantity, s_data, s_dist_{d:02d} s_dist FROM stock{{n}} "
                         "WHERE s_i_id = ? AND s_w_id = ? FOR UPDATE", "read") for d in range(1, DIST_PER_WARE + 1)},
    "no_stock_upd": ("UPDATE stock{n} SET s_quantity = ? WHERE s_i_id = ? AND s_w_id = ?", "write"),
    "name_count": ("SELECT count(c_id) namecnt FROM customer{n} WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?",
                   "read"),
    "pay_cust_bc": ("UPDATE customer{n} SET c_balance = ?, c_ytd_payment = ?, c_data = ? "
                    "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", "write"),
    "pay_cust_upd": ("UPDATE customer{n} SET c_balance = ?, c_ytd_payment = ? WHERE c_w_id = ? AND c_d_id = ? "
                     "AND c_id = ?", "write"),
    "os_order": ("SELECT o_id, o_carrier_id, o_entry_d FROM orders{n} WHERE o_w_id = ? AND o_d_id = ? "
                 "AND o_c_id = ? ORDER BY o_id DESC", "read"),
    "dl_sum": ("SELECT SUM(ol_amount) sm FROM order_line{n} WHERE ol_o_id = ? AND ol_d_id = ? AND ol_w_id = ?",
               "read"),
}


def fixed6(value: float) -> Decimal:
    """sysbench-tpcc's %f: six decimals (trx.literal() writes a Decimal as it is, trailing zeros included)."""
    return Decimal(f"{value:.6f}")


class SysbenchTpccConnection(TpccConnection):
    """One connection's terminal with sysbench-tpcc's statements, draws and error handling."""

    STATEMENTS = SYSBENCH_SQL
    max_retries = 0  # sysbench-tpcc's event ends on a deadlock: the worker rolls back and counts an error

    def __init__(self, ctx: ConnectionContext):
        super().__init__(ctx)
        self.session.query(b"SET FOREIGN_KEY_CHECKS=0")
        self.session.query(b"SET autocommit=0")

    def nurand(self, a: int, x: int, y: int, c: int = 0) -> int:
        c = self.uniform(0, a)  # a new C at every call: sysbench-tpcc's "draw once" flag is never cleared
        return super().nurand(a, x, y, c)

    def other_warehouse(self, home: int) -> int:
        return home  # sysbench-tpcc's other_ware() draws until it gets the home warehouse

    def inputs(self, kind: int) -> dict[str, Any]:
        if kind == NEW_ORDER:
            w, d = self.uniform(1, self.scale), self.uniform(1, DIST_PER_WARE)
            c, count, unused = self.nurand(1023, 1, CUST_PER_DIST), self.uniform(5, 15), self.uniform(1, 100) == 1
            lines, all_local = [], 1
            for number in range(1, count + 1):
                item = self.nurand(8191, 1, MAX_ITEMS)
                if unused and number == count - 1:
                    item = -1
                supply = w
                if self.uniform(1, 100) == 1:
                    supply, all_local = self.other_warehouse(w), 0
                lines.append((item, supply, self.uniform(1, 10)))
            return {"w": w, "d": d, "c": c, "lines": lines, "all_local": all_local}
        if kind == PAYMENT:
            w, d = self.uniform(1, self.scale), self.uniform(1, DIST_PER_WARE)
            out = {"w": w, "d": d, "c": self.nurand(1023, 1, CUST_PER_DIST), "amount": self.uniform(1, 5000),
                   "last": lastname(self.nurand(255, 0, 999)), "by_name": self.uniform(1, 100) <= 60}
            home = self.uniform(1, 100) <= 85
            out.update(c_w=w if home else self.other_warehouse(w), c_d=d if home else self.uniform(1, DIST_PER_WARE))
            return out
        return super().inputs(kind)  # OrderStatus, Delivery, StockLevel: the same draws (NURand as above)

    def new_order(self, t: dict[str, Any]) -> None:
        s, w, d, c, lines = t["s"], t["w"], t["d"], t["c"], t["lines"]
        discount, _last, _credit, w_tax = self.run(s, "no_cust", w, d, c)[0]
        o_id, d_tax = self.run(s, "no_dist", w, d)[0]
        o_id = int(o_id)
        self.run(s, "no_dist_upd", o_id + 1, d, w)
        self.run(s, "no_order", o_id, d, w, c, len(lines), t["all_local"])
        self.run(s, "no_new", o_id, d, w)
        factor = (1 + float(text(w_tax)) + float(text(d_tax))) * (1 - float(text(discount)))
        stock_key = f"no_stock_{d}"
        for number, (item, supply, qty) in enumerate(lines, 1):
            found = self.run(s, "no_item", item)
            if not found:  # i_id = -1: rolled back (sysbench-tpcc counts an error; here a NewOrder rollback)
                self._other(self.rollback)
                self.counts.rollback()
                return
            price = float(text(found[0][0]))
            quantity, _data, dist = self.run(s, stock_key, item, supply)[0]
            left = int(quantity) - qty
            self.run(s, "no_stock_upd", left if int(quantity) > qty else left + 91, item, supply)
            amount = int(qty * price * factor)  # sysbench-tpcc's %d: truncated toward zero
            self.run(s, "no_line", o_id, d, w, number, item, supply, qty, amount, text(dist))
        self._other(self.commit)

    def _by_name(self, s: dict[str, Any], key: str, w: int, d: int, last: str, column: int) -> int | None:
        """The customer of a last name as sysbench-tpcc picks it: the count made even when odd and above 1, then
        the row count/2 + 1 of the list by first name (the specification's is one row before)."""
        count = int(self.run(s, "name_count", w, d, last)[0][0])
        rows = self.run(s, key, w, d, last)
        if count > 1 and count % 2 == 1:
            count += 1
        if not rows:
            return None
        return int(rows[min(len(rows), count // 2 + 1) - 1][column])

    def payment(self, t: dict[str, Any]) -> None:
        s, w, d, amount = t["s"], t["w"], t["d"], t["amount"]
        c_w, c_d, c = t["c_w"], t["c_d"], t["c"]
        w_name, d_name = self._pay_warehouse_and_district(s, w, d, amount)
        if t["by_name"]:
            c = self._by_name(s, "pay_by_name", c_w, c_d, t["last"], 0) or c
        cust = self.run(s, "pay_cust", c_w, c_d, c)[0]
        balance = fixed6(float(text(cust[12])) - amount)
        ytd = fixed6(float(text(cust[13])) + amount)
        if text(cust[9]) == "BC":
            data = text(self.run(s, "pay_cdata", c_w, c_d, c)[0][0])
            new = f"| {c:4d} {c_d:2d} {c_w:4d} {d:2d} {w:4d} ${amount:7.2f} {int(time.time()):12d} {data:>24}"
            self.run(s, "pay_cust_bc", balance, ytd, new[:500], c_w, c_d, c)
        else:
            self.run(s, "pay_cust_upd", balance, ytd, c_w, c_d, c)
        self.run(s, "pay_hist", c_d, c_w, c, d, w, amount, f"{w_name:>10} {d_name:>10}   ")
        self._other(self.commit)

    def order_status(self, t: dict[str, Any]) -> None:
        s, w, d, c = t["s"], t["w"], t["d"], t["c"]
        if t["by_name"]:
            c = self._by_name(s, "os_by_name", w, d, t["last"], 3) or c
        else:
            self.run(s, "os_cust", w, d, c)
        self.run(s, "os_order", w, d, c)  # every order of the customer, newest first; its number is not used
        self.run(s, "os_lines", w, d, d)  # sysbench-tpcc's: order number = the district id
        self._other(self.commit)
