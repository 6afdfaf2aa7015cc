"""Distributed allocation rules: the strategy a server node calls (SPEC §4).

A central protocol is a `CentralRule` the central scheduler asks once a tick. A distributed
protocol is a `ServerRule`: one instance per server, holding that server's protocol state
and deciding, given `now` and an input (a tick, or a message of the protocol's own), what to
do — through the narrow `Server` interface of its node: send a message, propose or place a
task, allocate for a homed user, fix the neighbour set. The node role (`nodes.server`) owns
capacity, reservations, walks, saturation retries, timers and the overlays; the rule owns
the decision. A rule reads nothing else: no clock, no other node, no global state.

A rule declares
- `PARAMS`: run parameters of its own (`kernel.params.Param`); the CLI, sweep configs and
  docs learn them from the registry, and the rule is built with their values as keywords;
- `DEFAULTS`: its own defaults for parameters it shares with other protocols (e.g. PDGDRF's
  `centre_ties = "strict"`, where DGDRF keeps the declared `"id"`);
- `DEVICE_DEFAULTS`: its defaults, over those, for runs that model a resource as devices
  (`--devices`; e.g. BDGDRF's band cap once the home is full); a value given still wins;
- `TICKS_ALL`: whether every server ticks, or only those with homed users; a server that ticks
  but whose next tick would do nothing may say so (`server.idle_tick = True`, cleared when work
  arrives) and the engine skips its ticks meanwhile (BDGDRF's servers with no user homed, between
  rumours);
- `ROUND_TRIP_WITHIN_TICK`: whether the rule needs an answer within the tick it asked in (a
  fault scenario whose latency can make a round trip longer is refused for it);
- `STRANDS`: whether a task can wait for ever on servers where it does not fit while another
  has room (so a run with endless tasks may end as stalled whatever the faults or the seed);
- handlers: methods `(self, server, msg, now)` marked with `kernel.messages.handles`;
- `POLLS`: the polls whose messages the engine handles for it (`protocols.polls`): the requests
  it answers with what it publishes, and the replies it records in a table;
- `NODE_TICK`: optionally, where its `on_tick` is compiled, what makes its server class's `on_tick`
  (given the class, the method), which must do what the node's own does — `self.rule.on_tick(self,
  now)`, with the rule's method run in C while it is the one compiled (the probe's);
- `counters()`: its figures, summed over servers into the result's `overlay` section;
- optionally `check_params(values)`, a static method that rejects combinations of run
  parameters it cannot run with (`ValueError`, one line naming the options);
- `reprobe_ticks(values)`: how long its users wait for a proposal before sending a task
  again through the gateway (0, the default: never; the probe's `--probe-retry`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from drfemu.kernel.messages import collect_handlers
from drfemu.kernel.params import Param
from drfemu.kernel.resources import Vector
from drfemu.protocols.homes import HomeUser, HomeUsers

if TYPE_CHECKING:
    from drfemu.protocols.polls import Poll

__all__ = ["GradientView", "Server", "ServerRule"]


class GradientView(Protocol):
    """What a rule may read of its server's gradient overlay (`overlay.gradient.Gradient` or
    `overlay.kompics_gradient.KompicsGradient`)."""

    me: int  # this node's id
    size: int  # P, the most descriptors the view holds
    utility: float  # this node's own

    @property
    def view(self) -> Sequence[tuple[float, int, float]]: ...  # most preferred first; a list or a C store

    def believes_centre(self, strict: bool = False) -> bool: ...

    def members(self) -> frozenset[int]: ...

    def validation_set(self) -> tuple[int, frozenset[int]]: ...

    def acknowledges(self, proposed: frozenset[int]) -> bool: ...

    def descriptor(self, now: float) -> tuple[float, int, float]: ...

    def offer(self, descriptors: Iterable[tuple[float, int, float]]) -> None: ...


class Server(Protocol):
    """What a rule may use of its server node (`nodes.server.ServerNode`)."""

    id: int
    capacity: Vector
    free: list[float]
    neighbors: list[int]
    homes: HomeUsers
    gradient: GradientView
    idle_tick: bool  # set it while the rule's next `on_tick` on this server would do nothing (`nodes.actor.Actor`)
    room_version: int  # moves whenever anything `fits` reads changes: while it stands, `fits` answers as before

    def send(self, dst: int, msg: Any) -> None: ...

    def peers(self) -> list[int]: ...

    def stream(self, name: str) -> random.Random: ...

    def emit(self, event: Any) -> None: ...

    def fits(self, demand: Vector) -> bool: ...

    def smallest_task_share(self) -> float: ...

    def propose(self, user: int, task: int, demand: Vector) -> None: ...

    def allocate(self, user: int, record: HomeUser) -> None: ...

    def fix_neighbors(self, neighbors: Sequence[int], now: float) -> None: ...

    def thaw_neighbors(self) -> None: ...

    def republish(self) -> None: ...  # what the rule publishes may have changed (`protocols.polls`)


class ServerRule:
    """Base class of distributed rules; see the module docstring."""

    PARAMS: ClassVar[tuple[Param, ...]] = ()
    DEFAULTS: ClassVar[dict[str, Any]] = {}
    DEVICE_DEFAULTS: ClassVar[dict[str, Any]] = {}
    TICKS_ALL: ClassVar[bool] = False
    ROUND_TRIP_WITHIN_TICK: ClassVar[bool] = False
    STRANDS: ClassVar[bool] = False
    HANDLERS: ClassVar[dict[type, Callable[..., None]]] = {}
    POLLS: ClassVar[tuple[Poll, ...]] = ()
    NODE_TICK: ClassVar[Callable[[type], Any] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.HANDLERS = collect_handlers(cls)

    @staticmethod
    def reprobe_ticks(values: Mapping[str, Any]) -> int:
        """Ticks a user of this protocol waits for a proposal before it sends its task again
        through the gateway (from the run's parameter `values`; 0: it never does)."""
        return 0

    def start(self, server: Server) -> None:
        """Called once the server is built and its neighbours are set, before the run."""

    def on_tick(self, server: Server, now: float) -> None:
        """The allocation tick."""

    def on_utility(self, server: Server, now: float) -> None:
        """The server's utility (eq. 4.2) just changed: a homed user reported a new share or was
        marked saturated."""

    def on_peer_down(self, server: Server, peer: int) -> None:
        """The failure detector says `peer` crashed: forget what it told this rule (issue 16)."""

    def counters(self) -> dict[str, int]:
        """This server's protocol figures (summed over servers after the run)."""
        return {}
