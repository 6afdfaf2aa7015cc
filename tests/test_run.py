"""End-to-end emulation runs: seed examples, the default case, determinism, invariants."""

from __future__ import annotations

from collections.abc import Iterator
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


def run(w: Workload, protocol: str = "drf", **kw: Any) -> dict[str, Any]:
    return run_emulation(RunConfig.build(w, protocol=protocol, **kw)).to_dict()


def test_drf_paper_example(drf_paper: Workload) -> None:
    r = run(drf_paper)
    assert r["tasks"] == {"A": 3, "B": 2}
    assert r["dominant_shares"]["A"] == pytest.approx(2 / 3)
    assert r["dominant_shares"]["B"] == pytest.approx(2 / 3)
    assert r["error_ratio"] == 0 and r["saturated"] and not r["stalled"]
    assert r["utilization"]["cpu"] == pytest.approx(1.0) and r["utilization"]["mem"] == pytest.approx(14 / 18)


def test_yarn_dominant_resource_calculator_example() -> None:
    r = run(workload([[100, 10000]], [[2, 300], [6, 100]]))
    assert r["tasks"] == {"u0": 20, "u1": 10} and r["error_ratio"] == 0


def test_drfh_first_fit_versus_best_fit() -> None:
    # DRFH (Wang et al.): servers <2,12>, <12,2>; users <0.2,1>, <1,0.2>.
    w = workload([[2, 12], [12, 2]], [[0.2, 1], [1, 0.2]])
    first, best = run(w, "drf"), run(w, "drf-bestfit")
    assert first["tasks"] == {"u0": 6, "u1": 6} and first["min_dominant_share"] == pytest.approx(3 / 7)
    assert best["tasks"] == {"u0": 10, "u1": 10} and best["min_dominant_share"] == pytest.approx(5 / 7)


def test_one_allocation_per_tick() -> None:
    r = run(workload([[100, 100]], [[1, 1], [1, 1]]), max_time=1e6)
    assert r["allocations"] == 100
    # ticks at 0.1 s, 0.2 s, ...; each task starts 3 hops of 1 ms after its tick
    # (Proposal → user, Accept → scheduler, Launch → server)
    assert r["run_time_s"] == pytest.approx(10.0 + 0.003)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["drf", "drf-bestfit", "fifo"])
def test_default_case_invariants(protocol: str) -> None:
    r = run(google_case(100, 20, 1), protocol)
    assert r["saturated"] and not r["stalled"]
    assert sum(r["tasks"].values()) == r["allocations"]
    assert all(0 <= u <= 1 + 1e-9 for u in r["utilization"].values())
    assert r["messages"]["TaskStarted"] == r["allocations"]


@pytest.mark.slow
def test_drf_is_exact_and_fifo_is_unfair_on_the_default_case() -> None:
    case = google_case(100, 20, 1)
    drf, fifo = run(case, "drf"), run(case, "fifo")
    assert drf["error_ratio"] == 0.0
    assert all(v == 0.0 for v in drf["error_ratio_by_tolerance"].values())
    assert fifo["min_dominant_share"] < 0.5 * drf["min_dominant_share"]
    assert fifo["gini"] > 10 * drf["gini"]
    assert fifo["error_ratio"] > 0.5


@pytest.mark.slow
def test_same_config_and_seed_give_identical_results() -> None:
    case = google_case(100, 20, 5)
    for protocol in ("drf", "fifo"):
        a = {k: v for k, v in run(case, protocol, latency="uniform:0.5ms:3ms").items() if k not in WALL_CLOCK_KEYS}
        b = {k: v for k, v in run(case, protocol, latency="uniform:0.5ms:3ms").items() if k not in WALL_CLOCK_KEYS}
        assert a == b


def test_three_resources() -> None:
    r = run(synthetic_case(30, 6, ("cpu", "mem", "gpu"), seed=2))
    assert set(r["utilization"]) == {"cpu", "mem", "gpu"}
    assert r["saturated"] and r["error_ratio"] == 0


def test_unplaceable_user_is_reported_and_others_go_on() -> None:
    r = run(workload([[9, 18]], [[1, 4], [10, 1]]))
    assert r["unplaceable_users"] == ["u1"] and r["tasks"] == {"u0": 4}
    assert r["saturated"]


def test_lost_handshake_ends_as_stalled_not_crashed() -> None:
    config = RunConfig.build(workload([[100, 100]], [[1, 1]]), stall_ticks=20)
    r = run_emulation(RunConfig(config.workload, config.params, loss=0.5)).to_dict()
    assert r["stalled"] and not r["saturated"] and "20 ticks" in r["end_reason"]


small_workloads = st.builds(
    lambda caps, dems: workload(caps, dems),
    st.lists(st.lists(st.integers(1, 12), min_size=3, max_size=3), min_size=1, max_size=5),
    st.lists(st.lists(st.integers(0, 5), min_size=3, max_size=3).filter(any), min_size=1, max_size=5),
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_workloads, st.sampled_from(["drf", "drf-bestfit", "fifo"]))
def test_any_workload_saturates_without_overcommit(w: Workload, protocol: str) -> None:
    """The harness raises CapacityViolation on any overcommit; every run must saturate."""
    r = run(w, protocol)
    assert r["saturated"]
    for resource, used in r["utilization"].items():
        assert used <= 1 + 1e-9, resource
    if protocol == "drf":
        assert r["error_ratio"] == 0.0


class _IgnoresCapacity:
    """A broken central rule: always server 0, fit or not."""

    def choose(self, pending, cluster):  # type: ignore[no-untyped-def]
        return (min(pending, key=lambda t: t.arrival), 0) if pending else None


@pytest.fixture
def broken() -> Iterator[None]:
    """A central protocol whose rule overcommits, registered for one test."""
    from drfemu.protocols import registry

    registry.register(registry.ProtocolSpec("broken", "test only", "central", _IgnoresCapacity))
    try:
        yield
    finally:
        registry.unregister("broken")


def test_an_overcommitting_protocol_aborts_the_run_loudly(broken: None) -> None:
    from drfemu.kernel.resources import CapacityViolation

    w = workload([[2, 2], [2, 2]], [[1, 1]])  # server 1 keeps the run unsaturated
    with pytest.raises(CapacityViolation, match="task 2"):
        run(w, "broken")


def test_capacity_violation_exit_status(broken: None, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from drfemu.cli import main

    case = tmp_path / "case.json"
    case.write_text(json.dumps({"resources": ["cpu"], "servers": [{"capacity": [2]}, {"capacity": [2]}], "users": [{"demand": [1]}]}))
    assert main(["run", "--workload", str(case), "--protocol", "broken"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("drfemu: capacity violation") and err.count("\n") == 1


def test_endless_runs_have_a_complete_ledger_and_queueing_delays(drf_paper: Workload) -> None:
    """The DRF example: five tasks started; the run saturates at the last start, before its user
    heard of it, so only the other user's next task is out being placed."""
    r = run(drf_paper)
    assert r["ledger"] == {"waiting": 0, "placing": 1, "running": 5, "finished": 0, "killed": 0, "resubmitted": 0,
                           "rerun": 0, "lost": 0}
    assert r["queueing_delay_s"]["p50"] is not None and 0 < r["queueing_delay_s"]["p50"] < 1.0
    assert r["finite_tasks"] is False and "series" not in r
