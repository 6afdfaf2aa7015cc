"""Fairness metrics over users' global dominant shares (thesis §2.2, SPEC §4–5).

- `gini`: the population Gini of eq. 2.6/2.7 — mean absolute difference over twice the mean,
  no n/(n−1) correction. gini([1,2,3,4,5]) = 0.2667.
- `ratio_20_20`: eq. 2.8, the richest 20% share over the poorest 20% share, with
  k = max(1, round(0.2·n)) users in each group; `inf` when the poorest group holds nothing.
- `jain`: (Σx)² / (n·Σx²), in [1/n, 1].
- `sample_std`: standard deviation with the n−1 denominator (thesis Table 5.2).

An all-zero vector has Gini 0 and Jain 1 (everyone equal); its 20:20 ratio is undefined (nan).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import mul

__all__ = ["gini", "gini_of_sorted", "jain", "ratio_20_20", "sample_std"]


def _check(values: Sequence[float]) -> list[float]:
    xs = list(map(float, values))
    if not xs:
        raise ValueError("fairness metrics need at least one value")
    if any(map(math.isnan, xs)) or min(xs) < 0:  # min is exact once no value is NaN
        raise ValueError("fairness metrics need non-negative numbers")
    return xs


def gini(values: Sequence[float]) -> float:
    """Population Gini coefficient, computed from the sorted values in O(n log n)."""
    return gini_of_sorted(sorted(_check(values)))


def gini_of_sorted(xs: Sequence[float]) -> float:
    """`gini` of floats already sorted ascending and known non-negative (no checks: for hot
    paths that validated them once, such as PDGDRF's test)."""
    n, total = len(xs), math.fsum(xs)
    if total == 0:
        return 0.0
    weighted = math.fsum(map(mul, range(1 - n, n, 2), xs))  # Σ (2i − n + 1) · x_i
    return weighted / (n * total)


def ratio_20_20(values: Sequence[float]) -> float:
    """Share of the richest 20% over the share of the poorest 20% (eq. 2.8)."""
    xs = sorted(_check(values))
    k = max(1, round(0.2 * len(xs)))
    poorest, richest = math.fsum(xs[:k]), math.fsum(xs[-k:])
    if poorest == 0:
        return math.nan if richest == 0 else math.inf
    return richest / poorest


_SQUARES_SAFE = (1e-100, 1e100)
"""Values whose largest lies outside this range are scaled by it before `jain` squares them."""


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index, `(Σx)² / (n·Σx²)`. It does not change with scale, so when the largest
    value is so small (or large) that squares would fall into the subnormal range (or overflow),
    the values are divided by it first; hypothesis found two equal shares of 6e-161 rated 0.9999.
    Values in `_SQUARES_SAFE` are used as they are, so every ordinary run's index keeps its bits."""
    xs = _check(values)
    top = max(xs)
    if top > 0 and not _SQUARES_SAFE[0] < top < _SQUARES_SAFE[1]:
        xs = [x / top for x in xs]
    squares = math.fsum(x * x for x in xs)
    if squares == 0:
        return 1.0
    return math.fsum(xs) ** 2 / (len(xs) * squares)


def sample_std(values: Sequence[float]) -> float:
    """Sample standard deviation (n − 1); 0 for a single value."""
    xs = _check(values)
    if len(xs) < 2:
        return 0.0
    mean = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
