"""One emulation run: a `RunConfig` → a `RunResult` (SPEC §2–5).

A `Run` owns the runtime (on a virtual clock, `nodes.runtime`), the network, the nodes (`assembly.build`) and the
observers: the harness (endless users: `observers.harness.Harness`; finite ones:
`observers.finite_harness.FiniteHarness`), the task ledger, the run log when asked for, and with
faults the fault timeline. When the run ends each observer contributes its typed sections of
the result (`schema.result`). With a fault scenario the run also holds the fault injector,
which acts on the run through the narrow `FaultPort` the run implements (`assembly.faults`);
with finite users, the task lifetimes, which end the tasks (`assembly.lifetimes`).

Distributed protocols (SPEC §4): every server is an overlay peer. Like the thesis's bootstrap
server, each starts with a Cyclon view of `c` random others (described as of time 0) and offers
them to its gradient; Cyclon shuffles once a tick (it carries the walks), and the gradient,
where the protocol uses it, exchanges `shuffles_per_tick` times a tick. Servers know their
homed users from the start (the gateway's draw), so a home's utility is 0 and every other
server's `−∞` from time 0 (eq. 4.2). Only servers with users tick, unless the protocol's rule
asks for every server (`TICKS_ALL`: probes, and `ddrf-gradient`, whose servers freeze their own
gradient views, `protocols.ddrf`). For the protocols with fixed random neighbours each server
draws `P` distinct others. `P` must be below the number of servers (a one-line error
otherwise); with fewer servers than `c + 1`, the Cyclon view is as large as the cluster allows,
and the result records the sizes used.

Random streams used: run-level `network/latency`, `network/loss` and `gateway` (home draws and
random server choices); each server's own `overlay` (Cyclon and gradient choices) and `walk`
(walk steps); the bootstrap service's per-server `bootstrap` (first Cyclon view) and `neighbors`
(fixed random neighbour sets). Same `RunConfig` ⇒ the same events in the same order ⇒ the same
result, apart from the wall-clock fields. The order in which the observers subscribe is part of
that: the run log, the fault injector's timers, the ledger, the harness, the task lifetimes, the
fault timeline, the users' start, the tick, the overlays, then the harness's tick hook and the
sampler's (which only reads: a sampled run is the same run).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from typing import Any

from drfemu.assembly.build import build_nodes
from drfemu.assembly.config import RunConfig
from drfemu.assembly.faults import DETECTION_TIMEOUTS, FaultInjector
from drfemu.assembly.lifetimes import TaskLifetimes
from drfemu.assembly.reference import reference_config, reference_section
from drfemu.kernel.events import ServerCrashed, ServerRecovered
from drfemu.kernel.latency import LatencyModel, parse_latency
from drfemu.kernel.messages import PeerDown, PeerUp
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.actor import Actor
from drfemu.nodes.gc_tuning import paused_gc
from drfemu.nodes.network import Network
from drfemu.nodes.plane import attach_plane
from drfemu.nodes.runtime import Periodic, Runtime
from drfemu.nodes.session import LoopName, run_loop, timed
from drfemu.nodes.trace import EventTrace
from drfemu.observers.fault_metrics import NO_FAULTS, FaultTimeline
from drfemu.observers.finite_harness import FiniteHarness
from drfemu.observers.harness import SATURATED, Harness, Limits, Listeners, RunOutcome
from drfemu.observers.ledger import TaskLedger
from drfemu.observers.observer import Observer, RunEnd
from drfemu.observers.run_log import RunLog
from drfemu.observers.samples import Sampler
from drfemu.observers.traffic import Traffic
from drfemu.schema.faults import BoundScenario, Target
from drfemu.schema.result import RunResult, Section

__all__ = ["Run", "build_harness", "result_sections", "run_emulation"]

Record = Callable[[dict[str, Any]], None]


def build_harness(config: RunConfig, listeners: Listeners,
                  faults: FaultInjector | None = None) -> Harness | FiniteHarness:
    """The observer that judges a run (virtual or live): the finite harness for tasks that end."""
    params, workload = config.params, config.workload
    limits = Limits(params.tick, params.stall_ticks, params.max_time)
    if workload.finite:
        return FiniteHarness(workload, config.ids.users, limits, listeners, faults=faults,
                             sample_every=params.sample_every, swm_every=params.swm_every)
    return Harness(workload, config.ids.users, limits, listeners, faults=faults, sample_every=params.sample_every,
                   device_resource=config.device_resource)


class Run:
    """One emulation, assembled from its config, ready to `execute` (once)."""

    def __init__(self, config: RunConfig, log: Callable[..., Any] | None = None,
                 progress: Callable[[float, int], None] | None = None, trace: EventTrace | None = None,
                 record: Record | None = None, samples: int = 0) -> None:
        """`log` hears every allocation, `progress(virtual time, allocations)` how the run goes,
        `trace` every event (`nodes.trace`: the determinism checker), `record` every fact of the
        replayable run log (`observers.run_log`); `samples` > 0 keeps that many samples of the
        run over time, up to twice as many (`observers.samples`; the same run, event for event)."""
        with paused_gc():  # set-up allocates millions of objects and frees none (`nodes.gc_tuning`)
            self.config = config
            bound = config.faults
            params = config.params
            self.streams = RandomStreams(params.seed)
            latency = parse_latency(params.latency, self.streams.python("network/latency"))
            self.timeouts = config.resilience
            self.nodes = build_nodes(config, self.streams, self.timeouts,
                                     every_server=bound is not None and bound.scenario.crashes)
            self.network = Network(latency, loss=config.loss, loss_rng=self.streams.python("network/loss"),
                                   cost=config.cost)
            self.runtime = Runtime(self.network, self.nodes.actors, trace)
            attach_plane(self.runtime)
            self.servers = config.ids.servers
            self.run_log = self._run_log(record)
            self.injector = self._injector(bound)
            self.harness = build_harness(config, Listeners(self._finish, log, progress), self.injector)
            user_names = (user.id for user in config.workload.users)
            self.ledger = TaskLedger(dict(zip(config.ids.users, user_names, strict=True)))
            self.observers: list[Observer] = [self.harness, self.ledger, Traffic.of(self.network)]
            self.sampler = self._sampler(samples)
            self.ticks = self._attach()

    def _run_log(self, record: Record | None) -> RunLog | None:
        if record is None:
            return None
        ids = self.config.ids
        run_log = RunLog(self.config.workload, record, ids.users, {ids.gateway: "gateway", ids.scheduler: "scheduler"},
                         self.config.params.devices)
        run_log.subscribe(self.runtime)
        return run_log

    def _sampler(self, points: int) -> Sampler | None:
        if not points:
            return None
        return Sampler(self.config.workload, self.harness, self.network.tally, points,
                       self.nodes.setup.ideal_views_measure(self.runtime.actors), self.ledger.delays)

    def _injector(self, bound: BoundScenario | None) -> FaultInjector | None:
        if bound is None:
            return None
        return FaultInjector(bound, self, self.streams, detection=DETECTION_TIMEOUTS * self.timeouts.answer,
                             max_time=self.config.params.max_time,
                             listener=self.run_log.on_fault if self.run_log is not None else None)

    def _attach(self) -> Periodic:
        """Every observer and driver on the runtime, in the order that makes the run (see the
        module); returns the allocation tick."""
        runtime, config = self.runtime, self.config
        self.ledger.subscribe(runtime)
        self.harness.subscribe(runtime)
        if config.workload.finite:
            TaskLifetimes(runtime, {a: [t.duration for t in u.tasks or ()]
                                    for a, u in zip(config.ids.users, config.workload.users)})
        if self.injector is not None:
            self.observers.append(FaultTimeline(runtime, self.harness, self.network, self.injector.log))
        for user in self.nodes.users:
            runtime.call_at(0.0, user.start, actor=user)
        ticks = runtime.start_ticks(config.params.tick, self.nodes.tickers)
        self.nodes.setup.start(runtime)
        self.observers.append(self.nodes.setup)
        runtime.add_tick_hook(self.harness.on_tick)
        if self.sampler is not None:
            runtime.add_tick_hook(self.sampler.on_tick)
            self.observers.append(self.sampler)
        if isinstance(self.harness, Harness) and not self.harness.placeable_shares():
            self.harness.finish(SATURATED, "no user's task fits on any server", 0.0)
        return ticks

    def _finish(self, outcome: RunOutcome) -> None:
        self.runtime.stop(outcome)

    def execute(self, loop: LoopName = "asyncio") -> RunResult:
        """Run to saturation, stall or the time cap (endless users), or until every task has
        finished, a stall or the time cap (finite users), on a new event loop of kind `loop`
        (the same result on any); the result, from every observer's sections."""
        return run_loop(self.execute_async(), loop)

    async def execute_async(self) -> RunResult:
        """`execute` on the running loop, beside whatever else it runs (the run yields to it)."""
        _, wall = await timed(self.runtime.run())
        sections = self.sections(self.end(wall))
        result = RunResult.compose(sections, self.config.extension_echoes())
        reference = reference_config(self.config)
        if reference is None:
            return result
        theirs = await Run(reference).execute_async()
        return RunResult.compose([*sections, reference_section(result, theirs)], self.config.extension_echoes())

    def end(self, wall: float) -> RunEnd:
        """What the observers read of the run once it has ended (`wall`: seconds it took)."""
        runtime, workload = self.runtime, self.config.workload
        return RunEnd(now=runtime.now, wall=wall, events=runtime.delivered + runtime.timer_events,
                      ticks=self.ticks.fired, allocations=self.harness.allocations,
                      users={user.id: user.counters() for user in self.nodes.users},
                      submitted=workload.submitted_by(runtime.now))

    def sections(self, end: RunEnd) -> list[Section]:
        """The result's sections: the config's, the engine's and every observer's."""
        return result_sections(self.config, self.network.latency, end, self.observers, self.injector is not None)

    # -- the fault port (`assembly.faults.FaultPort`) ---------------------------------------
    @property
    def targets(self) -> dict[Target, int]:
        ids = self.config.ids
        return {Target.GATEWAY: ids.gateway, **({Target.SCHEDULER: ids.scheduler}
                                                 if self.config.spec.central_rule is not None else {})}

    @property
    def down(self) -> Set[int]:
        return self.runtime.down

    def call_at(self, at: float, callback: Callable[[float], None]) -> None:
        self.runtime.call_at(at, callback)

    def take_down(self, actor: int, now: float) -> None:
        self.runtime.crash(actor)
        self.runtime.publish(ServerCrashed(now, actor))

    def bring_back(self, actor: int, life: int, now: float) -> None:
        fresh = self._rebuild(actor, life)
        self.runtime.restart(fresh)
        self.runtime.publish(ServerRecovered(now, actor))
        self.notify(PeerUp(actor))
        self.runtime.inject(fresh)

    def _rebuild(self, actor: int, life: int) -> Actor:
        """Actor `actor`'s `life`-th life: the gateway keeps its home table (`nodes.gateway`); the
        setup rebuilds a server, a resource node or the scheduler (`assembly.build.Setup.rejoin`)."""
        down = sorted(self.runtime.down - {actor})
        if actor == self.nodes.gateway.id:
            self.nodes.gateway.rejoin([s for s in down if s < len(self.servers)])
            return self.nodes.gateway
        return self.nodes.setup.rejoin(actor, life, down, self.runtime.now)

    def notify(self, notice: PeerDown | PeerUp) -> None:
        runtime = self.runtime
        for other in range(len(runtime.actors)):
            if other != notice.peer and other not in runtime.down:
                runtime.deliver_at(runtime.now, other, notice)

    def centre(self) -> int:
        """The gradient's centre now: the home of the user with the lowest share among those with a
        task to place (as the gateway's home table says)."""
        user = self.harness.lowest_wanting()
        return self.nodes.gateway.homes[user] if user is not None else 0


def result_sections(config: RunConfig, latency: LatencyModel, end: RunEnd, observers: Sequence[Observer],
                    faults: bool) -> list[Section]:
    """A run's sections, virtual or live: the config's (with `latency`, the model its timeouts
    assume), the engine's, no fault figures where no scenario played (`faults`), every observer's."""
    sections = [*config.sections(latency.describe()), end.engine()]
    if not faults:
        sections.append(NO_FAULTS)
    for observer in observers:
        sections += observer.sections(end)
    return sections


def run_emulation(config: RunConfig, log: Callable[..., Any] | None = None,
                  progress: Callable[[float, int], None] | None = None, trace: EventTrace | None = None,
                  record: Record | None = None) -> RunResult:
    """Run one emulation (`Run`): `log` hears every allocation, `progress(virtual time,
    allocations)` how it goes, `trace` every event, `record` every fact of the run log."""
    return Run(config, log, progress, trace, record).execute()
