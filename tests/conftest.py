"""Shared helpers: small workloads from the seeds and the reference notes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drfemu.kernel.compiled import SKIP_REASON, compiled_module
from drfemu.schema.workload import Server, User, Workload, parse_workload

SHARED_TRACE = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "google-2011"


def compiled_or_skip(name: str) -> Any:
    """The C extension `name` as this process uses it (`kernel.compiled`), or a skip that says
    why there is none: the tests of an accelerator are about the C, which a pure-Python process
    (DRFEMU_PURE_PYTHON=1) or a compiler-less install does not use."""
    module = compiled_module(name)
    if module is None:
        pytest.skip(f"{name}: {SKIP_REASON}", allow_module_level=True)
    return module


def workload(servers: list[list[float]], users: list[list[float]], names: list[str] | None = None) -> Workload:
    resources = names or [f"r{i}" for i in range(len(servers[0]))]
    return parse_workload(
        {
            "resources": resources,
            "servers": [{"id": f"s{i}", "capacity": c} for i, c in enumerate(servers)],
            "users": [{"id": f"u{i}", "demand": d} for i, d in enumerate(users)],
        }
    )


def cluster(capacities: list[tuple[float, ...]], demands: list[tuple[float, ...]]) -> Workload:
    """A workload of these servers and endless users, unchecked (a harness test's cluster may hold
    a user whose task fits nowhere, or a resource a server lacks)."""
    return Workload(tuple(f"r{i}" for i in range(len(capacities[0]))),
                    tuple(Server(f"s{i}", tuple(c)) for i, c in enumerate(capacities)),
                    tuple(User(f"u{i}", tuple(d)) for i, d in enumerate(demands)))


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


@pytest.fixture(autouse=True, scope="session")
def results_validate_against_the_published_schema() -> Iterator[None]:
    """Every result document a test makes (in this process) is held to the published JSON
    Schema (`drfemu schema`), as JSON carries it. Without jsonschema the check is skipped."""
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        yield
        return
    from drfemu.schema.result import RunResult, result_schema

    original = RunResult.of_document.__func__  # type: ignore[attr-defined]

    def checked(cls: type[RunResult], document: Any) -> RunResult:
        result: RunResult = original(cls, document)
        Draft202012Validator(result_schema()).validate(json.loads(result.to_json()))
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RunResult, "of_document", classmethod(checked))
        yield
