"""What both overlay engines share: the utilities the emulator sets (in the role of an allocation
protocol), the observer that measures rounds and runs the centre perturbations, and the result
document built from what an engine reports (`OverlayRun`).

The engines are `assembly.overlay_run` (event-driven: the emulated network) and
`assembly.overlay_cycle` (cycle-driven); `docs/overlay.md` describes both.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drfemu.kernel.resources import dominant_share
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.gateway import draw_homes
from drfemu.overlay.gradient import NEG_INF
from drfemu.overlay.observe import OverlayMetrics, OverlaySnapshot, centre_status, measure, total_order
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.schema.overlay_result import OverlayResult, OverlayTraffic, Recovery
from drfemu.schema.result import Number
from drfemu.schema.workload import Workload

__all__ = ["OverlayRun", "RoundObserver", "Utilities", "overlay_result"]


class Utilities:
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


class RoundObserver:
    """The observer's hook: measures rounds, then runs the perturbations one by one.

    Called at the start of tick `k`, before that tick's exchanges, it sees round `k − 1`. It
    reads the overlay through `read` (a snapshot of every node's views), changes the centre's
    utility through `set_utility(node, utility)` and ends the run through `stop`, so both engines
    (the event-driven one and the cycle-driven one) share it.
    """

    def __init__(self, config: OverlayConfig, read: Callable[[], OverlaySnapshot],
                 set_utility: Callable[[int, float], None], stop: Callable[[], None], utilities: Utilities,
                 progress: Callable[[int, OverlayMetrics | None], None] | None) -> None:
        self.config = config
        self.read = read
        self.set_utility = set_utility
        self.stop = stop
        self.utilities = utilities
        self.progress = progress
        self.drop_rank = config.drop_rank or config.neighbors
        self.rounds: list[dict[str, Any]] = []
        self.perturbations: list[dict[str, Any]] = []
        self.rounds_to_converge: int | None = None
        self.perturbed_at = -1  # the round of the perturbation under way, -1 while static
        self.old_centre = -1
        self.seconds = 0.0  # wall time spent observing
        self.stopped = False

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
            metrics = measure(self.read())
            self.rounds.append(_round_row(round_number, now, metrics))
            if metrics.converged and self.rounds_to_converge is None:
                self.rounds_to_converge = round_number
            if self.progress is not None:
                self.progress(round_number, metrics)
        if last:
            self._next_perturbation(round_number)

    def _recovery_round(self, round_number: int) -> None:
        status = centre_status(self.read())
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
            self.stopped = True
            self.stop()
            return
        centre = total_order(self.utilities.values)[-1]
        self.set_utility(centre, self.utilities.perturb(centre, self.drop_rank))
        self.perturbed_at = round_number
        self.old_centre = centre


@dataclass(frozen=True)
class OverlayRun:
    """What an overlay run left to report, whichever engine ran it: its observer, what the engine
    did (`OverlayTraffic`) and the wall time."""

    observer: RoundObserver
    nodes: int
    traffic: OverlayTraffic
    wall: float


def _echo(config: OverlayConfig, run: OverlayRun, workload: Workload | None) -> dict[str, Number | str | None]:
    """`config`'s parameters by declared name, null where one is not read (`Param.when`); `nodes`,
    `users` and `drop_rank` as the run resolved them (`schema.overlay_result`)."""
    values = {p.name: getattr(config, p.name) for p in config.PARAMS}
    echo = {p.name: values[p.name] if p.read_under(values) else None for p in config.PARAMS}
    if workload is None:  # random utilities
        return echo | {"nodes": run.nodes, "users": None, "drop_rank": run.observer.drop_rank}
    return echo | {"nodes": run.nodes, "users": len(workload.users), "drop_rank": None}


def overlay_result(config: OverlayConfig, workload: Workload | None, run: OverlayRun) -> OverlayResult:
    observer, traffic = run.observer, run.traffic
    emulation_wall = max(run.wall - observer.seconds, 1e-9)
    perturbations = observer.perturbations
    recoveries = [p["recovery_rounds"] for p in perturbations if p["recovery_rounds"] is not None]
    return OverlayResult(
        **dict(traffic), config=_echo(config, run, workload),
        round_rows=observer.rounds, rounds_to_converge=observer.rounds_to_converge, perturbation_rows=perturbations,
        recovery=Recovery(recovered=len(recoveries), **_summary(recoveries)),
        messages_total=sum(traffic.messages.values()), bytes_total=sum(traffic.bytes.values()), wall_time_s=run.wall,
        observer_wall_s=observer.seconds, emulation_wall_s=emulation_wall,
        events_per_s=traffic.events / emulation_wall,
        exchanges_per_s=(traffic.cyclon_exchanges + traffic.gradient_exchanges) / emulation_wall)
