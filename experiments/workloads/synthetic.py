"""Synthetic workloads with any number of resources (SPEC §7).

Servers draw each resource's capacity independently from the classes {0.25, 0.5, 0.75, 1.0}
(the trace's normalised machine sizes); users draw each entry of their demand log-uniformly
in [0.001, 0.1] — the range where the Google 2011 requests lie — so every resource can be a
user's dominant one. Draws come from the stream `workload/synthetic` of the seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from experiments.workloads.model import Server, User, Workload, WorkloadError
from nodes.streams import RandomStreams

__all__ = ["synthetic_case"]

CAPACITY_CLASSES = (0.25, 0.5, 0.75, 1.0)
DEMAND_RANGE = (0.001, 0.1)


def synthetic_case(servers: int, users: int, resources: Sequence[str] = ("cpu", "mem"), seed: int = 1) -> Workload:
    """A random cluster of `servers` and `users` over the named resources."""
    names = tuple(resources)
    if servers < 1 or users < 1:
        raise WorkloadError("a synthetic case needs at least 1 server and 1 user")
    if not names or len(set(names)) != len(names):
        raise WorkloadError("resources must be a non-empty list of distinct names")
    rng = RandomStreams(seed).numpy("workload/synthetic")
    m = len(names)
    capacities = rng.choice(np.array(CAPACITY_CLASSES), size=(servers, m))
    low, high = np.log(DEMAND_RANGE[0]), np.log(DEMAND_RANGE[1])
    demands = np.round(np.exp(rng.uniform(low, high, size=(users, m))), 6)
    return Workload(
        names,
        tuple(Server(f"s{i}", tuple(float(x) for x in row)) for i, row in enumerate(capacities)),
        tuple(User(f"u{i}", tuple(float(x) for x in row)) for i, row in enumerate(demands)),
        {"kind": "synthetic", "servers": servers, "users": users, "seed": seed},
    )
