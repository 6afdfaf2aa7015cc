"""One emulation run: workload + protocol + seed → `RunResult` (SPEC §2–5).

Actor addresses: servers are 0..S−1 in workload order, users S..S+U−1 in workload order,
then the gateway, then (central protocols) the scheduler. All users start at time 0 (a
finite user then waits for its first submit time); the allocation tick fires every `tick`
seconds from time `tick` on. A finite workload's homes count a user only once its first task
arrives (`protocols.homes`), and its tasks end through the task lifetimes
(`assembly.lifetimes`).

Distributed protocols (SPEC §4): every server is an overlay peer. Like the thesis's
bootstrap server, each starts with a Cyclon view of `c` random others (described as of time
0) and offers them to its gradient; Cyclon shuffles once a tick (it carries the walks), and
the gradient, where the protocol uses it, exchanges `shuffles_per_tick` times a tick.
Servers know their homed users from the start (the gateway's draw), so a home's utility is 0
and every other server's `−∞` from time 0 (eq. 4.2). Only servers with users tick, unless
the protocol's rule asks for every server (`TICKS_ALL`: probes, and `ddrf-gradient`, whose
servers freeze their own gradient views, `protocols.ddrf`). For the protocols with fixed
random neighbours each server draws `P` distinct others. `P` must be below the number of
servers (a one-line error otherwise); with fewer servers than `c + 1`, the Cyclon view is as
large as the cluster allows, and the result records the sizes used.

Random streams used: run-level `network/latency`, `network/loss` and `gateway` (home draws
and random server choices); each server's own `overlay` (Cyclon and gradient choices) and
`walk` (walk steps); the bootstrap service's per-server `bootstrap` (first Cyclon view) and
`neighbors` (fixed random neighbour sets). Same `RunConfig` ⇒ the same events in the same
order ⇒ the same result, apart from the wall-clock fields.

The harness (endless users: `harness.Harness`; finite ones: `finite_harness.FiniteHarness`)
and the task ledger learn what happened from the nodes' events; the distributed set-up sums
the servers' counters after the run, and the ledger is checked against the users' counters.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drfemu.assembly.distributed import DistributedSetup
from drfemu.observers.fault_metrics import FaultTimeline
from drfemu.assembly.faults import DETECTION_TIMEOUTS, FaultInjector
from drfemu.observers.finite_harness import FINISHED, FiniteHarness
from drfemu.observers.harness import (
    SATURATED,
    STALLED,
    TOLERANCES,
    Harness,
    RunOutcome,
)
from drfemu.observers.ledger import TaskLedger
from drfemu.assembly.lifetimes import TaskLifetimes
from drfemu.schema.params import GOOGLE, GPU_CLUSTER, RunParams, echo, run_params
from drfemu.schema.result import RunResult
from drfemu.observers.run_log import RunLog
from drfemu.observers.swm import swm_comparison
from drfemu.schema.faults import FaultScenario, Target, load_scenario
from drfemu.workloads.google import google_case
from drfemu.workloads.gpu_cluster import gpu_cluster_case
from drfemu.schema.workload import Workload, load_workload
from drfemu.nodes.actor import Actor
from drfemu.nodes.clock import VirtualClockLoop
from drfemu.nodes.gateway import Gateway
from drfemu.nodes.gc_tuning import tuned_gc
from drfemu.kernel.latency import US_PER_S, parse_latency
from drfemu.nodes.network import CostModel, Network, TrafficTally
from drfemu.nodes.resource_node import ResourceNode
from drfemu.nodes.runtime import Runtime
from drfemu.nodes.scheduler import CentralScheduler
from drfemu.kernel.streams import RandomStreams
from drfemu.nodes.trace import EventTrace
from drfemu.nodes.user import FiniteUserNode, UserNode
from drfemu.protocols.central import PER_TICK
from drfemu.protocols.devices import check_device_workload
from drfemu.kernel.errors import InputError
from drfemu.kernel.events import ServerCrashed, ServerRecovered, TaskAllocated
from drfemu.kernel.fairness import gini, jain, ratio_20_20, sample_std
from drfemu.protocols.registry import Gateway as GatewayMode
from drfemu.protocols.registry import GradientUse, ProtocolSpec, get_protocol
from drfemu.protocols.resilience import Timeouts, prompt_timeout, retransmission_timeout

__all__ = ["ActorIds", "Nodes", "RunConfig", "RunResult", "build_harness", "build_nodes", "build_run_config", "labelled_log",
           "result_document", "run_emulation", "run_point", "run_timeouts",
           "run_workload"]


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run: the workload and the validated run parameters."""

    workload: Workload
    params: RunParams
    loss: float = 0.0
    cost: CostModel = field(default_factory=CostModel)
    spec: ProtocolSpec = field(init=False, repr=False, compare=False)
    """The run's protocol, looked up in the registry once, when the config is made."""
    device_resource: int = field(init=False, repr=False, compare=False)
    """The index of the resource `--devices` models as devices (`protocols.devices`); -1: none."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec", get_protocol(self.params.protocol))
        resource = -1
        if self.params.devices is not None:
            workload = self.workload
            if workload.finite:
                raise InputError("--devices: the device model runs endless workloads only (tasks that end are not "
                                 "supported yet)")
            if self.params.faults is not None:
                raise InputError("--devices cannot be combined with --faults yet (a restarted scheduler's view and "
                                 "rejoining servers do not carry devices)")
            resource = check_device_workload(self.params.devices, [s.capacity for s in workload.servers],
                                             [u.demand for u in workload.users], workload.resources)
        object.__setattr__(self, "device_resource", resource)

    @classmethod
    def build(cls, workload: Workload, **params: Any) -> RunConfig:
        """A config from parameters by name (validated; defaults fill the rest)."""
        return cls(workload, run_params(**params))

    def validate(self) -> tuple[FaultScenario, dict[Any, int]] | None:
        """Checks that need the workload as well as the parameters; returns the run's fault
        scenario, read and checked against the run, with the servers it names (None without one)."""
        spec = self.spec
        servers = len(self.workload.servers)
        if spec.distributed and servers > 1 and self.params.neighbors >= servers:
            raise InputError(f"--neighbors ({self.params.neighbors}) must be below the number of servers "
                             f"({servers})")
        path = self.params.faults
        if path is None:
            return None
        scenario = load_scenario(Path(path))
        within = self.params.tick if spec.server_rule is not None and spec.server_rule.ROUND_TRIP_WITHIN_TICK else None
        positions = scenario.bind([s.id for s in self.workload.servers], central=spec.central_rule is not None,
                                  gradient=spec.gradient is not GradientUse.OFF, max_time=self.params.max_time,
                                  round_trip_within=within)
        return scenario, positions


def build_run_config(params: Mapping[str, Any]) -> RunConfig:
    """The validated `RunConfig` of canonical `params` (loads or draws the workload)."""
    if params["workload"] == GOOGLE:
        workload = google_case(params["machines"], params["users"], params["case_seed"])
    elif params["workload"] == GPU_CLUSTER:
        workload = gpu_cluster_case(params["machines"], params["users"], params["case_seed"])
    else:
        workload = load_workload(Path(params["workload"]))
    config = RunConfig(workload, run_params(**{k: v for k, v in params.items()
                                                if k not in ("workload", "machines", "users", "case_seed")}))
    config.validate()
    return config


def labelled_log(workload: Workload, emit: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
    """An allocation log for `run_emulation` that hands `emit` one record per allocation, with
    the workload's user and server labels in place of actor numbers."""
    servers = [s.id for s in workload.servers]
    users = [u.id for u in workload.users]

    def log(event: str, **fields: Any) -> None:
        fields["user"] = users[fields["user"]]
        fields["server"] = servers[fields["server"]]
        emit({"event": event, **fields})

    return log


def _finite(x: float) -> float | None:
    """JSON has no infinity: non-finite metrics are written as null (see docs/metrics.md)."""
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class ActorIds:
    """Where each role sits among a run's actor ids: the servers 0..n−1, then the users, the
    gateway and the central scheduler (which a distributed run does not build)."""

    servers: list[int]
    users: list[int]
    gateway: int
    scheduler: int

    @classmethod
    def of(cls, workload: Workload) -> ActorIds:
        n_servers, n_users = len(workload.servers), len(workload.users)
        return cls(list(range(n_servers)), list(range(n_servers, n_servers + n_users)), n_servers + n_users,
                   n_servers + n_users + 1)


def build_harness(config: RunConfig, on_finish: Callable[[RunOutcome], None], log: Callable[..., Any] | None = None,
                  progress: Callable[[float, int], None] | None = None) -> Harness | FiniteHarness:
    """The observer that judges a run (virtual or live): the finite harness for tasks that end."""
    params = config.params
    workload = config.workload
    capacities = [s.capacity for s in workload.servers]
    users = ActorIds.of(workload).users
    if workload.finite:
        return FiniteHarness(capacities, users, workload.task_count, params.tick, params.stall_ticks, params.max_time,
                             on_finish, params.sample_every, params.swm_every, log=log, progress=progress)
    return Harness(capacities=capacities, demands=[u.demand for u in workload.users], user_actors=users,
                   tick=params.tick, stall_ticks=params.stall_ticks, max_time=params.max_time, on_finish=on_finish,
                   log=log, progress=progress, sample_every=params.sample_every,
                   device_resource=config.device_resource)


@dataclass
class Nodes:
    """Every node of a run, built from its config: servers (or resource nodes), users, the
    gateway and the central scheduler, in actor-id order, and the ones the tick drives."""

    actors: list[Actor]
    users: list[UserNode | FiniteUserNode]
    gateway: Gateway
    tickers: list[Actor]
    distributed: DistributedSetup | None


def run_timeouts(config: RunConfig, latency_bound: float) -> Timeouts:
    """The timeouts of a run whose one-way latency is at most `latency_bound` seconds
    (`protocols.resilience`; a home's walk may take one hop per server)."""
    params = config.params
    spec = config.spec
    walk_hops = (params.walk_ttl or len(config.workload.servers)) if spec.gateway is GatewayMode.HOME else 0
    return Timeouts(retransmission_timeout(latency_bound, params.tick, walk_hops), prompt_timeout(latency_bound))


def build_nodes(config: RunConfig, streams: RandomStreams, timeouts: Timeouts = Timeouts(),
                every_server: bool = False) -> Nodes:
    """The run's nodes, each with its own streams from `streams` (the same objects, state and
    draws in every process that builds them from the same config: the live workers rely on it).
    `timeouts.answer` > 0 turns resilience on; `every_server` ticks every server (runs with crashes)."""
    rto = timeouts.answer
    params = config.params
    spec = config.spec
    workload = config.workload
    finite = workload.finite
    ids = ActorIds.of(workload)
    server_ids, user_ids, gateway_id, scheduler_id = ids.servers, ids.users, ids.gateway, ids.scheduler
    total = workload.total
    capacities = [s.capacity for s in workload.servers]
    gateway = Gateway(gateway_id, spec.gateway, server_ids, user_ids, streams.python("gateway"), central=scheduler_id)
    distributed: DistributedSetup | None = None
    actors: list[Actor]
    tickers: list[Actor] = []
    if spec.distributed:
        demands = {a: u.demand for a, u in zip(user_ids, workload.users)}
        distributed = DistributedSetup(params, spec, capacities, total, demands, gateway.homes, streams, finite,
                                       timeouts, gateway_id, config.device_resource)
        actors = list(distributed.servers)
        tickers.extend(distributed.tickers(every_server=every_server))
    else:
        actors = [ResourceNode(i, c, scheduler_id, rto, timeouts.prompt, config.device_resource)
                  for i, c in zip(server_ids, capacities)]
    durable = spec.central_rule is not None  # a restarted scheduler rebuilds what it knew (`nodes.scheduler`)
    retry = spec.server_rule.reprobe_ticks(params.model_dump()) if spec.server_rule is not None else 0
    reprobe = retry * params.tick  # users ask the gateway again after this long without a proposal (probes)
    users: list[UserNode | FiniteUserNode] = [
        FiniteUserNode(a, gateway_id, [(t.submit, t.demand) for t in u.tasks or ()], total, rto, durable,
                       timeouts.prompt, reprobe)
        if finite else UserNode(a, gateway_id, u.demand, total, rto, durable, timeouts.prompt, reprobe)
        for a, u in zip(user_ids, workload.users)]
    actors.extend(users)
    actors.append(gateway)
    if spec.central_rule is not None:
        scheduler = _central_scheduler(spec, params, scheduler_id, server_ids, capacities, len(workload.resources),
                                       ack_ends=rto > 0, device_resource=config.device_resource)
        actors.append(scheduler)
        tickers.append(scheduler)
    return Nodes(actors, users, gateway, tickers, distributed)


def run_emulation(
    config: RunConfig,
    log: Callable[..., Any] | None = None,
    progress: Callable[[float, int], None] | None = None,
    trace: EventTrace | None = None,
    record: Callable[[dict[str, Any]], None] | None = None,
) -> RunResult:
    """Run one emulation: to saturation, stall or the time cap (endless users), or until every
    task has finished, a stall or the time cap (finite users). `trace` receives every event
    (`nodes.trace`; the determinism checker); `record` every fact of the replayable run log
    (`observers.run_log`)."""
    faults = config.validate()
    params = config.params
    spec = config.spec
    workload = config.workload
    streams = RandomStreams(params.seed)
    n_servers = len(workload.servers)
    ids = ActorIds.of(workload)
    capacities = [s.capacity for s in workload.servers]

    loop = VirtualClockLoop()
    try:
        def on_finish(outcome: RunOutcome) -> None:
            runtime.stop(outcome)  # bound below, before the loop runs

        harness = build_harness(config, on_finish, log, progress)
        latency = parse_latency(params.latency, streams.python("network/latency"))
        # Resilience (timeouts, retries, acknowledged ends) is on in runs with faults (docs/faults.md).
        timeouts = run_timeouts(config, latency.bound_us() / US_PER_S) if faults is not None else Timeouts()
        nodes = build_nodes(config, streams, timeouts, every_server=faults is not None and faults[0].crashes)
        gateway, distributed, users, actors, tickers = (nodes.gateway, nodes.distributed, nodes.users, nodes.actors,
                                                         nodes.tickers)
        network = Network(
            latency,
            loss=config.loss,
            loss_rng=streams.python("network/loss"),
            cost=config.cost,
        )
        runtime = Runtime(loop, network, actors, trace)
        run_log = None
        if record is not None:
            run_log = RunLog(workload, record, ids.users, {ids.gateway: "gateway", ids.scheduler: "scheduler"},
                             params.devices)
            run_log.subscribe(runtime)
        injector = None
        if faults is not None:
            injector = _injector(faults, runtime, network, streams, params, timeouts, harness, gateway, distributed,
                                 capacities, len(workload.resources), spec, ids.scheduler, n_servers,
                                 run_log.on_fault if run_log is not None else None)
            harness.faults = injector
        ledger = TaskLedger()
        ledger.subscribe(runtime)
        if isinstance(harness, FiniteHarness):
            harness.subscribe(runtime)
            TaskLifetimes(runtime, {a: [t.duration for t in u.tasks or ()] for a, u in zip(ids.users, workload.users)})
        else:
            runtime.subscribe(TaskAllocated, harness.on_event)
            runtime.subscribe(ServerCrashed, harness.on_crashed)
            runtime.subscribe(ServerRecovered, harness.on_recovered)
        timeline = FaultTimeline(runtime, harness, network) if injector is not None else None
        for user in users:
            runtime.call_at(0.0, user.start, actor=user)
        ticks = runtime.start_ticks(params.tick, tickers)
        if distributed is not None:
            distributed.start(runtime)
        runtime.add_tick_hook(harness.on_tick)
        if isinstance(harness, Harness) and not harness.placeable_shares():
            harness.finish(SATURATED, "no user's task fits on any server", 0.0)

        with tuned_gc():
            started = time.perf_counter()
            outcome: RunOutcome = loop.run_until_complete(runtime.finished)
            wall = time.perf_counter() - started
    finally:
        loop.close()

    user_counts = {user.id: user.counters() for user in users}
    values = result_document(config, outcome, harness, ledger, network.tally(), dict(network.causes), user_counts,
                             runtime.now, runtime.delivered + runtime.timer_events, wall, ticks.fired,
                             network.latency.describe())
    values.update(faults=injector.log if injector is not None else [],
                  fault_windows=timeline.windows(injector.log) if timeline is not None and injector is not None else [],
                  fault_timeline=timeline.series() if timeline is not None else None)
    if distributed is not None:
        values.update(distributed.report())
    return RunResult(values)


def result_document(config: RunConfig, outcome: RunOutcome, harness: Harness | FiniteHarness, ledger: TaskLedger,
                    traffic: Mapping[str, TrafficTally], causes: dict[str, int], user_counts: dict[int, Any],
                    now: float, events: int, wall: float, ticks: int, latency: str) -> dict[str, Any]:
    """The result document of a run (virtual or live) from what its observers saw: everything
    but the fault and distributed parts, which their set-ups add."""
    params = config.params
    workload = config.workload
    finite = workload.finite
    labels = [u.id for u in workload.users]
    error_ratios = harness.error_ratios()
    expected = (sum(t.submit <= now for u in workload.users for t in u.tasks or ()) if finite else None)
    spec = config.spec
    values: dict[str, Any] = {
        "protocol": params.protocol,
        "machines": len(workload.servers),
        "users": len(workload.users),
        "seed": params.seed,
        "resources": list(workload.resources),
        "tick_s": params.tick,
        "latency": latency,
        "finite_tasks": finite,
        "saturated": outcome.status == SATURATED,
        "stalled": outcome.status == STALLED,
        "finished": outcome.status == FINISHED,
        "status": outcome.status,
        "end_reason": outcome.reason,
        "run_time_s": harness.last_finish if isinstance(harness, FiniteHarness) else harness.last_allocation,
        "virtual_time_s": now,
        "allocations": harness.allocations,
        "ledger": ledger.check(user_counts, expected),
        "queueing_delay_s": ledger.delay_percentiles(),
        "queueing_delay_quantiles_s": ledger.delay_quantiles(),
        "error_ratio": error_ratios[0],
        "error_ratio_by_tolerance": {f"{tau:g}": r for tau, r in zip(TOLERANCES, error_ratios)},
        "error_series": harness.error_series(),
        "messages": {name: t.sent for name, t in traffic.items()},
        "messages_dropped": {name: t.dropped for name, t in traffic.items() if t.dropped},
        "messages_dropped_by_cause": causes,
        "faults": [],
        "fault_windows": [],
        "fault_timeline": None,
        "bytes": {name: t.bytes for name, t in traffic.items()},
        "messages_total": sum(t.sent for t in traffic.values()),
        "bytes_total": sum(t.bytes for t in traffic.values()),
        "messages_per_allocation": (sum(t.sent for t in traffic.values()) / harness.allocations
                                    if harness.allocations else None),
        "wall_time_s": wall,
        "events": events,
        "events_per_s": events / wall if wall > 0 else 0.0,
        "workload": dict(workload.source),
        "distributed": spec.distributed,
        **echo(params, finite),
        "ticks": ticks,
    }
    if isinstance(harness, FiniteHarness):
        values.update(_finite_metrics(harness, workload.resources, workload.total, labels))
    else:
        values.update(_endless_metrics(harness, workload.resources, labels))
    return values


def _injector(faults: tuple[FaultScenario, dict[Any, int]], runtime: Runtime, network: Network,
              streams: RandomStreams, params: RunParams, timeouts: Timeouts, harness: Harness | FiniteHarness,
              gateway: Gateway,
              distributed: DistributedSetup | None, capacities: list[Any], resources: int, spec: ProtocolSpec,
              scheduler_id: int, n_servers: int,
              listener: Callable[[dict[str, Any]], None] | None = None) -> FaultInjector:
    """The run's fault injector, with what it needs to bring crashed actors back: a server
    rejoins empty (a distributed one with a fresh bootstrap view), the scheduler restarts and
    rebuilds from the servers' reports, the gateway keeps its home table (`nodes.gateway`)."""
    servers = list(range(n_servers))

    def restart(actor: int, life: int) -> Actor:
        down = sorted(runtime.down - {actor})
        if actor == gateway.id:
            gateway.rejoin([s for s in down if s < n_servers])
            return gateway
        if actor == scheduler_id:
            return _central_scheduler(spec, params, scheduler_id, servers, capacities, resources, ack_ends=True,
                                      restarted=True, down=[s for s in down if s < n_servers])
        if distributed is not None:
            return distributed.rejoin(actor, life, [s for s in servers if s not in runtime.down], runtime.now)
        return ResourceNode(actor, capacities[actor], scheduler_id, *timeouts)

    def centre() -> int:
        """The gradient's centre now: the home of the user with the lowest share among those
        with a task to place (as the gateway's home table says)."""
        user = harness.lowest_wanting()
        return gateway.homes[user] if user is not None else 0

    targets = {Target.GATEWAY: gateway.id}
    if spec.central_rule is not None:
        targets[Target.SCHEDULER] = scheduler_id
    return FaultInjector(*faults, runtime, network, servers, streams, restart=restart,
                         detection=DETECTION_TIMEOUTS * timeouts.answer, targets=targets, centre=centre,
                         max_time=params.max_time, listener=listener)


def _central_scheduler(spec: ProtocolSpec, params: RunParams, actor_id: int, servers: list[int], capacities: list[Any],
                       resources: int, ack_ends: bool, restarted: bool = False,
                       down: list[int] | None = None, device_resource: int = -1) -> CentralScheduler:
    """The central scheduler with its rule built from the rule's own run parameters."""
    if spec.central_rule is None:
        raise ValueError(f"protocol {spec.name!r} is distributed: it has no central scheduler")
    rule_params = {p.name: getattr(params, p.name) for p in spec.params}
    per_tick = rule_params.pop(PER_TICK.name, PER_TICK.default)  # a rule that does not declare it: the thesis's 1
    rule = spec.central_rule(**rule_params)
    check = getattr(rule, "check_resources", None)
    if check is not None:
        try:
            check(resources)
        except ValueError as error:
            raise InputError(str(error)) from None
    return CentralScheduler(actor_id, rule, servers, capacities, per_tick, ack_ends, restarted, down or (),
                            device_resource)


def _endless_metrics(harness: Harness, resources: tuple[str, ...], labels: list[str]) -> dict[str, Any]:
    """Fairness of the final allocation (the thesis's metrics), over the placeable users."""
    shares = harness.placeable_shares()
    unplaceable = set(harness.unplaceable)
    fragmented, holders = harness.fragmentation()
    samples = harness.fragment_samples
    return {
        "min_dominant_share": min(shares) if shares else 0.0,
        "gini": gini(shares) if shares else 0.0,
        "std_dominant_share": sample_std(shares) if shares else 0.0,
        "ratio_20_20": _finite(ratio_20_20(shares)) if shares else None,
        "jain": jain(shares) if shares else 1.0,
        "utilization": dict(zip(resources, harness.utilization())),
        "stranded": dict(zip(resources, harness.stranded())),
        "fragmented": dict(zip(resources, fragmented)),
        "fragmented_servers": dict(zip(resources, holders)),
        "fragmented_mean": {name: sum(x[r] for _, x in samples) / len(samples) if samples else None
                            for r, name in enumerate(resources)},
        "fragmented_series": {"time_s": [t for t, _ in samples],
                              **{name: [x[r] for _, x in samples] for r, name in enumerate(resources)}},
        "first_blocked": None if harness.first_blocked is None else {
            "time_s": harness.first_blocked[0], "user": labels[harness.first_blocked[1]],
            "fragmented": dict(zip(resources, harness.first_blocked[2])),
            "free": dict(zip(resources, harness.first_blocked[3]))},
        "dominant_shares": {labels[k]: s for k, s in enumerate(harness.shares) if k not in unplaceable},
        "tasks": {labels[k]: n for k, n in enumerate(harness.tasks) if k not in unplaceable},
        "unplaceable_users": [labels[k] for k in sorted(unplaceable)],
    }


def _finite_metrics(harness: FiniteHarness, resources: tuple[str, ...], total: tuple[float, ...],
                    labels: list[str]) -> dict[str, Any]:
    """Fairness over time (the final allocation of a finished run is empty): time averages of
    the samples, the sampled series, the SWM comparison, and each user's started tasks. The
    thesis's end-of-run metrics are the time averages (`min_dominant_share`, `gini`, `jain`)."""
    averages = harness.time_averages()
    series = {key: [_finite(x) for x in values] for key, values in harness.series.items()}
    for r, name in enumerate(resources):
        series[f"utilization_{name}"] = series.pop(f"utilization_{r}")
    return {
        "min_dominant_share": averages["min_share"],
        "gini": averages["gini"],
        "jain": averages["jain"],
        "time_averaged": {"min_share": averages["min_share"], "gini": averages["gini"], "jain": averages["jain"],
                          "utilization": {name: averages[f"utilization_{r}"] for r, name in enumerate(resources)}},
        "utilization": {name: averages[f"utilization_{r}"] for r, name in enumerate(resources)},
        "series": series,
        "swm": swm_comparison(harness.swm_samples, total),
        "tasks": {labels[k]: n for k, n in enumerate(harness.started)},
        "unplaceable_users": [],
    }


def run_workload(workload: Workload, params: Mapping[str, Any],
                 record: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The result document of a run of `workload` with `params` by name (validated; defaults fill
    the rest); `record` hears the run log (a fault campaign's unit of work)."""
    return run_emulation(RunConfig.build(workload, **params), record=record).to_dict()


def run_point(params: Mapping[str, Any], progress: Callable[[float, int], None] | None = None) -> dict[str, Any]:
    """The result document of the run that canonical `params` describe (a sweep's unit of work);
    `progress(virtual time, allocations)` hears how it goes, as `run_emulation`'s does."""
    return run_emulation(build_run_config(params), progress=progress).to_dict()
