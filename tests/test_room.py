"""Keep room for big tasks: the room a placement costs a demand mix (issue 60)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import drfemu
from drfemu.schema.params import declared
from drfemu.cli import main
from drfemu.protocols.cluster import ClusterView
from drfemu.protocols.devices import Devices
from drfemu.protocols.fragmentation import class_shares
from drfemu.protocols.room import keep_room, room_lost, room_score, task_slots

SCALE = (1 / 100, 1 / 10)  # cluster totals: 100 cores, 10 GPUs


def _gpus(count: int) -> Devices:
    return Devices(1, count)


def test_the_worked_example_of_the_module_docstring() -> None:
    mix = np.array([(12.0, 8.0), (2.0, 0.5)])
    shares = class_shares(mix, np.array(SCALE))
    assert shares.tolist() == pytest.approx([0.8, 0.05])
    assert task_slots(mix, (16.0, 8.0), (16.0, 8.0), _gpus(8)).tolist() == [1, 8]
    assert room_lost((2.0, 0.5), (16.0, 8.0), (16.0, 8.0), mix, shares, _gpus(8)) == pytest.approx(0.85)
    score = room_score((2.0, 0.5), (16.0, 8.0), (16.0, 8.0), mix, shares, SCALE, _gpus(8))
    assert 17.0 <= score < 18.0  # 17 smallest tasks, plus DRFH's heuristic squashed into [0, 1)


def test_a_cpu_only_task_costs_a_cpu_server_only_its_own_slot_and_a_gpu_server_more() -> None:
    mix = np.array([(12.0, 8.0), (2.0, 0.5), (2.0, 0.0)])
    shares = class_shares(mix, np.array(SCALE))
    on_cpu_server = room_lost((2.0, 0.0), (32.0, 0.0), (32.0, 0.0), mix, shares, _gpus(0))
    on_gpu_server = room_lost((2.0, 0.0), (16.0, 8.0), (16.0, 8.0), mix, shares, _gpus(8))
    assert on_cpu_server == pytest.approx(0.02)
    assert on_gpu_server == pytest.approx(0.07)
    chosen = keep_room((2.0, 0.0), [[16.0, 8.0], [32.0, 0.0]], [(16.0, 8.0), (32.0, 0.0)], mix.tolist(), SCALE,
                       [_gpus(8), _gpus(0)])
    assert chosen == 1


def test_a_small_gpu_task_goes_to_a_used_server_and_leaves_the_empty_one_whole() -> None:
    used = _gpus(8)
    used.take(1.0, (0,))
    mix = [(12.0, 8.0), (2.0, 1.0)]
    free = [[16.0, 8.0], [14.0, 7.0]]
    capacity = [(16.0, 8.0), (16.0, 8.0)]
    assert keep_room((2.0, 1.0), free, capacity, mix, SCALE, [_gpus(8), used]) == 1


def test_it_fits_nowhere_or_scores_by_the_heuristic_alone_without_a_mix() -> None:
    assert keep_room((9.0, 0.0), [[8.0, 1.0]], [(8.0, 1.0)], [(1.0, 0.0)], SCALE) == -1
    assert keep_room((1.0, 1.0), [[8.0, 0.0], [8.0, 1.0]], [(8.0, 1.0)] * 2, [], SCALE) == 1


amounts = st.floats(min_value=0.05, max_value=10.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(capacity=st.tuples(amounts, amounts), used=st.tuples(st.floats(0, 1), st.floats(0, 1)),
       mix=st.lists(st.tuples(amounts, amounts), min_size=1, max_size=6), pick=st.integers(0, 5))
def test_placing_a_task_never_adds_room_and_costs_its_own_class_a_slot(capacity: tuple, used: tuple, mix: list,
                                                                        pick: int) -> None:
    free = [c * (1 - u) for c, u in zip(capacity, used)]
    demand = mix[pick % len(mix)]
    if any(d > f for d, f in zip(demand, free)):
        return
    m = np.asarray(mix, dtype=float)
    shares = class_shares(m, np.array(SCALE))
    after = [f - d for f, d in zip(free, demand)]
    before_slots, after_slots = task_slots(m, free, capacity), task_slots(m, after, capacity)
    assert np.all(after_slots <= before_slots)
    assert room_lost(demand, free, capacity, m, shares) >= shares[pick % len(mix)] - 1e-12


@settings(max_examples=100, deadline=None)
@given(servers=st.lists(st.tuples(amounts, amounts), min_size=1, max_size=8),
       mix=st.lists(st.tuples(amounts, amounts), min_size=1, max_size=5), factor=st.sampled_from([1e-3, 1e3]))
def test_the_choice_does_not_depend_on_units(servers: list, mix: list, factor: float) -> None:
    def scaled(v: tuple) -> tuple:
        return (v[0] * factor, v[1])

    plain, rescaled = ClusterView(servers), ClusterView([scaled(s) for s in servers])
    chosen = keep_room(mix[0], plain.free, plain.capacity, mix, plain.scale)
    again = keep_room(scaled(mix[0]), rescaled.free, rescaled.capacity, [scaled(d) for d in mix], rescaled.scale)
    assert chosen == again


def _whole_server_case(path: Path) -> Path:
    """Ten 8-GPU servers and two CPU servers; one user whose task is a whole GPU server, three
    1-GPU users and two CPU-only users. Under DRF the whole-server user is served again once the
    1-GPU users reach its share: only a server still whole can take it."""
    servers = ([{"id": f"g{i}", "capacity": [96, 384, 8]} for i in range(10)]
               + [{"id": f"c{i}", "capacity": [64, 256, 0]} for i in range(2)])
    users = ([{"id": "whole", "demand": [88, 320, 8]}] + [{"id": f"gpu{i}", "demand": [11, 40, 1]} for i in range(3)]
             + [{"id": f"cpu{i}", "demand": [8, 30, 0]} for i in range(2)])
    path.write_text(json.dumps({"resources": ["cpu", "mem", "gpu"], "servers": servers, "users": users}))
    return path


@pytest.mark.parametrize("seed", [1, 2])
def test_keep_room_gives_the_whole_server_user_what_drf_gives_it_and_best_fit_does_not(tmp_path: Path,
                                                                                       seed: int) -> None:
    workload = _whole_server_case(tmp_path / "whole.json")

    def run(protocol: str, **options: str) -> drfemu.RunResult:
        return drfemu.run(protocol=protocol, workload=str(workload), devices="gpu", neighbors=3, seed=seed, **options)

    drf, best_fit, default = run("drf"), run("bdgdrf", placement="best-fit"), run("bdgdrf")
    assert default.placement_mode == "keep-room"
    assert best_fit.tasks["whole"] < drf.tasks["whole"] <= default.tasks["whole"]
    assert default.min_dominant_share >= drf.min_dominant_share
    assert run("drf", placement="keep-room").tasks["whole"] >= drf.tasks["whole"]


def test_the_demand_mix_is_read_by_both_placements_that_score_by_it_and_by_no_other() -> None:
    def run(placement: str, mix: str) -> drfemu.RunResult:
        return drfemu.run(protocol="bdgdrf", placement=placement, fragmentation_mix=mix, machines=10, users=3)

    with pytest.warns(drfemu.UnreadOptionWarning, match="--fragmentation-mix is not read under --placement best-fit"):
        ignored = run("best-fit", "workload")
    assert ignored.tasks == run("best-fit", "seen").tasks
    assert declared("fragmentation_mix").when == ("placement", ("min-fragmentation", "keep-room"))


def test_a_run_with_a_reference_names_its_poorest_user_in_both_runs(tmp_path: Path) -> None:
    workload, out = _whole_server_case(tmp_path / "whole.json"), tmp_path / "run.json"
    assert main(["run", "--workload", str(workload), "--protocol", "bdgdrf", "--placement", "best-fit", "--devices",
                 "gpu", "--neighbors", "3", "--reference", "drf", "--json", str(out)]) == 0
    result = drfemu.RunResult.of_document(json.loads(out.read_text()))
    reference = result.reference
    assert reference is not None and reference.protocol == "drf" and reference.placement == "first-fit"
    alone = drfemu.run(protocol="drf", workload=str(workload), devices="gpu")
    assert reference.tasks == alone.tasks and reference.min_dominant_share == alone.min_dominant_share
    assert reference.min_share_ratio == pytest.approx(result.min_dominant_share / alone.min_dominant_share)
    assert reference.poorest_user == "whole"
    assert (reference.poorest_tasks, reference.poorest_reference_tasks) == (result.tasks["whole"], alone.tasks["whole"])
    assert reference.users_short == sum(1 for u, n in result.tasks.items() if n < alone.tasks[u])
    assert set(reference.queueing_delay_p99_by_user_s) == set(alone.queueing_delay_p99_by_user_s)


@pytest.mark.parametrize(("option", "needle"), [("bdgdrf", "is not a central protocol"),
                                                 ("nope", "--reference: unknown protocol")])
def test_a_reference_must_be_a_central_protocol(option: str, needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--machines", "10", "--users", "3", "--reference", option]) == 2
    assert needle in capsys.readouterr().err
