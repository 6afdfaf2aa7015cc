"""`drfemu policy`: one policy of the library on one pool, as a JSON-ready document.

`users` lists each user in `--demand` order with `allocation` (per resource), `tasks` and
`dominant_share`. `adrf` and `swm` add `alpha` and `social_welfare`. For `tda`, `allocation` and `tasks` are time averages over the slots, and
the document adds `case`, `slots` (each with `duration`, `tasks`, `shares`),
`average_shares`, `min_average_share`, `drf_shares` and `bound`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from drfemu.policies.adrf import adrf, social_welfare, swm
from drfemu.policies.drf_filling import drf_divisible, drf_tasks
from drfemu.policies.per_resource import ffmra, mlf_drs
from drfemu.policies.pool import PolicyInputError, check_pool
from drfemu.policies.tda import tda

__all__ = ["POLICIES", "PolicyOptions", "run_policy"]


@dataclass(frozen=True)
class PolicyOptions:
    """Options some policies read: `divisible` (drf), `alpha` (adrf, swm), `beta` (adrf)."""

    divisible: bool = False
    alpha: float | None = None
    beta: str | None = None


def _users(allocation: Sequence[Sequence[float]], tasks: Sequence[float], shares: Sequence[float]) -> list[dict[str, Any]]:
    return [{"allocation": list(a), "tasks": t, "dominant_share": s} for a, t, s in zip(allocation, tasks, shares)]


def _drf(capacity: Sequence[float], demands: Sequence[Sequence[float]], options: PolicyOptions) -> dict[str, Any]:
    result = (drf_divisible if options.divisible else drf_tasks)(capacity, demands)
    return {"users": _users(result.allocation, result.tasks, result.dominant_shares),
            "min_dominant_share": result.min_dominant_share}


def _tda(capacity: Sequence[float], demands: Sequence[Sequence[float]], options: PolicyOptions) -> dict[str, Any]:
    if options.divisible:
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


Runner = Callable[[Sequence[float], Sequence[Sequence[float]], PolicyOptions], dict[str, Any]]


def _per_resource(policy: Callable[..., Any]) -> Runner:
    """MLF-DRS and FFMRA are divisible by definition: `tasks` is how many whole-or-partial
    tasks each user's allocation can run, min over resources of allocation / demand."""

    def run(capacity: Sequence[float], demands: Sequence[Sequence[float]], options: PolicyOptions) -> dict[str, Any]:
        result = policy(capacity, demands)
        return {"users": _users(result.allocation, result.tasks, result.dominant_shares),
                "min_dominant_share": result.min_dominant_share,
                "utilization": [sum(row[k] for row in result.allocation) / c for k, c in enumerate(result.capacity)]}

    return run


def _welfare_based(name: str) -> Runner:
    """ADRF and SWM: divisible jobs, dominant shares x_i, α-fair social welfare."""

    def run(capacity: Sequence[float], demands: Sequence[Sequence[float]], options: PolicyOptions) -> dict[str, Any]:
        assert options.alpha is not None
        if name == "adrf":
            model, x = adrf(capacity, demands, options.alpha, options.beta or "d-max")
        else:
            model, x = swm(capacity, demands, options.alpha)
        return {"users": _users(model.allocation(x), model.tasks(x), x), "alpha": options.alpha,
                "social_welfare": social_welfare(x, options.alpha), "min_dominant_share": min(x)}

    return run


POLICIES: dict[str, Runner] = {
    "drf": _drf,
    "tda": _tda,
    "adrf": _welfare_based("adrf"),
    "swm": _welfare_based("swm"),
    "mlf-drs": _per_resource(mlf_drs),
    "ffmra": _per_resource(ffmra),
}
_NEEDS_ALPHA = ("adrf", "swm")


def run_policy(name: str, capacity: Sequence[float], demands: Sequence[Sequence[float]],
               options: PolicyOptions = PolicyOptions()) -> dict[str, Any]:
    """The document of policy `name` on the pool; `PolicyInputError` names any problem."""
    if name not in POLICIES:
        raise PolicyInputError(f"unknown policy {name!r} (known: {', '.join(POLICIES)})")
    if (options.alpha is None) == (name in _NEEDS_ALPHA):
        raise PolicyInputError(f"--alpha is required by {' and '.join(_NEEDS_ALPHA)} and used by no other policy")
    if options.beta is not None and name != "adrf":
        raise PolicyInputError("--beta applies to adrf only")
    if options.divisible and name in _NEEDS_ALPHA:
        raise PolicyInputError(f"{name} is divisible by definition; --divisible does not apply")
    document = {"policy": name, "capacity": list(check_pool(capacity, demands)[0]), "divisible": options.divisible}
    document.update(POLICIES[name](capacity, demands, options))
    return document
