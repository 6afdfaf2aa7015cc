"""`drfemu policy`: one policy of the library on one pool, as a JSON-ready document.

`users` lists each user in `--demand` order with `allocation` (per resource), `tasks` and
`dominant_share`. For `tda`, `allocation` and `tasks` are time averages over the slots, and
the document adds `case`, `slots` (each with `duration`, `tasks`, `shares`),
`average_shares`, `min_average_share`, `drf_shares` and `bound`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from protocols.policies.drf_filling import drf_divisible, drf_tasks
from protocols.policies.per_resource import ffmra, mlf_drs
from protocols.policies.pool import PolicyInputError, check_pool
from protocols.policies.tda import tda

__all__ = ["POLICIES", "run_policy"]


def _users(allocation: Sequence[Sequence[float]], tasks: Sequence[float], shares: Sequence[float]) -> list[dict[str, Any]]:
    return [{"allocation": list(a), "tasks": t, "dominant_share": s} for a, t, s in zip(allocation, tasks, shares)]


def _drf(capacity: Sequence[float], demands: Sequence[Sequence[float]], divisible: bool) -> dict[str, Any]:
    result = (drf_divisible if divisible else drf_tasks)(capacity, demands)
    return {"users": _users(result.allocation, result.tasks, result.dominant_shares),
            "min_dominant_share": result.min_dominant_share}


def _tda(capacity: Sequence[float], demands: Sequence[Sequence[float]], divisible: bool) -> dict[str, Any]:
    if divisible:
        raise PolicyInputError("tda allocates whole tasks; --divisible does not apply")
    result = tda(capacity, demands)
    tasks = [sum(slot.duration * slot.tasks[u] for slot in result.slots) for u in (0, 1)]
    _, users = check_pool(capacity, demands)
    allocation = [[t * d for d in demand] for t, demand in zip(tasks, users)]
    return {
        "users": _users(allocation, tasks, result.average_shares),
        "case": result.case,
        "slots": [{"duration": s.duration, "tasks": list(s.tasks), "shares": list(s.shares)} for s in result.slots],
        "average_shares": list(result.average_shares),
        "min_average_share": result.min_average_share,
        "drf_tasks": list(result.drf_tasks),
        "drf_shares": list(result.drf_shares),
        "bound": result.bound,
    }


def _per_resource(policy: Callable[..., Any]) -> Callable[[Sequence[float], Sequence[Sequence[float]], bool],
                                                            dict[str, Any]]:
    """MLF-DRS and FFMRA are divisible by definition: `tasks` is how many whole-or-partial
    tasks each user's allocation can run, min over resources of allocation / demand."""

    def run(capacity: Sequence[float], demands: Sequence[Sequence[float]], divisible: bool) -> dict[str, Any]:
        result = policy(capacity, demands)
        return {"users": _users(result.allocation, result.tasks, result.dominant_shares),
                "min_dominant_share": result.min_dominant_share,
                "utilization": [sum(row[k] for row in result.allocation) / c for k, c in enumerate(result.capacity)]}

    return run


POLICIES: dict[str, Callable[[Sequence[float], Sequence[Sequence[float]], bool], dict[str, Any]]] = {
    "drf": _drf,
    "tda": _tda,
    "mlf-drs": _per_resource(mlf_drs),
    "ffmra": _per_resource(ffmra),
}


def run_policy(name: str, capacity: Sequence[float], demands: Sequence[Sequence[float]],
               divisible: bool = False) -> dict[str, Any]:
    """The document of policy `name` on the pool; `PolicyInputError` names any problem."""
    if name not in POLICIES:
        raise PolicyInputError(f"unknown policy {name!r} (known: {', '.join(POLICIES)})")
    document = {"policy": name, "capacity": list(check_pool(capacity, demands)[0]), "divisible": divisible}
    document.update(POLICIES[name](capacity, demands, divisible))
    return document
