import numpy as np
import pytest

from tunebench.load.oltp import C_TEMPLATE, PAD_TEMPLATE
from tunebench.load.randgen import draw, template_strings

OPTS = {"rand_spec_iter": 12, "rand_spec_pct": 1, "rand_spec_res": 75, "rand_pareto_h": 0.2}


@pytest.mark.parametrize("kind", ["uniform", "gaussian", "special", "pareto"])
def test_values_stay_in_range(kind):
    v = draw(np.random.default_rng(1), kind, 1, 10000, 50000, OPTS)
    assert v.min() >= 1 and v.max() <= 10000


def test_special_puts_75_percent_on_1_percent_near_the_middle():
    # sb_rand_special: with res=75 three quarters of draws land on t*pct/100 values around t/2
    v = draw(np.random.default_rng(2), "special", 1, 100000, 200000, OPTS)
    hot = (v >= 1 + 50000 - 500) & (v < 1 + 50000 + 500)
    assert 0.74 < hot.mean() < 0.80


def test_uniform_is_flat():
    v = draw(np.random.default_rng(3), "uniform", 1, 10, 100000, OPTS)
    counts = np.bincount(v)[1:]
    assert counts.min() > 9000


def test_template_strings_are_sysbench_shaped():
    c = template_strings(np.random.default_rng(4), C_TEMPLATE, 10)
    assert all(len(s) == 119 for s in c)
    parts = c[0].split(b"-")
    assert len(parts) == 10 and all(len(p) == 11 and p.isdigit() for p in parts)
    assert len(template_strings(np.random.default_rng(4), PAD_TEMPLATE, 1)[0]) == 59
