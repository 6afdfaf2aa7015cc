"""The cycle-driven overlay run (`drfemu overlay --mode cycle`): `overlay.cycle` observed round by
round, with the utilities, perturbations and observer of the event-driven run
(`assembly.overlay_observer`).

A round is a cycle: the observer looks before cycle `k + 1` at the state after `k` cycles, as it
looks at the event-driven overlay at the start of tick `k + 1`. Each node's gradient exchanges
in a cycle follow the event-driven timing (`gradient_turns`); descriptors expire after
`max_age_periods / shuffles_per_tick` cycles, the event-driven `max_age` in rounds.

What the result reports: `latency` says that exchanges are atomic; `events` counts the
exchanges (the events of a cycle-driven simulator); `messages` and `bytes` are what the same
exchanges would send as messages under the cost model (`kernel.messages.CostModel`): a request
and a reply per exchange, each carrying its descriptors.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from drfemu.assembly.overlay_observer import OverlayRun, RoundObserver, Utilities
from drfemu.kernel.latency import US_PER_S, to_us
from drfemu.kernel.messages import CostModel
from drfemu.kernel.streams import RandomStreams
from drfemu.overlay.cycle import CYCLE_IMPLEMENTATION, CycleOverlay, bootstrap, run_cycles
from drfemu.overlay.messages import CyclonReply, CyclonShuffle, GradientReply, GradientShuffle
from drfemu.overlay.observe import OverlayMetrics, OverlaySnapshot
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.schema.overlay_result import OverlayTraffic

__all__ = ["ATOMIC", "cycle_overlay", "gradient_turns", "run_cycles_observed"]

ATOMIC = "none: exchanges are atomic (cycle-driven)"
STREAM = "overlay/cycle"


def gradient_turns(config: OverlayConfig, cycle: int) -> int:
    """Each node's gradient exchanges in cycle `cycle` (from 1): those the event-driven gradient
    driver fires in `((cycle − 1)·tick, cycle·tick]`, in integer microseconds as the runtime counts."""
    tick, period = to_us(config.tick), to_us(config.tick / config.shuffles_per_tick)
    return (cycle * tick) // period - ((cycle - 1) * tick) // period


def cycle_overlay(config: OverlayConfig, n: int, streams: RandomStreams, utilities: list[float]) -> CycleOverlay:
    """The bootstrapped overlay of `n` nodes with these utilities."""
    overlay = CycleOverlay(n, config.cyclon_view, config.shuffle_length, config.neighbors,
                           config.max_age_periods / config.shuffles_per_tick, streams.word(STREAM))
    overlay.utility[:] = utilities
    bootstrap(overlay)
    return overlay


def _snapshot(overlay: CycleOverlay, view_size: int) -> OverlaySnapshot:
    return OverlaySnapshot(overlay.utility.copy(), overlay.cyclon_node.astype(np.int64),
                           overlay.gradient_node.astype(np.int64), overlay.gradient_utility.copy(), view_size)


def _traffic(overlay: CycleOverlay) -> tuple[dict[str, int], dict[str, int]]:
    """Messages and bytes by type, as the exchanges would have sent them."""
    cost = CostModel()
    exchanges = {CyclonShuffle: "cyclon_exchanges", CyclonReply: "cyclon_exchanges",
                 GradientShuffle: "gradient_exchanges", GradientReply: "gradient_exchanges"}
    carried = {CyclonShuffle: "cyclon_shuffle_entries", CyclonReply: "cyclon_reply_entries",
               GradientShuffle: "gradient_shuffle_entries", GradientReply: "gradient_reply_entries"}
    messages, sizes = {}, {}
    for cls in sorted(exchanges, key=lambda c: c.__name__):
        count = overlay.counter(exchanges[cls])
        if count:
            messages[cls.__name__] = count
            sizes[cls.__name__] = cost.message_bytes(cls, count, overlay.counter(carried[cls]))
    return messages, sizes


def run_cycles_observed(config: OverlayConfig, n: int, streams: RandomStreams, utilities: Utilities,
                        progress: Callable[[int, OverlayMetrics | None], None] | None) -> OverlayRun:
    """Bootstrap, then observe round `k` and run cycle `k + 1` until the observer stops the run."""
    started = time.perf_counter()
    overlay = cycle_overlay(config, n, streams, utilities.values)
    observer = RoundObserver(config, lambda: _snapshot(overlay, config.neighbors),
                             lambda node, utility: overlay.utility.__setitem__(node, utility), lambda: None,
                             utilities, progress)
    tick_us = to_us(config.tick)
    cycle = 0
    while True:
        observer((cycle + 1) * tick_us / US_PER_S, cycle + 1)
        if observer.stopped:
            break
        cycle += 1
        run_cycles(overlay, cycle, [gradient_turns(config, cycle)])
    wall = time.perf_counter() - started
    messages, sizes = _traffic(overlay)
    exchanges = overlay.counter("cyclon_exchanges") + overlay.counter("gradient_exchanges")
    return OverlayRun(observer, n, OverlayTraffic(
        network=ATOMIC, virtual_time_s=(cycle + 1) * tick_us / US_PER_S, cyclon_rounds=cycle,
        gradient_rounds=to_us(cycle * config.tick) // to_us(config.tick / config.shuffles_per_tick),
        cyclon_exchanges=overlay.counter("cyclon_exchanges"), gradient_exchanges=overlay.counter("gradient_exchanges"),
        messages=messages, bytes=sizes, events=exchanges, gradient_merge=CYCLE_IMPLEMENTATION), wall)
