"""The online, non-preemptive scheduling rules of seed 002 §V–VI (C-ADRF and its baselines).

`OnlineScheduler` holds a pool's free capacity, the queued jobs (per user, in submission
order) and what each user's running jobs hold. `submit`, `finish` and `schedule` are pure
state changes with no notion of time; the test oracle `tests/oracles/jobsim.py` drives them with
arrivals and run times, and the emulator's central protocols (`protocols.online_central`) share
their order (`order_key`). Rules:

- `c-adrf` (Algorithm 1): the user with the least adaptive dominant share W_i(x_i) starts its
  next job if it fits; if not, nothing else starts — freed resources cumulate until it fits;
- `naive-adrf`: the same order, but a user whose job does not fit is skipped for the next
  poorest (progressive filling; it can starve users with large jobs, §V-A);
- `cpu`, `mem`: weighted max-min fairness (weight 1) on the CPU or memory share, skipping
  users whose job does not fit;
- `g-cpu`, `g-mem`: the same with the weight function W_i applied to that share;
- `fifo`: jobs in submission order, stopping at the first that does not fit.

x_i is the dominant share of a user's running jobs (max over resources of held / capacity);
W_i(x) = β_i x^α with β_i as in `policies.adrf`: `d-max` (the seed's literal β = 1,
the default) or `D-max` (the per-job dominant share of the user's latest job). With `d-max`,
W orders users exactly as x does, so `g-cpu` equals `cpu` and `g-mem` equals `mem`, and α
does not change any rule's order. A job must fit in every resource to start, whatever share
the rule orders by. Ties go to the user who arrived first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from drfemu.kernel.resources import CapacityViolation
from drfemu.policies.pool import PolicyInputError

__all__ = ["ONLINE_BETAS", "RULES", "OnlineScheduler", "order_key"]

RULES = ("c-adrf", "naive-adrf", "cpu", "g-cpu", "mem", "g-mem", "fifo")
ONLINE_BETAS = ("d-max", "D-max")
_REL_TOL = 1e-9


def order_key(rule: str, held: Sequence[float], capacity: Sequence[float], latest: Sequence[float], alpha: float,
              beta: str, resource: int | None = None) -> float:
    """The share `rule` orders users by, lowest first: W_i(x) = β_i x^α of the dominant share
    (`c-adrf`, `naive-adrf`) or of one resource's share (`cpu`/`g-cpu`: resource 0, `mem`/`g-mem`:
    1, or `resource` when given); the plain share for `cpu` and `mem`. `latest` is the user's
    latest task demand (β = `D-max` reads it)."""
    if rule in ("c-adrf", "naive-adrf"):
        x = max(h / c for h, c in zip(held, capacity))
    else:
        r = resource if resource is not None else (0 if rule in ("cpu", "g-cpu") else 1)
        x = held[r] / capacity[r]
    if rule in ("cpu", "mem"):
        return x
    b = 1.0 if beta == "d-max" else max(d / c for d, c in zip(latest, capacity))
    return float(b * x ** alpha)


class OnlineScheduler:
    """One rule's queues and allocation on one pool (resource 0 is CPU, 1 is memory)."""

    def __init__(self, rule: str, capacity: Sequence[float], alpha: float = 1.0, beta: str = "d-max") -> None:
        if rule not in RULES:
            raise PolicyInputError(f"unknown online rule {rule!r} (known: {', '.join(RULES)})")
        if beta not in ONLINE_BETAS:
            raise PolicyInputError(f"unknown beta {beta!r} for online rules (known: {', '.join(ONLINE_BETAS)})")
        if not alpha > 0:
            raise PolicyInputError(f"alpha must be positive, got {alpha}")
        self.rule, self.alpha, self.beta = rule, alpha, beta
        self.capacity = tuple(float(c) for c in capacity)
        self.free = list(self.capacity)
        self.queues: dict[int, deque[int]] = {}
        self.fifo: deque[int] = deque()
        self.demand: dict[int, tuple[float, ...]] = {}
        self.owner: dict[int, int] = {}
        self.held: dict[int, list[float]] = {}
        self.running: dict[int, int] = {}
        self.arrival: dict[int, int] = {}
        self.latest: dict[int, tuple[float, ...]] = {}

    # -- state changes ------------------------------------------------------------------
    def submit(self, job: int, user: int, demand: Sequence[float]) -> None:
        """Queue `job` of `user`; a job larger than the pool in some resource is refused."""
        d = tuple(float(x) for x in demand)
        if any(x > c * (1 + _REL_TOL) for x, c in zip(d, self.capacity)):
            raise PolicyInputError(f"job {job} demands {list(d)}, more than the pool {list(self.capacity)}")
        self.demand[job], self.owner[job] = d, user
        self.arrival.setdefault(user, len(self.arrival))
        self.held.setdefault(user, [0.0] * len(self.capacity))
        self.running.setdefault(user, 0)
        self.latest[user] = d
        self.queues.setdefault(user, deque()).append(job)
        if self.rule == "fifo":
            self.fifo.append(job)

    def finish(self, job: int) -> None:
        """Release a running job's resources."""
        d, user = self.demand.pop(job), self.owner.pop(job)
        held = self.held[user]
        for r, x in enumerate(d):
            self.free[r] += x
            held[r] -= x
        self.running[user] -= 1
        if not self.running[user]:
            held[:] = [0.0] * len(held)  # no rounding residue once nothing runs

    def schedule(self) -> list[int]:
        """Start the jobs the rule allows now; returns them in start order."""
        started: list[int] = []
        if self.rule == "fifo":
            while self.fifo and self._fits(self.fifo[0]):
                job = self.fifo.popleft()
                self.queues[self.owner[job]].popleft()
                self._start(job, started)
            return started
        while True:
            waiting = sorted((u for u, q in self.queues.items() if q), key=lambda u: (self.key(u), self.arrival[u]))
            for user in waiting:
                job = self.queues[user][0]
                if self._fits(job):
                    self.queues[user].popleft()
                    self._start(job, started)
                    break
                if self.rule == "c-adrf":
                    return started  # cumulate freed resources for the poorest user
            else:
                return started

    # -- reading -------------------------------------------------------------------------
    def dominant_share(self, user: int) -> float:
        return max(h / c for h, c in zip(self.held[user], self.capacity))

    def key(self, user: int) -> float:
        """The share the rule orders by, lowest first (`order_key`)."""
        return order_key(self.rule, self.held[user], self.capacity, self.latest[user], self.alpha, self.beta)

    def wanted(self, user: int) -> float:
        """The dominant share the user would hold with all its queued jobs running too."""
        total = list(self.held[user])
        for job in self.queues[user]:
            total = [t + d for t, d in zip(total, self.demand[job])]
        return max(t / c for t, c in zip(total, self.capacity))

    def present(self) -> list[int]:
        """Users with a queued or running job, in arrival order."""
        return sorted((u for u in self.held if self.queues[u] or self.running[u]), key=lambda u: self.arrival[u])

    # -- helpers -------------------------------------------------------------------------
    def _fits(self, job: int) -> bool:
        return all(d <= f + _REL_TOL * c for d, f, c in zip(self.demand[job], self.free, self.capacity))

    def _start(self, job: int, started: list[int]) -> None:
        user = self.owner[job]
        held = self.held[user]
        for r, x in enumerate(self.demand[job]):
            self.free[r] -= x
            held[r] += x
        if any(f < -_REL_TOL * c for f, c in zip(self.free, self.capacity)):
            raise CapacityViolation(f"job {job} started beyond the pool's capacity (free {self.free})")
        self.running[user] += 1
        started.append(job)
