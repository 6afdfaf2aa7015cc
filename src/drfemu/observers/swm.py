"""Distance to the SWM optimum over time (seed 002 §VI-B), for runs of tasks that end.

At every SWM sample (`FiniteHarness.sample_swm`) the present users' dominant shares x are
compared with the SWM optimum x̂ for those users on the whole cluster, each user's demand
being that of its latest task, by the relative RMSE sqrt(mean(((x − x̂) / x̂)²)). Decision (as
`drfemu experiment online` always did): SWM is capped at the share each user's present tasks
could hold — uncapped it hands every present user a share it has no tasks for. α = 1 (log
utility; seed 002 reports α = 1 and 1.5 alike, and on the Google hour they coincide). The
cluster is one pool here, as in the seed: SWM ignores how capacity is split over servers.
Needs cvxpy (the `optimum` extra); without it the comparison says so instead of guessing.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from drfemu.schema.result_blocks import SwmComparison

__all__ = ["relative_rmse", "swm_comparison"]

ALPHA = 1.0


def relative_rmse(shares: Sequence[float], optimum: Sequence[float]) -> float:
    """sqrt(mean(((x − x̂) / x̂)²)) of seed 002 §VI-B."""
    return math.sqrt(math.fsum(((x - o) / o) ** 2 for x, o in zip(shares, optimum)) / len(shares))


def swm_comparison(samples: Sequence[dict[str, Any]], total: Sequence[float]) -> SwmComparison:
    """`alpha`, `times`, `rmse`, `mean_rmse`, `median_rmse` over the samples with users present,
    or `available=False` and the `reason` without cvxpy."""
    try:
        import cvxpy  # noqa: F401

        from drfemu.policies.adrf import swm
    except ImportError:
        return SwmComparison(available=False, reason="needs cvxpy: pip install 'drfemu[optimum]'")
    times, errors = [], []
    for sample in samples:
        if not sample["users"]:
            continue
        _, optimum = swm(total, sample["demands"], ALPHA, sample["wanted"])
        times.append(sample["time"])
        errors.append(relative_rmse(sample["shares"], optimum))
    return SwmComparison(available=True, alpha=ALPHA, times=times, rmse=errors,
                         mean_rmse=statistics.fmean(errors) if errors else None,
                         median_rmse=statistics.median(errors) if errors else None)
