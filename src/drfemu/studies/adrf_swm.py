"""Experiments of the policy library (seed 002 §VI): `drfemu experiment NAME`.

`online` runs on the emulator: `sweeps.online.online_rules`.

`adrf-swm`: `draws` times, pick 10–80 users uniformly at random from the Google 2011 trace
extract (one submitted task's CPU and memory request per user, as the Google cases do) and
compare the social welfare of ADRF (each β reading) with the SWM optimum, for α = 1
(the seed's α → 1, i.e. log utility), 1.5 and 2. Decision: the pool is one unit of each
resource in the trace's own units (requests are normalised to the largest machine); only
the CPU : memory ratio matters, since SWM depends on the normalised demands d alone and
ADRF's weights scale uniformly.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.kernel.streams import RandomStreams
from drfemu.policies.adrf import BETAS, adrf, social_welfare, swm
from drfemu.workloads.google import draw_request, load_google_trace

__all__ = ["SEED_TABLE_2", "adrf_vs_swm"]

# Seed 002 Table 2, Google traces: average social welfare of SWM and ADRF for α → 1, 1.5, 2.
SEED_TABLE_2 = {1.0: (-41.0, -42.0), 1.5: (-144.0, -147.0), 2.0: (-459.0, -479.0)}


MAX_DRAWS = 100_000
"""The most draws `adrf_vs_swm` takes (each solves SWM and ADRF three times over: about an hour
at this bound here)."""


def adrf_vs_swm(draws: int = 100, min_users: int = 10, max_users: int = 80, alphas: Sequence[float] = (1.0, 1.5, 2.0),
                seed: int = 1, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Mean welfare of SWM and ADRF (every β reading) over `draws` random sets of trace users;
    `progress(done, draws)` hears each draw."""
    if not 1 <= draws <= MAX_DRAWS or not 1 <= min_users <= max_users:
        raise InputError(f"draws must be in [1, {MAX_DRAWS:,}] and 1 ≤ min-users ≤ max-users")
    trace = load_google_trace()
    if max_users > len(trace.users):
        raise InputError(f"max-users {max_users} exceeds the {len(trace.users)} users of the trace extract")
    rng = RandomStreams(seed).numpy("experiments/adrf-swm")
    welfare: dict[float, dict[str, list[float]]] = {a: {"swm": [], **{b: [] for b in BETAS}} for a in alphas}
    sizes = []
    for _ in range(draws):
        n = int(rng.integers(min_users, max_users + 1))
        chosen = rng.choice(len(trace.users), size=n, replace=False)
        demands = [draw_request(trace.users[int(i)], rng) for i in chosen]
        sizes.append(n)
        for alpha in alphas:
            welfare[alpha]["swm"].append(social_welfare(swm((1.0, 1.0), demands, alpha)[1], alpha))
            for beta in BETAS:
                welfare[alpha][beta].append(social_welfare(adrf((1.0, 1.0), demands, alpha, beta)[1], alpha))
        if progress is not None:
            progress(len(sizes), draws)
    rows = []
    for alpha in alphas:
        optimum = welfare[alpha]["swm"]
        row: dict[str, Any] = {"alpha": alpha, "swm_mean_welfare": statistics.fmean(optimum)}
        for beta in BETAS:
            gaps = [(o - w) / abs(o) for o, w in zip(optimum, welfare[alpha][beta])]
            row[f"adrf_{beta}_mean_welfare"] = statistics.fmean(welfare[alpha][beta])
            row[f"adrf_{beta}_mean_gap"] = statistics.fmean(gaps)
        if alpha in SEED_TABLE_2:
            s, a = SEED_TABLE_2[alpha]
            row["seed_swm"], row["seed_adrf"], row["seed_gap"] = s, a, (s - a) / abs(s)
        rows.append(row)
    return {"experiment": "adrf-swm", "draws": draws, "users": [min_users, max_users], "seed": seed,
            "mean_users": statistics.fmean(sizes), "rows": rows}
