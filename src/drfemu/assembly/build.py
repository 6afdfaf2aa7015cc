"""Building a run's nodes from its config: servers (or resource nodes and the central scheduler),
users and the gateway, each with its own random streams (SPEC §2–3).

All users start at time 0 (a finite user then waits for its first submit time); the allocation
tick drives the central scheduler, or the servers the protocol's rule asks for (see
`assembly.distributed`). The same config builds the same objects, state and draws in every
process (the live workers rely on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from drfemu.assembly.config import RunConfig
from drfemu.assembly.distributed import DistributedSetup
from drfemu.kernel.errors import InputError
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.actor import Actor
from drfemu.nodes.gateway import Gateway
from drfemu.nodes.resource_node import ResourceNode
from drfemu.nodes.scheduler import CentralScheduler
from drfemu.nodes.user import FiniteUserNode, UserNode
from drfemu.protocols.central import PER_TICK
from drfemu.protocols.resilience import Timeouts

__all__ = ["Nodes", "build_nodes", "central_scheduler"]


@dataclass
class Nodes:
    """Every node of a run, built from its config: servers (or resource nodes), users, the
    gateway and the central scheduler, in actor-id order, and the ones the tick drives."""

    actors: list[Actor]
    users: list[UserNode | FiniteUserNode]
    gateway: Gateway
    tickers: list[Actor]
    distributed: DistributedSetup | None


def build_nodes(config: RunConfig, streams: RandomStreams, timeouts: Timeouts = Timeouts(),
                every_server: bool = False) -> Nodes:
    """The run's nodes, each with its own streams from `streams`. `timeouts.answer` > 0 turns
    resilience on; `every_server` ticks every server (runs with crashes)."""
    ids = config.ids
    gateway = Gateway(ids.gateway, config.spec.gateway, ids.servers, ids.users, streams.python("gateway"),
                      central=ids.scheduler)
    distributed: DistributedSetup | None = None
    tickers: list[Actor] = []
    if config.spec.distributed:
        distributed = DistributedSetup(config, gateway.homes, streams, timeouts, ids.gateway)
        actors: list[Actor] = list(distributed.servers)
        tickers.extend(distributed.tickers(every_server=every_server))
    else:
        actors = [ResourceNode(i, s.capacity, ids.scheduler, timeouts.answer, timeouts.prompt, config.device_resource)
                  for i, s in zip(ids.servers, config.workload.servers)]
    users = _users(config, timeouts)
    actors += [*users, gateway]
    if config.spec.central_rule is not None:
        scheduler = central_scheduler(config, ack_ends=timeouts.answer > 0)
        actors.append(scheduler)
        tickers.append(scheduler)
    return Nodes(actors, users, gateway, tickers, distributed)


def _users(config: RunConfig, timeouts: Timeouts) -> list[UserNode | FiniteUserNode]:
    """One node per user: endless users submit one task after another, finite ones their task list."""
    ids, workload, spec = config.ids, config.workload, config.spec
    durable = spec.central_rule is not None  # a restarted scheduler rebuilds what it knew (`nodes.scheduler`)
    retry = spec.server_rule.reprobe_ticks(config.params.values()) if spec.server_rule is not None else 0
    reprobe = retry * config.params.tick  # users ask the gateway again after this long without a proposal (probes)
    total, rto = workload.total, timeouts.answer
    return [FiniteUserNode(a, ids.gateway, [(t.submit, t.demand) for t in u.tasks or ()], total, rto, durable,
                           timeouts.prompt, reprobe)
            if workload.finite else UserNode(a, ids.gateway, u.demand, total, rto, durable, timeouts.prompt, reprobe)
            for a, u in zip(ids.users, workload.users)]


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
