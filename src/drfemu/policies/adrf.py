"""ADRF and the SWM optimum for divisible jobs on one pool (seed 002, §III–IV).

Model (seed 002 §III-A): capacities are normalised to 1; D_ir = demand_ir / c_r is the share
of resource r one job of user i takes and d_ir = D_ir / max_r D_ir its normalised demand. A
user's dominant share x_i gives it d_ir · x_i of every resource r; `tasks` = x_i / max_r D_ir.

Utility (eq. 3): α-fair, U(x) = x^(1−α) / (1−α), and log x at α = 1.

**SWM** (eq. 2): max Σ U(x_i) s.t. Σ_i d_ir x_i ≤ 1, x ≥ 0, solved with cvxpy (the
`optimum` extra). Forms by α, chosen to stay accurate as α grows: Σ log x at α = 1;
maximise Σ x^(1−α) (`power`, concave) for α < 1; minimise Σ x^(1−α) (`power`, convex) for
1 < α ≤ 2; for α > 2, minimise `pnorm(inv_pos(x), α − 1)` instead, which has the same
minimiser (Σ x^(1−α) = ‖1/x‖_{α−1}^{α−1}) and values that stay moderate where x^(1−α)
itself would overflow.

**ADRF** (Definition 5, Proposition 7): GW-DRF with weights W_i(x) = β_i / U'(x) = β_i x^α,
i.e. max-min fairness on β_i x_i^α by progressive filling (water-filling on the weight
level, users freezing when a resource they use saturates; with all demands positive this is
eq. 13). `beta` chooses β_i:
- `"d-max"` (default, the seed's and SPEC's β_i = d_i,max): with the seed's normalised
  demands, max_r d_ir = 1 for every user, so ADRF's divisible allocation is DRF's. Taken
  literally this way the seed's Table 2 gaps are reproduced (docs/policies.md);
- `"D-max"`: the un-normalised maximum, max_r D_ir (the per-job dominant share);
- `"d-rstar"`: d_ir* on the resource r* with the largest total normalised demand, the
  resource eq. 13–14 suggest will saturate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from drfemu.policies.pool import PolicyInputError, check_pool

__all__ = ["BETAS", "AdrfModel", "adrf", "adrf_beta", "social_welfare", "swm", "utility"]


@dataclass(frozen=True)
class AdrfModel:
    """The seed's normalised view of a pool: per-job shares D, normalised demands d."""

    capacity: tuple[float, ...]
    demands: tuple[tuple[float, ...], ...]
    shares: tuple[tuple[float, ...], ...]  # D_ir
    normalised: tuple[tuple[float, ...], ...]  # d_ir

    @classmethod
    def of(cls, capacity: Sequence[float], demands: Sequence[Sequence[float]]) -> AdrfModel:
        cap, users = check_pool(capacity, demands)
        shares = tuple(tuple(d / c for d, c in zip(demand, cap)) for demand in users)
        normalised = tuple(tuple(s / max(row) for s in row) for row in shares)
        return cls(cap, tuple(users), shares, normalised)

    def allocation(self, x: Sequence[float]) -> tuple[tuple[float, ...], ...]:
        """Resources held by each user at dominant shares `x`."""
        return tuple(tuple(xi * d * c for d, c in zip(row, self.capacity)) for xi, row in zip(x, self.normalised))

    def tasks(self, x: Sequence[float]) -> tuple[float, ...]:
        return tuple(xi / max(row) for xi, row in zip(x, self.shares))


def _check_alpha(alpha: float) -> float:
    if not (math.isfinite(alpha) and alpha > 0):
        raise PolicyInputError(f"alpha must be positive and finite, got {alpha}")
    return float(alpha)


def utility(x: float, alpha: float) -> float:
    """U(x) of eq. 3 (log x at α = 1); −∞ at x = 0 when α ≥ 1."""
    if x <= 0:
        return -math.inf if alpha >= 1 else 0.0
    return math.log(x) if alpha == 1 else x ** (1 - alpha) / (1 - alpha)


def social_welfare(x: Sequence[float], alpha: float) -> float:
    return math.fsum(utility(xi, alpha) for xi in x)


BETAS = ("d-max", "D-max", "d-rstar")


def adrf_beta(model: AdrfModel, beta: str) -> list[float]:
    """β_i under one of `BETAS`."""
    if beta == "d-max":
        return [max(row) for row in model.normalised]
    if beta == "D-max":
        return [max(row) for row in model.shares]
    if beta == "d-rstar":
        totals = [sum(row[r] for row in model.normalised) for r in range(len(model.capacity))]
        rstar = totals.index(max(totals))
        return [row[rstar] for row in model.normalised]
    raise PolicyInputError(f"unknown beta {beta!r} (known: {', '.join(BETAS)})")


def adrf(capacity: Sequence[float], demands: Sequence[Sequence[float]], alpha: float,
         beta: str = "d-max") -> tuple[AdrfModel, tuple[float, ...]]:
    """ADRF dominant shares x_i (divisible), by water-filling on the weight level β_i x_i^α."""
    alpha = _check_alpha(alpha)
    model = AdrfModel.of(capacity, demands)
    n, m = len(model.demands), len(model.capacity)
    weights = adrf_beta(model, beta)
    if not all(b > 0 for b in weights):
        raise PolicyInputError(f"beta {beta!r} is zero for a user that does not use resource r*; choose another")
    # At weight level L an unfrozen user holds x_i = (L / β_i)^(1/α) = g · β_i^(−1/α), g = L^(1/α).
    unit = [b ** (-1 / alpha) for b in weights]
    x = [0.0] * n
    active = set(range(n))
    while active:
        frozen_use = [sum(model.normalised[i][r] * x[i] for i in range(n) if i not in active) for r in range(m)]
        growth = [sum(model.normalised[i][r] * unit[i] for i in active) for r in range(m)]
        levels = [(1 - frozen_use[r]) / growth[r] for r in range(m) if growth[r] > 0]
        g = max(0.0, min(levels))
        for i in active:
            x[i] = g * unit[i]
        full = {r for r in range(m) if growth[r] > 0 and abs((1 - frozen_use[r]) / growth[r] - g) <= 1e-12 * max(1.0, g)}
        active -= {i for i in active if any(model.normalised[i][r] > 0 for r in full)}
    return model, tuple(x)


def swm(capacity: Sequence[float], demands: Sequence[Sequence[float]], alpha: float,
        caps: Sequence[float] | None = None) -> tuple[AdrfModel, tuple[float, ...]]:
    """The SWM optimum x* (eq. 2) with cvxpy; needs the `optimum` extra.

    `caps` optionally bounds each x_i from above (a user cannot hold more than its jobs need).
    """
    alpha = _check_alpha(alpha)
    try:
        import cvxpy as cp
        import numpy as np
    except ImportError:
        raise PolicyInputError("swm needs cvxpy: pip install 'drfemu[optimum]'") from None
    model = AdrfModel.of(capacity, demands)
    d = np.array(model.normalised).T  # resources × users
    n = len(model.demands)
    # With caps, solve for y = x / cap in (0, 1]: tiny caps otherwise leave the solver badly
    # scaled (Clarabel reports "optimal_inaccurate"); U(cap·y) only reweights the terms.
    scale = np.ones(n) if caps is None else np.array(caps, dtype=float)
    if not np.all(scale > 0):
        raise PolicyInputError("every cap must be positive")
    y = cp.Variable(n, pos=True)
    weight = scale ** (1 - alpha)
    if alpha == 1:
        objective = cp.Maximize(cp.sum(cp.log(y)))
    elif alpha < 1:
        objective = cp.Maximize(weight @ cp.power(y, 1 - alpha))
    elif alpha <= 2:
        objective = cp.Minimize(weight @ cp.power(y, 1 - alpha))
    else:
        objective = cp.Minimize(cp.pnorm(cp.multiply(weight ** (1 / (alpha - 1)), cp.inv_pos(y)), alpha - 1,
                                         approx=False))
    constraints = [(d * scale) @ y <= 1]
    if caps is not None:
        constraints.append(y <= 1)
    problem = cp.Problem(objective, constraints)
    problem.solve(solver=cp.CLARABEL)
    if problem.status not in ("optimal", "optimal_inaccurate") or y.value is None:
        raise RuntimeError(f"SWM solver ended {problem.status}")
    return model, tuple(float(v) for v in scale * y.value)
