"""ADRF and the SWM optimum (seed 002 §III–IV) and the ADRF-vs-SWM experiment."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.policies.adrf import BETAS, AdrfModel, adrf, social_welfare, swm
from drfemu.policies.drf_filling import drf_divisible
from drfemu.policies.pool import PolicyInputError

pytest.importorskip("cvxpy", reason="ADRF against the SWM optimum needs cvxpy (the optimum extra)")

EXAMPLE = ((9, 18), [(1, 4), (3, 1)])  # seed 002 §III-A's example pool


def test_model_normalises_as_the_seed_does() -> None:
    model = AdrfModel.of(*EXAMPLE)
    assert [x for row in model.shares for x in row] == pytest.approx([1 / 9, 2 / 9, 1 / 3, 1 / 18])
    assert [x for row in model.normalised for x in row] == pytest.approx([1 / 2, 1, 1, 1 / 6])


def test_swm_with_log_utility_on_the_example() -> None:
    """Both resources bind: x = (10/11, 6/11) solves 0.5 x1 + x2 = 1 and x1 + x2 / 6 = 1."""
    _, x = swm(*EXAMPLE, alpha=1.0)
    assert x == pytest.approx((10 / 11, 6 / 11), rel=1e-5)


def test_swm_tends_to_drf_as_alpha_grows() -> None:
    drf = drf_divisible(*EXAMPLE).dominant_shares
    gaps = [max(abs(a - b) for a, b in zip(swm(*EXAMPLE, alpha=alpha)[1], drf)) for alpha in (1.0, 2.0, 8.0, 40.0)]
    assert gaps == sorted(gaps, reverse=True) and gaps[-1] < 0.01


def test_adrf_with_the_seeds_beta_is_divisible_drf() -> None:
    _, x = adrf(*EXAMPLE, alpha=1.5)
    assert x == pytest.approx(drf_divisible(*EXAMPLE).dominant_shares)


def test_adrf_with_positive_demands_is_eq_13() -> None:
    model, x = adrf(*EXAMPLE, alpha=2.0, beta="D-max")
    beta = [max(row) for row in model.shares]
    # x_i = 1 / (β_i^(1/α) · max_r Σ_j d_jr β_j^(−1/α)), the saturated resource being the binding one.
    denominator = max(sum(model.normalised[j][r] * beta[j] ** -0.5 for j in range(2)) for r in range(2))
    assert x == pytest.approx([1 / (b ** 0.5 * denominator) for b in beta])


pool = st.tuples(st.integers(1, 20), st.integers(1, 20))
demands = st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=2, max_size=6)


@settings(max_examples=40, deadline=None)
@given(capacity=pool, users=demands, alpha=st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]))
def test_swm_is_feasible_and_no_worse_than_adrf(capacity: tuple[int, int], users: list[tuple[int, int]],
                                                alpha: float) -> None:
    model, optimum = swm(capacity, users, alpha)
    for r in range(2):
        assert sum(model.normalised[i][r] * optimum[i] for i in range(len(users))) <= 1 + 1e-6
    best = social_welfare(optimum, alpha)
    for beta in BETAS:
        _, x = adrf(capacity, users, alpha, beta)
        assert max(sum(model.normalised[i][r] * x[i] for i in range(len(users))) for r in range(2)) == pytest.approx(1)
        assert social_welfare(x, alpha) <= best + 1e-6 * abs(best)


@pytest.mark.parametrize(("call", "needle"), [
    (lambda: adrf(*EXAMPLE, alpha=0.0), "alpha must be positive"),
    (lambda: swm(*EXAMPLE, alpha=-1.0), "alpha must be positive"),
    (lambda: adrf(*EXAMPLE, alpha=1.0, beta="max"), "unknown beta"),
])
def test_bad_alpha_and_beta_are_refused(call: object, needle: str) -> None:
    with pytest.raises(PolicyInputError, match=needle):
        call()  # type: ignore[operator]


def test_adrf_swm_experiment_reports_gaps_next_to_the_seed() -> None:
    from drfemu.studies.adrf_swm import adrf_vs_swm

    result = adrf_vs_swm(draws=4, seed=3)
    assert [row["alpha"] for row in result["rows"]] == [1.0, 1.5, 2.0]
    for row in result["rows"]:
        assert row["swm_mean_welfare"] >= row["adrf_d-max_mean_welfare"]
        assert 0 <= row["adrf_d-max_mean_gap"] < 0.2 and "seed_gap" in row
    assert adrf_vs_swm(draws=4, seed=3) == result  # deterministic
