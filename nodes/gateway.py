"""The gateway: tells a user where to send its next task (SPEC §3).

Modes: `central` — always the central scheduler; `random` — a uniformly random server per
request (probes); `home` — the user's home server, drawn uniformly at random once at start
(DDRF, DGDRF, PDGDRF; several users may share a home).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from nodes.actor import Actor
from protocols.messages import ServerReply, ServerRequest, handles
from protocols.registry import Gateway as Mode

__all__ = ["Gateway", "draw_homes"]


def draw_homes(servers: Sequence[int], users: Sequence[int], rng: random.Random) -> dict[int, int]:
    """Each user's home: a uniformly random server, drawn in user order from `rng`."""
    uniform = rng.random
    return {user: servers[int(uniform() * len(servers))] for user in users}


class Gateway(Actor):
    __slots__ = ("mode", "central", "servers", "homes", "_random")

    def __init__(
        self,
        actor_id: int,
        mode: Mode | str,
        servers: Sequence[int],
        users: Sequence[int],
        rng: random.Random,
        central: int = -1,
    ) -> None:
        super().__init__(actor_id)
        self.mode = Mode(mode)
        if self.mode is Mode.CENTRAL and central < 0:
            raise ValueError("a central gateway needs the scheduler's address")
        self.central = central
        self.servers = list(servers)
        self._random = rng.random
        self.homes: dict[int, int] = {}
        if self.mode is Mode.HOME:
            self.homes = draw_homes(self.servers, users, rng)

    def _pick(self) -> int:
        return self.servers[int(self._random() * len(self.servers))]

    @handles(ServerRequest)
    def on_server_request(self, msg: ServerRequest, now: float) -> None:
        if self.mode is Mode.CENTRAL:
            server = self.central
        elif self.mode is Mode.RANDOM:
            server = self._pick()
        else:
            server = self.homes[msg.user]
        self.send(msg.user, ServerReply(server))
