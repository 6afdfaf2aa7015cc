"""Fairness metrics against golden values (thesis §2.2, reference anchors §1.7)."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from drfemu.kernel.fairness import gini, jain, ratio_20_20, sample_std


@pytest.mark.parametrize(
    ("values", "g", "j", "r"),
    [
        ([1, 1, 1, 1], 0.0, 1.0, 1.0),
        ([0, 0, 0, 1], 0.75, 0.25, math.inf),
        ([1, 2, 3, 4, 5], 0.26667, 0.81818, 5.0),
        ([100, 200, 300, 400, 500], 0.26667, 0.81818, 5.0),
        (list(range(1, 11)), 0.30, 0.78571, 19 / 3),
        ([2 / 3, 2 / 3], 0.0, 1.0, 1.0),
        ([10 / 11, 6 / 11], 0.125, 0.94118, 10 / 6),
    ],
)
def test_golden_values(values: list[float], g: float, j: float, r: float) -> None:
    assert gini(values) == pytest.approx(g, abs=1e-5)
    assert jain(values) == pytest.approx(j, abs=1e-5)
    assert ratio_20_20(values) == pytest.approx(r)


def test_thesis_gini_examples() -> None:
    # Thesis §5 evaluation text: (A) 1,2,3,4,5 -> 0.267 and (B) 1,5,5,5,5 -> 0.152.
    assert gini([1, 2, 3, 4, 5]) == pytest.approx(0.267, abs=5e-4)
    assert gini([1, 5, 5, 5, 5]) == pytest.approx(0.152, abs=5e-4)


def test_sample_std_uses_n_minus_one() -> None:
    assert sample_std([1, 2, 3, 4]) == pytest.approx(math.sqrt(5 / 3))
    assert sample_std([7]) == 0.0


def test_all_zero_vector() -> None:
    assert gini([0, 0]) == 0.0
    assert jain([0, 0]) == 1.0
    assert math.isnan(ratio_20_20([0, 0]))


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        gini([])
    with pytest.raises(ValueError):
        jain([1, -1])


shares = st.lists(st.floats(min_value=0, max_value=1e3, allow_nan=False), min_size=1, max_size=60)


@given(shares)
def test_gini_bounds_and_brute_force(xs: list[float]) -> None:
    n, total = len(xs), sum(xs)
    g = gini(xs)
    assert -1e-12 <= g <= 1 - 1 / n + 1e-12
    if total > 0:
        brute = sum(abs(a - b) for a in xs for b in xs) / (2 * n * total)
        assert g == pytest.approx(brute, rel=1e-9, abs=1e-12)


@given(shares, st.floats(min_value=0.01, max_value=100))
@example([5.808626072513925e-161, 5.808626072513925e-161], 2.0)  # squares in the subnormal range
def test_scale_invariance(xs: list[float], k: float) -> None:
    assert gini([k * x for x in xs]) == pytest.approx(gini(xs), rel=1e-9, abs=1e-12)
    assert jain([k * x for x in xs]) == pytest.approx(jain(xs), rel=1e-9)


@given(shares)
def test_jain_bounds(xs: list[float]) -> None:
    assert 1 / len(xs) - 1e-12 <= jain(xs) <= 1 + 1e-12
