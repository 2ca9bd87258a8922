"""The five TPC-C transactions of mode=spec (specification clause 2.4-2.8): one connection's work for the
builtin engine. Sent as plain queries like sysbench-tpcc's (not prepared statements: mysql-connector 9.7's C
extension corrupts its heap on this mix of multi-column results and parameters -- "malloc(): unaligned tcache
chunk" within a few hundred NewOrders).

The mix is sysbench-tpcc's: a uniform draw of 1..23 picks NewOrder (1-10), Payment (11-20), OrderStatus (21),
Delivery (22) or StockLevel (23), and its statement counts per transaction agree within 2 %. Where it departs
from the specification, the specification wins here: a remote warehouse is another warehouse, OrderStatus reads
the lines of the customer's last order, the unused item of a rolled-back NewOrder is its last line, NewOrder
reads all ten s_dist_* columns and updates s_ytd/s_order_cnt/s_remote_cnt, Payment counts c_payment_cnt, NURand's
C is constant. mode=sysbench-tpcc (sysbench_mode.py) reproduces sysbench-tpcc instead. A deadlock or lock wait
timeout rolls the transaction back and runs it again with the same inputs (counted as a retry).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from tunebench.load.driver import RETRY_ERRNOS, DriverError
from tunebench.load.family import ConnectionContext
from tunebench.load.tpcc.loader import SYLLABLES
from tunebench.load.tpcc.schema import CUST_PER_DIST, DIST_PER_WARE, MAX_ITEMS

TRX_NAMES = ("new_order", "payment", "order_status", "delivery", "stock_level")
NEW_ORDER, PAYMENT, ORDER_STATUS, DELIVERY, STOCK_LEVEL = range(5)
C_LAST_RUN = 223  # clause 2.1.6.1: |C_LAST_RUN - C_LAST_LOAD (157)| = 66, in 65..119 and not 96 or 112
C_ID, OL_I_ID = 259, 7911
ISOLATION = {"RR": "REPEATABLE READ", "RC": "READ COMMITTED", "SER": "SERIALIZABLE"}
MAX_RETRIES = 100

# Statements of one table set; {n} is its number. (key, SQL, class) -- the class as sysbench counts it.
SQL: dict[str, tuple[str, str]] = {
    "no_cust": ("SELECT c_discount, c_last, c_credit, w_tax FROM customer{n}, warehouse{n} "
                "WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?", "read"),
    "no_dist": ("SELECT d_next_o_id, d_tax FROM district{n} WHERE d_w_id = ? AND d_id = ? FOR UPDATE", "read"),
    "no_dist_upd": ("UPDATE district{n} SET d_next_o_id = ? WHERE d_id = ? AND d_w_id = ?", "write"),
    "no_order": ("INSERT INTO orders{n} (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) "
                 "VALUES (?, ?, ?, ?, NOW(), ?, ?)", "write"),
    "no_new": ("INSERT INTO new_orders{n} (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)", "write"),
    "no_item": ("SELECT i_price, i_name, i_data FROM item{n} WHERE i_id = ?", "read"),
    "no_stock": ("SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, "
                 "s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock{n} WHERE s_i_id = ? AND s_w_id = ? "
                 "FOR UPDATE", "read"),
    "no_stock_upd": ("UPDATE stock{n} SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, "
                     "s_remote_cnt = s_remote_cnt + ? WHERE s_i_id = ? AND s_w_id = ?", "write"),
    "no_line": ("INSERT INTO order_line{n} (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "
                "ol_quantity, ol_amount, ol_dist_info) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", "write"),
    "pay_ware_upd": ("UPDATE warehouse{n} SET w_ytd = w_ytd + ? WHERE w_id = ?", "write"),
    "pay_ware": ("SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse{n} "
                 "WHERE w_id = ?", "read"),
    "pay_dist_upd": ("UPDATE district{n} SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?", "write"),
    "pay_dist": ("SELECT d_street_1, d_street_2, d_city, d_state, d_zip, d_name FROM district{n} "
                 "WHERE d_w_id = ? AND d_id = ?", "read"),
    "name_count": ("SELECT COUNT(c_id) FROM customer{n} WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?", "read"),
    "pay_by_name": ("SELECT c_id FROM customer{n} WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? "
                    "ORDER BY c_first", "read"),
    "pay_cust": ("SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, "
                 "c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_since FROM customer{n} "
                 "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE", "read"),
    "pay_cdata": ("SELECT c_data FROM customer{n} WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", "read"),
    "pay_cust_bc": ("UPDATE customer{n} SET c_balance = ?, c_ytd_payment = ?, c_payment_cnt = c_payment_cnt + 1, "
                    "c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", "write"),
    "pay_cust_upd": ("UPDATE customer{n} SET c_balance = ?, c_ytd_payment = ?, c_payment_cnt = c_payment_cnt + 1 "
                     "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", "write"),
    "pay_hist": ("INSERT INTO history{n} (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
                 "VALUES (?, ?, ?, ?, ?, NOW(), ?, ?)", "write"),
    "os_by_name": ("SELECT c_balance, c_first, c_middle, c_id FROM customer{n} WHERE c_w_id = ? AND c_d_id = ? "
                   "AND c_last = ? ORDER BY c_first", "read"),
    "os_cust": ("SELECT c_balance, c_first, c_middle, c_last FROM customer{n} WHERE c_w_id = ? AND c_d_id = ? "
                "AND c_id = ?", "read"),
    "os_order": ("SELECT o_id, o_carrier_id, o_entry_d FROM orders{n} WHERE o_w_id = ? AND o_d_id = ? "
                 "AND o_c_id = ? ORDER BY o_id DESC LIMIT 1", "read"),
    "os_lines": ("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line{n} "
                 "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?", "read"),
    "dl_new": ("SELECT no_o_id FROM new_orders{n} WHERE no_d_id = ? AND no_w_id = ? "
               "ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE", "read"),
    "dl_new_del": ("DELETE FROM new_orders{n} WHERE no_o_id = ? AND no_d_id = ? AND no_w_id = ?", "write"),
    "dl_order": ("SELECT o_c_id FROM orders{n} WHERE o_id = ? AND o_d_id = ? AND o_w_id = ?", "read"),
    "dl_order_upd": ("UPDATE orders{n} SET o_carrier_id = ? WHERE o_id = ? AND o_d_id = ? AND o_w_id = ?", "write"),
    "dl_lines_upd": ("UPDATE order_line{n} SET ol_delivery_d = NOW() WHERE ol_o_id = ? AND ol_d_id = ? "
                     "AND ol_w_id = ?", "write"),
    "dl_sum": ("SELECT SUM(ol_amount) FROM order_line{n} WHERE ol_o_id = ? AND ol_d_id = ? AND ol_w_id = ?", "read"),
    "dl_cust_upd": ("UPDATE customer{n} SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 "
                    "WHERE c_id = ? AND c_d_id = ? AND c_w_id = ?", "write"),
    "sl_dist": ("SELECT d_next_o_id FROM district{n} WHERE d_id = ? AND d_w_id = ?", "read"),
    "sl_count": ("SELECT COUNT(DISTINCT (s_i_id)) FROM order_line{n}, stock{n} WHERE ol_w_id = ? AND ol_d_id = ? "
                 "AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?", "read"),
}


def literal(value: Any) -> str:
    """A value as SQL text: numbers as they are, strings quoted (they are letters, digits and spaces; quotes
    and backslashes escaped all the same)."""
    if isinstance(value, (int, Decimal)):
        return str(value)
    if value is None:
        return "NULL"
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


def num(value: Any) -> Decimal:
    """A DECIMAL column's value (bytes from the C extension, Decimal from the pure-Python driver)."""
    return value if isinstance(value, Decimal) else Decimal(value.decode() if isinstance(value, bytes) else value)


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def lastname(num: int) -> str:
    return SYLLABLES[num // 100] + SYLLABLES[num // 10 % 10] + SYLLABLES[num % 10]


class TpccConnection:
    """One connection's TPC-C terminal: `work()` runs one transaction of the mix and returns its type. This is
    mode=spec; mode=sysbench-tpcc (sysbench_mode.py) changes the statement table, some draws and some steps."""

    STATEMENTS: dict[str, tuple[str, str]] = SQL
    max_retries = MAX_RETRIES  # a deadlock or lock wait timeout: run again with the same inputs, this many times

    def __init__(self, ctx: ConnectionContext):
        self.ctx, self.session, self.counts = ctx, ctx.session, ctx.counts
        opts = ctx.options
        self.scale, self.sets = int(opts["scale"]), int(opts["tables"])
        self.rng = ctx.rng
        session = self.session
        session.query(f"SET SESSION TRANSACTION ISOLATION LEVEL {ISOLATION[opts['trx_level']]}".encode())
        self.begin, self.commit, self.rollback = b"BEGIN", b"COMMIT", b"ROLLBACK"
        self.stmts: dict[int, dict[str, Any]] = {}
        self.trx: list[Callable[[dict[str, Any]], None]] = [
            self.new_order, self.payment, self.order_status, self.delivery, self.stock_level]

    # ---- random numbers (clause 2.1.5 / 2.1.6) ---------------------------------------------------
    def uniform(self, a: int, b: int) -> int:
        return int(self.rng.integers(a, b + 1))

    def nurand(self, a: int, x: int, y: int, c: int) -> int:
        return ((self.uniform(0, a) | self.uniform(x, y)) + c) % (y - x + 1) + x

    def other_warehouse(self, home: int) -> int:
        if self.scale == 1:
            return home
        w = self.uniform(1, self.scale - 1)
        return w + 1 if w >= home else w

    # ---- statements ------------------------------------------------------------------------------
    def _set(self, n: int) -> dict[str, Any]:
        """The statements of table set n: each split at its ? marks, the values go between the pieces."""
        stmts = self.stmts.get(n)
        if stmts is None:
            stmts = {k: (sql.format(n=n).split("?"), kind == "read") for k, (sql, kind) in self.STATEMENTS.items()}
            self.stmts[n] = stmts
        return stmts

    def run(self, s: dict[str, Any], key: str, *args: Any) -> list[tuple[Any, ...]]:
        pieces, is_read = s[key]
        sql = pieces[0] + "".join(literal(a) + piece for a, piece in zip(args, pieces[1:], strict=True))
        rows = self.session.query_rows(sql.encode())
        if is_read:
            self.counts.reads += 1
        else:
            self.counts.writes += 1
        return rows

    def _other(self, sql: bytes) -> None:
        self.session.query(sql)
        self.counts.other += 1

    # ---- the mix ---------------------------------------------------------------------------------
    def work(self) -> int:
        draw = self.uniform(1, 23)
        kind = (NEW_ORDER if draw <= 10 else PAYMENT if draw <= 20 else ORDER_STATUS if draw == 21
                else DELIVERY if draw == 22 else STOCK_LEVEL)
        self.counts.current = kind
        s = self._set(self.uniform(1, self.sets))
        inputs = self.inputs(kind)
        for attempt in range(self.max_retries + 1):
            try:
                self._other(self.begin)
                self.trx[kind]({"s": s, **inputs})
                return kind
            except DriverError as exc:
                if exc.errno not in RETRY_ERRNOS or attempt == self.max_retries:
                    raise
                self.counts.retry(exc.errno)
                try:
                    self._other(self.rollback)
                except DriverError:
                    pass
        return kind

    def inputs(self, kind: int) -> dict[str, Any]:
        """The terminal's inputs of one transaction (clause 2.x.1), drawn once: a retry reuses them."""
        w = self.uniform(1, self.scale)
        if kind == NEW_ORDER:
            n = self.uniform(5, 15)
            unused = self.uniform(1, 100) == 1
            lines = []
            for i in range(n):
                remote = self.scale > 1 and self.uniform(1, 100) == 1
                item = MAX_ITEMS + 1 if unused and i == n - 1 else self.nurand(8191, 1, MAX_ITEMS, OL_I_ID)
                lines.append((item, self.other_warehouse(w) if remote else w, self.uniform(1, 10)))
            return {"w": w, "d": self.uniform(1, DIST_PER_WARE), "c": self.nurand(1023, 1, CUST_PER_DIST, C_ID),
                    "lines": lines}
        if kind in (PAYMENT, ORDER_STATUS):
            d = self.uniform(1, DIST_PER_WARE)
            out = {"w": w, "d": d, "c": self.nurand(1023, 1, CUST_PER_DIST, C_ID),
                   "last": lastname(self.nurand(255, 0, 999, C_LAST_RUN)), "by_name": self.uniform(1, 100) <= 60}
            if kind == PAYMENT:
                home = self.uniform(1, 100) <= 85
                out.update(c_w=w if home else self.other_warehouse(w),
                           c_d=d if home else self.uniform(1, DIST_PER_WARE), amount=self.uniform(100, 500000) / 100)
            return out
        if kind == DELIVERY:
            return {"w": w, "carrier": self.uniform(1, 10)}
        return {"w": w, "d": self.uniform(1, DIST_PER_WARE), "level": self.uniform(10, 20)}

    # ---- the transactions ------------------------------------------------------------------------
    def new_order(self, t: dict[str, Any]) -> None:
        s, w, d, c, lines = t["s"], t["w"], t["d"], t["c"], t["lines"]
        discount, _last, _credit, w_tax = self.run(s, "no_cust", w, d, c)[0]
        discount, w_tax = num(discount), num(w_tax)
        o_id, d_tax = self.run(s, "no_dist", w, d)[0]
        o_id, d_tax = int(o_id), num(d_tax)
        self.run(s, "no_dist_upd", o_id + 1, d, w)
        all_local = int(all(sup == w for _i, sup, _q in lines))
        self.run(s, "no_order", o_id, d, w, c, len(lines), all_local)
        self.run(s, "no_new", o_id, d, w)
        for number, (item, supply, qty) in enumerate(lines, 1):
            found = self.run(s, "no_item", item)
            if not found:  # the unused item of clause 2.4.2.3: the transaction is rolled back
                self._other(self.rollback)
                self.counts.rollback()
                return
            price = num(found[0][0])
            stock = self.run(s, "no_stock", item, supply)[0]
            left = int(stock[0]) - qty
            quantity = left if left >= 10 else left + 91
            self.run(s, "no_stock_upd", quantity, qty, int(supply != w), item, supply)
            amount = (qty * price * (1 + w_tax + d_tax) * (1 - discount)).quantize(Decimal("0.01"))
            self.run(s, "no_line", o_id, d, w, number, item, supply, qty, amount, text(stock[1 + d]))
        self._other(self.commit)

    def _customer_by_name(self, s: dict[str, Any], key: str, w: int, d: int, last: str) -> tuple[Any, ...] | None:
        """Clause 2.5.2.2: the customers of that last name sorted by first name; the one at position n/2
        rounded up."""
        count = self.run(s, "name_count", w, d, last)[0][0]
        rows = self.run(s, key, w, d, last)
        if not rows:
            return None
        return rows[min(len(rows), max(1, -(-int(count) // 2))) - 1]

    def _pay_warehouse_and_district(self, s: dict[str, Any], w: int, d: int, amount: Any) -> tuple[str, str]:
        """Payment's first four statements (both modes): the year-to-date sums; the two names."""
        self.run(s, "pay_ware_upd", amount, w)
        w_name = text(self.run(s, "pay_ware", w)[0][5])
        self.run(s, "pay_dist_upd", amount, w, d)
        return w_name, text(self.run(s, "pay_dist", w, d)[0][5])

    def payment(self, t: dict[str, Any]) -> None:
        s, w, d, amount = t["s"], t["w"], t["d"], Decimal(str(t["amount"]))
        c_w, c_d, c = t["c_w"], t["c_d"], t["c"]
        w_name, d_name = self._pay_warehouse_and_district(s, w, d, amount)
        if t["by_name"]:
            row = self._customer_by_name(s, "pay_by_name", c_w, c_d, t["last"])
            if row is not None:
                c = int(row[0])
        cust = self.run(s, "pay_cust", c_w, c_d, c)[0]
        balance, ytd = num(cust[12]) - amount, num(cust[13]) + amount
        if text(cust[9]) == "BC":
            data = text(self.run(s, "pay_cdata", c_w, c_d, c)[0][0])
            new = f"{c} {c_d} {c_w} {d} {w} {amount:.2f} | {data}"[:500]
            self.run(s, "pay_cust_bc", balance, ytd, new, c_w, c_d, c)
        else:
            self.run(s, "pay_cust_upd", balance, ytd, c_w, c_d, c)
        self.run(s, "pay_hist", c_d, c_w, c, d, w, amount, f"{w_name}    {d_name}"[:24])
        self._other(self.commit)

    def order_status(self, t: dict[str, Any]) -> None:
        s, w, d, c = t["s"], t["w"], t["d"], t["c"]
        if t["by_name"]:
            row = self._customer_by_name(s, "os_by_name", w, d, t["last"])
            if row is not None:
                c = int(row[3])
        else:
            self.run(s, "os_cust", w, d, c)
        order = self.run(s, "os_order", w, d, c)
        self.run(s, "os_lines", w, d, int(order[0][0]) if order else 0)
        self._other(self.commit)

    def delivery(self, t: dict[str, Any]) -> None:
        s, w, carrier = t["s"], t["w"], t["carrier"]
        for d in range(1, DIST_PER_WARE + 1):
            found = self.run(s, "dl_new", d, w)
            if not found:
                continue  # clause 2.7.4.2: no outstanding order in this district, skipped
            o_id = int(found[0][0])
            self.run(s, "dl_new_del", o_id, d, w)
            c = int(self.run(s, "dl_order", o_id, d, w)[0][0])
            self.run(s, "dl_order_upd", carrier, o_id, d, w)
            self.run(s, "dl_lines_upd", o_id, d, w)
            total = num(self.run(s, "dl_sum", o_id, d, w)[0][0] or 0)
            self.run(s, "dl_cust_upd", total, c, d, w)
        self._other(self.commit)

    def stock_level(self, t: dict[str, Any]) -> None:
        s, w, d = t["s"], t["w"], t["d"]
        next_o = int(self.run(s, "sl_dist", d, w)[0][0])
        self.run(s, "sl_count", w, d, next_o, next_o - 20, w, t["level"])
        self._other(self.commit)


def connection_work(ctx: ConnectionContext) -> Callable[[], int]:
    return TpccConnection(ctx).work
