"""DRFH best-fit, centrally (`drf-bestfit`) and by a placement walk (`--placement best-fit`)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.kernel.messages import Proposal, WalkFailed
from drfemu.protocols.cluster import ClusterView, drfh_heuristic
from drfemu.protocols.placement import FitPlace, FitWalk
from drfemu.protocols.walks import fit_walk_step
from tests.test_distributed_roles import node

amounts = st.floats(min_value=0.05, max_value=10.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(servers=st.lists(st.tuples(amounts, amounts, amounts), min_size=1, max_size=8),
       demand=st.tuples(amounts, amounts, st.sampled_from([0.0, 0.5, 1.0])),
       resource=st.integers(0, 2), factor=st.sampled_from([1e-3, 1e3]))
def test_best_fit_does_not_depend_on_units(servers: list, demand: tuple, resource: int, factor: float) -> None:
    def scaled(v: tuple) -> tuple:
        return tuple(x * factor if r == resource else x for r, x in enumerate(v))

    plain, rescaled = ClusterView(servers), ClusterView([scaled(s) for s in servers])
    chosen = plain.best_fit(demand)
    if chosen >= 0:  # equal heuristics up to rounding may flip a tie; the chosen one must tie the best
        h = [drfh_heuristic(scaled(demand), rescaled.free[s], rescaled.scale) for s in range(len(servers))
             if rescaled.fits_on(s, scaled(demand))]
        assert abs(drfh_heuristic(scaled(demand), rescaled.free[chosen], rescaled.scale) - min(h)) <= 1e-9 * max(
            1.0, min(h))
    else:
        assert rescaled.best_fit(scaled(demand)) == -1


def test_a_gpu_mismatch_counts_as_much_as_a_memory_one() -> None:
    # Resources: CPU, memory (GB), GPUs. Server 0 has GPUs, server 1 not; memory in large units.
    view = ClusterView([(8.0, 64.0, 4.0), (8.0, 60.0, 0.0)])
    # A CPU-only task goes to the server without GPUs, though its memory profile fits 0 slightly better.
    assert view.best_fit((1.0, 8.0, 0.0)) == 1
    # A GPU task can only go to server 0.
    assert view.best_fit((1.0, 8.0, 1.0)) == 0


def test_a_fit_walk_remembers_the_best_fitting_server_and_places_there() -> None:
    walk = FitWalk(7, 0, (1.0, 1.0), 4, 0, (4,), (), -1, float("inf"), 2)
    rng = random.Random(1)
    dst, walk = fit_walk_step(walk, 4, 0.5, [1, 2], ttl=10, rng=rng)
    assert isinstance(walk, FitWalk) and walk.best == 4 and walk.left == 1 and dst in (1, 2)
    dst2, walk2 = fit_walk_step(walk, dst, None, [], ttl=10, rng=rng)  # no room there: does not count
    assert isinstance(walk2, FitWalk) and walk2.left == 1
    end, place = fit_walk_step(walk2, dst2, 0.1, [], ttl=10, rng=rng)
    assert (end, place) == (dst2, FitPlace(7, 0, (1.0, 1.0), 4))


def test_a_fit_walk_that_saw_no_room_reports_to_the_home() -> None:
    walk = FitWalk(7, 0, (1.0, 1.0), 4, 0, (4,), (), -1, float("inf"), 3)
    assert fit_walk_step(walk, 4, None, [], ttl=10, rng=random.Random(1)) == (4, WalkFailed(7, 0))


def test_a_best_fit_server_proposes_locally_when_it_is_the_only_candidate() -> None:
    s = node(capacity=(4.0, 4.0), homed={100: 0.25}, fit_candidates=3, scale=(0.25, 0.25))
    s.receive(FitPlace(100, 0, (1.0, 1.0), 0), 0.0)
    assert s.take_outbox() == [(100, Proposal(0, 0))]
    s.receive(FitPlace(100, 1, (9.0, 1.0), 0), 0.0)  # taken meanwhile: an ordinary walk goes on
    assert s.placement["fit_misses"] == 1
