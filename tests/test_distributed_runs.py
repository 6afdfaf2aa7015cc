"""End-to-end runs of the distributed protocols on small cases (the full grid is a script)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drfemu.assembly.config import RunConfig
from drfemu.assembly.run import run_emulation
from drfemu.schema.workload import Workload
from drfemu.workloads.google import google_case
from drfemu.workloads.synthetic import synthetic_case
from tests.conftest import workload

WALL_CLOCK_KEYS = {"wall_time_s", "events_per_s"}
DISTRIBUTED = ["probe", "ddrf-random", "ddrf-gradient", "dgdrf", "pdgdrf"]


def run(w: Workload, protocol: str, **kw: Any) -> dict[str, Any]:
    return run_emulation(RunConfig.build(w, protocol=protocol, **kw)).to_dict()


@pytest.mark.slow
@pytest.mark.parametrize("protocol", DISTRIBUTED)
def test_small_google_case_runs_to_an_end_and_reports_its_parameters(protocol: str) -> None:
    r = run(google_case(30, 6, 1), protocol, neighbors=3)
    assert r["status"] in ("saturated", "stalled")
    assert sum(r["tasks"].values()) == r["allocations"] == r["messages"]["TaskStarted"]
    assert all(0 <= u <= 1 + 1e-9 for u in r["utilization"].values())
    assert r["distributed"] and r["neighbors"] == 3 and r["shuffles_per_tick"] == 1.0 and r["mark_saturated"]
    assert r["walk_ttl"] == 30 and r["cyclon_view"] == 10 and r["shuffle_length"] == 5
    assert set(r["error_series"]) == {"allocations", "0", "0.01", "0.05", "0.1", "0.15"}
    assert r["messages_per_allocation"] == pytest.approx(r["messages_total"] / r["allocations"])
    placed = r["placement"]
    assert placed["proposals"] == r["allocations"] + placed["declined"]
    assert set(r["messages"]) == set(r["bytes"])


@pytest.mark.slow
@pytest.mark.parametrize("protocol", DISTRIBUTED)
def test_same_config_same_result(protocol: str) -> None:
    w = google_case(30, 6, 2)
    a, b = (run(w, protocol, neighbors=2, seed=5) for _ in range(2))
    assert {k: v for k, v in a.items() if k not in WALL_CLOCK_KEYS} == {
        k: v for k, v in b.items() if k not in WALL_CLOCK_KEYS}


@pytest.mark.slow
@pytest.mark.parametrize(("machines", "users", "p"), [(40, 8, 2), (40, 8, 5), (60, 12, 3)])
def test_dgdrf_makes_no_error_and_pdgdrf_is_faster(machines: int, users: int, p: int) -> None:
    w = google_case(machines, users, 1)
    dgdrf, pdgdrf = run(w, "dgdrf", neighbors=p), run(w, "pdgdrf", neighbors=p)
    assert dgdrf["saturated"] and dgdrf["error_ratio"] == 0.0
    assert pdgdrf["saturated"] and pdgdrf["run_time_s"] < dgdrf["run_time_s"]
    assert pdgdrf["overlay"]["allocations_by_gini"] > 0


@pytest.mark.slow
def test_ddrf_random_and_the_thesis_probe_err_far_more_than_the_gradient_protocols() -> None:
    w = google_case(60, 12, 1)
    errors = {p: run(w, p, neighbors=2)["error_ratio"] for p in ("ddrf-random", "dgdrf")}
    errors["probe"] = run(w, "probe", neighbors=2, probe_retry=0, probe_band=0.0)["error_ratio"]
    assert errors["probe"] > 0.5 and errors["ddrf-random"] > 0.5 and errors["dgdrf"] == 0.0


@pytest.mark.slow
def test_our_probe_ends_saturated_near_drf_where_the_thesis_probe_stalls() -> None:
    w = google_case(60, 12, 1)
    drf = run(w, "drf")["min_dominant_share"]
    ours = run(w, "probe", neighbors=5)
    thesis = run(w, "probe", neighbors=5, probe_retry=0, probe_band=0.0)
    assert thesis["stalled"] and thesis["min_dominant_share"] < 0.5 * drf
    assert ours["saturated"] and ours["min_dominant_share"] >= 0.9 * drf
    assert ours["messages"]["LowestShare"] > 0 and "LowestShare" not in thesis["messages"]


def test_ddrf_gradient_servers_freeze_settled_views_before_allocating() -> None:
    r = run(google_case(30, 6, 1), "ddrf-gradient", neighbors=2)
    overlay = r["overlay"]
    assert overlay["gradient"] == "frozen" and overlay["frozen_servers"] == 30
    assert overlay["homes_frozen"] == overlay["homes_frozen_on_ideal_view"] == r["homes"]  # the local rule was right
    assert 20 * 0.1 <= overlay["frozen_at_s"] <= r["run_time_s"]  # at least `freeze_after` ticks of a stable view
    assert r["messages"]["GradientShuffle"] <= 30 * round(overlay["frozen_at_s"] / 0.1)  # no gossip once frozen


def test_ddrf_polling_cost_is_two_messages_per_home_and_neighbour_per_tick() -> None:
    # Eq. 4.3 counts 2·|S|·P a tick in the worst case (every server a home).
    r = run(google_case(30, 6, 1), "ddrf-random", neighbors=4)
    assert r["messages"]["MinShareRequest"] == r["homes"] * 4 * r["ticks"]
    assert r["messages"]["MinShareReply"] == r["messages"]["MinShareRequest"]
    assert r["bytes"]["MinShareRequest"] == r["messages"]["MinShareRequest"] * (8 + 6 + 28)


@pytest.mark.slow
@pytest.mark.parametrize("shuffles", [1.0, 2.0, 0.5])
def test_gradient_cost_per_tick_follows_eq_4_6(shuffles: float) -> None:
    p, servers = 3, 30
    r = run(google_case(servers, 6, 1), "dgdrf", neighbors=p, shuffles_per_tick=shuffles)
    exchanges = r["messages"]["GradientShuffle"]
    rounds = r["ticks"] * shuffles
    assert servers * (rounds - 1) <= exchanges <= servers * (rounds + 1)
    assert r["messages"]["GradientReply"] == exchanges
    # Eq. 4.5 with this emulator's descriptor (utility and stamp: two numbers, one address).
    assert r["bytes"]["GradientShuffle"] == exchanges * ((p + 1) * (2 * 8 + 6) + 28)


@pytest.mark.slow
def test_idle_servers_thin_the_layer_they_are_told_to_and_the_run_still_saturates() -> None:
    """With `idle_cyclon_every = 4` the servers without users start about a quarter of their
    Cyclon shuffles and all their gradient exchanges, the homes all of both; and the other way
    round with `idle_gradient_every = 4`."""
    w = google_case(30, 6, 1)
    full = run(w, "pdgdrf", neighbors=2)
    cyclon = run(w, "pdgdrf", neighbors=2, idle_cyclon_every=4)
    gradient = run(w, "pdgdrf", neighbors=2, idle_gradient_every=4)
    assert (full["idle_cyclon_every"], full["idle_gradient_every"]) == (1, 1)
    assert (cyclon["idle_cyclon_every"], gradient["idle_gradient_every"]) == (4, 4)

    def started_per_round(r: dict[str, Any], kind: str) -> float:
        assert r["saturated"]
        return r["messages"][kind] / r["ticks"]

    thinned = cyclon["homes"] + (30 - cyclon["homes"]) / 4
    assert started_per_round(full, "CyclonShuffle") == started_per_round(full, "GradientShuffle") == 30
    assert started_per_round(cyclon, "CyclonShuffle") == pytest.approx(thinned, abs=1.5)
    assert started_per_round(cyclon, "GradientShuffle") == 30
    assert started_per_round(gradient, "GradientShuffle") == pytest.approx(thinned, abs=1.5)
    assert started_per_round(gradient, "CyclonShuffle") == 30


def test_a_user_that_fits_nowhere_is_left_out_and_others_saturate() -> None:
    w = workload([[4, 4], [4, 4], [2, 2]], [[1, 1], [5, 5], [1, 2]])
    for protocol in ("dgdrf", "pdgdrf", "ddrf-random", "ddrf-gradient"):
        r = run(w, protocol, neighbors=2)
        assert r["saturated"] and r["unplaceable_users"] == ["u1"], protocol
        assert r["tasks"]["u0"] > 0 and r["tasks"]["u2"] > 0, protocol


def test_marking_saturated_users_keeps_a_user_that_cannot_grow_from_blocking_the_rest() -> None:
    # u0 (<2,2>) gets one of the two big servers; u1 then fills the rest, so u0's walks fail.
    w = workload([[2, 2], [2, 2], [1, 1]], [[2, 2], [1, 1]])
    on, off = run(w, "dgdrf", neighbors=1), run(w, "dgdrf", neighbors=1, mark_saturated=False)
    assert on["saturated"] and on["tasks"] == {"u0": 1, "u1": 3} and on["placement"]["saturation_marks"] == 1
    # Without the mark u0 stays the lowest user: the centre walks for it every tick, u1 waits.
    assert off["stalled"] and off["tasks"] == {"u0": 1, "u1": 2} and off["placement"]["saturation_marks"] == 0
    assert off["placement"]["walks_failed"] > 100 and not off["mark_saturated"]


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    servers=st.integers(2, 8),
    users=st.integers(1, 5),
    resources=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    protocol=st.sampled_from(DISTRIBUTED),
    p=st.integers(1, 4),
)
def test_no_server_ever_exceeds_its_capacity(servers: int, users: int, resources: int, seed: int, protocol: str,
                                             p: int) -> None:
    # The harness raises CapacityViolation on the first allocation beyond a server's capacity,
    # and every server checks its own reservations: a run that returns never oversubscribed.
    names = tuple(f"r{k}" for k in range(resources))
    p = min(p, servers - 1)  # P must be below the number of servers
    r = run(synthetic_case(servers, users, names, seed), protocol, neighbors=p, seed=seed, stall_ticks=100,
            max_time=200.0, probe_d=min(2, p))
    assert all(u <= 1 + 1e-9 for u in r["utilization"].values())
    assert r["status"] in ("saturated", "stalled", "time-cap")


