"""MLF-DRS (seed 003, Algorithm 1) and FFMRA (seed 004, Algorithm 1): divisible allocations
that split each resource between the users for whom it is dominant and the others.

Both papers mix units: their worked examples add raw demands (CPU units, GB) together and to
resource amounts, and both algorithms' update lines add a demand to an allocation, which only
makes sense in resource units. The code follows that reading, which reproduces the examples;
the papers' normalised definitions of a "dominant share" (d/C) would not. A user's dominant
resource is the one with the highest d_r / C_r (ties to the lower index); with more than two
resources, every other resource is non-dominant for that user (both papers only treat two).

**MLF-DRS**, per resource k with fair share f = C_k / n: a user's base amount is
max(demand, f) when k is its dominant resource and min(demand, f) otherwise (the four cases
of Algorithm 1, lines 16–23, with the unlisted case "both above f" completed the same way);
the free remainder Av = C_k − U, U the sum of bases, is shared in proportion to the bases:
allocation = base · (1 + Av / U) = base · C_k / U.

**FFMRA**: with TC the sum of all capacities, SD and SND the sums of the users' dominant and
non-dominant demands, the dominant side gets PD = TC·SD/(SD+SND) and the non-dominant side
PND = TC·SND/(SD+SND), split over resources in proportion to capacity (PD·C_k/TC). Within
each side of resource k every user gets its demand plus an equal part of what is left
(Algorithm 1, lines 13–14; max-min sharing as Theorem 1 describes it). Decision: when a
side's portion is smaller than its users' demands, it is shared in proportion to the demands
instead, so no allocation goes negative; a side with no users leaves its portion unused.
"""

from __future__ import annotations

from collections.abc import Sequence

from drfemu.policies.drf_filling import Allocation
from drfemu.policies.pool import check_pool

__all__ = ["ffmra", "mlf_drs"]


def _dominant(demand: Sequence[float], capacity: Sequence[float]) -> int:
    ratios = [d / c for d, c in zip(demand, capacity)]
    return ratios.index(max(ratios))


def _result(capacity: tuple[float, ...], demands: list[tuple[float, ...]],
            allocation: list[list[float]]) -> Allocation:
    tasks = tuple(min(a / d for a, d in zip(row, demand) if d > 0) for row, demand in zip(allocation, demands))
    shares = tuple(max(a / c for a, c in zip(row, capacity)) for row in allocation)
    return Allocation(capacity, tasks, tuple(tuple(row) for row in allocation), shares)


def mlf_drs(capacity: Sequence[float], demands: Sequence[Sequence[float]]) -> Allocation:
    """MLF-DRS on one pool (divisible)."""
    cap, users = check_pool(capacity, demands)
    n = len(users)
    dominant = [_dominant(d, cap) for d in users]
    allocation = [[0.0] * len(cap) for _ in users]
    for k, c in enumerate(cap):
        fair = c / n
        bases = [max(d[k], fair) if dominant[i] == k else min(d[k], fair) for i, d in enumerate(users)]
        total = sum(bases)
        for i, base in enumerate(bases):
            allocation[i][k] = base * c / total
    return _result(cap, users, allocation)


def _share_side(portion: float, wants: list[float]) -> list[float]:
    if not wants:
        return []
    left = portion - sum(wants)
    if left >= 0:
        return [w + left / len(wants) for w in wants]
    return [portion * w / sum(wants) for w in wants]


def ffmra(capacity: Sequence[float], demands: Sequence[Sequence[float]]) -> Allocation:
    """FFMRA on one pool (divisible)."""
    cap, users = check_pool(capacity, demands)
    dominant = [_dominant(d, cap) for d in users]
    sd = sum(d[dominant[i]] for i, d in enumerate(users))
    snd = sum(sum(d) - d[dominant[i]] for i, d in enumerate(users))
    tc = sum(cap)
    pd, pnd = tc * sd / (sd + snd), tc * snd / (sd + snd)
    allocation = [[0.0] * len(cap) for _ in users]
    for k, c in enumerate(cap):
        for portion, members in ((pd * c / tc, [i for i in range(len(users)) if dominant[i] == k]),
                                 (pnd * c / tc, [i for i in range(len(users)) if dominant[i] != k])):
            for i, amount in zip(members, _share_side(portion, [users[i][k] for i in members])):
                allocation[i][k] = amount
    return _result(cap, users, allocation)
