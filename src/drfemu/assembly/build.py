"""Building a run's nodes from its config: servers (or resource nodes and the central scheduler),
users and the gateway, each with its own random streams (SPEC §2–3).

All users start at time 0 (a finite user then waits for its first submit time); the allocation
tick drives the central scheduler, or the servers the protocol's rule asks for (see
`assembly.distributed`). The same config builds the same objects, state and draws in every
process (the live workers rely on it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from drfemu.assembly.config import RunConfig
from drfemu.assembly.distributed import DistributedSetup
from drfemu.kernel.errors import InputError
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.actor import Actor
from drfemu.nodes.gateway import Gateway
from drfemu.nodes.port import RuntimePort
from drfemu.nodes.resource_node import ResourceNode
from drfemu.nodes.scheduler import CentralScheduler
from drfemu.nodes.user import FiniteUserNode, UserNode
from drfemu.observers.observer import RunEnd
from drfemu.protocols.central import PER_TICK
from drfemu.protocols.resilience import Timeouts
from drfemu.schema.result import Distributed, Section

__all__ = ["CentralSetup", "Nodes", "Setup", "build_nodes", "central_scheduler"]


@dataclass
class Nodes:
    """Every node of a run, built from its config, in actor-id order — the servers (or resource
    nodes), the users, the gateway, the central scheduler — the ones the tick drives, and the
    setup of the protocol's kind (`Setup`) that built the servers."""

    actors: list[Actor]
    users: list[UserNode | FiniteUserNode]
    gateway: Gateway
    tickers: list[Actor]
    setup: Setup


class Setup(Protocol):
    """The resource side of a run, by the kind of its protocol: the servers of a distributed one
    (`assembly.distributed.DistributedSetup`) or the resource nodes and the central scheduler of a
    central one (`CentralSetup`). An observer of the run too (its figures, `sections`)."""

    @property
    def servers(self) -> Sequence[Actor]:
        """Actors 0..S−1."""

    @property
    def tail(self) -> Sequence[Actor]:
        """The actors after the users and the gateway."""

    def tickers(self, every_server: bool = False) -> Sequence[Actor]:
        """The actors the allocation tick drives (`every_server`: every server, runs with crashes)."""

    def start(self, runtime: RuntimePort) -> None:
        """Create its periodic drivers, after the allocation tick's."""

    def rejoin(self, actor: int, life: int, down: Sequence[int], now: float) -> Actor:
        """Actor `actor`'s `life`-th life after a crash, rejoining empty (`down`: the others down now)."""

    def sections(self, end: RunEnd) -> list[Section]:
        """Its part of the result (`figures`, if any)."""

    def figures(self) -> Distributed | None:
        """Its figures, summed over its servers (a live worker reports its own servers')."""

    def ideal_views_measure(self, actors: Sequence[Actor]) -> Callable[[], float] | None:
        """What measures, when called, the fraction of servers whose gradient view is their ideal
        one (`actors`: the runtime's list, each server in its current life); None without a gradient."""


class CentralSetup:
    """The resource nodes and the central scheduler of a central protocol."""

    def __init__(self, config: RunConfig, gateway: Gateway, streams: RandomStreams, timeouts: Timeouts) -> None:
        """`gateway` and `streams` are a distributed setup's business: a central one needs neither."""
        ids = config.ids
        self.config = config
        self.timeouts = timeouts
        self.servers: list[Actor] = [ResourceNode(i, s.capacity, ids.scheduler, timeouts.answer, timeouts.prompt,
                                                  config.device_resource)
                                     for i, s in zip(ids.servers, config.workload.servers)]
        self.tail: list[Actor] = [central_scheduler(config, ack_ends=timeouts.answer > 0)]

    def tickers(self, every_server: bool = False) -> list[Actor]:
        return list(self.tail)

    def start(self, runtime: RuntimePort) -> None:
        """No driver: the scheduler ticks with the allocation tick."""

    def rejoin(self, actor: int, life: int, down: Sequence[int], now: float) -> Actor:
        """The scheduler restarts and rebuilds from the servers' reports (`nodes.scheduler`); a
        resource node rejoins empty."""
        config = self.config
        servers = len(config.workload.servers)
        if actor == config.ids.scheduler:
            return central_scheduler(config, ack_ends=True, restarted=True, down=[s for s in down if s < servers])
        return ResourceNode(actor, config.workload.servers[actor].capacity, config.ids.scheduler, *self.timeouts)

    def sections(self, end: RunEnd) -> list[Section]:
        return []

    def figures(self) -> Distributed | None:
        return None

    def ideal_views_measure(self, actors: Sequence[Actor]) -> Callable[[], float] | None:
        return None


def build_nodes(config: RunConfig, streams: RandomStreams, timeouts: Timeouts = Timeouts(),
                every_server: bool = False) -> Nodes:
    """The run's nodes, each with its own streams from `streams`. `timeouts.answer` > 0 turns
    resilience on; `every_server` ticks every server (runs with crashes). The gateway is built
    first: a distributed setup homes its servers' users as the gateway drew them."""
    ids = config.ids
    gateway = Gateway(ids.gateway, config.spec.gateway, ids.servers, ids.users, streams.python("gateway"),
                      central=ids.scheduler)
    kind: type[DistributedSetup | CentralSetup] = DistributedSetup if config.spec.distributed else CentralSetup
    setup: Setup = kind(config, gateway, streams, timeouts)
    durable = config.spec.central_rule is not None  # a restarted scheduler rebuilds what it knew (`nodes.scheduler`)
    total, rto, prompt, reprobe = config.workload.total, timeouts.answer, timeouts.prompt, config.reprobe
    users: list[UserNode | FiniteUserNode] = [
        FiniteUserNode(a, ids.gateway, [(t.submit, t.demand) for t in u.tasks or ()], total, rto, durable, prompt,
                       reprobe)
        if u.finite else UserNode(a, ids.gateway, u.demand, total, rto, durable, prompt, reprobe)
        for a, u in zip(ids.users, config.workload.users)]
    actors = [*setup.servers, *users, gateway, *setup.tail]
    return Nodes(actors, users, gateway, list(setup.tickers(every_server)), setup)


def central_scheduler(config: RunConfig, ack_ends: bool, restarted: bool = False,
                      down: Sequence[int] = ()) -> CentralScheduler:
    """The central scheduler with its rule built from the rule's own run parameters (`restarted`:
    after a crash, with the servers in `down` down)."""
    spec, params, workload = config.spec, config.params, config.workload
    if spec.central_rule is None:
        raise ValueError(f"protocol {spec.name!r} is distributed: it has no central scheduler")
    rule_params = {p.name: params.value(p.name) for p in spec.params}
    per_tick = rule_params.pop(PER_TICK.name, PER_TICK.default)  # a rule that does not declare it: the thesis's 1
    rule = spec.central_rule(**rule_params)
    check = getattr(rule, "check_resources", None)
    if check is not None:
        try:
            check(len(workload.resources))
        except ValueError as error:
            raise InputError(str(error)) from None
    ids = config.ids
    return CentralScheduler(ids.scheduler, rule, ids.servers, [s.capacity for s in workload.servers], per_tick,
                            ack_ends, restarted, down, config.device_resource)
