"""Resource vectors, fit tolerance, dominant share; the central cluster view."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from drfemu.kernel.resources import REL_TOL, dominant_share, fits, total_capacity
from drfemu.protocols.cluster import ClusterView


def test_fit_is_per_resource() -> None:
    assert fits((1, 4), (9, 18), (9, 18))
    assert not fits((1, 19), (9, 18), (9, 18))
    assert fits((9, 18), (9, 18), (9, 18))


def test_fit_tolerates_rounding_not_overcommit() -> None:
    free = 1.0
    for _ in range(10):
        free -= 0.1  # leaves 1.3877787807814457e-16 rather than 0
    assert not fits((0.1,), (free,), (1.0,))
    assert fits((0.1,), (0.1 - 1e-15,), (1.0,))
    assert not fits((0.1,), (0.1 - 10 * REL_TOL,), (1.0,))


def test_dominant_share_drf_paper() -> None:
    total = (9, 18)
    assert dominant_share((1, 4), total) == 2 / 9
    assert dominant_share((3, 1), total) == 1 / 3


def test_total_capacity() -> None:
    assert total_capacity([(1, 2, 0), (3, 4, 1)]) == (4, 6, 1)


def test_best_fit_matches_drfh_heuristic() -> None:
    view = ClusterView([(2, 12), (12, 2), (6, 6)])
    assert view.best_fit((0.2, 1)) == 0  # memory-heavy task to the memory-rich server
    assert view.best_fit((1, 0.2)) == 1
    assert view.best_fit((1, 1)) == 2
    assert view.best_fit((20, 1)) == -1


def test_best_fit_handles_zero_first_resource() -> None:
    view = ClusterView([(4, 4, 0), (4, 4, 2)])
    assert view.best_fit((0, 1, 1)) == 1


capacities = st.lists(st.tuples(st.integers(1, 8), st.integers(1, 8)), min_size=1, max_size=8)
demands = st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=1, max_size=30)


@given(capacities, demands)
def test_first_fit_hints_agree_with_a_full_scan(caps: list[tuple[int, int]], tasks: list[tuple[int, int]]) -> None:
    view = ClusterView(caps)
    for k, demand in enumerate(tasks):
        user = k % 3
        expected = next((i for i, free in enumerate(view.free) if fits(demand, free, view.capacity[i])), -1)
        got = view.first_fit(demand, key=(user, demand))
        assert got == expected
        if got >= 0:
            view.reserve(got, demand)
        if k % 7 == 6 and got >= 0:
            view.release(got, demand)
