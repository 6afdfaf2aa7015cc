"""GPUs as devices (`--devices gpu`, issue 38): the rule, its fragmentation, runs that use it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.api import run
from drfemu.cli import main
from drfemu.kernel.errors import InputError
from drfemu.kernel.resources import CapacityViolation
from drfemu.observers.harness import Harness, Limits, Listeners
from drfemu.protocols.cluster import ClusterView
from drfemu.protocols.devices import DeviceError, Devices, check_device_workload, device_matrix, device_usable
from drfemu.protocols.fragmentation import fragmented_matrix, least_fragmentation
from tests.conftest import cluster


def test_a_fraction_fills_the_tightest_device_and_never_spans_two() -> None:
    devices = Devices(0, 3)
    devices.take(0.5, devices.choose(0.5))  # (0.5, 1, 1)
    assert devices.choose(0.32) == (0,)  # the partly used device, not a whole one
    devices.take(0.32, (0,))
    assert devices.free == pytest.approx([0.18, 1.0, 1.0])
    assert devices.choose(2.0) == (1, 2)  # whole devices, lowest index first
    devices.take(2.0, (1, 2))
    assert not devices.fits(0.5)  # 0.18 free in all: the scalar model would still say it fits nowhere...
    assert devices.fits(0.16)
    spread = Devices(0, 2)
    spread.take(0.6, (0,))
    spread.take(0.6, (1,))  # 0.8 free in all, 0.4 on each
    assert not spread.fits(0.5) and not spread.fits(1.0)  # ... but here the scalar model would place both


def test_wrong_devices_and_excess_are_capacity_violations() -> None:
    devices = Devices(0, 2)
    devices.take(0.81, (0,))
    with pytest.raises(CapacityViolation):
        devices.take(0.5, (0,))  # 0.19 left there
    with pytest.raises(CapacityViolation):
        devices.take(1.0, (0,))  # a whole-device task on a partly used device
    with pytest.raises(CapacityViolation):
        devices.take(0.5, ())  # no device named
    with pytest.raises(CapacityViolation):
        devices.take(0.0, (1,))  # a task needing none was given one
    with pytest.raises(CapacityViolation):
        devices.choose(2.0)
    with pytest.raises(CapacityViolation):
        Devices(0, 3).take(2.0, (1, 2, 2))  # a device named twice
    devices.give(0.81, (0,))
    assert devices.free == [1.0, 1.0]  # given back exactly: whole again


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.16, 0.32, 0.5, 0.81, 1.0, 2.0]), max_size=30), st.integers(1, 8))
def test_any_sequence_of_placements_and_ends_keeps_every_device_within_one(demands: list[float], count: int) -> None:
    devices = Devices(0, count)
    held: list[tuple[float, tuple[int, ...]]] = []
    for k, amount in enumerate(demands):
        layout = device_matrix([devices])
        assert bool(device_usable(np.array([amount]), layout)[0, 0]) == devices.fits(amount)
        if devices.fits(amount):
            chosen = devices.choose(amount)
            devices.take(amount, chosen)
            held.append((amount, chosen))
        if k % 3 == 2 and held:
            devices.give(*held.pop(0))
        assert all(-1e-9 <= f <= 1.0 for f in devices.free)
        assert sum(devices.free) == pytest.approx(count - sum(a for a, _ in held))
    for amount, chosen in held:
        devices.give(amount, chosen)
    assert devices.free == [1.0] * count


def test_fragmentation_counts_the_devices_a_task_cannot_use() -> None:
    # (cpu, gpu); one server, cpu plenty, two GPUs with 0.5 and 1.0 free. The mix: a whole GPU,
    # half a GPU, 0.81 of a GPU, a CPU-only task. Per task, the free GPU it cannot use: 0.5 (the
    # remnant is not a whole device), 0, 0.5 (the remnant holds no 0.81), 1.5 (it uses no GPU).
    free = np.array([[8.0, 1.5]])
    capacity = np.array([[8.0, 2.0]])
    mix = np.array([(1.0, 1.0), (1.0, 0.5), (1.0, 0.81), (1.0, 0.0)])
    devices = Devices(1, 2)
    devices.take(0.5, (0,))
    rows = fragmented_matrix(free, capacity, mix, devices=(1, device_matrix([devices])))
    assert rows[0, 1] == pytest.approx((0.5 + 0 + 0.5 + 1.5) / 4)
    assert fragmented_matrix(free, capacity, mix)[0, 1] == pytest.approx(1.5 / 4)  # the scalar model: a lower bound


def test_least_fragmentation_puts_a_fraction_beside_another_not_on_a_whole_device() -> None:
    capacity = [(8.0, 2.0), (8.0, 2.0)]
    layouts = [Devices(1, 2), Devices(1, 2)]
    layouts[1].take(0.5, (0,))
    free = [[8.0, 2.0], [7.0, 1.5]]
    mix = [(1.0, 1.0), (1.0, 0.5)]
    assert least_fragmentation((1.0, 0.5), free, capacity, mix, (1 / 16, 1 / 4), layouts) == 1
    view = ClusterView(capacity, device_resource=1)
    taken = view.reserve(1, (1.0, 0.5))
    assert taken == (0,) and view.devices is not None and view.devices[1].free == [0.5, 1.0]
    assert view.reserve(1, (1.0, 1.0)) == (1,)
    assert not view.fits_on(1, (1.0, 1.0)) and view.fits_on(1, (1.0, 0.5))
    view.release(1, (1.0, 1.0), (1,))
    assert view.fits_on(1, (1.0, 1.0))


def test_the_harness_refuses_an_allocation_on_devices_that_cannot_hold_it() -> None:
    harness = Harness(cluster([(8.0, 2.0)], [(1.0, 0.81), (1.0, 1.0)]), [1, 2], Limits(0.1, 100, 1e3),
                      Listeners(lambda outcome: None), device_resource=1)
    harness.on_allocation(0.0, 0, 1, 0, (1.0, 0.81), (0,))
    with pytest.raises(CapacityViolation, match="capacity invariant broken"):
        harness.on_allocation(0.1, 0, 1, 1, (1.0, 0.81), (0,))


def test_a_workload_the_model_cannot_represent_is_a_one_line_error() -> None:
    with pytest.raises(DeviceError, match="no resource 'gpu'"):
        check_device_workload("gpu", [(1.0, 1.0)], [(0.5, 0.5)], ("cpu", "mem"))
    with pytest.raises(DeviceError, match="server 0 holds 2.5 gpu"):
        check_device_workload("gpu", [(1.0, 2.5)], [(0.5, 0.5)], ("cpu", "gpu"))
    with pytest.raises(DeviceError, match="user 0 asks for 1.5 gpu"):
        check_device_workload("gpu", [(1.0, 2.0)], [(0.5, 1.5)], ("cpu", "gpu"))
    with pytest.raises(InputError, match="no resource 'gpu'"):
        run(protocol="drf", machines=10, users=4, devices="gpu")
    with pytest.raises(InputError, match="not a whole number"):
        run(protocol="drf", machines=10, users=4, devices="cpu")


def test_what_the_device_model_does_not_run_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    configs = Path(__file__).resolve().parent.parent / "configs"
    with pytest.raises(InputError, match="cannot be combined with --faults"):
        run(protocol="drf", workload="gpu-cluster", machines=10, users=4, devices="gpu",
            faults=str(configs / "faults" / "none.toml"))
    with pytest.raises(InputError, match="endless workloads only"):
        run(protocol="drf", workload=str(configs / "workloads" / "finite-10x3.json"), devices="cpu")
    assert main(["run", "--devices", "gpu", "--machines", "10", "--users", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no resource 'gpu'" in err[0]


@pytest.mark.parametrize("protocol", ["drf", "bdgdrf", "ddrf-gradient", "probe"])
def test_runs_on_devices_saturate_within_every_device_and_repeat(protocol: str) -> None:
    # The harness checks every allocation against its own copy of each server's devices.
    args: dict[str, Any] = {"protocol": protocol, "workload": "gpu-cluster", "machines": 30, "users": 12,
                            "devices": "gpu", "seed": 2}
    if protocol != "probe":
        args["placement"] = "min-fragmentation"
    first = run(**args).to_dict()
    assert first["saturated"] and first["devices"] == "gpu"
    assert run(**args).to_dict()["tasks"] == first["tasks"]
    scalar = run(**{**args, "devices": None}).to_dict()
    assert scalar["devices"] is None and scalar["tasks"] != first["tasks"]  # the devices changed what fits


def test_best_fit_fragments_the_gpus_before_the_first_user_is_blocked() -> None:
    # The case in small: DRFH best-fit spreads fractions over many servers, so the first
    # user it blocks is blocked while much GPU is free in unusable remnants; least fragmentation not.
    args: dict[str, Any] = {"protocol": "drf", "workload": "gpu-cluster", "machines": 60, "users": 24, "devices": "gpu",
                            "seed": 1}
    best = run(**args, placement="best-fit").to_dict()["first_blocked"]
    least = run(**args, placement="min-fragmentation").to_dict()["first_blocked"]
    assert best["fragmented"]["gpu"] > 2 * least["fragmented"]["gpu"]
