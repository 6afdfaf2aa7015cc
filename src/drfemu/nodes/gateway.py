"""The gateway: tells a user where to send its next task (SPEC §3).

Modes: `central` — always the central scheduler; `random` — a uniformly random server per
request (probes); `home` — the user's home server, drawn uniformly at random once at start
(DDRF, DGDRF, PDGDRF; several users may share a home).

Crashes (issue 16): the failure detector tells the gateway which servers are down
(`PeerDown`, `PeerUp`). It never names a server that is down: a random pick is drawn among
the live ones, and the users homed on a crashed server are re-homed at once, each on a
uniformly random live server (drawn in user order), where their next request carries their
`G_i`. It is also the overlay's bootstrap service for a server whose Cyclon view emptied
(`JoinRequest`): it names that many live servers, drawn uniformly. Decision: the home table is the gateway's durable configuration — a gateway that
crashes loses the messages sent to it while down, not the table (`rejoin`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from drfemu.kernel.messages import PeerDown, PeerUp, ServerReply, ServerRequest, handles
from drfemu.nodes.actor import Actor
from drfemu.overlay.messages import JoinReply, JoinRequest
from drfemu.protocols.registry import Gateway as Mode

__all__ = ["Gateway", "draw_homes"]


def draw_homes(servers: Sequence[int], users: Sequence[int], rng: random.Random) -> dict[int, int]:
    """Each user's home: a uniformly random server, drawn in user order from `rng`."""
    uniform = rng.random
    return {user: servers[int(uniform() * len(servers))] for user in users}


class Gateway(Actor):
    __slots__ = ("mode", "central", "servers", "homes", "live", "_rng", "_random")

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
        self.live = list(servers)  # the servers not known to be down, in order
        self._rng = rng
        self._random = rng.random
        self.homes: dict[int, int] = {}
        if self.mode is Mode.HOME:
            self.homes = draw_homes(self.servers, users, rng)

    def _pick(self) -> int:
        live = self.live or self.servers  # with every server down, any (the user asks again)
        return live[int(self._random() * len(live))]

    @handles(ServerRequest)
    def on_server_request(self, msg: ServerRequest, now: float) -> None:
        if self.mode is Mode.CENTRAL:
            server = self.central
        elif self.mode is Mode.RANDOM:
            server = self._pick()
        else:
            server = self.homes[msg.user]
        self.send(msg.user, ServerReply(server))

    @handles(PeerDown)
    def on_peer_down(self, msg: PeerDown, now: float) -> None:
        if msg.peer not in self.live:
            return  # not a server, or already known to be down
        self.live.remove(msg.peer)
        if self.mode is Mode.HOME and self.live:
            for user in sorted(u for u, home in self.homes.items() if home == msg.peer):
                self.homes[user] = self._pick()

    @handles(PeerUp)
    def on_peer_up(self, msg: PeerUp, now: float) -> None:
        if msg.peer in self.servers and msg.peer not in self.live:
            self.live = [s for s in self.servers if s in self.live or s == msg.peer]

    @handles(JoinRequest)
    def on_join_request(self, msg: JoinRequest, now: float) -> None:
        others = [s for s in self.live if s != msg.sender]
        self.send(msg.sender, JoinReply(tuple(self._rng.sample(others, min(msg.size, len(others))))))

    def rejoin(self, down: Sequence[int]) -> None:
        """Restart after a crash knowing which servers are down now (the failure detector's
        membership); users homed on a server that went down meanwhile are re-homed."""
        for server in sorted(set(self.servers) - set(self.live) - set(down)):
            self.on_peer_up(PeerUp(server), 0.0)
        for server in sorted(down):
            self.on_peer_down(PeerDown(server), 0.0)
