"""Building the servers of a distributed protocol and reading their figures after the run.

Each server is built from its parameters, its own random streams (`(seed, server id,
name)`) and its protocol's rule; the bootstrap service gives it its first Cyclon view and,
for protocols without the gradient, its fixed random neighbours. During the run nothing here
touches a server: what the report needs of the run comes from the servers' events
(`NeighborsFixed`) and, afterwards, from their counters, summed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from drfemu.assembly.config import RunConfig
from drfemu.kernel.events import NeighborsFixed
from drfemu.kernel.resources import Vector, dominant_share
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.actor import Actor
from drfemu.nodes.gateway import Gateway
from drfemu.nodes.overlay_peer import bootstrap, random_neighbors
from drfemu.nodes.port import RuntimePort
from drfemu.nodes.server import PLACEMENT_COUNTERS, ServerConfig, ServerNode, server_class
from drfemu.observers.observer import RunEnd
from drfemu.overlay.gradient import NEG_INF
from drfemu.overlay.observe import ideal_view_fraction, ideal_views, snapshot
from drfemu.overlay.variants import gradient_factory
from drfemu.protocols.placement import FIRST_FIT, SCORED_BY_MIX, WORKLOAD
from drfemu.protocols.resilience import Timeouts
from drfemu.protocols.spec import GradientUse
from drfemu.schema.result import Distributed, Section
from drfemu.schema.result_blocks import OverlayFigures

__all__ = ["DistributedSetup", "known_mix", "server_config"]


def server_config(config: RunConfig, timeouts: Timeouts, gateway: int) -> ServerConfig:
    """The configuration every server of a run is built from, derived from the validated run
    parameters (`schema.params.RunParams`): views no larger than the cluster allows, the walk's
    reach (`walk_ttl` 0: every server), the gradient's period and descriptor expiry, the
    saturation retry and its cap (depending on whether tasks end), best-fit's scale, the run's
    timeouts (resilience on when `timeouts.answer` > 0, with `gateway` the bootstrap service a
    server whose Cyclon view empties asks again) and the device model."""
    params, spec, workload = config.params, config.spec, config.workload
    servers, total, finite, rto = len(workload.servers), workload.total, workload.finite, timeouts.answer
    cyclon_view = min(params.cyclon_view, servers - 1) if servers > 1 else 1
    period = params.tick / params.shuffles_per_tick
    retry_ticks = params.saturation_retry_ticks(finite)
    return ServerConfig(
        view_size=params.neighbors, cyclon_view=cyclon_view, shuffle_length=min(params.shuffle_length, cyclon_view),
        walk_ttl=params.walk_ttl or servers, tick=params.tick,
        gradient_period=period if spec.gradient is not GradientUse.OFF else None,
        max_age=params.max_age_periods * period, mark_saturated=params.mark_saturated,
        saturation_retry=retry_ticks * params.tick if retry_ticks else math.inf,
        saturation_retry_cap=params.saturation_retry_cap_ticks(finite) * params.tick,
        fit_candidates=params.fit_candidates if params.placement != FIRST_FIT else 0,
        placement=params.placement,
        known_mix=known_mix(config),
        device_resource=config.device_resource,
        scale=tuple(1.0 / t if t > 0 else 0.0 for t in total),
        gradient=gradient_factory(params.gradient, temperature=params.softmax_temperature,
                                  shuffle_size=params.gradient_shuffle),
        total=total, users_active=not finite, rto=rto, prompt_rto=timeouts.prompt,
        rejoin_via=gateway if rto > 0 else -1,
        reconnect_every=params.reconnect_every if rto > 0 else 0, idle_cyclon_every=params.idle_cyclon_every,
        idle_gradient_every=params.idle_gradient_every)


def known_mix(config: RunConfig) -> tuple[tuple[int, Vector], ...]:
    """What every server's min-fragmentation or keep-room walk knows from the start: with
    `--fragmentation-mix workload`, every user's demand by its actor id (a finite user's first
    task's); else nothing."""
    params = config.params
    if params.placement not in SCORED_BY_MIX or params.fragmentation_mix != WORKLOAD:
        return ()
    return tuple(zip(config.ids.users, (user.demand for user in config.workload.users), strict=True))


class DistributedSetup:
    """The servers of one distributed run, their overlay drivers and their figures."""

    def __init__(self, config: RunConfig, gateway: Gateway, streams: RandomStreams,
                 timeouts: Timeouts = Timeouts()) -> None:
        """The servers home their users as `gateway` drew them (a finite workload's homes count a
        user only once its first task arrives, `protocols.homes`); the gateway is also the
        bootstrap service a server whose Cyclon view empties asks again (`server_config`)."""
        homes = gateway.homes
        spec = config.spec
        rule = spec.server_rule
        if rule is None:
            raise ValueError(f"protocol {spec.name!r} is central: it has no servers to build")
        self.params = params = config.params
        self.spec = spec
        self.resilient = timeouts.answer > 0
        workload = config.workload
        demands = {a: u.demand for a, u in zip(config.ids.users, workload.users)}
        homed: dict[int, dict[int, float]] = {}
        for user, server in homes.items():
            homed.setdefault(server, {})[user] = dominant_share(demands[user], workload.total)
        self.config = server_config(config, timeouts, gateway.id)
        rule_params = {p.name: params.value(p.name) for p in spec.params}
        node_class = server_class(rule)
        self.streams = streams
        self.capacities = [s.capacity for s in workload.servers]

        def build(server: int, homed_here: Mapping[int, float], life: int) -> ServerNode:
            return node_class(server, self.capacities[server], rule(**rule_params), homed_here,
                              streams.node(server, life), self.config)

        self._build = build
        self.servers: list[ServerNode] = [build(server, homed.get(server, {}), 0)
                                          for server in range(len(workload.servers))]
        self.tail: list[Actor] = []
        self.homes = sorted(homed)
        self._start()

    def _start(self) -> None:
        """The bootstrap: every server's first Cyclon view and, without the gradient, its fixed
        random neighbours; the ideal views a frozen gradient is judged against."""
        n, params = len(self.servers), self.params
        bootstrap(self.servers, [s.gradient.utility for s in self.servers], self.streams.seed)
        fixed = (random_neighbors(n, params.neighbors, self.streams.seed) if self.spec.gradient is GradientUse.OFF
                 else [[] for _ in range(n)])
        for node, neighbors in zip(self.servers, fixed):
            node.start(neighbors)
        self.frozen: dict[int, tuple[float, bool]] = {}  # server -> (time, froze on its ideal view)
        self._ideal: list[frozenset[int]] = []  # the views before any allocation (ddrf-gradient's report)
        if self.spec.gradient is GradientUse.FROZEN:
            self._ideal = ideal_views([s.gradient.utility for s in self.servers], params.neighbors)

    def rejoin(self, server: int, life: int, down: Sequence[int], now: float) -> ServerNode:
        """Server `server`'s `life`-th life after a crash: nothing homed, fresh streams, and from
        the bootstrap service a Cyclon view of `c` random live servers (described as of `now`,
        utility unknown) and, for protocols with fixed random neighbours, `P` of them (`down`:
        the other actors down now)."""
        node = self._build(server, {}, life)
        others = [s for s in range(len(self.servers)) if s != server and s not in down]
        rng = node.stream("bootstrap")
        picks = rng.sample(others, min(node.cyclon.size, len(others)))
        node.join([(NEG_INF, p, now) for p in picks])
        fixed = (rng.sample(others, min(self.params.neighbors, len(others)))
                 if self.spec.gradient is GradientUse.OFF else [])
        node.start(fixed)
        return node

    def tickers(self, every_server: bool = False) -> list[ServerNode]:
        """The servers the allocation tick drives (`every_server`: all of them, as a run with
        crashes needs, since users are re-homed anywhere)."""
        if every_server or (self.spec.server_rule is not None and self.spec.server_rule.TICKS_ALL):
            return list(self.servers)
        return [self.servers[h] for h in self.homes]

    def start(self, runtime: RuntimePort) -> None:
        """Create the overlay drivers the servers' config asks for (`ServerConfig.overlay_rounds`),
        after the allocation tick, so a tick decides first (virtual or live: the same port)."""
        for period, round_ in self.config.overlay_rounds():
            runtime.every(period, self.servers, round_)
        runtime.subscribe(NeighborsFixed, self._on_fixed)

    def _on_fixed(self, event: NeighborsFixed) -> None:
        if event.server not in self.frozen:  # a server that thaws and freezes again keeps its first freeze
            self.frozen[event.server] = (event.time, frozenset(event.members) == self._ideal[event.server])

    def sections(self, end: RunEnd) -> list[Section]:
        """The distributed part of a run's result (an observer of the run: `observers.observer`)."""
        return [self.figures()]

    def ideal_views_measure(self, actors: Sequence[Actor]) -> Callable[[], float] | None:
        """What measures, when called, the fraction of servers whose gradient view is their ideal
        one, reading `actors` (the runtime's list, each server in its current life) without
        changing any; None for protocols with fixed random neighbours."""
        if self.spec.gradient is GradientUse.OFF:
            return None
        n = len(self.servers)
        return lambda: ideal_view_fraction(snapshot([s for s in actors[:n] if isinstance(s, ServerNode)]))

    def figures(self) -> Distributed:
        """The distributed part of the result: the set-up and the servers' counters, summed."""
        overlay: dict[str, Any] = {"gradient": self.spec.gradient.value}
        if self.spec.gradient is GradientUse.FROZEN:
            homes = [self.frozen[h] for h in self.homes if h in self.frozen]
            overlay.update(
                frozen_at_s=max((t for t, _ in homes), default=None),
                homes_frozen=len(homes),
                homes_frozen_on_ideal_view=sum(ideal for _, ideal in homes),
            )
        placement = dict.fromkeys(PLACEMENT_COUNTERS, 0)
        for node in self.servers:
            for name, count in node.placement.items():
                placement[name] += count
            for name, count in node.counters().items():
                overlay[name] = overlay.get(name, 0) + count
        if self.params.gradient == "kompics" and self.spec.gradient is not GradientUse.OFF:
            overlay["partners_timed_out"] = sum(node.gradient.timeouts for node in self.servers)
        return Distributed(homes=len(self.homes), cyclon_view=self.config.cyclon_view,
                           shuffle_length=self.config.shuffle_length, walk_ttl=self.config.walk_ttl,
                           placement=placement, overlay=OverlayFigures(**overlay))
