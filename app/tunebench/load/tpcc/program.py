"""The TPC-C-like transactions as a statement program for the compiled loop (load/program.py), in both modes:
`spec` (load/tpcc/trx.py's TpccConnection, statement for statement) and `sysbench-tpcc` (sysbench-tpcc's own
statements and simplifications, as load/tpcc/trx.py's sysbench-tpcc mode sends them). The Python code stays the
reference; tests/integration/test_both_loops.py compares the server's counters per transaction on both loops.

Values read back are the server's text; ids taken from a row are made integers (trunc) before they go back into
a statement, so they are sent unquoted as the Python loop sends them; money is a double rendered with two
decimals (the Python loop's Decimal), or as sysbench-tpcc's %d/%f render its Lua numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tunebench.load.program import MARK, Asm, Fixed, Label, Reg, Value, VmProgram
from tunebench.load.tpcc.loader import SYLLABLES
from tunebench.load.tpcc.schema import CUST_PER_DIST, DIST_PER_WARE, MAX_ITEMS
from tunebench.load.tpcc.sysbench_mode import SYSBENCH_SQL
from tunebench.load.tpcc.trx import C_ID, C_LAST_RUN, ISOLATION, OL_I_ID, SQL

MAX_LINES = 15
SET_OR_MARK = re.compile(r"\{n\}|" + MARK.pattern)


def values(options: Mapping[str, Any], *, slot: int, slots: int, run_nonce: int) -> dict[str, Any]:
    return {"scale": int(options["scale"]), "sets": int(options["tables"])}


class _Tpcc:
    """The assembler with TPC-C's helpers: statements by key with the table set's number where {n} stands."""

    def __init__(self, options: Mapping[str, Any], statements: Mapping[str, tuple[str, str]]):
        self.a = a = Asm(types=5)
        self.sql = statements
        self.scale, self.sets = a.param("scale"), a.param("sets")
        self.n = a.reg()
        self.t = a.reg()  # scratch: conditions
        self.options = options

    def run(self, key: str, *args: Value, rows: Reg | None = None, into: list[Reg] | tuple[()] = ()) -> None:
        """Statement `key` of the table set self.n: {n} is the set's number, the markers take the values in
        order."""
        sql, cls = self.sql[key]
        given = iter(args)
        ordered: list[Value] = [self.n if m.group(0) == "{n}" else next(given) for m in SET_OR_MARK.finditer(sql)]
        if next(given, None) is not None:
            raise ValueError(f"{key}: more values than markers")
        self.a.exec(cls, sql.replace("{n}", "%d"), *ordered, rows=rows, into=into)

    def other(self, sql: str) -> None:
        self.a.exec("other", sql)

    def lastname(self, dst: Reg, num: Reg) -> None:
        a = self.a
        parts = a.regs(3)
        for part, (div, mod) in zip(parts, ((100, 10), (10, 10), (1, 10)), strict=True):
            a.idiv(part, num, div)
            a.mod(part, part, mod)
            a.pick(part, SYLLABLES, part)
        a.format(dst, "%s%s%s", *parts)


    def dispatch(self) -> list[Label]:
        """The event's start: the mix's draw of 1..23 (NewOrder 1-10, Payment 11-20, OrderStatus, Delivery,
        StockLevel); the five labels to place."""
        a, t = self.a, self.t
        kinds = [a.label() for _ in range(5)]
        draw = a.reg()
        a.unif(draw, 1, 23)
        for bound, label in zip((10, 20, 21, 22), kinds, strict=False):
            a.le(t, draw, bound)
            a.jnz(t, label)
        a.jmp(kinds[4])
        return kinds

    def amount(self, dst: Reg, qty: Reg, price: Reg, w_tax: Reg, d_tax: Reg, discount: Reg) -> None:
        """qty * price * (1 + w_tax + d_tax) * (1 - discount), a double."""
        a, factor = self.a, self.a.reg()
        a.add(factor, w_tax, d_tax)
        a.add(factor, factor, 1.0)
        a.mul(dst, qty, price)
        a.mul(dst, dst, factor)
        a.sub(factor, 1.0, discount)
        a.mul(dst, dst, factor)

    def delivery(self, w: Reg, retry: bool) -> None:
        """Delivery (2.7) as both modes send it: the oldest new order of each district (none: skipped), its
        order, lines and customer."""
        a, t = self.a, self.t
        carrier, di, found, no_o, o_c, total = a.regs(6)
        a.unif(self.n, 1, self.sets)
        a.unif(w, 1, self.scale)
        a.unif(carrier, 1, 10)
        if retry:
            a.retry()
        self.other("BEGIN")
        a.mov(di, 1)
        district, skip = a.label(), a.label()
        a.here(district)
        self.run("dl_new", di, w, rows=found, into=[no_o])
        a.jz(found, skip)  # clause 2.7.4.2: no outstanding order in this district
        a.trunc(no_o, no_o)
        self.run("dl_new_del", no_o, di, w)
        self.run("dl_order", no_o, di, w, into=[o_c])
        a.trunc(o_c, o_c)
        self.run("dl_order_upd", carrier, no_o, di, w)
        self.run("dl_lines_upd", no_o, di, w)
        self.run("dl_sum", no_o, di, w, into=[total])
        a.coalesce(total, total, 0)
        a.add(total, total, 0.0)
        self.run("dl_cust_upd", total, o_c, di, w)
        a.here(skip)
        a.add(di, di, 1)
        a.le(t, di, DIST_PER_WARE)
        a.jnz(t, district)
        self.other("COMMIT")
        a.end()

    def last_two(self, kinds: list[Label], w: Reg, d: Reg, retry: bool) -> None:
        """Delivery and StockLevel at their labels, as both modes send them."""
        self.a.here(kinds[3])
        self.a.type(3)
        self.delivery(w, retry)
        self.a.here(kinds[4])
        self.a.type(4)
        self.stock_level(w, d, retry)

    def stock_level(self, w: Reg, d: Reg, retry: bool) -> None:
        """StockLevel (2.8) as both modes send it."""
        a = self.a
        level, next_id, low = a.regs(3)
        a.unif(self.n, 1, self.sets)
        a.unif(w, 1, self.scale)
        a.unif(d, 1, DIST_PER_WARE)
        a.unif(level, 10, 20)
        if retry:
            a.retry()
        self.other("BEGIN")
        self.run("sl_dist", d, w, into=[next_id])
        a.trunc(next_id, next_id)
        a.sub(low, next_id, 20)
        self.run("sl_count", w, d, next_id, low, w, level)
        self.other("COMMIT")
        a.end()


def spec_program(options: Mapping[str, Any]) -> VmProgram:
    """load/tpcc/trx.py's TpccConnection (mode=spec) as a statement program."""
    p = _Tpcc(options, SQL)
    a, t = p.a, p.t
    w, d, c, nlines, unused, all_local = a.regs(6)
    items, supply, qty = a.regs(MAX_LINES), a.regs(MAX_LINES), a.regs(MAX_LINES)
    scale_m1 = a.reg()
    a.init()
    a.exec("none", f"SET SESSION TRANSACTION ISOLATION LEVEL {ISOLATION[options['trx_level']]}")
    a.end()

    def other_warehouse(dst: Reg, home: Reg) -> None:
        """Another warehouse than home, uniformly (home itself with one warehouse)."""
        one, done = a.label(), a.label()
        a.eq(t, p.scale, 1)
        a.jz(t, one)
        a.mov(dst, home)
        a.jmp(done)
        a.here(one)
        a.sub(scale_m1, p.scale, 1)
        a.unif(dst, 1, scale_m1)
        a.ge(t, dst, home)
        a.add(dst, dst, t)
        a.here(done)

    a.event()
    kinds = p.dispatch()

    # ---- NewOrder (2.4) ----
    a.here(kinds[0])
    a.type(0)
    a.unif(p.n, 1, p.sets)
    a.unif(w, 1, p.scale)
    a.unif(nlines, 5, MAX_LINES)
    a.unif(t, 1, 100)
    a.eq(unused, t, 1)
    a.mov(all_local, 1)
    drawn = a.label()
    for i in range(MAX_LINES):
        a.ge(t, i, nlines)
        a.jnz(t, drawn)
        plain, remote_done = a.label(), a.label()
        a.mov(supply[i], w)
        a.gt(t, p.scale, 1)
        a.jz(t, plain)
        a.unif(t, 1, 100)
        a.ne(t, t, 1)
        a.jnz(t, plain)
        other_warehouse(supply[i], w)
        a.mov(all_local, 0)
        a.here(plain)
        # the unused item (clause 2.4.2.3) is the last line's
        last_unused, item_done = a.label(), a.label()
        a.jz(unused, remote_done)
        a.sub(t, nlines, 1)
        a.eq(t, t, i)
        a.jnz(t, last_unused)
        a.here(remote_done)
        a.nurand(items[i], 8191, 1, MAX_ITEMS, OL_I_ID)
        a.jmp(item_done)
        a.here(last_unused)
        a.mov(items[i], MAX_ITEMS + 1)
        a.here(item_done)
        a.unif(qty[i], 1, 10)
    a.here(drawn)
    a.unif(d, 1, DIST_PER_WARE)
    a.nurand(c, 1023, 1, CUST_PER_DIST, C_ID)
    a.retry()
    p.other("BEGIN")
    discount, last, credit, w_tax = a.regs(4)
    p.run("no_cust", w, d, c, into=[discount, last, credit, w_tax])
    o_id, d_tax = a.regs(2)
    p.run("no_dist", w, d, into=[o_id, d_tax])
    a.trunc(o_id, o_id)
    next_o = a.reg()
    a.add(next_o, o_id, 1)
    p.run("no_dist_upd", next_o, d, w)
    p.run("no_order", o_id, d, w, c, nlines, all_local)
    p.run("no_new", o_id, d, w)
    found, price, left, remote, amount, dist = a.regs(6)
    stock = a.regs(12)
    committed = a.label()
    for i in range(MAX_LINES):
        a.ge(t, i, nlines)
        a.jnz(t, committed)
        have = a.label()
        p.run("no_item", items[i], rows=found, into=[price])
        a.jnz(found, have)
        p.other("ROLLBACK")  # the unused item: the transaction is rolled back
        a.rollmark()
        a.end()
        a.here(have)
        p.run("no_stock", items[i], supply[i], into=stock)
        enough = a.label()
        a.sub(left, stock[0], qty[i])
        a.ge(t, left, 10)
        a.jnz(t, enough)
        a.add(left, left, 91)
        a.here(enough)
        a.ne(remote, supply[i], w)
        p.run("no_stock_upd", left, qty[i], remote, items[i], supply[i])
        p.amount(amount, qty[i], price, w_tax, d_tax, discount)
        a.round(amount, amount, 2)  # to the cent
        a.sub(t, d, 1)
        a.movi(dist, stock[2:12], t)
        p.run("no_line", o_id, d, w, i + 1, items[i], supply[i], qty[i], amount, dist)
    a.here(committed)
    p.other("COMMIT")
    a.end()

    # ---- Payment (2.5) and OrderStatus (2.6): the customer, by last name 60 % of the time ----
    by_name, c_w, c_d, h_amount, last_name, num = a.regs(6)

    def customer_inputs() -> None:
        a.unif(w, 1, p.scale)
        a.unif(d, 1, DIST_PER_WARE)
        a.nurand(c, 1023, 1, CUST_PER_DIST, C_ID)
        a.nurand(num, 255, 0, 999, C_LAST_RUN)
        p.lastname(last_name, num)
        a.unif(t, 1, 100)
        a.le(by_name, t, 60)

    count, nrows, idx = a.regs(3)

    def by_last_name(key: str, cw: Reg, cd: Reg, row: list[Reg], id_col: int) -> None:
        """Clause 2.5.2.2: the customers of that last name sorted by first name; the one at position n/2 rounded
        up becomes c (c unchanged when there is none)."""
        none = a.label()
        p.run("name_count", cw, cd, last_name, into=[count])
        p.run(key, cw, cd, last_name, rows=nrows)
        a.jz(nrows, none)
        a.add(idx, count, 1)
        a.idiv(idx, idx, 2)
        a.max(idx, idx, 1)
        a.min(idx, idx, nrows)
        a.sub(idx, idx, 1)
        a.row(row, idx)
        a.trunc(c, row[id_col])
        a.here(none)

    a.here(kinds[1])
    a.type(1)
    a.unif(p.n, 1, p.sets)
    customer_inputs()
    home, done_home = a.label(), a.label()
    a.unif(t, 1, 100)
    a.le(t, t, 85)
    a.jnz(t, home)
    other_warehouse(c_w, w)
    a.unif(c_d, 1, DIST_PER_WARE)
    a.jmp(done_home)
    a.here(home)
    a.mov(c_w, w)
    a.mov(c_d, d)
    a.here(done_home)
    a.unif(h_amount, 100, 500000)
    a.div(h_amount, h_amount, 100)
    a.retry()
    p.other("BEGIN")
    ware, dist6 = a.regs(6), a.regs(6)
    p.run("pay_ware_upd", h_amount, w)
    p.run("pay_ware", w, into=ware)
    p.run("pay_dist_upd", h_amount, w, d)
    p.run("pay_dist", w, d, into=dist6)
    by_id = a.label()
    a.jz(by_name, by_id)
    cid = a.regs(1)
    by_last_name("pay_by_name", c_w, c_d, cid, 0)
    a.here(by_id)
    cust = a.regs(15)
    p.run("pay_cust", c_w, c_d, c, into=cust)
    balance, ytd, c_data, h_data = a.regs(4)
    a.sub(balance, cust[12], h_amount)
    a.add(ytd, cust[13], h_amount)
    good, history = a.label(), a.label()
    a.eq(t, cust[9], "BC")
    a.jz(t, good)
    p.run("pay_cdata", c_w, c_d, c, into=[c_data])
    a.format(c_data, "%s %s %s %s %s %.2f | %s", c, c_d, c_w, d, w, h_amount, c_data)
    a.substr(c_data, c_data, 500)
    p.run("pay_cust_bc", balance, ytd, c_data, c_w, c_d, c)
    a.jmp(history)
    a.here(good)
    p.run("pay_cust_upd", balance, ytd, c_w, c_d, c)
    a.here(history)
    a.format(h_data, "%s    %s", ware[5], dist6[5])
    a.substr(h_data, h_data, 24)
    p.run("pay_hist", c_d, c_w, c, d, w, h_amount, h_data)
    p.other("COMMIT")
    a.end()

    a.here(kinds[2])
    a.type(2)
    a.unif(p.n, 1, p.sets)
    customer_inputs()
    a.retry()
    p.other("BEGIN")
    by_id2, order = a.label(), a.label()
    a.jz(by_name, by_id2)
    os_row = a.regs(4)
    by_last_name("os_by_name", w, d, os_row, 3)
    a.jmp(order)
    a.here(by_id2)
    p.run("os_cust", w, d, c)
    a.here(order)
    last_o = a.reg()
    p.run("os_order", w, d, c, into=[last_o])
    a.coalesce(last_o, last_o, 0)
    a.trunc(last_o, last_o)
    p.run("os_lines", w, d, last_o)
    p.other("COMMIT")
    a.end()

    p.last_two(kinds, w, d, retry=True)
    return a.program(values, (dict(options),))


def sysbench_program(options: Mapping[str, Any]) -> VmProgram:
    """load/tpcc/sysbench_mode.py's SysbenchTpccConnection (mode=sysbench-tpcc) as a statement program: its
    statements (SYSBENCH_SQL), its draws (NURand's C drawn again at every call, the "other" warehouse always the
    home one), its simplifications and bugs (OrderStatus reads the lines of order number = district id). A
    deadlock is not retried here: the error goes to the worker, which rolls back and starts a new transaction, as
    sysbench does."""
    p = _Tpcc(options, SYSBENCH_SQL)
    a, t = p.a, p.t
    w, d, c, nlines, rbk, all_local, cc = a.regs(7)
    items, supply, qty = a.regs(MAX_LINES), a.regs(MAX_LINES), a.regs(MAX_LINES)
    a.init()
    a.exec("none", f"SET SESSION TRANSACTION ISOLATION LEVEL {ISOLATION[options['trx_level']]}")
    a.exec("none", "SET FOREIGN_KEY_CHECKS=0")  # as its connections run (tpcc_common.lua)
    a.exec("none", "SET autocommit=0")
    a.end()

    def nurand(dst: Reg, big_a: int, x: int, y: int) -> None:
        a.unif(cc, 0, big_a)  # its C, drawn again at every call
        a.nurand(dst, big_a, x, y, cc)

    a.event()
    kinds = p.dispatch()

    # ---- NewOrder ----
    a.here(kinds[0])
    a.type(0)
    a.unif(p.n, 1, p.sets)
    a.unif(w, 1, p.scale)
    a.unif(d, 1, DIST_PER_WARE)
    nurand(c, 1023, 1, CUST_PER_DIST)
    a.unif(nlines, 5, MAX_LINES)
    a.unif(rbk, 1, 100)
    a.mov(all_local, 1)
    drawn = a.label()
    for i in range(MAX_LINES):
        a.ge(t, i, nlines)
        a.jnz(t, drawn)
        nurand(items[i], 8191, 1, MAX_ITEMS)
        kept, local = a.label(), a.label()
        a.sub(t, nlines, 2)  # the second-to-last line (its i == ol_cnt - 1, 1-based) is the unused item
        a.ne(t, t, i)
        a.jnz(t, kept)
        a.ne(t, rbk, 1)
        a.jnz(t, kept)
        a.mov(items[i], -1)
        a.here(kept)
        a.mov(supply[i], w)  # its other_ware() returns the home warehouse
        a.unif(t, 1, 100)
        a.ne(t, t, 1)
        a.jnz(t, local)
        a.mov(all_local, 0)
        a.here(local)
        a.unif(qty[i], 1, 10)
    a.here(drawn)
    p.other("BEGIN")
    discount, last, credit, w_tax = a.regs(4)
    p.run("no_cust", w, d, c, into=[discount, last, credit, w_tax])
    o_id, d_tax, next_o = a.regs(3)
    p.run("no_dist", w, d, into=[o_id, d_tax])
    a.trunc(o_id, o_id)
    a.add(next_o, o_id, 1)
    p.run("no_dist_upd", next_o, d, w)
    p.run("no_order", o_id, d, w, c, nlines, all_local)
    p.run("no_new", o_id, d, w)
    found, price, left, amount = a.regs(4)
    stock = a.regs(3)
    committed = a.label()
    for i in range(MAX_LINES):
        a.ge(t, i, nlines)
        a.jnz(t, committed)
        have = a.label()
        p.run("no_item", items[i], rows=found, into=[price])
        a.jnz(found, have)
        p.other("ROLLBACK")  # i_id = -1 (sysbench-tpcc counts an error; here a NewOrder rollback, as the Python's)
        a.rollmark()
        a.end()
        a.here(have)
        # the stock row with its district's one s_dist column: a statement per district
        read = [a.label() for _ in range(DIST_PER_WARE)]
        done = a.label()
        for k, label in enumerate(read, 1):
            a.eq(t, d, k)
            a.jnz(t, label)
        for k, label in enumerate(read, 1):
            a.here(label)
            p.run(f"no_stock_{k}", items[i], supply[i], into=stock)
            a.jmp(done)
        a.here(done)
        more = a.label()
        a.sub(left, stock[0], qty[i])
        a.gt(t, stock[0], qty[i])
        a.jnz(t, more)
        a.add(left, left, 91)
        a.here(more)
        p.run("no_stock_upd", left, items[i], supply[i])
        p.amount(amount, qty[i], price, w_tax, d_tax, discount)
        a.trunc(amount, amount)  # its %d
        p.run("no_line", o_id, d, w, i + 1, items[i], supply[i], qty[i], amount, stock[2])
    a.here(committed)
    p.other("COMMIT")
    a.end()

    by_name, c_w, c_d, h_amount, last_name, num, count, nrows, idx = a.regs(9)

    def by_last_name(key: str, cw: Reg, cd: Reg, row: list[Reg], id_col: int) -> None:
        """Its count, made even when odd and over 1, then the row count / 2 + 1 (1-based) of the list by first
        name; c unchanged when there is none."""
        even, none = a.label(), a.label()
        p.run("name_count", cw, cd, last_name, into=[count])
        p.run(key, cw, cd, last_name, rows=nrows)
        a.jz(nrows, none)
        a.mod(t, count, 2)
        a.jz(t, even)
        a.le(t, count, 1)
        a.jnz(t, even)
        a.add(count, count, 1)
        a.here(even)
        a.idiv(idx, count, 2)
        a.sub(t, nrows, 1)
        a.min(idx, idx, t)
        a.row(row, idx)
        a.trunc(c, row[id_col])
        a.here(none)

    def customer_inputs() -> None:
        a.unif(p.n, 1, p.sets)
        a.unif(w, 1, p.scale)
        a.unif(d, 1, DIST_PER_WARE)
        nurand(c, 1023, 1, CUST_PER_DIST)

    def last_name_inputs() -> None:
        nurand(num, 255, 0, 999)
        p.lastname(last_name, num)
        a.unif(t, 1, 100)
        a.le(by_name, t, 60)

    # ---- Payment ----
    a.here(kinds[1])
    a.type(1)
    customer_inputs()
    a.unif(h_amount, 1, 5000)
    last_name_inputs()
    home, done_home = a.label(), a.label()
    a.mov(c_w, w)
    a.unif(t, 1, 100)
    a.le(t, t, 85)
    a.jnz(t, home)
    a.unif(c_d, 1, DIST_PER_WARE)
    a.jmp(done_home)
    a.here(home)
    a.mov(c_d, d)
    a.here(done_home)
    p.other("BEGIN")
    ware, dist6 = a.regs(6), a.regs(6)
    p.run("pay_ware_upd", h_amount, w)
    p.run("pay_ware", w, into=ware)
    p.run("pay_dist_upd", h_amount, w, d)
    p.run("pay_dist", w, d, into=dist6)
    by_id = a.label()
    a.jz(by_name, by_id)
    by_last_name("pay_by_name", c_w, c_d, a.regs(1), 0)
    a.here(by_id)
    cust = a.regs(15)
    p.run("pay_cust", c_w, c_d, c, into=cust)
    balance, ytd, c_data, h_data, now = a.regs(5)
    a.sub(balance, cust[12], h_amount)
    a.add(balance, balance, 0.0)
    a.add(ytd, cust[13], h_amount)
    a.add(ytd, ytd, 0.0)
    good, history = a.label(), a.label()
    a.eq(t, cust[9], "BC")
    a.jz(t, good)
    p.run("pay_cdata", c_w, c_d, c, into=[c_data])
    a.time(now)
    a.format(c_data, "| %4d %2d %4d %2d %4d $%7.2f %12s %24s", c, c_d, c_w, d, w, h_amount, now, c_data)
    a.substr(c_data, c_data, 500)
    p.run("pay_cust_bc", Fixed(balance, 6), Fixed(ytd, 6), c_data, c_w, c_d, c)
    a.jmp(history)
    a.here(good)
    p.run("pay_cust_upd", Fixed(balance, 6), Fixed(ytd, 6), c_w, c_d, c)
    a.here(history)
    a.format(h_data, "%10s %10s   ", ware[5], dist6[5])
    p.run("pay_hist", c_d, c_w, c, d, w, h_amount, h_data)
    p.other("COMMIT")
    a.end()

    # ---- OrderStatus ----
    a.here(kinds[2])
    a.type(2)
    customer_inputs()
    last_name_inputs()
    p.other("BEGIN")
    by_id2, order = a.label(), a.label()
    a.jz(by_name, by_id2)
    by_last_name("os_by_name", w, d, a.regs(4), 3)
    a.jmp(order)
    a.here(by_id2)
    p.run("os_cust", w, d, c)
    a.here(order)
    p.run("os_order", w, d, c)  # every order of the customer, newest first; its number is not used
    p.run("os_lines", w, d, d)  # its order number is the district id
    p.other("COMMIT")
    a.end()

    p.last_two(kinds, w, d, retry=False)
    return a.program(values, (dict(options),))


def program(options: Mapping[str, Any]) -> VmProgram:
    """The program of the options' mode."""
    if options.get("mode", "spec") == "sysbench-tpcc":
        return sysbench_program(options)
    return spec_program(options)
