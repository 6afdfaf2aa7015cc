"""Allocation protocols by name. A new protocol is one module (its rule, its messages, its
`ProtocolSpec`) plus one line in `BUILT_IN` — or, in a package of your own, one entry point of
the group `drfemu.protocols` naming its spec (`docs/api.md`).

Everything that lists protocols — the CLI's help and `drfemu protocols`, the run-parameter
schema, sweep validation, report styles, tests — reads `PROTOCOLS`, which knows every protocol
by name without importing it and imports a protocol's module the first time it is asked for
(`kernel.plugins.Registry`). A plug-in that cannot be loaded or registered is left out with one
`PluginWarning` naming it and why (`PROTOCOLS.errors` keeps the lines); the built-in protocols
and the other plug-ins work on.
"""

from __future__ import annotations

from drfemu.kernel.errors import PluginWarning
from drfemu.kernel.plugins import Registry, UnknownName
from drfemu.protocols.spec import Gateway, GradientUse, ProtocolSpec

__all__ = ["BUILT_IN", "ENTRY_POINTS", "PROTOCOLS", "Gateway", "GradientUse", "PluginWarning", "ProtocolSpec",
           "UnknownProtocol", "get_protocol", "register", "unregister"]

ENTRY_POINTS = "drfemu.protocols"
"""The entry-point group through which other packages add protocols."""

BUILT_IN = {
    "drf": "drfemu.protocols.drf:DRF",
    "drf-bestfit": "drfemu.protocols.drf:DRF_BESTFIT",
    "fifo": "drfemu.protocols.fifo:FIFO",
    "probe": "drfemu.protocols.probe:PROBE",
    "ddrf-random": "drfemu.protocols.ddrf:DDRF_RANDOM",
    "ddrf-gradient": "drfemu.protocols.ddrf:DDRF_GRADIENT",
    "dgdrf": "drfemu.protocols.dgdrf:DGDRF",
    "pdgdrf": "drfemu.protocols.pdgdrf:PDGDRF",
    "bdgdrf": "drfemu.protocols.bdgdrf:BDGDRF",
    "c-adrf": "drfemu.protocols.online_central:C_ADRF",
    "naive-adrf": "drfemu.protocols.online_central:NAIVE_ADRF",
    "wmmf": "drfemu.protocols.online_central:WMMF",
}
"""The built-in protocols, in the order every listing shows them: name -> `module:SPEC`."""

UnknownProtocol = UnknownName

PROTOCOLS: Registry[ProtocolSpec] = Registry("protocol", ProtocolSpec, ENTRY_POINTS, BUILT_IN)


def get_protocol(name: str) -> ProtocolSpec:
    """The protocol named `name` (imported on first use); `UnknownProtocol` lists the names."""
    return PROTOCOLS[name]


def register(spec: ProtocolSpec) -> ProtocolSpec:
    """Add a protocol to this process; its name must be new, and a parameter it declares must not
    clash with a differently declared parameter of the same name."""
    return PROTOCOLS.register(spec)


def unregister(name: str) -> None:
    """Remove a protocol registered in this process (tests that register one of their own)."""
    PROTOCOLS.unregister(name)
