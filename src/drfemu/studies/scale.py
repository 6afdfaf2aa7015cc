"""`drfemu bench scale`: the cost curve of the distributed protocols as the cluster grows.

Each point runs one protocol on a Google case of `servers` machines and `servers / 5` users
(at most the 505 users of the trace whose tasks request both CPU and memory) for a fixed span
of virtual time (`max_time`), in a fresh process, and reports what it cost: wall seconds per
virtual second (the emulation loop only: building the case and the nodes is reported apart),
events per wall second, messages per server and tick, and the process's peak memory (max
RSS, which includes the interpreter and the packaged trace).

A point that saturates before the span ends is reported at the virtual time it reached; the
rates stay per virtual second.
"""

from __future__ import annotations

import math
import multiprocessing
import resource
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from drfemu.assembly.run import run_emulation
from drfemu.kernel.errors import InputError
from drfemu.tools.pools import worker_pool
from drfemu.workloads.points import build_run_config, canonical_params, declared

__all__ = ["DEFAULT_SERVERS", "ScalePoint", "run_scale_curve", "users_for"]

DEFAULT_SERVERS = (100, 300, 1_000, 3_000, 10_000)
TRACE_USERS = 505  # users of the shipped extract with a task requesting both CPU and memory
USERS_PER_SERVER = 1 / 5


@dataclass(frozen=True)
class ScalePoint:
    """What one protocol cost on one cluster size over `virtual_s` seconds of virtual time."""

    protocol: str
    servers: int
    users: int
    neighbors: int
    virtual_s: float
    wall_s: float
    setup_wall_s: float
    events: int
    messages: int
    ticks: int
    peak_rss_mib: float
    status: str

    @property
    def wall_per_virtual_s(self) -> float:
        return self.wall_s / self.virtual_s

    @property
    def events_per_s(self) -> float:
        return self.events / self.wall_s

    @property
    def messages_per_server_tick(self) -> float:
        return self.messages / (self.servers * self.ticks)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "wall_per_virtual_s": self.wall_per_virtual_s, "events_per_s": self.events_per_s,
                "messages_per_server_tick": self.messages_per_server_tick}


def users_for(servers: int) -> int:
    """Users of a point: a fifth of the servers, at most the trace's 505, at least one."""
    return max(1, min(TRACE_USERS, round(servers * USERS_PER_SERVER)))


def _point(protocol: str, servers: int, neighbors: int, span: float, seed: int) -> ScalePoint:
    started = time.perf_counter()
    params = canonical_params({"protocol": protocol, "machines": servers, "users": users_for(servers),
                               "neighbors": neighbors, "max_time": span, "seed": seed})
    config = build_run_config(params)
    result = run_emulation(config).to_dict()
    total = time.perf_counter() - started
    return ScalePoint(protocol=protocol, servers=servers, users=users_for(servers), neighbors=neighbors,
                      virtual_s=result["virtual_time_s"], wall_s=result["wall_time_s"],
                      setup_wall_s=total - result["wall_time_s"], events=result["events"],
                      messages=result["messages_total"], ticks=result["ticks"],
                      peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      status=result["status"])


def run_scale_curve(protocols: Iterable[str] = ("pdgdrf", "dgdrf"), servers: Iterable[int] = DEFAULT_SERVERS,
                    span: float = 10.0, neighbors: int = 2, seed: int = 1,
                    done: Callable[[ScalePoint], None] | None = None) -> list[ScalePoint]:
    """Every protocol at every size, one point at a time, each in a fresh process (so peak
    memory is the point's own); `done` hears each point as it finishes."""
    protocols, servers = list(protocols), sorted(set(servers))
    if not protocols or not servers:
        raise InputError("the scale curve needs at least one protocol and one size")
    machines = declared("machines")
    low, high = machines.ge or 1, machines.le or math.inf
    if not low <= min(servers) <= max(servers) <= high:
        wrong = min(servers) if min(servers) < low else max(servers)
        raise InputError(f"--servers: cluster sizes must be in [{low:g}, {high:g}], got {wrong}")
    if not span > 0:
        raise InputError(f"the span of virtual time must be above 0, got {span}")
    for protocol in protocols:  # bad input fails here, before any point runs
        canonical_params({"protocol": protocol, "machines": servers[0], "users": users_for(servers[0]),
                          "neighbors": neighbors, "max_time": span, "seed": seed})
    points = []
    context = multiprocessing.get_context("spawn")
    with worker_pool(1, mp_context=context, max_tasks_per_child=1) as pool:
        for protocol in protocols:
            for size in servers:
                point = pool.submit(_point, protocol, size, neighbors, span, seed).result()
                points.append(point)
                if done is not None:
                    done(point)
    return points
