"""Fragmentation for a demand mix and the placement that adds least of it (issue 38)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.protocols.cluster import ClusterView
from drfemu.protocols.fragmentation import fragmentation_delta, fragmented, least_fragmentation


def test_the_worked_example_of_the_module_docstring() -> None:
    mix = [(1.0, 1.0), (1.0, 0.25), (2.0, 0.0)]
    assert fragmented((4.0, 0.5), (8.0, 1.0), mix) == pytest.approx([4 / 3, 1 / 3])


def test_an_empty_mix_fragments_nothing_and_a_crashed_server_holds_nothing() -> None:
    assert fragmented((4.0, 0.5), (8.0, 1.0), []) == [0.0, 0.0]
    assert fragmented((float("-inf"), float("-inf")), (8.0, 1.0), [(1.0, 1.0)]) == [0.0, 0.0]


def test_a_fractional_gpu_task_goes_where_it_leaves_whole_gpus_usable() -> None:
    # (cpu, gpu). Server 0 has one whole GPU free, server 1 a remnant of 0.6. The mix wants whole
    # GPUs and half GPUs. Best-fit by DRFH's heuristic prefers neither by GPU; the least
    # fragmentation puts the half-GPU task in the remnant, keeping server 0's whole GPU usable.
    free, capacity = [(8.0, 1.0), (8.0, 0.6)], [(8.0, 1.0), (8.0, 1.0)]
    mix = [(1.0, 1.0), (1.0, 0.5)]
    scale = (1 / 16, 1 / 2)
    assert least_fragmentation((1.0, 0.5), free, capacity, mix, scale) == 1
    assert fragmentation_delta((1.0, 0.5), free[0], capacity[0], mix, scale) > fragmentation_delta(
        (1.0, 0.5), free[1], capacity[1], mix, scale)


def test_it_fits_nowhere_or_falls_back_to_the_first_fitting_server_without_a_mix() -> None:
    assert least_fragmentation((9.0, 0.0), [(8.0, 1.0)], [(8.0, 1.0)], [(1.0, 0.0)], (1.0, 1.0)) == -1
    assert least_fragmentation((1.0, 0.0), [(0.5, 1.0), (8.0, 1.0), (8.0, 1.0)], [(8.0, 1.0)] * 3, [],
                               (1.0, 1.0)) == 1


amounts = st.floats(min_value=0.05, max_value=10.0, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(servers=st.lists(st.tuples(amounts, amounts, st.sampled_from([0.0, 1.0, 2.0, 8.0])), min_size=1, max_size=8),
       mix=st.lists(st.tuples(amounts, amounts, st.sampled_from([0.0, 0.25, 0.5, 1.0])), min_size=1, max_size=5),
       resource=st.integers(0, 2), factor=st.sampled_from([1e-3, 1e3]))
def test_the_choice_does_not_depend_on_units(servers: list, mix: list, resource: int, factor: float) -> None:
    def scaled(v: tuple) -> tuple:
        return tuple(x * factor if r == resource else x for r, x in enumerate(v))

    plain, rescaled = ClusterView(servers), ClusterView([scaled(s) for s in servers])
    demand = mix[0]
    chosen = least_fragmentation(demand, plain.free, plain.capacity, mix, plain.scale)
    again = least_fragmentation(scaled(demand), rescaled.free, rescaled.capacity, [scaled(d) for d in mix],
                                rescaled.scale)
    assert chosen == again


def test_a_server_learns_the_mix_from_its_users_and_the_walks_it_sees_and_scores_by_it() -> None:
    from drfemu.kernel.messages import Proposal
    from drfemu.protocols.placement import FitWalk
    from tests.test_distributed_roles import node, request

    s = node(capacity=(8.0, 1.0), homed={100: 0.1}, fit_candidates=1, placement="min-fragmentation",
             scale=(1 / 16, 1 / 2))
    s.receive(request(100, 0, 0.0, (1.0, 1.0)), 0.0)
    s.receive(FitWalk(101, 0, (1.0, 0.5), 7, 1, (7, 0), (), -1, float("inf"), 1), 0.0)  # a walk passes by
    assert s.mix is not None and s.mix.demands == {100: (1.0, 1.0), 101: (1.0, 0.5)}
    assert [m for _, m in s.take_outbox() if isinstance(m, Proposal)] == [Proposal(0, 0)]  # it fits: proposed here
    assert s._fit_score(101, (1.0, 0.5)) == pytest.approx(
        fragmentation_delta((1.0, 0.5), s.free, s.capacity, [(1.0, 1.0), (1.0, 0.5)], (1 / 16, 1 / 2)))


def test_a_server_told_the_workload_s_mix_scores_by_it_from_the_start() -> None:
    """`--fragmentation-mix workload` (issue 52): every user's demand is known before any task is
    seen; a demand heard later replaces that user's entry, never adds a second."""
    from tests.test_distributed_roles import node

    known = ((100, (1.0, 1.0)), (101, (2.0, 0.0)))
    s = node(capacity=(8.0, 1.0), homed={100: 0.1}, fit_candidates=1, placement="min-fragmentation",
             scale=(1 / 16, 1 / 2), known_mix=known)
    assert s.mix is not None and s.mix.demands == dict(known)
    assert s._fit_score(101, (2.0, 0.0)) == pytest.approx(
        fragmentation_delta((2.0, 0.0), s.free, s.capacity, [(1.0, 1.0), (2.0, 0.0)], (1 / 16, 1 / 2)))
    s.mix.note(101, (3.0, 0.0))
    assert s.mix.demands == {100: (1.0, 1.0), 101: (3.0, 0.0)}


def test_a_run_gives_every_server_every_user_s_demand_only_when_asked() -> None:
    from drfemu.assembly.config import RunConfig
    from drfemu.assembly.distributed import known_mix
    from drfemu.workloads.google import google_case

    workload = google_case(10, 3, 1)
    asked = RunConfig.build(workload, protocol="bdgdrf", placement="min-fragmentation", fragmentation_mix="workload")
    assert [demand for _, demand in known_mix(asked)] == [u.demand for u in workload.users]
    assert [user for user, _ in known_mix(asked)] == list(asked.ids.users)
    assert known_mix(RunConfig.build(workload, protocol="bdgdrf", placement="min-fragmentation")) == ()


def test_the_harness_keeps_the_cluster_fragmentation_up_to_date_server_by_server() -> None:
    import numpy as np

    from drfemu.kernel.events import ServerCrashed
    from drfemu.observers.harness import Harness, Limits, Listeners
    from drfemu.protocols.fragmentation import fragmented_matrix
    from tests.conftest import cluster

    capacities = [(8.0, 1.0), (8.0, 2.0), (4.0, 0.0)]
    demands = [(1.0, 1.0), (1.0, 0.25), (2.0, 0.0)]
    h = Harness(cluster(capacities, demands), [10, 11, 12], Limits(0.1, 10, 100.0), Listeners(lambda o: None))

    def expected() -> list[float]:
        rows = fragmented_matrix(np.asarray(h.free), np.asarray(capacities), np.asarray(demands))
        rows[sorted(h.down)] = 0.0
        return (rows.sum(axis=0) / np.asarray(h.total)).tolist()

    assert h.fragmentation()[0] == pytest.approx(expected())
    for server, user in ((0, 11), (1, 10), (1, 11), (2, 12)):
        h.on_allocation(1.0, server, user, 0, demands[user - 10])
        assert h.fragmentation()[0] == pytest.approx(expected())
    h.on_crashed(ServerCrashed(2.0, 1))
    assert h.fragmentation()[0] == pytest.approx(expected())
