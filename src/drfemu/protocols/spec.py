"""What a protocol is, for the registry: its name, how the gateway answers, its rule, its use of
the gradient (SPEC §3–4). A protocol's own run parameters are its rule's `PARAMS`.

A protocol is either central (it names a `central_rule`: the central scheduler asks it once a
tick) or distributed (it names a `server_rule`, a `protocols.rule.ServerRule`: every server runs
one). `gateway` says how the gateway answers a user's request for a server (SPEC §3); `gradient`
how a distributed protocol uses the gradient overlay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from drfemu.kernel.messages import TaskRequest
from drfemu.kernel.params import Param, params_of
from drfemu.protocols.central import CentralRule
from drfemu.protocols.rule import ServerRule

__all__ = ["Gateway", "GradientUse", "ProtocolSpec"]


class Gateway(StrEnum):
    """How the gateway answers a user's request for a server."""

    CENTRAL = "central"  # always the central scheduler
    RANDOM = "random"  # a uniformly random server per task (the server's rule handles TaskRequest)
    HOME = "home"  # the user's home server, drawn uniformly at random at start


class GradientUse(StrEnum):
    """How a distributed protocol uses the gradient overlay."""

    OFF = "off"  # fixed random neighbour sets of out-degree P; no gradient exchanges
    FROZEN = "frozen"  # the gradient runs until each server freezes its view into its neighbour set
    LIVE = "live"  # the gradient runs all the time


@dataclass(frozen=True, slots=True)
class ProtocolSpec:
    """One protocol: what the registry lists and a run is built from."""

    name: str
    summary: str
    gateway: Gateway
    central_rule: Callable[..., CentralRule] | None = None
    server_rule: type[ServerRule] | None = None
    gradient: GradientUse = GradientUse.OFF

    def __post_init__(self) -> None:
        object.__setattr__(self, "gateway", Gateway(self.gateway))
        object.__setattr__(self, "gradient", GradientUse(self.gradient))
        if (self.central_rule is None) == (self.server_rule is None):
            raise ValueError(f"protocol {self.name!r}: give exactly one of central_rule and server_rule")
        if (self.gateway is Gateway.CENTRAL) != (self.central_rule is not None):
            raise ValueError(f"protocol {self.name!r}: the central gateway goes with a central rule, and only with one")
        if self.central_rule is not None and self.gradient is not GradientUse.OFF:
            raise ValueError(f"protocol {self.name!r}: a central protocol runs no gradient")
        if self.gateway is Gateway.RANDOM and TaskRequest not in self.server_rule.HANDLERS:  # type: ignore[union-attr]
            raise ValueError(f"protocol {self.name!r}: with the random gateway tasks arrive at any server, "
                             "so its rule must handle TaskRequest")

    @property
    def distributed(self) -> bool:
        return self.server_rule is not None

    @property
    def rule(self) -> Any:
        """The rule class (or factory) a run builds, central or per server."""
        return self.server_rule if self.server_rule is not None else self.central_rule

    @property
    def params(self) -> tuple[Param, ...]:
        """The protocol's own run parameters."""
        return params_of(getattr(self.rule, "PARAMS", ()))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "gateway": self.gateway.value,
                "distributed": self.distributed, "gradient": self.gradient.value}
