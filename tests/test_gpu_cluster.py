"""The GPU-sharing cluster workload and placement on it (issue 38)."""

from __future__ import annotations

from collections import Counter

import pytest

from drfemu.api import run
from drfemu.kernel.errors import InputError
from drfemu.schema.workload import WorkloadError
from drfemu.workloads.gpu_cluster import FRACTIONS, SERVER_KINDS, gpu_cluster_case


def test_the_draw_has_the_declared_kinds_and_user_mix() -> None:
    case = gpu_cluster_case(400, 400, seed=3)
    assert case.resources == ("cpu", "mem", "gpu")
    kinds = Counter(s.capacity for s in case.servers)
    assert set(kinds) <= {k[:3] for k in SERVER_KINDS}
    assert 0.15 < kinds[(96.0, 512.0, 0.0)] / 400 < 0.25  # about a fifth without GPUs
    gpus = [u.demand[2] for u in case.users]
    assert 0.74 < sum(g > 0 for g in gpus) / 400 < 0.86
    fractional = [g for g in gpus if 0 < g < 1]
    assert set(fractional) <= set(FRACTIONS) and len(set(fractional)) == len(FRACTIONS)
    assert {g for g in gpus if g >= 1} <= {1.0, 2.0, 4.0}
    assert gpu_cluster_case(400, 400, seed=3) == case and gpu_cluster_case(400, 400, seed=4) != case


def test_bad_fractions_are_one_line_errors() -> None:
    with pytest.raises(WorkloadError, match="fractions"):
        gpu_cluster_case(10, 10, gpu_users=1.5)
    with pytest.raises(InputError, match="--machines"):
        run(workload="gpu-cluster", machines=0)


def test_drf_places_by_each_rule_and_reports_fragmentation() -> None:
    results = {p: run(protocol="drf", workload="gpu-cluster", machines=30, users=12, placement=p).to_dict()
               for p in ("first-fit", "best-fit", "min-fragmentation")}
    assert run(protocol="drf-bestfit", workload="gpu-cluster", machines=30, users=12).to_dict()["tasks"] == (
        results["best-fit"]["tasks"])
    for r in results.values():
        assert r["saturated"] and r["error_ratio"] == 0 and r["placement_mode"] in results
        free_gpu = 1 - r["utilization"]["gpu"]
        assert r["fragmented"]["gpu"] == pytest.approx(free_gpu, abs=1e-9)  # at saturation all free is fragmented
        assert len(r["fragmented_series"]["time_s"]) == len(r["fragmented_series"]["gpu"]) >= 2
    assert len({tuple(sorted(r["tasks"].items())) for r in results.values()}) == 3  # the rules differ
