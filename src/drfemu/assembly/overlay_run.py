"""Overlay-only emulation: Cyclon and the gradient on N nodes, observed round by round.

Two engines run it (`--mode`): this module's event-driven one (`event`, the default: every node
an actor, every exchange messages over the emulated network) and the cycle-driven one
(`cycle`, `assembly.overlay_cycle`: PeerSim's semantics over arrays, for millions of nodes).
Both share the rounds, the utilities, the perturbations and the observer described here
(`assembly.overlay_observer`).

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

In the event-driven engine each node's choices (partners, samples) come from its own stream
`(seed, node, "overlay")`, so one node's extra draw never moves another's; that costs about
2.5 KB of generator state a node (25 MB for 10,000 nodes).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from drfemu.assembly.overlay_cycle import run_cycles_observed
from drfemu.assembly.overlay_observer import OverlayRun, RoundObserver, Utilities, overlay_result
from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import parse_latency
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.network import Network
from drfemu.nodes.overlay_peer import OverlayPeer, bootstrap
from drfemu.nodes.plane import attach_plane
from drfemu.nodes.runtime import Runtime
from drfemu.nodes.session import run_loop, timed
from drfemu.overlay.gradient import RANK_IMPLEMENTATION
from drfemu.overlay.observe import OverlayMetrics, snapshot
from drfemu.overlay.variants import gradient_factory
from drfemu.schema.overlay_config import OverlayConfig, check_memory
from drfemu.schema.overlay_result import OverlayTraffic
from drfemu.schema.workload import Workload

__all__ = ["OverlayConfig", "run_overlay"]


def run_overlay(
    config: OverlayConfig,
    workload: Workload | None = None,
    progress: Callable[[int, OverlayMetrics | None], None] | None = None,
) -> dict[str, Any]:
    """Run the overlays alone and return the result document (see `docs/overlay.md`); `workload`
    gives the utilities when `config.utilities` names one (`studies.overlay.overlay_workload`).
    `config.mode` chooses the engine: `event` (the emulated network, this module) or `cycle`
    (cycle-driven, `assembly.overlay_cycle`)."""
    config.validate()
    n = config.nodes if workload is None else len(workload.servers)
    assert n is not None, "OverlayConfig.build fills in the node count"
    if n <= config.neighbors or n <= config.cyclon_view:
        raise InputError(f"the workload has {n} servers: too few for a view of {config.neighbors} "
                         f"and a Cyclon view of {config.cyclon_view}")
    check_memory(config, n)
    streams = RandomStreams(config.seed)
    utilities = Utilities(config, streams, workload)
    if config.mode == "cycle":
        run = run_cycles_observed(config, n, streams, utilities, progress)
    else:
        run = _run_events(config, n, streams, utilities, progress)
    return overlay_result(config, workload, run).model_dump()


def _run_events(config: OverlayConfig, n: int, streams: RandomStreams, utilities: Utilities,
                progress: Callable[[int, OverlayMetrics | None], None] | None) -> OverlayRun:
    """The event-driven engine: every node an `OverlayPeer` actor, every exchange messages."""
    peers = _peers(config, n, streams, utilities)
    network = Network(parse_latency(config.latency, streams.python("network/latency")))
    runtime = Runtime(network, peers)
    attach_plane(runtime)
    observer = RoundObserver(config, partial(snapshot, peers), partial(_set_utility, peers), runtime.stop,
                             utilities, progress)
    runtime.every(config.tick, hooks=[observer])  # created first: observes before the round
    cyclon = runtime.every(config.tick, peers, OverlayPeer.cyclon_round)
    gradient = runtime.every(config.tick / config.shuffles_per_tick, peers, OverlayPeer.gradient_round)
    _, wall = run_loop(timed(runtime.run()))
    traffic = network.tally()
    return OverlayRun(observer, len(peers), OverlayTraffic(
        network=network.latency.describe(), virtual_time_s=runtime.now,
        cyclon_rounds=cyclon.fired, gradient_rounds=gradient.fired,
        cyclon_exchanges=sum(p.cyclon_exchanges for p in peers),
        gradient_exchanges=sum(p.gradient_exchanges for p in peers),
        messages={name: t.sent for name, t in traffic.items()}, bytes={name: t.bytes for name, t in traffic.items()},
        events=runtime.delivered + runtime.timer_events, gradient_merge=RANK_IMPLEMENTATION), wall)


def _set_utility(peers: list[OverlayPeer], node: int, utility: float) -> None:
    peers[node].gradient.set_utility(utility)


def _peers(config: OverlayConfig, n: int, streams: RandomStreams, utilities: Utilities) -> list[OverlayPeer]:
    """The `n` overlay peers, each with its own stream, bootstrapped as the thesis's bootstrap server does."""
    max_age = config.max_age_periods * config.tick / config.shuffles_per_tick
    gradient_view = gradient_factory(config.gradient, temperature=config.softmax_temperature,
                                     shuffle_size=config.gradient_shuffle)
    peers = [OverlayPeer(i, config.neighbors, config.cyclon_view, config.shuffle_length,
                         streams.node(i).python("overlay"), utilities.values[i], max_age, gradient_view)
             for i in range(n)]
    bootstrap(peers, utilities.values, config.seed)
    return peers


