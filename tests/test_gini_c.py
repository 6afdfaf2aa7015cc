"""PDGDRF's Gini test in C (`src/native/_gini.c`) answers as its reference
(`protocols.pdgdrf.lowers_gini_python`) on the same floats, and its exact sum is `math.fsum`'s.
Whole PDGDRF runs with and without it are compared event by event in `test_engine_c.py`."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.protocols.pdgdrf import lowers_gini_python
from tests.conftest import compiled_or_skip

gini_c = compiled_or_skip("drfemu.protocols._gini")

finite = st.floats(allow_nan=False, allow_infinity=False)
# Values that make sums round at a tie or cancel: powers of two far apart, and their neighbours.
awkward = st.sampled_from([1.0, 2.0**53, 2.0**-53, 2.0**-1074, 1e16, 1e-16, 0.1, 1 / 3, -0.0, 0.0, 2.0**1023])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(finite, awkward, awkward.map(lambda x: -x)), max_size=30))
def test_the_exact_sum_is_math_fsum(values: list[float]) -> None:
    try:
        expected = math.fsum(values)
    except OverflowError:
        with pytest.raises(OverflowError):
            gini_c.fsum(values)
        return
    assert gini_c.fsum(values) == expected


def test_the_exact_sum_rounds_half_to_even() -> None:
    """1 + 2⁻⁵³ is a tie (rounds down to 1, even); a tiny rest past it tips it up."""
    assert gini_c.fsum([1.0, 2.0**-53]) == 1.0
    assert gini_c.fsum([1.0, 2.0**-53, 2.0**-105]) == 1.0 + 2.0**-52
    assert gini_c.fsum([1e16, 1.0, 1e-16]) == math.fsum([1e16, 1.0, 1e-16]) != sum([1e16, 1.0, 1e-16])


shares = st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.05, 0.1, 0.125, 0.2, 1 / 3, 0.5, 2.0**-60, 1e308]),
                   st.floats(0, 1e300))
utilities = st.one_of(shares.map(lambda x: -x), st.sampled_from([-math.inf, math.inf, math.nan, -0.0, 0.25]),
                      st.integers(-3, 0))


@settings(max_examples=1000, deadline=None)
@given(st.one_of(shares, st.sampled_from([math.nan, math.inf, -0.1])), st.one_of(shares, st.just(math.inf)),
       st.lists(utilities, max_size=40))
def test_the_compiled_test_answers_as_its_reference(share: float, task_share: float, utilities: list[float]) -> None:
    """Same answer, or the same error, on any input: exact floats take the C path, anything else
    (an int, a NaN, a negative share, an overflowing sum) is left to the reference."""
    try:
        expected: object = lowers_gini_python(share, task_share, utilities)
    except (ValueError, OverflowError) as error:
        with pytest.raises(type(error), match=re.escape(str(error))):
            gini_c.lowers_gini(share, task_share, utilities)
        return
    assert gini_c.lowers_gini(share, task_share, utilities) is expected
    assert gini_c.lowers_gini(share, task_share, iter(utilities)) is expected  # any iterable, as the reference
