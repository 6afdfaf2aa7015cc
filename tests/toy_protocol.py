"""A protocol written as a contributor would: this one file and one `register` call.

`toy`: every `toy_every`-th tick a home server allocates for its lowest user, if idle.
"""

from __future__ import annotations

from drfemu.kernel.params import Kind, Param
from drfemu.protocols.registry import Gateway, ProtocolSpec, register
from drfemu.protocols.rule import Server, ServerRule


class ToyRule(ServerRule):
    PARAMS = (Param("toy_every", Kind.INT, 2, "toy: allocate every this many ticks.", ge=1, unit="ticks",
                    echo="toy_every"),)

    def __init__(self, toy_every: int = 2) -> None:
        self.every = toy_every
        self.ticks = 0
        self.allocated = 0

    def on_tick(self, server: Server, now: float) -> None:
        self.ticks += 1
        lowest = server.homes.lowest()
        if self.ticks % self.every == 0 and lowest is not None and lowest[1].idle():
            self.allocated += 1
            server.allocate(*lowest)

    def counters(self) -> dict[str, int]:
        return {"toy_allocations": self.allocated}


def register_toy() -> None:
    register(ProtocolSpec("toy", "allocate every few ticks", Gateway.HOME, server_rule=ToyRule))
