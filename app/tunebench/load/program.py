"""Statement programs: a family's transactions in the form the compiled loop (load/_hotloop.c's VM) runs.

A family writes its transactions once more, beside its Python code (the reference implementation), with this
assembler: registers, random draws, arithmetic, statements sent as text with values from registers, their rows
read back into registers, branches, loops, a retry point (a deadlock or lock wait rolls back and runs again from
there), transaction types, rollback and error marks, and pacing. The loop runs a whole event in C with the GIL
released; what reaches the server is what the Python loop sends (tests/integration/test_both_loops.py compares
the server's Com_* per transaction on both loops for every family).

    a = Asm(types=2)
    w, d = a.reg(), a.reg()
    a.event()                              # the event's entry point (a.init() marks code run once per connection)
    a.unif(w, 1, a.param("scale"))         # a per-connection value, given when the connection opens
    a.exec("read", "SELECT d_tax FROM district%d WHERE d_w_id = ?", n, w, into=[tax])
    a.end()

Statement and format texts take `?` (the value as an SQL literal: NULL, a number, a quoted and escaped string)
and printf's `%d`, `%4d`, `%09d` (zero-padded), `%-10s`, `%.2f`, `%7.2f`, `%s` (a value rendered as it is: table
numbers, Lua-style formatting). Registers are untyped: a DECIMAL column read back is a string that arithmetic
reads as a double.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# instruction numbers, as _hotloop.c's enum
(I_END, I_MOV, I_UNIF, I_NURAND, I_ADD, I_SUB, I_MUL, I_DIV, I_IDIV, I_MOD, I_BOR, I_MIN, I_MAX, I_EQ, I_NE, I_LT,
 I_LE, I_GT, I_GE, I_NOT, I_TRUNC, I_ROUND, I_JMP, I_JZ, I_JNZ, I_EXEC, I_ROW, I_FMT, I_APPEND, I_SUBSTR, I_PICK,
 I_MOVI, I_TYPE, I_ROLLMARK, I_ERRMARK, I_RETRY, I_TIME, I_RSTR, I_PACE, I_COALESCE, I_NROWS, I_FINISH, I_SEND,
 I_RECV) = range(44)
CLASSES = {"read": 0, "write": 1, "other": 2, "none": 3}
F_SQL, F_INT, F_FLT, F_STR = range(4)
MARK = re.compile(r"\?|%(-?\d*)(?:\.(\d+))?([dfs])")
MAX_RETRIES = 100


@dataclass(frozen=True, slots=True)
class Reg:
    n: int


@dataclass(frozen=True, slots=True)
class Fixed:
    """A value sent at `?` as a number with this many decimals (a double's default is 2)."""

    value: Reg
    decimals: int


@dataclass(slots=True)
class Label:
    pc: int = -1


Value = Reg | Fixed | int | float | str | bytes | None


@dataclass(frozen=True, slots=True)
class VmProgram:
    """A finished program (picklable: it goes to the worker processes). `params` names the registers a
    connection's values go to; `values` (a module-level function, so it pickles) gives them per connection."""

    consts: tuple[Any, ...]
    fmts: tuple[tuple[tuple[bytes, ...], tuple[tuple[int, int, int, int], ...]], ...]
    code: tuple[tuple[int, ...], ...]
    nregs: int
    ntypes: int
    init_pc: int
    event_pc: int
    max_retries: int
    params: tuple[tuple[str, int], ...]
    values: Callable[..., Mapping[str, Any]] | None = None
    values_args: tuple[Any, ...] = ()
    kept: tuple[tuple[str, int], ...] = ()  # registers whose values outlive a reconnect (Slot keeps them)

    def as_args(self) -> tuple[Any, ...]:
        return (list(self.consts), list(self.fmts), list(self.code), self.nregs, self.ntypes, self.init_pc,
                self.event_pc, self.max_retries)

    def registers(self, slot: int, slots: int, run_nonce: int,
                  kept: Mapping[str, Any] | None = None) -> list[tuple[int, Any]]:
        """One connection's parameter registers and their values, and the kept ones' values from before a
        reconnect."""
        out: list[tuple[int, Any]] = []
        if self.values is not None:
            given = self.values(*self.values_args, slot=slot, slots=slots, run_nonce=run_nonce)
            index = dict(self.params)
            missing = set(index) - set(given)
            if missing:
                raise ValueError(f"no value for the program's parameters {sorted(missing)}")
            out = [(index[name], _const(given[name])) for name in index]
        return out + [(r, _const(kept[name])) for name, r in self.kept if kept and kept.get(name) is not None]


def _const(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        return value.encode()
    return value


@dataclass
class Asm:
    """The assembler: instructions as methods, registers and labels by object."""

    types: int = 1
    max_retries: int = MAX_RETRIES
    consts: list[Any] = field(default_factory=list)
    fmts: list[Any] = field(default_factory=list)
    code: list[list[Any]] = field(default_factory=list)
    nregs: int = 0
    init_pc: int = -1
    event_pc: int = -1
    params: dict[str, Reg] = field(default_factory=dict)
    kept: dict[str, Reg] = field(default_factory=dict)
    _const_index: dict[tuple[type, Any], int] = field(default_factory=dict)

    # ---- registers, constants, labels -------------------------------------------------------------------
    def reg(self) -> Reg:
        self.nregs += 1
        return Reg(self.nregs - 1)

    def regs(self, n: int) -> list[Reg]:
        """n consecutive registers (a row's columns, a table to pick from)."""
        return [self.reg() for _ in range(n)]

    def param(self, name: str) -> Reg:
        """The register of a per-connection value (VmProgram.registers fills it)."""
        if name not in self.params:
            self.params[name] = self.reg()
        return self.params[name]

    def keep(self, name: str) -> Reg:
        """A register whose value outlives a reconnect (a count of rows done)."""
        if name not in self.kept:
            self.kept[name] = self.reg()
        return self.kept[name]

    def const(self, value: Any) -> int:
        value = _const(value)
        key = (type(value), value)
        if key not in self._const_index:
            self._const_index[key] = len(self.consts)
            self.consts.append(value)
        return self._const_index[key]

    def ref(self, x: Value) -> int:
        if isinstance(x, Fixed):
            return x.value.n
        if isinstance(x, Reg):
            return x.n
        return -1 - self.const(x)

    def label(self) -> Label:
        return Label()

    def here(self, label: Label) -> None:
        label.pc = len(self.code)

    def init(self) -> None:
        """The code from here runs once per connection before its first event (up to an end())."""
        self.init_pc = len(self.code)

    def event(self) -> None:
        """The code from here is one event (up to an end())."""
        self.event_pc = len(self.code)

    def _emit(self, op: int, *operands: Any) -> None:
        self.code.append([op, *operands])

    # ---- formats ------------------------------------------------------------------------------------------
    def fmt(self, template: str, args: Sequence[Value]) -> int:
        pieces: list[bytes] = []
        out: list[tuple[int, int, int, int]] = []
        pos = 0
        for m in MARK.finditer(template):
            pieces.append(template[pos:m.start()].encode())
            pos = m.end()
            if m.group(0) == "?":
                kind, width, prec = F_SQL, 0, 2
            else:
                kind = {"d": F_INT, "f": F_FLT, "s": F_STR}[m.group(3)]
                width = int(m.group(1)) if m.group(1) not in ("", "-") else 0
                prec = int(m.group(2)) if m.group(2) is not None else 6
                if kind == F_INT:  # its precision field says zero-padded (%09d), as printf's 0 flag
                    prec = int(m.group(1).startswith("0"))
            out.append((0, kind, width, prec))
        pieces.append(template[pos:].encode())
        if len(out) != len(args):
            raise ValueError(f"{len(out)} markers, {len(args)} values: {template!r}")
        out = [(self.ref(a), kind, width, a.decimals if isinstance(a, Fixed) and kind == F_SQL else prec)
               for a, (_r, kind, width, prec) in zip(args, out, strict=True)]
        self.fmts.append((tuple(pieces), tuple(out)))
        return len(self.fmts) - 1

    # ---- instructions --------------------------------------------------------------------------------------
    def mov(self, dst: Reg, x: Value) -> None:
        self._emit(I_MOV, dst.n, self.ref(x))

    def unif(self, dst: Reg, lo: Value, hi: Value) -> None:
        """A uniform integer in [lo, hi]."""
        self._emit(I_UNIF, dst.n, self.ref(lo), self.ref(hi))

    def nurand(self, dst: Reg, a: Value, x: Value, y: Value, c: Value) -> None:
        """TPC-C's NURand(A, x, y) with constant C: ((random(0, A) | random(x, y)) + C) % (y - x + 1) + x."""
        self._emit(I_NURAND, dst.n, self.ref(a), self.ref(x), self.ref(y), self.ref(c))

    def _bin(op: int) -> Callable[[Asm, Reg, Value, Value], None]:  # type: ignore[misc]
        def emit(self: Asm, dst: Reg, x: Value, y: Value) -> None:
            self._emit(op, dst.n, self.ref(x), self.ref(y))
        return emit

    add, sub, mul, div, idiv, mod, bor = (_bin(I_ADD), _bin(I_SUB), _bin(I_MUL), _bin(I_DIV), _bin(I_IDIV),
                                          _bin(I_MOD), _bin(I_BOR))
    min, max = _bin(I_MIN), _bin(I_MAX)
    eq, ne, lt, le, gt, ge = _bin(I_EQ), _bin(I_NE), _bin(I_LT), _bin(I_LE), _bin(I_GT), _bin(I_GE)
    round = _bin(I_ROUND)  # round(dst, x, decimals): halves away from zero
    coalesce = _bin(I_COALESCE)
    substr = _bin(I_SUBSTR)  # substr(dst, x, n): the first n bytes

    def not_(self, dst: Reg, x: Value) -> None:
        self._emit(I_NOT, dst.n, self.ref(x))

    def trunc(self, dst: Reg, x: Value) -> None:
        """An integer, toward zero."""
        self._emit(I_TRUNC, dst.n, self.ref(x))

    def jmp(self, label: Label) -> None:
        self._emit(I_JMP, label)

    def jz(self, x: Value, label: Label) -> None:
        self._emit(I_JZ, self.ref(x), label)

    def jnz(self, x: Value, label: Label) -> None:
        self._emit(I_JNZ, self.ref(x), label)

    def exec(self, cls: str, template: str, *args: Value, rows: Reg | None = None,
             into: Sequence[Reg] = ()) -> None:
        """Send a statement (counted as `cls`: read, write, other or none); `rows` gets its row count, `into`
        (consecutive registers) the first row's first columns (NULLs without a row)."""
        self._emit(I_EXEC, self.fmt(template, args), CLASSES[cls], rows.n if rows else -1,
                   _consecutive(into), len(into))

    def send(self, cls: str, template: str, *args: Value) -> None:
        """Send a statement without waiting for its result: the program goes on (builds the next statement) while
        the server runs it, and recv() reads the result, as exec() does (its rows, its count as `cls`, a deadlock
        retried). Nothing else reaches the server in between (exec() or send() there is refused at run time). What
        the server receives is the same; only the client's time overlaps with the server's."""
        self._emit(I_SEND, self.fmt(template, args), CLASSES[cls])

    def recv(self) -> None:
        self._emit(I_RECV)

    def row(self, into: Sequence[Reg], index: Value) -> None:
        """Row `index` (0-based) of the last statement's rows into `into` (NULLs past the last)."""
        self._emit(I_ROW, _consecutive(into), len(into), self.ref(index))

    def nrows(self, dst: Reg) -> None:
        self._emit(I_NROWS, dst.n)

    def format(self, dst: Reg, template: str, *args: Value) -> None:
        self._emit(I_FMT, dst.n, self.fmt(template, args))

    def append(self, dst: Reg, template: str, *args: Value) -> None:
        self._emit(I_APPEND, dst.n, self.fmt(template, args))

    def pick(self, dst: Reg, table: Sequence[Any], index: Value) -> None:
        """dst = table[index] (constants)."""
        base = len(self.consts)
        for v in table:  # consecutive, not shared with equal constants
            self.consts.append(_const(v))
        self._emit(I_PICK, dst.n, base, len(table), self.ref(index))

    def movi(self, dst: Reg, table: Sequence[Reg], index: Value) -> None:
        """dst = table[index] (consecutive registers)."""
        self._emit(I_MOVI, dst.n, _consecutive(table), len(table), self.ref(index))

    def type(self, k: int) -> None:
        """The transaction type under way (its events, latencies and errors are counted as it)."""
        self._emit(I_TYPE, k)

    def rollmark(self) -> None:
        """A rollback the transaction profile asks for (TPC-C's 1 % NewOrders)."""
        self._emit(I_ROLLMARK)

    def errmark(self) -> None:
        self._emit(I_ERRMARK)

    def retry(self) -> None:
        """A deadlock or lock wait timeout after this point: ROLLBACK, count a retry, run again from here."""
        self._emit(I_RETRY)

    def time(self, dst: Reg) -> None:
        self._emit(I_TIME, dst.n)

    def rstr(self, dst: Reg, pool: bytes, length: Value) -> None:
        """`length` bytes at a random offset of `pool`."""
        self._emit(I_RSTR, dst.n, self.const(pool), self.ref(length))

    def pace(self, rows: Value, rate: Value) -> None:
        """The next event is due when `rows` are paid for at `rate` per second (the wait is not latency)."""
        self._emit(I_PACE, self.ref(rows), self.ref(rate))

    def finish(self) -> None:
        """This connection has no more work this run (iiBench's max_rows): it stops after this event."""
        self._emit(I_FINISH)

    def end(self) -> None:
        self._emit(I_END)

    def program(self, values: Callable[..., Mapping[str, Any]] | None = None,
                values_args: tuple[Any, ...] = ()) -> VmProgram:
        if self.event_pc < 0:
            raise ValueError("the program has no event() entry point")
        code = []
        for ins in self.code:
            out = []
            for x in ins:
                if isinstance(x, Label) and x.pc < 0:
                    raise ValueError("a jump to a label never placed")
                out.append(x.pc if isinstance(x, Label) else x)
            code.append(tuple(out))
        return VmProgram(tuple(self.consts), tuple(self.fmts), tuple(code), max(1, self.nregs), self.types,
                         self.init_pc, self.event_pc, self.max_retries,
                         tuple((name, r.n) for name, r in self.params.items()), values, values_args,
                         tuple((name, r.n) for name, r in self.kept.items()))


def _consecutive(regs: Sequence[Reg]) -> int:
    if not regs:
        return -1
    first = regs[0].n
    if [r.n for r in regs] != list(range(first, first + len(regs))):
        raise ValueError("registers not consecutive (take them with Asm.regs(n))")
    return first
