"""Allocation protocols by name. A new protocol is one module plus one `_register` line.

`gateway` says how the gateway answers a user's request for a server (SPEC §3):
`central` (the central scheduler), `random` (a uniformly random server per task) or `home`
(the user's fixed home server, drawn uniformly at random at start).

A central protocol names its `central_rule`; a distributed one its `server` role (an
`AllocatingServer` subclass) and how it uses the gradient overlay: `off` (a fixed random
neighbour graph of out-degree `P`), `frozen` (the gradient runs until converged at start and
its views become the fixed neighbour sets) or `live` (the gradient runs all the time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from protocols.central import CentralRule
from protocols.ddrf import DdrfServer
from protocols.dgdrf import DgdrfServer
from protocols.drf import DrfBestFit, DrfFirstFit
from protocols.fifo import Fifo
from protocols.pdgdrf import PdgdrfServer
from protocols.probe import ProbeServer

__all__ = ["PROTOCOLS", "ProtocolSpec", "UnknownProtocol", "get_protocol"]


@dataclass(frozen=True, slots=True)
class ProtocolSpec:
    name: str
    summary: str
    gateway: str
    central_rule: Callable[[], CentralRule] | None = None
    server: type | None = None
    gradient: str = "off"

    @property
    def distributed(self) -> bool:
        return self.server is not None


class UnknownProtocol(ValueError):
    """No protocol is registered under that name."""


PROTOCOLS: dict[str, ProtocolSpec] = {}


def _register(spec: ProtocolSpec) -> None:
    PROTOCOLS[spec.name] = spec


_register(ProtocolSpec("drf", "central DRF, first-fit placement", "central", DrfFirstFit))
_register(ProtocolSpec("drf-bestfit", "central DRF, DRFH best-fit placement", "central", DrfBestFit))
_register(ProtocolSpec("fifo", "central FIFO, first-fit placement", "central", Fifo))
_register(ProtocolSpec("probe", "Sparrow-like probes to the d least-loaded of P random neighbours", "random",
                       server=ProbeServer))
_register(ProtocolSpec("ddrf-random", "DDRF over P fixed random neighbours", "home", server=DdrfServer))
_register(ProtocolSpec("ddrf-gradient", "DDRF over the gradient's views, frozen once converged", "home",
                       server=DdrfServer, gradient="frozen"))
_register(ProtocolSpec("dgdrf", "the validated gradient centre allocates", "home", server=DgdrfServer,
                       gradient="live"))
_register(ProtocolSpec("pdgdrf", "the gradient centre, and any server whose allocation lowers the local Gini",
                       "home", server=PdgdrfServer, gradient="live"))


def get_protocol(name: str) -> ProtocolSpec:
    try:
        return PROTOCOLS[name]
    except KeyError:
        known = ", ".join(PROTOCOLS)
        raise UnknownProtocol(f"unknown protocol {name!r}; choose one of: {known}") from None
