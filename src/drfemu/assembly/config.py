"""What determines a run: the workload and the validated run parameters (`RunConfig`), where each
role sits among the actors (`ActorIds`), and the parts of the result that follow from them alone.

Actor addresses: servers are 0..S−1 in workload order, users S..S+U−1 in workload order, then
the gateway, then (central protocols) the scheduler.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import US_PER_S, parse_latency
from drfemu.kernel.messages import CostModel
from drfemu.protocols.devices import check_device_workload
from drfemu.protocols.registry import get_protocol
from drfemu.protocols.resilience import Timeouts, prompt_timeout, retransmission_timeout
from drfemu.protocols.spec import Gateway, GradientUse, ProtocolSpec
from drfemu.schema.faults import BoundScenario, load_scenario
from drfemu.schema.params import RunParams, run_params
from drfemu.schema.result import Echo, Identity, Section, Setup, extension_echoes
from drfemu.schema.workload import Workload

__all__ = ["ActorIds", "RunConfig"]


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
    faults: BoundScenario | None = field(init=False, repr=False, compare=False)
    """The run's fault scenario, read and checked against the run (None without one)."""
    resilience: Timeouts = field(init=False, repr=False, compare=False)
    """The run's timeouts: resilience (timeouts, retries, acknowledged ends) is on in runs with
    faults (`docs/faults.md`), with timeouts from the latency model's bound; off otherwise."""
    reprobe: float = field(init=False, repr=False, compare=False)
    """Seconds a user waits for a proposal before asking the gateway again (probes; 0: never)."""

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
        object.__setattr__(self, "faults", self._checked())
        bound = parse_latency(self.params.latency, random.Random(0)).bound_us() / US_PER_S  # draws change no bound
        object.__setattr__(self, "resilience", self.timeouts(bound) if self.faults is not None else Timeouts())
        rule = self.spec.server_rule
        object.__setattr__(self, "reprobe", (rule.reprobe_ticks(self.params.values()) if rule is not None else 0)
                           * self.params.tick)

    @classmethod
    def build(cls, workload: Workload, **params: Any) -> RunConfig:
        """A config from parameters by name (validated; defaults fill the rest)."""
        return cls(workload, run_params(**params))

    @property
    def ids(self) -> ActorIds:
        return ActorIds.of(self.workload)

    def _checked(self) -> BoundScenario | None:
        """Checks that need the workload as well as the parameters; the run's fault scenario,
        read and checked against the run (None without one)."""
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
        return BoundScenario(scenario, positions)

    def timeouts(self, latency_bound: float) -> Timeouts:
        """The timeouts of a run whose one-way latency is at most `latency_bound` seconds
        (`protocols.resilience`; a home's walk may take one hop per server)."""
        params = self.params
        walk_hops = (params.walk_ttl or len(self.workload.servers)) if self.spec.gateway is Gateway.HOME else 0
        return Timeouts(retransmission_timeout(latency_bound, params.tick, walk_hops), prompt_timeout(latency_bound))

    def sections(self, latency: str) -> list[Section]:
        """The parts of the result that the config alone decides: what was run (`latency`: the
        latency model, described), where the workload came from, the parameters echoed."""
        params, workload = self.params, self.workload
        identity = Identity(protocol=params.protocol, machines=len(workload.servers), users=len(workload.users),
                            seed=params.seed, resources=list(workload.resources), tick_s=params.tick,
                            latency=latency, finite_tasks=workload.finite)
        return [identity, Setup(workload=dict(workload.source), distributed=self.spec.distributed),
                Echo.of(params, workload.finite)]

    def extension_echoes(self) -> dict[str, Any]:
        """The echoes of parameters that plug-ins declare (`Param.echo`)."""
        return extension_echoes(self.params)
