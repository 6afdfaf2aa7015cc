"""Workload file format, validation, Google 2011 cases and the packaged extract."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from drfemu.kernel.processes import SpecError
from drfemu.schema.workload import WorkloadError, load_workload, parse_workload
from drfemu.workloads.google import draw_request, google_case, load_google_trace
from drfemu.workloads.synthetic import synthetic_case
from drfemu.workloads.trace_extract import (
    MACHINE_EVENTS,
    TASK_EVENTS,
    build_extract,
)
from tests.conftest import SHARED_TRACE

ISSUE_EXAMPLE = {
    "resources": ["cpu", "mem"],
    "servers": [{"id": "s0", "capacity": [9, 18]}],
    "users": [{"id": "A", "demand": [1, 4]}, {"id": "B", "demand": [3, 1]}],
}


def test_accepts_the_documented_shape_and_round_trips(tmp_path: Path) -> None:
    w = parse_workload(ISSUE_EXAMPLE)
    assert w.resources == ("cpu", "mem") and w.total == (9.0, 18.0)
    assert [u.id for u in w.users] == ["A", "B"]
    path = tmp_path / "w.json"
    w.save(path)
    assert load_workload(path) == w


def test_the_cluster_capacity_is_summed_once_and_is_not_part_of_equality(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set-up reads `total` per user: summed each time, 100,000 servers × 5,000 users took most of an hour."""
    import drfemu.schema.workload as module

    calls: list[int] = []
    summed = module.total_capacity
    monkeypatch.setattr(module, "total_capacity", lambda capacities: calls.append(1) or summed(capacities))
    w, fresh = parse_workload(ISSUE_EXAMPLE), parse_workload(ISSUE_EXAMPLE)
    calls.clear()  # parsing sums its own to validate
    assert [w.total for _ in range(5)] == [(9.0, 18.0)] * 5 and len(calls) == 1
    assert w == fresh and hash(w.servers) == hash(fresh.servers) and "_total" not in repr(w)


def test_three_resources_and_optional_fields() -> None:
    w = parse_workload(
        {
            "resources": ["cpu", "mem", "gpu"],
            "servers": [{"capacity": [8, 32, 0]}, {"capacity": [8, 32, 4]}],
            "users": [{"demand": [1, 2, 1]}],
        }
    )
    assert [s.id for s in w.servers] == ["s0", "s1"] and not w.finite


def test_finite_tasks_are_expanded_and_ordered_by_submit_time() -> None:
    w = parse_workload({"resources": ["cpu", "mem"], "servers": [{"capacity": [4, 4]}],
                        "users": [{"id": "a", "demand": [1, 1], "tasks": [
                            {"submit": 3, "duration": 2},
                            {"submit": 1, "duration": 1, "demand": [2, 1], "count": 2}]}]})
    assert w.finite and w.task_count == 3
    assert [(t.submit, t.duration, t.demand) for t in w.users[0].tasks or ()] == [
        (1.0, 1.0, (2.0, 1.0)), (1.0, 1.0, (2.0, 1.0)), (3.0, 2.0, (1.0, 1.0))]
    assert parse_workload(w.to_dict()) == w


@pytest.mark.parametrize(("change", "message"), [
    (lambda u: u.update(tasks=[]), "non-empty list"),
    (lambda u: u.update(tasks=[{"submit": 0}]), "needs 'duration'"),
    (lambda u: u.update(tasks=[{"submit": -1, "duration": 1}]), "submit must be a non-negative"),
    (lambda u: u.update(tasks=[{"submit": 0, "duration": 0}]), "duration must be a positive"),
    (lambda u: u.update(tasks=[{"submit": 0, "duration": 1, "count": 0}]), "count must be an integer"),
    (lambda u: u.update(tasks=[{"submit": 0, "duration": 1, "demand": [9, 1]}]), "fits on no server"),
    (lambda u: u.update(tasks=[{"submit": 0, "duration": 1, "gpu": 1}]), "unknown key(s) gpu"),
    (lambda u: u.update(arrival=5), "'arrival' and 'duration' of a user are gone"),
])
def test_bad_finite_tasks_get_one_line_errors(change, message) -> None:  # type: ignore[no-untyped-def]
    user = {"id": "a", "demand": [1, 1], "tasks": [{"submit": 0, "duration": 1}]}
    change(user)
    with pytest.raises(WorkloadError, match=re.escape(message)):
        parse_workload({"resources": ["cpu", "mem"], "servers": [{"capacity": [4, 4]}], "users": [user]})


def test_endless_and_finite_users_do_not_mix() -> None:
    with pytest.raises(WorkloadError, match="all endless or all finite"):
        parse_workload({"resources": ["cpu"], "servers": [{"capacity": [4]}], "users": [
            {"demand": [1]}, {"demand": [1], "tasks": [{"submit": 0, "duration": 1}]}]})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["users"][0].update(demand=[1, 4, 2]), "has 3 entries but there are 2 resources"),
        (lambda d: d["servers"][0].update(capacity=[9]), "has 1 entries"),
        (lambda d: d["servers"][0].update(capacity=[-9, 18]), "negative"),
        (lambda d: d["servers"][0].update(capacity=[0, 0]), "zero capacity in every resource"),
        (lambda d: d["servers"][0].update(capacity=[0, 18]), "no server has any 'cpu' capacity"),
        (lambda d: d["users"][0].update(demand=[0, 0]), "demands nothing"),
        (lambda d: d["users"][0].update(demand=["1", 4]), "must hold numbers"),
        (lambda d: d["users"].append({"id": "A", "demand": [1, 1]}), "duplicate user id 'A'"),
        (lambda d: d.pop("servers"), "non-empty list 'servers'"),
        (lambda d: d.update(resources=[]), "resources"),
    ],
)
def test_bad_workloads_name_the_problem(change, message: str) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(json.dumps(ISSUE_EXAMPLE))
    change(data)
    with pytest.raises(WorkloadError, match=message):
        parse_workload(data)


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="missing.json: no such file"):
        load_workload(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"resources": ["cpu",')
    with pytest.raises(WorkloadError, match="broken.json: line 1: not JSON"):
        load_workload(broken)


def test_google_case_is_reproducible_and_shaped() -> None:
    a, b = google_case(100, 20, 1), google_case(100, 20, 1)
    assert a == b
    assert len(a.servers) == 100 and len(a.users) == 20
    assert len({s.id for s in a.servers}) == 100 and len({u.id for u in a.users}) == 20
    assert all(0 < d <= 1 for u in a.users for d in u.demand)
    assert all(0 < c <= 1 for s in a.servers for c in s.capacity)
    assert google_case(100, 20, 2) != a
    assert a.source["attribution"].startswith("Google cluster-usage trace")


def test_google_case_limits() -> None:
    trace = load_google_trace()
    assert len(trace.machines) == 12551 and len(trace.users) == 505
    with pytest.raises(WorkloadError, match="12551"):
        google_case(12552, 10, 1)
    with pytest.raises(WorkloadError, match="505"):
        google_case(10, 506, 1)
    assert len(google_case(12551, 505, 3).users) == 505


def test_user_demand_draw_is_uniform_over_tasks() -> None:
    """A user's demand is one of its tasks drawn uniformly: request frequencies follow task counts."""
    trace = load_google_trace()
    user = max(trace.users, key=lambda u: len(u.requests))
    counts = [user.cumulative[0]] + [b - a for a, b in zip(user.cumulative, user.cumulative[1:])]
    rng = np.random.default_rng(11)
    draws = 40_000
    seen = Counter(draw_request(user, rng) for _ in range(draws))
    for request, count in zip(user.requests, counts):
        assert seen[request] / draws == pytest.approx(count / user.cumulative[-1], abs=0.01), request


def test_synthetic_case_any_resources() -> None:
    w = synthetic_case(20, 5, ("cpu", "mem", "gpu"), seed=4)
    assert w.resources == ("cpu", "mem", "gpu") and w == synthetic_case(20, 5, ("cpu", "mem", "gpu"), seed=4)
    assert all(len(u.demand) == 3 for u in w.users)


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_TRACE / MACHINE_EVENTS).exists(), reason="raw trace not available")
def test_packaged_extract_is_exactly_what_the_raw_trace_gives(tmp_path: Path) -> None:
    assert (SHARED_TRACE / TASK_EVENTS).exists()
    build_extract(SHARED_TRACE, tmp_path)
    packaged = Path(__file__).resolve().parents[1] / "src" / "drfemu" / "workloads" / "data" / "google2011"
    for name in ("machines.csv.gz", "user_requests.csv.gz"):
        with gzip.open(tmp_path / name) as fresh, gzip.open(packaged / name) as shipped:
            assert fresh.read() == shipped.read(), name


def test_synthetic_tasks_keep_the_endless_case_and_follow_their_processes() -> None:
    endless = synthetic_case(10, 4, seed=3)
    finite = synthetic_case(10, 4, seed=3, tasks=40, arrivals="bursts:30:8", durations="fixed:2")
    assert finite.servers == endless.servers and [u.demand for u in finite.users] == [u.demand for u in endless.users]
    assert finite.finite and finite.task_count == 160
    submits = [t.submit for t in finite.users[0].tasks or ()]
    assert len(set(submits)) == 5 and all(t.duration == 2.0 for t in finite.users[0].tasks or ())  # 5 bursts of 8
    assert finite == synthetic_case(10, 4, seed=3, tasks=40, arrivals="bursts:30:8", durations="fixed:2")
    poisson = synthetic_case(10, 4, seed=3, tasks=2000, arrivals="poisson:4", durations="exp:10")
    user = poisson.users[0].tasks or ()
    assert user[-1].submit / len(user) == pytest.approx(0.25, rel=0.1)
    assert np.mean([t.duration for t in user]) == pytest.approx(10, rel=0.1)


@pytest.mark.parametrize(("arrivals", "durations", "message"), [
    ("poisson", "exp:1", "must be poisson:RATE"),
    ("uniform:1", "exp:1", "unknown arrival process"),
    ("poisson:-1", "exp:1", "must be positive"),
    ("bursts:5:2.5", "exp:1", "whole number"),
    ("poisson:1", "gamma:1", "unknown duration distribution"),
    ("poisson:1", "lognormal:x:1", "needs numbers"),
])
def test_bad_processes_get_one_line_errors(arrivals: str, durations: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        synthetic_case(4, 2, tasks=3, arrivals=arrivals, durations=durations)


def test_weibull_durations_have_the_scale_and_shape_asked_for() -> None:
    import numpy as np

    from drfemu.kernel.processes import duration_distribution

    draws = duration_distribution("weibull:60:1.5")(np.random.default_rng(1), 20_000)
    # Weibull mean = scale · Γ(1 + 1/shape) = 60 · Γ(5/3) ≈ 54.16
    assert abs(draws.mean() - 54.16) < 1.0 and draws.min() > 0
