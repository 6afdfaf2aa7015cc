"""Shared helpers: small workloads from the seeds and the reference notes."""

from __future__ import annotations

from pathlib import Path

import pytest

from drfemu.experiments.workloads.model import Workload, parse_workload

SHARED_TRACE = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "google-2011"


def workload(servers: list[list[float]], users: list[list[float]], names: list[str] | None = None) -> Workload:
    resources = names or [f"r{i}" for i in range(len(servers[0]))]
    return parse_workload(
        {
            "resources": resources,
            "servers": [{"id": f"s{i}", "capacity": c} for i, c in enumerate(servers)],
            "users": [{"id": f"u{i}", "demand": d} for i, d in enumerate(users)],
        }
    )


@pytest.fixture
def drf_paper() -> Workload:
    """DRF paper §4 (Ghodsi et al. 2011): one server <9 CPU, 18 GB>, A <1,4>, B <3,1>."""
    return parse_workload(
        {
            "resources": ["cpu", "mem"],
            "servers": [{"id": "s0", "capacity": [9, 18]}],
            "users": [{"id": "A", "demand": [1, 4]}, {"id": "B", "demand": [3, 1]}],
        }
    )
