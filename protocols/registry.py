"""Allocation protocols by name. A new protocol is one module plus one `_register` line.

`gateway` says how the gateway answers a user's request for a server (SPEC §3):
`central` (the central scheduler), `random` (a uniformly random server per task) or `home`
(the user's fixed home server, drawn uniformly at random at start).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from protocols.central import CentralRule
from protocols.drf import DrfBestFit, DrfFirstFit
from protocols.fifo import Fifo

__all__ = ["PROTOCOLS", "ProtocolSpec", "UnknownProtocol", "get_protocol"]


@dataclass(frozen=True, slots=True)
class ProtocolSpec:
    name: str
    summary: str
    gateway: str
    central_rule: Callable[[], CentralRule] | None = None


class UnknownProtocol(ValueError):
    """No protocol is registered under that name."""


PROTOCOLS: dict[str, ProtocolSpec] = {}


def _register(spec: ProtocolSpec) -> None:
    PROTOCOLS[spec.name] = spec


_register(ProtocolSpec("drf", "central DRF, first-fit placement", "central", DrfFirstFit))
_register(ProtocolSpec("drf-bestfit", "central DRF, DRFH best-fit placement", "central", DrfBestFit))
_register(ProtocolSpec("fifo", "central FIFO, first-fit placement", "central", Fifo))


def get_protocol(name: str) -> ProtocolSpec:
    try:
        return PROTOCOLS[name]
    except KeyError:
        known = ", ".join(PROTOCOLS)
        raise UnknownProtocol(f"unknown protocol {name!r}; choose one of: {known}") from None
