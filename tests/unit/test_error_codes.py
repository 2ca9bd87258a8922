"""A step's errors by server error code (issue 44 item 4): summed from its seconds, said the same way in the step
rows, the report and the tooltips, and an imported session's garbage in them shown as nothing, never a crash."""

import math

from tunebench.core.error_codes import clean_codes, codes_text
from tunebench.core.interval import Interval
from tunebench.core.stats import summarize
from tunebench.run.sweep_progress import Cell
from tunebench.ui.sweep_results import cell_tip


def _iv(t, errors, codes):
    return Interval(t=t, group="main", threads=4, tps=100.0, qps=2000.0, reads=1400.0, writes=400.0, other=200.0,
                    errors=errors, error_codes=codes)


def test_a_steps_codes_are_the_sum_of_its_seconds_and_add_up_to_its_errors():
    ivs = [_iv(1.0, 3, {1213: 2, 1205: 1}), _iv(2.0, 0, {}), _iv(3.0, 5, {1213: 5})]
    s = summarize("main", 4, ivs, detect_steady=False)
    assert s.errors == 8 and s.error_codes == {"1213": 7.0, "1205": 1.0}
    assert sum(s.error_codes.values()) == s.errors
    assert codes_text(s.error_codes) == "1213 deadlock: 7, 1205 lock wait timeout: 1"
    assert codes_text(s.error_codes, names=False) == "1213: 7, 1205: 1"
    tip = cell_tip("trx_commit=1", "4 threads", Cell(100.0, 1.0, 0.1, False, errors=8.0,
                                                     error_codes=codes_text(s.error_codes)))
    assert "! 8 errors during the step: 1213 deadlock: 7, 1205 lock wait timeout: 1" in tip


def test_garbage_codes_from_an_imported_session_are_left_out():
    assert clean_codes(None) == {} and clean_codes([1, 2]) == {} and codes_text("x") == ""
    assert clean_codes({"1213": "many", "x": 3, "-5": 2, "1205": math.nan, "1020": 1e308, "2006": -1,
                        "99999999": 4, "1062": 2}) == {1020: 1e308, 1062: 2.0}


def test_the_report_says_each_steps_codes_under_its_table():
    from tunebench.core.results import error_code_lines

    steps = [{"step": 1, "group": "main", "errors": 0}, {"step": 2, "group": "main", "errors": 12,
                                                         "error_codes": {"1213": 10, "1205": 2}}]
    assert error_code_lines(steps) == ["", "Errors by server error code:", "",
                                       "- step 2 main: 12 = 1213 deadlock: 10, 1205 lock wait timeout: 2"]
    assert error_code_lines(steps[:1]) == []
    assert error_code_lines([{"step": 3, "group": "main", "errors": 4}]) == [  # sysbench's: a count
        "", "Errors by server error code:", "",
        "- step 3 main: 4 (no codes recorded: sysbench, and sessions older than the codes, count errors only)"]
