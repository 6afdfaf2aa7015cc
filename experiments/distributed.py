"""Building and observing the servers of a distributed protocol (see `experiments.runner`)."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nodes.runtime import Periodic, Runtime
from nodes.server import AllocatingServer, HomeServer, PlacementStats
from nodes.streams import RandomStreams
from overlay.observe import ideal_views
from overlay.peer import OverlayPeer, bootstrap
from protocols.registry import ProtocolSpec
from protocols.resources import Vector, dominant_share

if TYPE_CHECKING:
    from experiments.harness import Harness
    from experiments.runner import RunConfig

__all__ = ["DistributedSetup", "random_neighbours"]


def random_neighbours(n: int, degree: int, rng: random.Random) -> list[list[int]]:
    """A fixed random graph: each of nodes 0..n−1 gets `degree` distinct random others."""
    return [[p + (p >= node) for p in rng.sample(range(n - 1), min(degree, n - 1))] for node in range(n)]


class DistributedSetup:
    """The servers of one distributed run, their overlay drivers and their counters."""

    def __init__(
        self,
        config: RunConfig,
        spec: ProtocolSpec,
        capacities: Sequence[Vector],
        total: Vector,
        demands: Mapping[int, Vector],
        homes: Mapping[int, int],
        harness: Harness,
        streams: RandomStreams,
    ) -> None:
        assert spec.server is not None
        self.config = config
        self.spec = spec
        n = len(capacities)
        self.cyclon_size = min(config.cyclon_size, n - 1) if n > 1 else 1
        self.shuffle_length = min(config.shuffle_length, self.cyclon_size)
        self.view_size = config.neighbors
        self.walk_ttl = config.walk_ttl or n
        period = config.tick / config.shuffles_per_tick
        self.stats = PlacementStats()
        common: dict[str, Any] = {
            "view_size": self.view_size,
            "cyclon_size": self.cyclon_size,
            "shuffle_length": self.shuffle_length,
            "overlay_rng": streams.python("overlay"),
            "choices": streams.python("protocol"),
            "walk_ttl": self.walk_ttl,
            "max_age": config.max_age_periods * period,
        }
        homed: dict[int, dict[int, float]] = {}
        for user, server in homes.items():
            homed.setdefault(server, {})[user] = dominant_share(demands[user], total)
        retry = config.saturation_retry * config.tick if config.saturation_retry else math.inf
        self.servers: list[AllocatingServer] = []
        for server, capacity in enumerate(capacities):
            if issubclass(spec.server, HomeServer):
                node = spec.server(server, capacity, harness, self.stats, homed.get(server, {}),
                                   mark_saturated=config.mark_saturated, saturation_retry=retry, **common)
            else:
                node = spec.server(server, capacity, harness, self.stats, probe_d=config.probe_d, **common)
            self.servers.append(node)
        self.homes = sorted(homed)
        if spec.gradient == "off":
            for node, neighbours in zip(self.servers, random_neighbours(n, config.neighbors, streams.python("neighbours"))):
                node.set_neighbours(neighbours)
        bootstrap(self.servers, [s.gradient.utility for s in self.servers], streams.python("overlay/bootstrap"))
        self.frozen_at: float | None = None
        self.frozen_converged: bool | None = None
        self._gradient: Periodic | None = None
        if spec.gradient == "frozen":
            for node in self.servers:
                node.active = False  # type: ignore[attr-defined]

    @property
    def tickers(self) -> list[AllocatingServer]:
        """The servers the allocation tick drives."""
        if self.spec.server.TICKS_ALL:  # type: ignore[union-attr]
            return list(self.servers)
        return [self.servers[h] for h in self.homes]

    def start(self, runtime: Runtime) -> None:
        """Create the overlay drivers (after the allocation tick, so a tick decides first)."""
        runtime.every(self.config.tick, self.servers, OverlayPeer.cyclon_round)
        if self.spec.gradient != "off":
            self._gradient = runtime.every(self.config.tick / self.config.shuffles_per_tick, self.servers,
                                           OverlayPeer.gradient_round)
        if self.spec.gradient == "frozen":
            runtime.add_tick_hook(self._freeze_when_converged)

    def homes_converged(self) -> bool:
        """Does every server with users hold its ideal gradient view (global knowledge)?"""
        utilities = [s.gradient.utility for s in self.servers]
        ideal = ideal_views(utilities, self.view_size)
        return all(frozenset(d[1] for d in self.servers[h].gradient.peek()) == ideal[h] for h in self.homes)

    def _freeze_when_converged(self, now: float, tick: int) -> None:
        if self.frozen_at is not None:
            return
        converged = self.homes_converged()
        if not converged and tick < self.config.warmup_cap:
            return
        for node in self.servers:
            node.set_neighbours([d[1] for d in node.gradient.view])
            node.active = True  # type: ignore[attr-defined]
        assert self._gradient is not None
        self._gradient.cancel()
        self.frozen_at = now
        self.frozen_converged = converged

    def report(self) -> dict[str, Any]:
        """The distributed part of the result document."""
        overlay: dict[str, Any] = {"gradient": self.spec.gradient}
        if self.spec.gradient == "frozen":
            overlay.update(frozen_at_s=self.frozen_at, converged_at_freeze=self.frozen_converged)
        for node in self.servers:
            for name, count in node.counters().items():
                overlay[name] = overlay.get(name, 0) + count
        return {
            "homes": len(self.homes),
            "cyclon_size": self.cyclon_size,
            "shuffle_length": self.shuffle_length,
            "walk_ttl": self.walk_ttl,
            "placement": self.stats.to_dict(),
            "overlay": overlay,
        }
