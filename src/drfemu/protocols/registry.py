"""Allocation protocols by name. A new protocol is one module plus one `register` call.

Everything that lists protocols — the CLI's help and `drfemu protocols`, the run-parameter
schema, sweep validation, report styles, tests — reads this registry.

Protocols of other packages: an installed distribution adds protocols through the entry-point
group `drfemu.protocols`, each entry naming a `ProtocolSpec` (the entry's name is the
protocol's). They are registered when this module is imported, after the built-in ones. A
plug-in that cannot be loaded or registered is left out with one `PluginWarning` naming it
and why (`PLUGIN_ERRORS` keeps them); the built-in protocols and the other plug-ins work on.

A protocol is either central (it names a `central_rule`: the central scheduler asks it once
a tick) or distributed (it names a `server_rule`, a `protocols.rule.ServerRule`: every
server runs one). `gateway` says how the gateway answers a user's request for a server
(SPEC §3); `gradient` how a distributed protocol uses the gradient overlay. A protocol's own
run parameters are its rule's `PARAMS`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from drfemu.protocols.bdgdrf import BdgdrfRule
from drfemu.protocols.central import CentralRule
from drfemu.protocols.ddrf import DdrfGradientRule, DdrfRule
from drfemu.protocols.dgdrf import DgdrfRule
from drfemu.protocols.drf import Drf, DrfBestFit
from drfemu.kernel.errors import InputError, PluginWarning
from drfemu.protocols.fifo import Fifo
from drfemu.kernel.messages import TaskRequest
from drfemu.protocols.online_central import CAdrf, NaiveAdrf, Wmmf
from drfemu.kernel.params import Param
from drfemu.protocols.pdgdrf import PdgdrfRule
from drfemu.protocols.probe import ProbeRule
from drfemu.protocols.rule import ServerRule

__all__ = ["ENTRY_POINTS", "PLUGIN_ERRORS", "PROTOCOLS", "Gateway", "GradientUse", "PluginWarning", "ProtocolSpec",
           "UnknownProtocol", "get_protocol", "load_plugins", "register", "unregister"]

ENTRY_POINTS = "drfemu.protocols"
"""The entry-point group through which other packages add protocols."""


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
    name: str
    summary: str
    gateway: Gateway
    central_rule: Callable[[], CentralRule] | None = None
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
    def params(self) -> tuple[Param, ...]:
        """The protocol's own run parameters."""
        rule = self.server_rule if self.server_rule is not None else self.central_rule
        return tuple(getattr(rule, "PARAMS", ()))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "gateway": self.gateway.value,
                "distributed": self.distributed, "gradient": self.gradient.value}


class UnknownProtocol(InputError):
    """No protocol is registered under that name."""


PROTOCOLS: dict[str, ProtocolSpec] = {}


def register(spec: ProtocolSpec) -> ProtocolSpec:
    """Add a protocol; its name must be new, and a parameter it declares must not clash with a
    differently declared parameter of the same name."""
    if spec.name in PROTOCOLS:
        raise ValueError(f"protocol {spec.name!r} is registered already")
    for param in spec.params:
        for other in PROTOCOLS.values():
            for theirs in other.params:
                if theirs.name == param.name and theirs != param:
                    raise ValueError(f"protocol {spec.name!r}: parameter {param.name!r} is declared differently by "
                                     f"{other.name!r}")
    PROTOCOLS[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a protocol (tests that register one of their own)."""
    del PROTOCOLS[name]


def get_protocol(name: str) -> ProtocolSpec:
    try:
        return PROTOCOLS[name]
    except KeyError:
        known = ", ".join(PROTOCOLS)
        raise UnknownProtocol(f"unknown protocol {name!r}; choose one of: {known}") from None


register(ProtocolSpec("drf", "central DRF, first-fit placement (--placement: best-fit, min-fragmentation)",
                      Gateway.CENTRAL, central_rule=Drf))
register(ProtocolSpec("drf-bestfit", "central DRF, DRFH best-fit placement", Gateway.CENTRAL, central_rule=DrfBestFit))
register(ProtocolSpec("fifo", "central FIFO, first-fit placement", Gateway.CENTRAL, central_rule=Fifo))
register(ProtocolSpec("probe", "Sparrow-like probes to the d least-loaded of P random neighbours", Gateway.RANDOM,
                      server_rule=ProbeRule))
register(ProtocolSpec("ddrf-random", "DDRF over P fixed random neighbours", Gateway.HOME, server_rule=DdrfRule))
register(ProtocolSpec("ddrf-gradient", "DDRF over each server's gradient view, frozen once it settles", Gateway.HOME,
                      server_rule=DdrfGradientRule, gradient=GradientUse.FROZEN))
register(ProtocolSpec("dgdrf", "the validated gradient centre allocates", Gateway.HOME, server_rule=DgdrfRule,
                      gradient=GradientUse.LIVE))
register(ProtocolSpec("pdgdrf", "the gradient centre, and any server whose allocation lowers the local Gini",
                      Gateway.HOME, server_rule=PdgdrfRule, gradient=GradientUse.LIVE))
register(ProtocolSpec("bdgdrf", "every home that sees the gradient's top allocates for its users within a band of the "
                      "minimum share", Gateway.HOME, server_rule=BdgdrfRule, gradient=GradientUse.LIVE))
register(ProtocolSpec("c-adrf", "central C-ADRF (seed 002 Algorithm 1): the lowest adaptive share, waiting until its "
                      "task fits", Gateway.CENTRAL, central_rule=CAdrf))
register(ProtocolSpec("naive-adrf", "central naive ADRF: the lowest adaptive share whose task fits", Gateway.CENTRAL,
                      central_rule=NaiveAdrf))
register(ProtocolSpec("wmmf", "central weighted max-min fairness on one resource's share", Gateway.CENTRAL,
                      central_rule=Wmmf))


PLUGIN_ERRORS: list[str] = []
"""One line per plug-in that was left out, in the order they were tried."""


def _load_plugin(entry: EntryPoint) -> None:
    where = f"protocol plug-in {entry.name!r} ({entry.value}"
    where += f", from {entry.dist.name})" if entry.dist is not None else ")"
    try:
        spec = entry.load()
        if not isinstance(spec, ProtocolSpec):
            raise TypeError(f"it names a {type(spec).__name__}, not a drfemu ProtocolSpec")
        if spec.name != entry.name:
            raise ValueError(f"its entry point is named {entry.name!r} but its protocol {spec.name!r}")
        register(spec)
    except Exception as error:  # noqa: BLE001 - a broken plug-in must not take the built-in protocols down
        message = f"{where} left out: {type(error).__name__}: {' '.join(str(error).split())}"  # one line
        PLUGIN_ERRORS.append(message)
        warnings.warn(message, PluginWarning, stacklevel=2)


def load_plugins() -> None:
    """Register the protocols that installed packages declare (`ENTRY_POINTS`), by entry-point
    name order; called once, on import."""
    for entry in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        _load_plugin(entry)


load_plugins()
