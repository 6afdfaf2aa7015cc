"""The emulated network: delivery after a latency (`kernel.latency`), message loss, and traffic
accounting.

Byte sizes follow the thesis's cost model (eq. 4.3–4.6, `kernel.messages.CostModel`): a message
costs `numbers × number_bytes + addresses × address_bytes + overhead_bytes`. Every message class
has its payload as `WIRE = (numbers, addresses, field, numbers_per_item, addresses_per_item,
...)`, derived from its fields' annotations (`kernel.messages`), one triple per tuple field
(descriptors, a demand vector, a walk's visited servers). The network then only sums the
lengths of those tuples, in C, per batch of one type.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from drfemu.kernel.compiled import compiled_module
from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import ConstantLatency, LatencyModel
from drfemu.kernel.messages import CostModel

__all__ = ["CostModel", "Network", "TrafficTally"]  # CostModel: declared in kernel.messages

_message_of = itemgetter(1)


def count_types_python(out: list[tuple[int, Any]]) -> dict[type, int]:
    """How many messages of each type the `(dst, msg)` pairs of `out` carry, types in the order
    of their first message. The reference for `src/native/_engine.c`'s `count_types`."""
    return dict(Counter(map(type, map(_message_of, out))))


def count_items_python(out: list[tuple[int, Any]], cls: type, field: str) -> int:
    """The items the messages of type `cls` in `out` carry in their sequence `field`, summed.
    The reference for `src/native/_engine.c`'s `count_items`."""
    return sum(len(getattr(msg, field)) for _, msg in out if msg.__class__ is cls)


if compiled_module("drfemu.nodes._engine") is not None:  # typed by its stub, `_engine.pyi`
    from drfemu.nodes._engine import count_items, count_types
else:
    count_types, count_items = count_types_python, count_items_python


@dataclass(frozen=True, slots=True)
class TrafficTally:
    """Traffic of one message type over a run."""

    sent: int
    dropped: int
    bytes: int


class Network:
    """Decides when (and whether) a message arrives, and counts what was sent.

    `count(out)` tallies a batch of `(dst, msg)` sends by message type. When every message
    takes the same time and none is lost, `fixed_us` is that latency (µs) and the runtime
    delivers a whole batch at one instant; otherwise it is -1 and the runtime asks
    `due(src, dst, msg, now_us)` per message, which returns the delivery instant in µs or
    -1 when the message is lost. Loss draws come from their own random stream, and only for
    messages whose loss probability is above 0, so a run without loss draws nothing.

    Faults (issue 16) change the network while it runs: the loss of every message, of a
    message type or of a directed link (`set_loss`; a link's loss wins over its type's, a
    type's over the overall one), the latency model (`set_latency`), islands cut off from
    everyone else (`isolate`, `heal`), and actors that are down (`set_down`): nothing reaches
    them or leaves them. Each drop is counted by type and by cause (`loss`, `partition`,
    `down`).
    """

    __slots__ = ("latency", "loss", "cost", "fixed_us", "_lose", "_sent", "_dropped", "_payload", "_variable",
                 "_base_latency", "_by_type", "_by_link", "_islands", "_down", "_faulty", "causes", "rows", "_carried",
                 "_on_change", "_plans")

    def __init__(
        self,
        latency: LatencyModel | None = None,
        loss: float = 0.0,
        loss_rng: random.Random | None = None,
        cost: CostModel | None = None,
    ) -> None:
        if not 0.0 <= loss < 1.0:
            raise InputError(f"loss probability must be in [0, 1), got {loss}")
        if loss > 0 and loss_rng is None:
            raise ValueError("a lossy network needs its own random stream")
        self.latency: LatencyModel = latency if latency is not None else ConstantLatency()
        self._base_latency = self.latency
        self.loss = loss
        self.cost = cost if cost is not None else CostModel()
        self._lose = loss_rng.random if loss_rng is not None else None
        self._sent: dict[type, int] = {}
        self._dropped: dict[type, int] = {}
        self._payload: dict[type, list[int]] = {}  # [numbers, addresses] carried in tuple fields
        self._variable: dict[type, list[tuple[str, int, int]]] = {}  # per type: (field, numbers, addresses) per item
        self._plans: dict[type, tuple[type, list[tuple[str, int, int]] | None]] = {}  # see `_plan`
        self._by_type: dict[type, float] = {}
        self._by_link: dict[tuple[int, int], float] = {}
        self._islands: dict[int, int] = {}  # actor -> island (absent: the mainland)
        self._down: set[int] = set()
        self.causes = {"loss": 0, "partition": 0, "down": 0}
        self._faulty = False
        self.fixed_us = -1
        self.rows: dict[type, type] = {}  # a lane's marks: mark class -> the message type it stands for
        self._carried: Callable[[type], int] | None = None
        self._on_change: Callable[[int], None] | None = None
        self._refresh()

    # -- faults ---------------------------------------------------------------------------
    def use_rows(self, stands_for: dict[type, type], carried: Callable[[type], int],
                 on_change: Callable[[int], None]) -> None:
        """Count a lane's marks as the messages they stand for (`stands_for`: mark class -> type),
        with `carried(type)` the items the rows of that type carried; call `on_change(fixed_us)`
        now and whenever the network changes (before a message is sent under the change)."""
        self.rows = dict(stands_for)
        self._plans.clear()
        self._carried = carried
        self._on_change = on_change
        on_change(self.fixed_us)

    def _refresh(self) -> None:
        self._faulty = bool(self._by_type or self._by_link or self._islands or self._down)
        constant = isinstance(self.latency, ConstantLatency) and self.loss == 0.0 and not self._faulty
        self.fixed_us = self.latency.us if constant else -1  # type: ignore[attr-defined]
        if self._on_change is not None:
            self._on_change(self.fixed_us)

    def _need_stream(self, p: float) -> None:
        if p > 0 and self._lose is None:
            raise ValueError("a lossy network needs its own random stream")

    def set_loss(self, p: float | None, message_type: type | None = None,
                 link: tuple[int, int] | None = None) -> float | None:
        """Set the loss of every message, of one type or of one directed link (p None: the
        type or link follows the overall loss again). Returns the value it replaces."""
        if p is not None and not 0.0 <= p < 1.0:
            raise InputError(f"loss probability must be in [0, 1), got {p}")
        self._need_stream(p or 0.0)
        if link is not None:
            before = self._by_link.pop(link, None)
            if p is not None:
                self._by_link[link] = p
        elif message_type is not None:
            before = self._by_type.pop(message_type, None)
            if p is not None:
                self._by_type[message_type] = p
        else:
            before, self.loss = self.loss, p or 0.0
        self._refresh()
        return before

    def set_latency(self, latency: LatencyModel | None) -> LatencyModel:
        """Use `latency` from now on (None: the run's own model again); returns the one replaced."""
        before, self.latency = self.latency, latency if latency is not None else self._base_latency
        self._refresh()
        return before

    def isolate(self, actors: list[int], island: int) -> None:
        """Cut `actors` off from every actor outside island `island` (≥ 1)."""
        for actor in actors:
            self._islands[actor] = island
        self._refresh()

    def heal(self, actors: list[int] | None = None) -> None:
        """`actors` (None: every island) rejoin the mainland."""
        if actors is None:
            self._islands.clear()
        else:
            for actor in actors:
                self._islands.pop(actor, None)
        self._refresh()

    def isolated(self) -> set[int]:
        """The actors on an island."""
        return set(self._islands)

    def island_of(self, actor: int) -> int:
        """The island `actor` is on (0: the mainland)."""
        return self._islands.get(actor, 0)

    def set_down(self, actor: int, down: bool) -> None:
        """Mark `actor` crashed (nothing reaches it or leaves it) or up again."""
        if down:
            self._down.add(actor)
        else:
            self._down.discard(actor)
        self._refresh()

    def is_down(self, actor: int) -> bool:
        return actor in self._down

    def drop(self, msg: Any, cause: str) -> None:
        """Count one message lost for `cause` (also used by the runtime for one that reached a
        node after it crashed)."""
        cls = msg.__class__
        self._dropped[cls] = self._dropped.get(cls, 0) + 1
        self.causes[cause] += 1

    def _fault(self, src: int, dst: int, msg: Any) -> str | None:
        down = self._down
        if down and (dst in down or src in down):
            return "down"
        islands = self._islands
        if islands and islands.get(src, 0) != islands.get(dst, 0):
            return "partition"
        p = self._by_link.get((src, dst)) if self._by_link else None
        if p is None:
            p = self._by_type.get(msg.__class__, self.loss) if self._by_type else self.loss
        if p > 0 and self._lose() < p:  # type: ignore[misc]
            return "loss"
        return None

    def count(self, out: list[tuple[int, Any]]) -> None:
        """Tally a batch of sends by message type (and items carried, for variable types)."""
        sent, plans = self._sent, self._plans
        one = out[0][1].__class__ if len(out) == 1 else None
        # one message of a type seen before (a live run's datagram, a walk's hop): no `count_types` dict
        for cls, count in ((one, 1),) if one in plans else count_types(out).items():
            plan = plans.get(cls) or self._plan(cls)
            sent[plan[0]] += count
            fields = plan[1]
            if fields is not None:
                payload = self._payload[cls]
                for field, numbers, addresses in fields:
                    items = count_items(out, cls, field)
                    payload[0] += numbers * items
                    payload[1] += addresses * items

    def _plan(self, cls: type) -> tuple[type, list[tuple[str, int, int]] | None]:
        """How `count` tallies an item of class `cls`: as which message type, and the tuple fields
        whose items it counts (None: none, or a lane's mark, whose items the lane counts)."""
        real = self.rows.get(cls, cls)
        if real not in self._sent:
            self._sent[real] = 0
            wire: tuple[Any, ...] = getattr(real, "WIRE")
            if len(wire) > 2:
                self._variable[real] = [(wire[k], wire[k + 1], wire[k + 2]) for k in range(2, len(wire), 3)]
                self._payload[real] = [0, 0]
        plan = self._plans[cls] = (real, self._variable.get(real) if real is cls else None)
        return plan

    def due(self, src: int, dst: int, msg: Any, now_us: int) -> int:
        """Delivery instant of one message in µs, or -1 when the network loses it."""
        if self._faulty:
            cause = self._fault(src, dst, msg)
            if cause is not None:
                self.drop(msg, cause)
                return -1
        elif self.loss > 0 and self._lose() < self.loss:  # type: ignore[misc]
            self.drop(msg, "loss")
            return -1
        return now_us + self.latency.latency_us(src, dst)

    @property
    def messages_sent(self) -> int:
        return sum(self._sent.values())

    @property
    def messages_dropped(self) -> int:
        return sum(self._dropped.values())

    def tally(self) -> dict[str, TrafficTally]:
        """Messages and bytes per message type name, sorted by name."""
        out: dict[str, TrafficTally] = {}
        for cls, count in self._sent.items():
            wire: tuple[Any, ...] = getattr(cls, "WIRE")
            numbers, addresses = wire[0] * count, wire[1] * count
            payload = self._payload.get(cls)
            if payload is not None:
                numbers += payload[0]
                addresses += payload[1]
            if self._carried is not None and cls in self.rows.values():
                (_, per_item_numbers, per_item_addresses), = self._variable[cls]  # one tuple field each
                items = self._carried(cls)
                numbers += per_item_numbers * items
                addresses += per_item_addresses * items
            out[cls.__name__] = TrafficTally(count, self._dropped.get(cls, 0), self.cost.bytes_of(count, numbers, addresses))
        return dict(sorted(out.items()))
