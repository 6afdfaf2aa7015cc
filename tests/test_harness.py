"""The harness: error oracle with tolerances, capacity invariant, saturation, stall."""

from __future__ import annotations

import pytest

from drfemu.kernel.resources import CapacityViolation
from drfemu.observers.harness import (
    SATURATED,
    STALLED,
    TIME_CAP,
    Harness,
    Limits,
    Listeners,
    RunOutcome,
)
from tests.conftest import cluster


def make(capacities: list[tuple[float, ...]], demands: list[tuple[float, ...]], stall_ticks: int = 10,
         max_time: float = 100.0) -> tuple[Harness, list[RunOutcome]]:
    outcomes: list[RunOutcome] = []
    users = list(range(len(capacities), len(capacities) + len(demands)))
    return Harness(cluster(capacities, demands), users, Limits(0.1, stall_ticks, max_time),
                   Listeners(outcomes.append)), outcomes


def test_error_oracle_and_tolerances() -> None:
    # One big server (actor 0). u0 (actor 1) gains 0.01 per task, u1 (actor 2) 0.0105.
    h, _ = make([(100.0, 100.0)], [(1.0, 1.0), (1.05, 1.0)])
    u0, u1 = (1, (1.0, 1.0)), (2, (1.05, 1.0))
    # (who, errors after this allocation at τ = 0, 1, 5, 10, 15 %), worked by hand:
    steps = [
        (u1, [0, 0, 0, 0, 0]),  # G1 0 vs G0 0: equal, fine
        (u1, [1, 1, 1, 1, 1]),  # G1 0.0105 > G0 0: error at every τ
        (u0, [1, 1, 1, 1, 1]),  # G0 0 is lowest
        (u0, [1, 1, 1, 1, 1]),  # 0.01 < 0.021
        (u0, [1, 1, 1, 1, 1]),  # 0.02 < 0.021
        (u0, [2, 2, 2, 2, 2]),  # 0.03 > 0.021·1.15 = 0.02415
        (u1, [2, 2, 2, 2, 2]),  # 0.021 < 0.04
        (u0, [3, 3, 3, 3, 3]),  # 0.04 > 0.0315·1.15 = 0.036225
        (u1, [3, 3, 3, 3, 3]),  # 0.0315 < 0.05
        (u0, [4, 4, 4, 4, 4]),  # 0.05 > 0.042·1.15 = 0.0483
        (u1, [4, 4, 4, 4, 4]),  # 0.042 < 0.06
        (u0, [5, 5, 5, 5, 4]),  # 0.06 > 0.0525·1.1 = 0.05775 but < 0.0525·1.15 = 0.060375
    ]
    tasks = {1: 0, 2: 0}
    for k, ((user, demand), expected) in enumerate(steps):
        h.on_allocation(0.1 * (k + 1), 0, user, tasks[user], demand)
        tasks[user] += 1
        assert h.errors == expected, f"step {k}"
    assert h.error_ratios()[0] == pytest.approx(5 / 12)


def test_equal_shares_are_not_errors() -> None:
    h, _ = make([(9.0, 18.0)], [(1.0, 4.0), (3.0, 1.0)])
    for t, (user, task, demand) in enumerate([(1, 0, (1.0, 4.0)), (2, 0, (3.0, 1.0)), (2, 1, (3.0, 1.0))]):
        h.on_allocation(t, 0, user, task, demand)
    assert h.errors[0] == 1  # B at 1/3 while A at 2/9
    h2, _ = make([(9.0, 18.0)], [(1.0, 4.0), (3.0, 1.0)])
    for t, (user, task, demand) in enumerate([(1, 0, (1.0, 4.0)), (2, 0, (3.0, 1.0))]):
        h2.on_allocation(t, 0, user, task, demand)
    assert h2.errors[0] == 0


def test_capacity_violation_aborts() -> None:
    h, _ = make([(2.0, 2.0)], [(1.5, 1.0)])
    h.on_allocation(0.1, 0, 1, 0, (1.5, 1.0))
    with pytest.raises(CapacityViolation):
        h.on_allocation(0.2, 0, 1, 1, (1.5, 1.0))


def test_saturation_and_unplaceable_users() -> None:
    h, outcomes = make([(2.0, 2.0)], [(1.0, 1.0), (5.0, 1.0)])
    assert h.unplaceable == [1]
    h.on_allocation(0.1, 0, 1, 0, (1.0, 1.0))
    assert outcomes == []
    h.on_allocation(0.2, 0, 1, 1, (1.0, 1.0))
    assert outcomes == [RunOutcome(SATURATED, "no user's next task fits on any server", 0.2)]
    assert h.placeable_shares() == [1.0]


def test_stall_and_time_cap() -> None:
    h, outcomes = make([(2.0, 2.0)], [(1.0, 1.0)], stall_ticks=5)
    for k in range(1, 6):
        h.on_tick(k * 0.1, k)
    assert outcomes and outcomes[0].status == STALLED and "5 ticks" in outcomes[0].reason
    h2, outcomes2 = make([(2.0, 2.0)], [(1.0, 1.0)], stall_ticks=10**6, max_time=1.0)
    for k in range(1, 11):
        h2.on_tick(k * 0.1, k)
    assert outcomes2[0].status == TIME_CAP


def test_error_series_is_sampled_and_ends_at_the_last_allocation() -> None:
    h, _ = make([(1000.0, 1000.0)], [(1.0, 1.0), (1.0, 1.0)])
    for k in range(250):
        h.on_allocation(k, 0, 1, k, (1.0, 1.0))
    series = h.error_series(points=100)
    assert series["allocations"][-1] == 250 and len(series["allocations"]) <= 101
    assert series["0"][-1] == pytest.approx(h.error_ratios()[0])


@pytest.mark.parametrize("devices", [None, "gpu"])
def test_servers_checked_in_blocks_give_what_servers_checked_one_by_one(monkeypatch: pytest.MonkeyPatch,
                                                                         devices: str | None) -> None:
    """Set-up's fit counts, the stranded and the fragmented shares are computed over blocks of
    servers (`BLOCK_CELLS`); one server per block gives the same result document."""
    import drfemu
    from drfemu.observers import harness

    def result(cells: int) -> dict[str, object]:
        monkeypatch.setattr(harness, "BLOCK_CELLS", cells)
        document = drfemu.run("bdgdrf", "gpu-cluster", machines=30, users=12, seed=3, devices=devices,
                              max_time=20.0, sample_every=2.0).to_dict()
        return {k: v for k, v in document.items() if k not in ("wall_time_s", "run_time_s", "events_per_s")}

    whole = result(1 << 40)
    assert whole["stranded"] and whole["fragmented_series"]
    assert result(1) == whole and result(100) == whole
