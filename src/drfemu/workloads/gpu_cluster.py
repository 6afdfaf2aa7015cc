"""A GPU-sharing cluster (issue 38): servers of several kinds, some without GPUs, and users who
want a fraction of one GPU, whole GPUs, or none — the hard case for placement, where
fractional tasks spread over many servers leave remnants under one GPU that whole-GPU tasks
cannot use.

Resources are `cpu` (cores), `mem` (GiB) and `gpu` (devices), in those units, so the case also
tests that nothing depends on units. Decisions (after the production GPU-sharing cluster of
Weng et al., USENIX ATC 2023, as issue 38 describes it; the exact mix is ours):
- server kinds (cores, GiB, GPUs, share of servers): (96, 768, 8, 0.35), (64, 512, 4, 0.25),
  (32, 256, 2, 0.20) and the CPU-only (96, 512, 0, 0.20) — a fifth without GPUs;
- `gpu_users` (0.8) of the users want GPUs; of those, `whole` (0.3) want 1, 2 or 4 whole GPUs
  (weights 0.6, 0.3, 0.1) and the others one fraction of a GPU from `FRACTIONS`;
- a GPU user's task takes log-uniform 0.5–6 cores (to 0.5) and 1–24 GiB (to 1 GiB) per GPU
  device it touches (servers have 12–16 cores per GPU, so GPUs, not cores, run out first, as
  in GPU clusters); a CPU-only user's 1–16 cores and 2–64 GiB;
- every draw comes from the stream `workload/gpu-cluster` of the seed, servers first.

By default the GPU is a scalar: a server with 8 GPUs holding fractional tasks has `8 − Σ
fractions` free, and a task fits when its demand fits in that sum. With `--devices gpu` each GPU
is a device and a fraction cannot span two (`protocols.devices`); `docs/workloads.md` compares
the two models and E8 (`docs/results.md`) runs on devices.
"""

from __future__ import annotations

import numpy as np

from drfemu.kernel.streams import RandomStreams
from drfemu.kernel.params import param
from drfemu.schema.params import GpuCaseParams
from drfemu.schema.workload import MAX_NODES, Server, User, Workload, WorkloadError
from drfemu.workloads.registry import WorkloadSpec

__all__ = ["FRACTIONS", "GPU_USERS", "GpuClusterParams", "SERVER_KINDS", "SPEC", "gpu_cluster_case"]

SERVER_KINDS: tuple[tuple[float, float, float, float], ...] = (
    (96.0, 768.0, 8.0, 0.35), (64.0, 512.0, 4.0, 0.25), (32.0, 256.0, 2.0, 0.20), (96.0, 512.0, 0.0, 0.20))
"""(cores, GiB, GPUs, share of the servers) of each server kind."""

FRACTIONS = (0.16, 0.32, 0.5, 0.81)
"""The GPU fractions fractional users ask for."""

WHOLE_GPUS = ((1.0, 0.6), (2.0, 0.3), (4.0, 0.1))
"""(GPUs, weight) of whole-GPU users."""

GPU_USERS = 0.8
"""The share of users that want GPUs when `--gpu-users` is not given."""


class GpuClusterParams(GpuCaseParams):
    """A GPU-sharing cluster's parameters: `GpuCaseParams` and the share of whole-GPU users."""

    whole: float = param(default=0.3, help="gpu-cluster: the share of the GPU users that want whole GPUs.", ge=0,
                         le=1)


def _log_uniform(rng: np.random.Generator, low: float, high: float, step: float) -> float:
    return float(max(step, np.round(np.exp(rng.uniform(np.log(low), np.log(high))) / step) * step))


def gpu_cluster_case(servers: int, users: int, seed: int = 1, gpu_users: float = GPU_USERS,
                     whole: float = GpuClusterParams.whole) -> Workload:
    """A GPU-sharing cluster of `servers` and endless `users` (see the module docstring)."""
    if servers < 1 or users < 1:
        raise WorkloadError("a GPU cluster case needs at least 1 server and 1 user")
    if servers > MAX_NODES or users > MAX_NODES:
        raise WorkloadError(f"a GPU cluster case has at most {MAX_NODES:,} servers and {MAX_NODES:,} users")
    if not (0 <= gpu_users <= 1 and 0 <= whole <= 1):
        raise WorkloadError("gpu_users and whole must be fractions in [0, 1]")
    rng = RandomStreams(seed).numpy("workload/gpu-cluster")
    weights = np.array([k[3] for k in SERVER_KINDS])
    kinds = rng.choice(len(SERVER_KINDS), size=servers, p=weights / weights.sum())
    cluster = tuple(Server(f"s{i}", SERVER_KINDS[k][:3]) for i, k in enumerate(kinds.tolist()))
    people = []
    for i in range(users):
        if rng.random() < gpu_users:
            if rng.random() < whole:
                counts, w = zip(*WHOLE_GPUS)
                gpus = float(rng.choice(counts, p=np.array(w) / sum(w)))
            else:
                gpus = float(rng.choice(FRACTIONS))
            devices = max(1.0, gpus)
            demand = (_log_uniform(rng, 0.5, 6, 0.5) * devices, _log_uniform(rng, 1, 24, 1.0) * devices, gpus)
        else:
            demand = (_log_uniform(rng, 1, 16, 0.5), _log_uniform(rng, 2, 64, 1.0), 0.0)
        people.append(User(f"u{i}", demand))
    source = {"kind": "gpu-cluster", "servers": servers, "users": users, "seed": seed, "gpu_users": gpu_users,
              "whole": whole}
    return Workload(("cpu", "mem", "gpu"), cluster, tuple(people), source)


def _draw(machines: int, users: int, case_seed: int, gpu_users: float | None, whole: float) -> Workload:
    return gpu_cluster_case(machines, users, case_seed, GPU_USERS if gpu_users is None else gpu_users, whole)


SPEC = WorkloadSpec("gpu-cluster", "a GPU-sharing cluster drawn from the shapes of the Alibaba GPU trace (cores, "
                    "GiB, GPUs; fractional and whole-GPU users)", GpuClusterParams, _draw, label="gpu")
