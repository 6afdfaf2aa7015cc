"""TDA: the optimal time-division allocation for two users (seed 000, Algorithm 3.1, chapter 4).

Over a period of length 1 split into slots, each slot runs one *saturated* allocation
(whole tasks, and no user's next task fits in what is left). TDA maximises the smaller of
the two users' time-averaged dominant shares. Algorithm 3.1:
1. enumerate the saturated allocations and split them by whose dominant share is higher:
   G1 (user 1's), G2 (user 2's), G3 (equal);
2. if G1 or G2 is empty (case I), one slot with the DRF allocation is optimal;
3. otherwise take the pair r1 ∈ G1, r2 ∈ G2 whose two-slot mix, with durations that equalise
   the users' averages, gives the highest equal average;
4. with G3 empty (case II) those two slots are optimal; otherwise (case III) they are
   optimal only if they beat G3's single allocation, else one slot with it is.

`bound` is chapter 4's upper bound 1/Q on the equal average share (Q = max over resources
of the two users' demands normalised by their dominant demand; 1/2 when they share a
dominant resource).

Decisions: arithmetic is exact (`fractions.Fraction` of the float inputs), so G3 and ties
are decided exactly; results are returned as floats. Ties in step 3 go to the pair found
first, user 1's task count ascending. Case I's "DRF allocation" is `drf_tasks` on the same
pool, as the seed states; `tests/test_tda.py` checks it against an independent linear
programme on all 180 scenarios of chapter 5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from drfemu.policies.drf_filling import drf_tasks
from drfemu.policies.pool import PolicyInputError, check_pool

__all__ = ["Slot", "TdaResult", "saturated_allocations", "tda", "tda_bound"]


@dataclass(frozen=True)
class Slot:
    """One time slot: its share of the period, each user's tasks, and their dominant shares."""

    duration: float
    tasks: tuple[int, int]
    shares: tuple[float, float]


@dataclass(frozen=True)
class TdaResult:
    case: str  # "I", "II" or "III"
    slots: tuple[Slot, ...]
    average_shares: tuple[float, float]
    drf_tasks: tuple[int, int]
    drf_shares: tuple[float, float]
    bound: float
    saturated: int  # |R|
    groups: tuple[int, int, int]  # |G1|, |G2|, |G3|

    @property
    def min_average_share(self) -> float:
        return min(self.average_shares)


def _exact(values: Sequence[float]) -> list[Fraction]:
    return [Fraction(v) for v in values]


def _max_tasks(room: Sequence[Fraction], demand: Sequence[Fraction]) -> int:
    return min(int(r // d) for r, d in zip(room, demand) if d > 0)


MAX_ALLOCATIONS = 5_000
"""The most saturated allocations `tda` weighs (user 1's task counts 0..n): it compares every
pair of them, so its time grows with the square — about 6 s at this bound."""


def saturated_allocations(capacity: Sequence[float], demand_1: Sequence[float],
                          demand_2: Sequence[float]) -> list[tuple[int, int]]:
    """Every saturated allocation (tasks of user 1, tasks of user 2), user 1's count ascending."""
    cap, (d1, d2) = _exact(capacity), (_exact(demand_1), _exact(demand_2))
    out = []
    for a1 in range(_max_tasks(cap, d1) + 1):
        room = [c - a1 * x for c, x in zip(cap, d1)]
        a2 = _max_tasks(room, d2)
        if any((a1 + 1) * x + a2 * y > c for c, x, y in zip(cap, d1, d2)):
            out.append((a1, a2))
    return out


def tda_bound(capacity: Sequence[float], demand_1: Sequence[float], demand_2: Sequence[float]) -> float:
    """1/Q, Q = max_r (q_r1 + q_r2), q_ru = (d_ur / c_r) / s_u (seed 000, Lemmas 4.1–4.2)."""
    cap, users = check_pool(capacity, [demand_1, demand_2])
    normalised = [[d / c for d, c in zip(demand, cap)] for demand in users]
    q = [[x / max(row) for x in row] for row in normalised]
    return float(1.0 / max(a + b for a, b in zip(*q)))


def tda(capacity: Sequence[float], demands: Sequence[Sequence[float]]) -> TdaResult:
    """Algorithm 3.1 for exactly two users."""
    if len(demands) != 2:
        raise PolicyInputError(f"TDA is defined for exactly two users, got {len(demands)}")
    cap_f, users = check_pool(capacity, demands)
    cap = _exact(cap_f)
    most = _max_tasks(cap, _exact(users[0])) + 1
    if most > MAX_ALLOCATIONS:
        raise PolicyInputError(f"the pool holds {most - 1:,} tasks of user 1: TDA weighs every pair of saturated "
                               f"allocations (quadratic), and is bounded to {MAX_ALLOCATIONS:,} of them (a few "
                               "seconds); scale the capacity and demands down")
    s = [max(Fraction(d) / c for d, c in zip(demand, cap)) for demand in users]
    allocations = saturated_allocations(cap_f, *users)
    shares = {a: (a[0] * s[0], a[1] * s[1]) for a in allocations}
    g1 = [a for a in allocations if shares[a][0] > shares[a][1]]
    g2 = [a for a in allocations if shares[a][1] > shares[a][0]]
    g3 = [a for a in allocations if shares[a][0] == shares[a][1]]
    drf = drf_tasks(cap_f, users)
    drf_count = (int(drf.tasks[0]), int(drf.tasks[1]))
    drf_exact = (drf_count[0] * s[0], drf_count[1] * s[1])

    if not g1 or not g2:
        case, plan = "I", [(Fraction(1), drf_count, drf_exact)]
    else:
        best = None
        for r1 in g1:
            b1 = shares[r1]
            for r2 in g2:
                b2 = shares[r2]
                gap_1, gap_2 = b1[0] - b1[1], b2[1] - b2[0]
                value = (b1[0] * gap_2 + b2[0] * gap_1) / (gap_1 + gap_2)
                if best is None or value > best[0]:
                    best = (value, r1, r2, gap_1, gap_2)
        assert best is not None
        value, r1, r2, gap_1, gap_2 = best
        two = [(gap_2 / (gap_1 + gap_2), r1, shares[r1]), (gap_1 / (gap_1 + gap_2), r2, shares[r2])]
        if not g3:
            case, plan = "II", two
        else:
            equal = g3[0]
            case, plan = "III", (two if value > shares[equal][0] else [(Fraction(1), equal, shares[equal])])
    averages = tuple(sum(t * b[u] for t, _, b in plan) for u in (0, 1))
    return TdaResult(
        case=case,
        slots=tuple(Slot(float(t), a, (float(b[0]), float(b[1]))) for t, a, b in plan if t > 0),
        average_shares=(float(averages[0]), float(averages[1])),
        drf_tasks=drf_count,
        drf_shares=(float(drf_exact[0]), float(drf_exact[1])),
        bound=tda_bound(cap_f, *users),
        saturated=len(allocations),
        groups=(len(g1), len(g2), len(g3)),
    )
