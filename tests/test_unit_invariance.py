"""Ties are ties (issue 38): rescaling one resource's units changes no placement of
`drf-bestfit` or of a best-fit walk, on a three-resource case with GPU and CPU-only servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from drfemu.schema.workload import Server, User, Workload, load_workload
from drfemu.workloads.points import run_workload

CASE = Path(__file__).resolve().parents[1] / "configs" / "workloads" / "gpu-50x20.json"


def rescaled(w: Workload, resource: int, factor: float) -> Workload:
    """`w` with resource `resource` counted in units `factor` times smaller."""
    def scale(v: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(x * factor if r == resource else x for r, x in enumerate(v))
    return Workload(w.resources, tuple(Server(s.id, scale(s.capacity)) for s in w.servers),
                    tuple(User(u.id, scale(u.demand)) for u in w.users), w.source)


def placements(w: Workload, protocol: str, **params: Any) -> list[tuple[str, int, str]]:
    """(user, task, server) of every task started, in order."""
    log: list[dict[str, Any]] = []
    run_workload(w, {"protocol": protocol, **params}, record=log.append)
    return [(r["user"], r["task"], r["server"]) for r in log if r["event"] == "start"]


@pytest.mark.slow
@pytest.mark.parametrize("protocol, params", [("drf-bestfit", {}), ("drf", {"placement": "best-fit"}),
                                              ("bdgdrf", {"placement": "best-fit"}),
                                              ("dgdrf", {"placement": "best-fit"})])
def test_rescaling_a_resource_changes_no_placement(protocol: str, params: dict[str, Any]) -> None:
    case = load_workload(CASE)
    plain = placements(case, protocol, **params)
    assert len(plain) > 1000
    for resource in range(len(case.resources)):
        assert placements(rescaled(case, resource, 1000.0), protocol, **params) == plain, case.resources[resource]
