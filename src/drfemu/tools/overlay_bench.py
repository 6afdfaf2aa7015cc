"""`drfemu bench overlay`: the overlay traffic of a protocol run, against the bare loop.

In a distributed run every server starts a Cyclon shuffle and a gradient exchange every tick,
and answers those it is sent: four messages a server a tick, 99 % of what such a run moves
(`docs/performance.md`). This benchmark runs exactly that traffic — the event-driven overlay
engine (`assembly.overlay_run`: `OverlayPeer` actors on the `Runtime`, 1 ms latency, the run's
tick), random utilities, no allocation — on `nodes` servers for `rounds` ticks, and reports the
overlay messages delivered per wall second of emulation (the observers' time, two snapshots,
left out) and the exchanges per second, beside the bare loop's rate (`tools.bench`: a `heapq` of
instants and nothing else, the engine benchmark's limit). The engine that carries overlay
traffic as data rather than one Python object per message is measured by how far it gets past
that limit (issue 57 asks 3×). Each sample runs in a fresh process; the best of `repeats` is kept.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass

from drfemu.assembly.overlay_run import run_overlay
from drfemu.kernel.errors import InputError
from drfemu.nodes.runtime import ENGINE_IMPLEMENTATION
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.tools.bench import bare_rate
from drfemu.tools.pools import worker_pool

__all__ = ["OverlayBenchResult", "run_overlay_bench"]


@dataclass(frozen=True, slots=True)
class OverlayBenchResult:
    """Best-of-`repeats` rates of overlay traffic and of the bare loop, sampled interleaved."""

    nodes: int
    rounds: int
    neighbors: int
    repeats: int
    messages_per_s: float
    exchanges_per_s: float
    samples: tuple[float, ...]
    bare_events_per_s: float
    bare_samples: tuple[float, ...]

    @property
    def bare_multiple(self) -> float:
        """Overlay messages a second as a multiple of the bare loop's events a second."""
        return self.messages_per_s / self.bare_events_per_s

    def to_dict(self) -> dict[str, object]:
        return {
            "nodes": self.nodes, "rounds": self.rounds, "neighbors": self.neighbors, "repeats": self.repeats,
            "messages_per_s": self.messages_per_s, "exchanges_per_s": self.exchanges_per_s,
            "bare_events_per_s": self.bare_events_per_s, "bare_multiple": self.bare_multiple,
            "samples_messages_per_s": list(self.samples), "bare_samples_events_per_s": list(self.bare_samples),
            "engine": ENGINE_IMPLEMENTATION,
        }


def _overlay_sample(nodes: int, rounds: int, neighbors: int, seed: int) -> tuple[float, float]:
    """(messages, exchanges) per wall second of emulation of one overlay run."""
    config = OverlayConfig.build(nodes=nodes, neighbors=neighbors, rounds=rounds, observe_every=rounds, seed=seed)
    result = run_overlay(config)
    return result["messages_total"] / result["emulation_wall_s"], result["exchanges_per_s"]


def run_overlay_bench(nodes: int = 10_000, rounds: int = 20, neighbors: int = 5, repeats: int = 3,
                      seed: int = 1) -> OverlayBenchResult:
    """Time the overlay traffic and the bare loop `repeats` times each, interleaved, each sample in
    a fresh process (as `tools.bench.run_bench`)."""
    if repeats < 1:
        raise InputError("--repeats must be at least 1")
    OverlayConfig.build(nodes=nodes, neighbors=neighbors, rounds=rounds, seed=seed).validate()  # one line if not
    overlay: list[tuple[float, float]] = []
    bare: list[float] = []
    context = multiprocessing.get_context("spawn")
    with worker_pool(1, mp_context=context, max_tasks_per_child=1) as pool:
        for _ in range(repeats):
            overlay.append(pool.submit(_overlay_sample, nodes, rounds, neighbors, seed).result())
            bare.append(pool.submit(bare_rate, seed).result())
    best = max(overlay)
    return OverlayBenchResult(nodes=nodes, rounds=rounds, neighbors=neighbors, repeats=repeats,
                              messages_per_s=best[0], exchanges_per_s=best[1],
                              samples=tuple(rate for rate, _ in overlay), bare_events_per_s=max(bare),
                              bare_samples=tuple(bare))
