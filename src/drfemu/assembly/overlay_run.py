"""Overlay-only emulation: Cyclon and the gradient on N nodes, observed round by round.

A **round** is one allocation tick (default 100 ms). Every node starts one Cyclon shuffle
per round and `shuffles_per_tick` gradient exchanges per round (an exchange every
`tick / shuffles_per_tick` seconds, so below 1 means one every few rounds). Round `k`
spans `[k·tick, (k+1)·tick)`; the observer runs at the start of each tick, before that
tick's exchanges, so "round k" is the state after `k` rounds (round 0 is the bootstrap).

**Bootstrap.** Like the thesis's bootstrap server, every node starts with a Cyclon view of
`cyclon_view` distinct random other nodes, with their descriptors as of time 0, and offers
them to its gradient, which thus starts from `cyclon_view` random candidates.

**Utilities** are static, set by the emulator in the role of an allocation protocol:
- `random`: uniform in (−1, 0] (like `−G`), from stream `overlay/utilities`;
- `google` or a workload file: users are homed on servers as the `home` gateway does
  (stream `gateway`); a server's utility is eq. 4.2 — `−min G_i` over its users (0 at the
  start) and `−∞` without users.

**Perturbations** (after the static rounds): the centre's utility drops "as an allocation
would", and the emulation runs until the overlay has *recovered* — the new true centre
believes it is the centre, no other node does, its view is the true top-`P`, and the
validation of thesis §3.3.1 succeeds — or until `recovery_cap` rounds pass. With a
workload, the drop is one more task for the centre's lowest user (`G_i += s_i`). With random
utilities, the centre lands between the `j`-th and `(j+1)`-th best other nodes, `j` uniform
in `1..drop_rank` (default `P`), from stream `overlay/perturbations`. Perturbations run one
after another, each from the state the previous one left.

Gradient descriptors expire after `max_age` gradient periods (default `max(20, 5·P)`: in a
static overlay the oldest descriptor in any view was 14 periods old for P = 10 and 7 for
P = 2, so only stale copies expire; see `overlay.gradient`).

Each node's choices (partners, samples) come from its own stream `(seed, node, "overlay")`,
so one node's extra draw never moves another's; that costs about 2.5 KB of generator state
a node (25 MB for 10,000 nodes).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import parse_latency
from drfemu.kernel.resources import dominant_share
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.clock import VirtualClockLoop
from drfemu.nodes.gateway import draw_homes
from drfemu.nodes.gc_tuning import tuned_gc
from drfemu.nodes.network import Network
from drfemu.nodes.overlay_peer import OverlayPeer, bootstrap
from drfemu.nodes.runtime import Runtime
from drfemu.overlay.gradient import NEG_INF, RANK_IMPLEMENTATION
from drfemu.overlay.observe import (
    OverlayMetrics,
    centre_status,
    measure,
    snapshot,
    total_order,
)
from drfemu.overlay.variants import gradient_factory
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.schema.overlay_result import OverlayResult, Recovery
from drfemu.schema.workload import Workload

__all__ = ["OverlayConfig", "run_overlay"]


class _Utilities:
    """The emulator's stand-in for an allocation protocol: who has which utility."""

    def __init__(self, config: OverlayConfig, streams: RandomStreams, workload: Workload | None) -> None:
        self.workload = workload
        self.homes: dict[int, list[int]] = {}
        if workload is None:
            draw = streams.numpy("overlay/utilities").random(config.nodes)
            self.values = [-float(x) for x in draw]
            self.shares: list[float] = []
            self.unit: list[float] = []
        else:
            servers = list(range(len(workload.servers)))
            users = list(range(len(workload.users)))
            for user, home in draw_homes(servers, users, streams.python("gateway")).items():
                self.homes.setdefault(home, []).append(user)
            total = workload.total
            self.unit = [dominant_share(u.demand, total) for u in workload.users]
            self.shares = [0.0] * len(users)
            self.values = [self._of(server) for server in servers]
        self._perturb = streams.python("overlay/perturbations")

    def _of(self, server: int) -> float:
        users = self.homes.get(server)
        return -min(self.shares[u] for u in users) if users else NEG_INF

    def perturb(self, centre: int, drop_rank: int) -> float:
        """Lower the centre's utility as an allocation would; returns the new utility."""
        if self.workload is not None:
            users = self.homes[centre]
            lowest = min(users, key=lambda u: (self.shares[u], u))
            self.shares[lowest] += self.unit[lowest]
            self.values[centre] = self._of(centre)
            return self.values[centre]
        others = [node for node in reversed(total_order(self.values)) if node != centre]
        j = 1 + int(self._perturb.random() * min(drop_rank, len(others)))
        upper = self.values[others[j - 1]]
        lower = self.values[others[j]] if j < len(others) else upper - 1.0
        self.values[centre] = (upper + lower) / 2
        return self.values[centre]


def _round_row(round_number: int, now: float, metrics: OverlayMetrics) -> dict[str, Any]:
    row: dict[str, Any] = {"round": round_number, "time_s": now}
    row.update(metrics.to_dict())
    return row


def _summary(values: list[int]) -> dict[str, float | int | None]:
    if not values:
        return {"min": None, "median": None, "mean": None, "p90": None, "max": None}
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return {"min": ordered[0], "median": statistics.median(ordered), "mean": statistics.fmean(ordered),
            "p90": p90, "max": ordered[-1]}


class _Observer:
    """The observer driver's hook: measures rounds, then runs the perturbations one by one.

    Called at the start of tick `k`, before that tick's exchanges, it sees round `k − 1`.
    """

    def __init__(self, config: OverlayConfig, peers: list[OverlayPeer], utilities: _Utilities, runtime: Runtime,
                 progress: Callable[[int, OverlayMetrics | None], None] | None) -> None:
        self.config = config
        self.peers = peers
        self.utilities = utilities
        self.runtime = runtime
        self.progress = progress
        self.drop_rank = config.drop_rank or config.neighbors
        self.rounds: list[dict[str, Any]] = []
        self.perturbations: list[dict[str, Any]] = []
        self.rounds_to_converge: int | None = None
        self.perturbed_at = -1  # the round of the perturbation under way, -1 while static
        self.old_centre = -1
        self.seconds = 0.0  # wall time spent observing

    def __call__(self, now: float, tick: int) -> None:
        started = time.perf_counter()
        if self.perturbed_at < 0:
            self._static_round(tick - 1, now)
        else:
            self._recovery_round(tick - 1)
        self.seconds += time.perf_counter() - started

    def _static_round(self, round_number: int, now: float) -> None:
        config = self.config
        last = round_number >= config.rounds
        if round_number % config.observe_every == 0 or last:
            metrics = measure(snapshot(self.peers))
            self.rounds.append(_round_row(round_number, now, metrics))
            if metrics.converged and self.rounds_to_converge is None:
                self.rounds_to_converge = round_number
            if self.progress is not None:
                self.progress(round_number, metrics)
        if last:
            self._next_perturbation(round_number)

    def _recovery_round(self, round_number: int) -> None:
        status = centre_status(snapshot(self.peers))
        elapsed = round_number - self.perturbed_at
        if status.recovered or elapsed >= self.config.recovery_cap:
            self.perturbations.append({
                "perturbation": len(self.perturbations) + 1,
                "round": self.perturbed_at,
                "old_centre": self.old_centre,
                "new_centre": status.centre,
                "recovery_rounds": elapsed if status.recovered else None,
            })
            if self.progress is not None:
                self.progress(round_number, None)
            self._next_perturbation(round_number)

    def _next_perturbation(self, round_number: int) -> None:
        if len(self.perturbations) == self.config.perturbations:
            self.runtime.stop()
            return
        centre = total_order(self.utilities.values)[-1]
        self.peers[centre].gradient.set_utility(self.utilities.perturb(centre, self.drop_rank))
        self.perturbed_at = round_number
        self.old_centre = centre


def run_overlay(
    config: OverlayConfig,
    workload: Workload | None = None,
    progress: Callable[[int, OverlayMetrics | None], None] | None = None,
) -> dict[str, Any]:
    """Run the overlays alone and return the result document (see `docs/overlay.md`); `workload`
    gives the utilities when `config.utilities` names one (`studies.overlay.overlay_workload`)."""
    config.validate()
    n = config.nodes if workload is None else len(workload.servers)
    assert n is not None, "OverlayConfig.build fills in the node count"
    if n <= config.neighbors or n <= config.cyclon_view:
        raise InputError(f"the workload has {n} servers: too few for a view of {config.neighbors} "
                         f"and a Cyclon view of {config.cyclon_view}")
    streams = RandomStreams(config.seed)
    utilities = _Utilities(config, streams, workload)
    peers = _peers(config, n, streams, utilities)
    loop = VirtualClockLoop()
    try:
        network = Network(parse_latency(config.latency, streams.python("network/latency")))
        runtime = Runtime(loop, network, peers)
        observer = _Observer(config, peers, utilities, runtime, progress)
        runtime.every(config.tick, hooks=[observer])  # created first: observes before the round
        cyclon = runtime.every(config.tick, peers, OverlayPeer.cyclon_round)
        gradient = runtime.every(config.tick / config.shuffles_per_tick, peers, OverlayPeer.gradient_round)
        with tuned_gc():
            started = time.perf_counter()
            loop.run_until_complete(runtime.finished)
            wall = time.perf_counter() - started
    finally:
        loop.close()
    return _result(config, workload, _Run(runtime, peers, observer, cyclon.fired, gradient.fired, wall)).model_dump()


def _peers(config: OverlayConfig, n: int, streams: RandomStreams, utilities: _Utilities) -> list[OverlayPeer]:
    """The `n` overlay peers, each with its own stream, bootstrapped as the thesis's bootstrap server does."""
    max_age = config.max_age_periods * config.tick / config.shuffles_per_tick
    gradient_view = gradient_factory(config.gradient, temperature=config.softmax_temperature,
                                     shuffle_size=config.gradient_shuffle)
    peers = [OverlayPeer(i, config.neighbors, config.cyclon_view, config.shuffle_length,
                         streams.node(i).python("overlay"), utilities.values[i], max_age, gradient_view)
             for i in range(n)]
    bootstrap(peers, utilities.values, config.seed)
    return peers


@dataclass(frozen=True)
class _Run:
    """What an overlay run left to report: its runtime, peers and observer, the rounds of each
    overlay's driver, and the wall time."""

    runtime: Runtime
    peers: list[OverlayPeer]
    observer: _Observer
    cyclon_rounds: int
    gradient_rounds: int
    wall: float


def _result(config: OverlayConfig, workload: Workload | None, run: _Run) -> OverlayResult:
    runtime, peers, observer = run.runtime, run.peers, run.observer
    emulation_wall = max(run.wall - observer.seconds, 1e-9)
    events = runtime.delivered + runtime.timer_events
    exchanges = sum(p.cyclon_exchanges + p.gradient_exchanges for p in peers)
    traffic = runtime.network.tally()
    perturbations = observer.perturbations
    recoveries = [p["recovery_rounds"] for p in perturbations if p["recovery_rounds"] is not None]
    return OverlayResult(
        nodes=len(peers), neighbors=config.neighbors, cyclon_view=config.cyclon_view,
        shuffle_length=config.shuffle_length, shuffles_per_tick=config.shuffles_per_tick,
        max_age_periods=config.max_age_periods, gradient=config.gradient,
        softmax_temperature=config.softmax_temperature if config.gradient == "kompics" else None, tick_s=config.tick,
        latency=runtime.network.latency.describe(), seed=config.seed, utilities=config.utilities,
        users=len(workload.users) if workload is not None else None, static_rounds=config.rounds,
        observe_every=config.observe_every, rounds=observer.rounds, rounds_to_converge=observer.rounds_to_converge,
        perturbations=perturbations,
        recovery=Recovery(perturbations=len(perturbations), recovered=len(recoveries), cap_rounds=config.recovery_cap,
                          drop_rank=observer.drop_rank if workload is None else None, **_summary(recoveries)),
        cyclon_rounds=run.cyclon_rounds, gradient_rounds=run.gradient_rounds,
        cyclon_exchanges=sum(p.cyclon_exchanges for p in peers),
        gradient_exchanges=sum(p.gradient_exchanges for p in peers),
        messages={name: t.sent for name, t in traffic.items()}, bytes={name: t.bytes for name, t in traffic.items()},
        messages_total=sum(t.sent for t in traffic.values()), bytes_total=sum(t.bytes for t in traffic.values()),
        virtual_time_s=runtime.now, wall_time_s=run.wall, observer_wall_s=observer.seconds,
        emulation_wall_s=emulation_wall, events=events, events_per_s=events / emulation_wall,
        exchanges_per_s=exchanges / emulation_wall, gradient_merge=RANK_IMPLEMENTATION)
