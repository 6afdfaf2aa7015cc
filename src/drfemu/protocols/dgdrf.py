"""DGDRF (thesis §3.3, §3.3.1, §4.4; SPEC §4 `dgdrf`).

The gradient runs all the time with each server's utility at eq. 4.2. Each tick a server
whose lowest user has a task waiting, and that sees no neighbour above itself (eq. 3.11),
validates: it sends its lowest neighbour `p` the set `(view \\ {p}) ∪ {self}`, and `p`
acknowledges iff that set equals its own view. On the acknowledgement — if the server still
believes it is the centre and the user's task is still waiting — it allocates for its lowest
user, placing the task locally or by a walk.

Decisions: `p` stays silent when the sets differ (no negative acknowledgement; the centre
simply tries again next tick); each check carries a number so that a late acknowledgement
of an earlier check is ignored; a server whose lowest user's task is out being placed does
not validate (its utility still shows that user's old share, so it stays the centre until
the user's next task reports the new share — this keeps a second server from allocating
while the first allocation is in flight). A server with an empty view (one server alone)
allocates without validating. Centre ties (`protocols.centre`): `id` by default, so a
single centre validates; with `strict` every home tied at the top validates and may allocate.
"""

from __future__ import annotations

from drfemu.kernel.messages import Address, Addresses, handles, message
from drfemu.protocols.centre import CENTRE_TIES, CentreTies, is_centre
from drfemu.protocols.rule import Server, ServerRule
from drfemu.protocols.spec import Gateway, GradientUse, ProtocolSpec

__all__ = ["DGDRF", "CentreAck", "CentreCheck", "DgdrfRule"]


@message
class CentreCheck:
    """A server that believes it is the centre asks its lowest neighbour to confirm `members`."""

    sender: Address
    check: int
    members: Addresses


@message
class CentreAck:
    """The lowest neighbour's view equals the proposed set: the sender may allocate."""

    sender: Address
    check: int


class DgdrfRule(ServerRule):
    """A DGDRF server's rule."""

    PARAMS = (CENTRE_TIES,)
    ROUND_TRIP_WITHIN_TICK = True  # each tick's check replaces the last: a later acknowledgement never counts

    __slots__ = ("checks", "ties", "_awaiting")

    def __init__(self, centre_ties: str = CentreTies.ID) -> None:
        self.checks = 0  # validations started
        self.ties = CentreTies(centre_ties)
        self._awaiting = -1  # the number of the check whose acknowledgement would count

    def counters(self) -> dict[str, int]:
        return {"centre_checks": self.checks}

    def on_tick(self, server: Server, now: float) -> None:
        lowest = server.homes.lowest()
        gradient = server.gradient
        if lowest is None or not lowest[1].idle() or not is_centre(gradient, self.ties):
            return
        if not gradient.view:
            server.allocate(*lowest)
            return
        p, members = gradient.validation_set()
        self.checks += 1
        self._awaiting = self.checks
        server.send(p, CentreCheck(server.id, self.checks, tuple(sorted(members))))

    @handles(CentreCheck)
    def on_centre_check(self, server: Server, msg: CentreCheck, now: float) -> None:
        if server.gradient.acknowledges(frozenset(msg.members)):
            server.send(msg.sender, CentreAck(server.id, msg.check))

    @handles(CentreAck)
    def on_centre_ack(self, server: Server, msg: CentreAck, now: float) -> None:
        if msg.check != self._awaiting:
            return
        self._awaiting = -1
        lowest = server.homes.lowest()
        if lowest is not None and lowest[1].idle() and is_centre(server.gradient, self.ties):
            server.allocate(*lowest)


DGDRF = ProtocolSpec("dgdrf", "the validated gradient centre allocates", Gateway.HOME, server_rule=DgdrfRule,
                     gradient=GradientUse.LIVE)
