"""Seed 002's online rules as central protocols of the emulator (`c-adrf`, `naive-adrf`, `wmmf`).

The order is the policy library's (`policies.online.order_key`): users by the
adaptive weight W_i(x_i) = β_i x_i^α of what their running tasks hold — the dominant share,
or for `wmmf` one resource's share — lowest first, ties to the lower user id (users of the
trace workloads are numbered in arrival order, seed 002's tie rule). x_i is counted by the
scheduler itself from its launches and the `TaskEnded` notices (it is the only allocator, so
this is exact); β = `D-max` reads the demand of the user's waiting task. Placement is first-fit.

- `c-adrf` (Algorithm 1): if the lowest user's task fits nowhere, nothing starts — freed
  resources cumulate until it fits;
- `naive-adrf`: a task that fits nowhere is skipped for the next user;
- `wmmf`: weighted max-min fairness on resource `--wmmf-resource` (0: CPU, 1: memory in the
  Google workloads), weight 1, or W_i when `--wmmf-weighted` (seed 002's G-CPU / G-Mem);
  skipping tasks that fit nowhere.

With the seed's literal β = 1 (`d-max`), W orders users as x does, so α changes nothing and
`naive-adrf` orders as `drf` does — from the scheduler's count instead of the users' reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from drfemu.kernel.params import Kind, Param
from drfemu.policies.online import ONLINE_BETAS, order_key
from drfemu.protocols.central import PER_TICK, PendingTask
from drfemu.protocols.cluster import ClusterView
from drfemu.protocols.spec import Gateway, ProtocolSpec

__all__ = ["C_ADRF", "NAIVE_ADRF", "WMMF", "CAdrf", "NaiveAdrf", "Wmmf"]

ADRF_ALPHA = Param("adrf_alpha", Kind.FLOAT, 1.0, "Online rules: α of the weight W_i(x) = β_i x^α.", gt=0, le=100,
                   echo="adrf_alpha")
ADRF_BETA = Param("adrf_beta", Kind.TEXT, "d-max", "Online rules: β_i of W_i — d-max (1, seed 002 as written) or "
                  "D-max (the dominant share of the user's waiting task).", choices=ONLINE_BETAS, echo="adrf_beta")
WMMF_RESOURCE = Param("wmmf_resource", Kind.INT, 0, "wmmf: the resource (index in the workload's list) whose share "
                      "orders users.", ge=0, le=1000, echo="wmmf_resource")
WMMF_WEIGHTED = Param("wmmf_weighted", Kind.BOOL, False, "wmmf: order by W_i of the share (seed 002's G-CPU / G-Mem) "
                      "instead of the share.", echo="wmmf_weighted")


class _OnlineRule:
    RULE: ClassVar[str]
    BLOCKING: ClassVar[bool] = False
    PARAMS: ClassVar[tuple[Param, ...]] = (PER_TICK, ADRF_ALPHA, ADRF_BETA)

    def __init__(self, adrf_alpha: float = 1.0, adrf_beta: str = "d-max") -> None:
        self.alpha, self.beta = adrf_alpha, adrf_beta
        self.rule = self.RULE  # `order_key`'s name of the order
        self.resource: int | None = None
        self._waiting_for: int | None = None

    def check_resources(self, resources: int) -> None:
        """Raise ValueError when the rule cannot run on a workload of `resources` resources."""

    def choose(self, pending: Sequence[PendingTask], cluster: ClusterView) -> tuple[PendingTask, int] | None:
        total = [1.0 / k if k > 0 else 0.0 for k in cluster.scale]
        zero = (0.0,) * len(total)

        def key(task: PendingTask) -> tuple[float, int]:
            return order_key(self.rule, task.held or zero, total, task.demand, self.alpha, self.beta,
                             self.resource), task.user

        self._waiting_for = None
        for task in sorted(pending, key=key):
            server = cluster.first_fit(task.demand, key=task.user)
            if server >= 0:
                return task, server
            if self.BLOCKING:
                self._waiting_for = task.user
                return None
        return None

    def waiting_for(self) -> int | None:
        return self._waiting_for


class CAdrf(_OnlineRule):
    """C-ADRF (seed 002 Algorithm 1): the lowest user's task, or nothing until it fits."""

    RULE = "c-adrf"
    BLOCKING = True


class NaiveAdrf(_OnlineRule):
    """Naive ADRF: the lowest user whose task fits."""

    RULE = "naive-adrf"


class Wmmf(_OnlineRule):
    """Weighted max-min fairness on one resource's share."""

    RULE = "cpu"

    PARAMS = (PER_TICK, ADRF_ALPHA, ADRF_BETA, WMMF_RESOURCE, WMMF_WEIGHTED)

    def __init__(self, adrf_alpha: float = 1.0, adrf_beta: str = "d-max", wmmf_resource: int = 0,
                 wmmf_weighted: bool = False) -> None:
        super().__init__(adrf_alpha, adrf_beta)
        self.rule = "g-cpu" if wmmf_weighted else "cpu"  # one resource's share; which one is `resource`
        self.resource = wmmf_resource

    def check_resources(self, resources: int) -> None:
        if self.resource is not None and self.resource >= resources:
            raise ValueError(f"--wmmf-resource {self.resource} names no resource (the workload has {resources})")


C_ADRF = ProtocolSpec("c-adrf", "central C-ADRF (seed 002 Algorithm 1): the lowest adaptive share, waiting until "
                      "its task fits", Gateway.CENTRAL, central_rule=CAdrf)
NAIVE_ADRF = ProtocolSpec("naive-adrf", "central naive ADRF: the lowest adaptive share whose task fits",
                          Gateway.CENTRAL, central_rule=NaiveAdrf)
WMMF = ProtocolSpec("wmmf", "central weighted max-min fairness on one resource's share", Gateway.CENTRAL,
                    central_rule=Wmmf)
