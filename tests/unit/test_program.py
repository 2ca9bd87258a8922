"""The statement-program assembler (load/program.py): what it hands the compiled loop, and what it refuses before
anything reaches C."""

import pickle

import pytest

from tunebench.load.program import F_FLT, F_INT, F_SQL, F_STR, I_EXEC, I_JMP, Asm, Fixed


def test_formats_take_sql_literals_and_printf_markers_with_their_widths_and_decimals():
    a = Asm()
    r = a.reg()
    k = a.fmt("x = ? AND y = '%-10s' AND z = %7.2f AND n = %4d AND m = ?", [r, r, r, 5, Fixed(r, 6)])
    pieces, args = a.fmts[k]
    assert pieces == (b"x = ", b" AND y = '", b"' AND z = ", b" AND n = ", b" AND m = ", b"")
    assert [(kind, width, prec) for _ref, kind, width, prec in args] == [
        (F_SQL, 0, 2), (F_STR, -10, 6), (F_FLT, 7, 2), (F_INT, 4, 0), (F_SQL, 0, 6)]
    k = a.fmt("O%09d", [r])  # zero-padded, as dbSTRESS's object refs: the C side's %0*lld
    assert a.fmts[k][1][0][1:] == (F_INT, 9, 1)
    assert args[3][0] == -1 - a.consts.index(5)  # a constant is a negative ref
    with pytest.raises(ValueError, match="2 markers, 1 values"):
        a.fmt("? ?", [r])


def test_labels_resolve_to_instructions_and_a_label_never_placed_is_refused():
    a = Asm()
    a.event()
    top = a.label()
    a.here(top)
    a.exec("read", "SELECT 1")
    a.jmp(top)
    prog = a.program()
    assert prog.code[0][0] == I_EXEC and prog.code[1] == (I_JMP, 0)
    b = Asm()
    b.event()
    b.jmp(b.label())
    with pytest.raises(ValueError, match="never placed"):
        b.program()
    with pytest.raises(ValueError, match="no event"):
        Asm().program()


def test_rows_go_to_consecutive_registers_only():
    a = Asm()
    x, y = a.reg(), a.reg()
    a.reg()
    z = a.reg()
    a.exec("read", "SELECT 1, 2", into=[x, y])
    with pytest.raises(ValueError, match="not consecutive"):
        a.exec("read", "SELECT 1, 2", into=[x, z])


def _values(options, *, slot, slots, run_nonce):
    return {"table": slot % options["tables"] + 1}


def test_a_program_pickles_and_gives_each_connection_its_registers_and_kept_values():
    a = Asm(types=2)
    table = a.param("table")
    done = a.keep("done")
    a.event()
    a.end()
    prog = pickle.loads(pickle.dumps(a.program(_values, ({"tables": 3},))))
    assert prog.registers(4, 8, 0) == [(table.n, 2)]
    assert prog.registers(4, 8, 0, {"done": 7}) == [(table.n, 2), (done.n, 7)]
    assert prog.ntypes == 2 and prog.as_args()[3] == prog.nregs
