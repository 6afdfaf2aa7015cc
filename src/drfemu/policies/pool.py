"""A resource pool and users' demands, checked once for every policy (SPEC §6)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from drfemu.kernel.errors import InputError

__all__ = ["PolicyInputError", "check_pool"]


class PolicyInputError(InputError):
    """A capacity or demand no policy can work with; the message names the problem."""


SMALLEST, LARGEST = 1e-9, 1e12  # the range of a capacity or a non-zero demand entry, as in workloads


def check_pool(capacity: Sequence[float], demands: Sequence[Sequence[float]]) -> tuple[tuple[float, ...],
                                                                                       list[tuple[float, ...]]]:
    """Validate a pool: positive finite capacities; one non-negative, non-zero demand per
    user with one entry per resource. Returns them as tuples of floats."""
    cap = tuple(float(c) for c in capacity)
    if not cap:
        raise PolicyInputError("the capacity needs at least one resource")
    if not all(math.isfinite(c) and c > 0 for c in cap):
        raise PolicyInputError(f"every capacity must be positive and finite, got {list(capacity)}")
    if not all(SMALLEST <= c <= LARGEST for c in cap):
        raise PolicyInputError(f"every capacity must lie in [{SMALLEST:g}, {LARGEST:g}], got {list(capacity)}")
    if not demands:
        raise PolicyInputError("at least one user's demand is needed")
    out = []
    for i, demand in enumerate(demands, start=1):
        d = tuple(float(x) for x in demand)
        if len(d) != len(cap):
            raise PolicyInputError(f"user {i}'s demand has {len(d)} entries but the capacity has {len(cap)} resources")
        if not all(math.isfinite(x) and x >= 0 for x in d) or not any(d):
            raise PolicyInputError(f"user {i}'s demand must be non-negative, finite and not all zero, got {list(demand)}")
        if not all(x == 0 or SMALLEST <= x <= LARGEST for x in d):
            raise PolicyInputError(f"user {i}'s demand entries must be 0 or lie in [{SMALLEST:g}, {LARGEST:g}], "
                                   f"got {list(demand)}")
        out.append(d)
    return cap, out
