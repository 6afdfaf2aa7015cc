"""Messages: frozen, slotted dataclasses, declared with `@message`.

`@message` is `dataclass(frozen=True, slots=True)` with a faster `__init__`: the generated
frozen `__init__` assigns every field through `object.__setattr__` (≈110 ns a field on
CPython 3.11); ours assigns through the slots' own descriptors, which skips the frozen
`__setattr__` guard (measured: 593 → 343 ns for five fields). Instances stay immutable,
hashable and comparable exactly as dataclasses make them. Field defaults are supported;
`default_factory` is not (messages carry tuples, not mutable containers).

A message's size on the wire (the thesis's cost model, eq. 4.3–4.6: numbers, addresses and a
per-message overhead, `CostModel`) derives from its fields' annotations: an `Address` (an
actor's address) costs one address, any other int, float or bool one number; a tuple costs per
item — `Addresses` one address each, a tuple of numbers one number each — and a field whose
items are records says what one item costs (`Annotated[..., Wire(numbers, addresses,
per_item=True)]`). `@message` sums them into the class's `WIRE = (numbers, addresses, field,
numbers_per_item, addresses_per_item, …)`, one triple per tuple field, which the network counts
by. A class with a field of another type (a test's `str`) gives its `WIRE` itself.

The handshake of thesis Algorithm 3 (SPEC §3), used by every protocol:

    user ──ServerRequest──▶ gateway ──ServerReply──▶ user
    user ──TaskRequest──▶ allocator (central scheduler or resource node)
    allocator ──Proposal──▶ user ──Accept / Decline──▶ allocator
    (central only) scheduler ──Launch──▶ resource node
    resource node ──TaskStarted──▶ user

Tasks that end (finite workloads, `docs/workloads.md`): the task's end reaches the server
running it as `TaskExit`, an input from its own machine (the emulation's environment delivers
it; it never crosses the network). The server frees the task's demand and tells the user —
and, in central protocols, the scheduler, whose view of the cluster must see the room — with
`TaskEnded`. A finite user whose share changed while a task of its waits at an allocator, or
that has just run out of tasks to submit, reports its `G_i` there with `UserShare`.

Distributed protocols add task placement (SPEC §4): an allocating server that has no room
sends the task on a walk (`WalkTask`, server to server); the server that finds room proposes
to the user itself; a walk out of hops reports `WalkFailed` to the task's home server.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, TypeVar, dataclass_transform

__all__ = [
    "MESSAGE_TYPES",
    "Address",
    "Addresses",
    "CostModel",
    "Wire",
    "Accept",
    "Decline",
    "EndAck",
    "Launch",
    "Proposal",
    "ServerReply",
    "RequestAck",
    "ServerRequest",
    "ShareAck",
    "TaskRequest",
    "TaskEnded",
    "TaskExit",
    "TaskStarted",
    "UserShare",
    "WalkAck",
    "WalkFailed",
    "WalkTask",
    "collect_handlers",
    "handles",
    "never_on_the_wire",
    "message",
]

C = TypeVar("C", bound=type)
F = TypeVar("F", bound=Callable[..., None])


def never_on_the_wire() -> frozenset[str]:
    """The registered message types that are inputs from a node's own machine or from the
    environment (a task's exit, the failure detector's notices): delivered into a mailbox,
    never sent over the network, so no network fault can touch them (`LOCAL = True`)."""
    return frozenset(name for name, cls in MESSAGE_TYPES.items() if getattr(cls, "LOCAL", False))


def handles(*message_types: type) -> Callable[[F], F]:
    """Mark a method as the handler of `message_types`.

    Node roles (`nodes.actor.Actor`) mark `(self, msg, now)` methods; distributed rules
    (`protocols.rule.ServerRule`) mark `(self, server, msg, now)` methods, which the server
    role dispatches to.
    """

    def mark(fn: F) -> F:
        fn.__handles__ = message_types  # type: ignore[attr-defined]
        return fn

    return mark


def collect_handlers(cls: type) -> dict[type, Callable[..., None]]:
    """The methods of `cls` and its bases marked with `handles`, by message type (a subclass's
    handler for a type overrides its base's).

    A class may also list handlers compiled in C, which carry no mark, in its own
    `COMPILED_HANDLERS` (message type -> method); they count as that class's own.
    """
    handlers: dict[type, Callable[..., None]] = {}
    for klass in reversed(cls.__mro__):
        for value in vars(klass).values():
            for message_type in getattr(value, "__handles__", ()):
                handlers[message_type] = value
        handlers.update(vars(klass).get("COMPILED_HANDLERS", {}))
    return handlers


@dataclass(frozen=True, slots=True)
class Wire:
    """What a field costs on the wire: `numbers` and `addresses` for the value, or for each item of
    a tuple (`per_item`)."""

    numbers: int
    addresses: int
    per_item: bool = False


Address = Annotated[int, Wire(0, 1)]
"""An actor's address (a user, a server, the sender): one address on the wire."""

Addresses = Annotated[tuple[int, ...], Wire(0, 1, per_item=True)]
"""Actors' addresses: one address each."""

@dataclass(frozen=True, slots=True)
class CostModel:
    """Bytes of one message = numbers·number_bytes + addresses·address_bytes + overhead.

    Decision (the thesis leaves `adr` and `overhead` symbolic): 8-byte numbers, 6-byte
    addresses (an IPv4 address and a port) and 28 bytes of overhead (IPv4 and UDP headers)."""

    number_bytes: int = 8
    address_bytes: int = 6
    overhead_bytes: int = 28

    def bytes_of(self, count: int, numbers: int, addresses: int) -> int:
        return numbers * self.number_bytes + addresses * self.address_bytes + count * self.overhead_bytes

    def message_bytes(self, cls: type, count: int, items: int = 0) -> int:
        """Bytes of `count` messages of type `cls` carrying `items` items in all in each of their
        tuple fields (a message type with one such field, as the overlays' are)."""
        wire: tuple[Any, ...] = getattr(cls, "WIRE")
        numbers, addresses = wire[0] * count, wire[1] * count
        for k in range(2, len(wire), 3):
            numbers += wire[k + 1] * items
            addresses += wire[k + 2] * items
        return self.bytes_of(count, numbers, addresses)


_NUMBER = Wire(1, 0)
_NUMBERS = Wire(1, 0, per_item=True)


def _field_cost(annotation: Any) -> Wire | None:
    """A field's cost from its annotation (None: no rule says; the class must give `WIRE`)."""
    if typing.get_origin(annotation) is Annotated:
        marks = [m for m in typing.get_args(annotation)[1:] if isinstance(m, Wire)]
        if marks:
            return marks[0]
        annotation = typing.get_args(annotation)[0]
    if annotation in (int, float, bool):
        return _NUMBER
    if typing.get_origin(annotation) is tuple:
        items = typing.get_args(annotation)
        if len(items) == 2 and items[1] is Ellipsis and items[0] in (int, float, bool):
            return _NUMBERS
    return None


def _derived_wire(cls: type) -> tuple[Any, ...] | None:
    """`WIRE` summed from the annotations of `cls`'s fields (None if one field has no cost rule)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    numbers = addresses = 0
    items: list[Any] = []
    for name, annotation in hints.items():
        if typing.get_origin(annotation) is ClassVar:
            continue
        cost = _field_cost(annotation)
        if cost is None:
            return None
        if cost.per_item:
            items += [name, cost.numbers, cost.addresses]
        else:
            numbers += cost.numbers
            addresses += cost.addresses
    return (numbers, addresses, *items)


def _check_wire(cls: type) -> None:
    if "WIRE" not in vars(cls):
        derived = _derived_wire(cls)
        if derived is None:
            raise TypeError(f"{cls.__name__}: a field's wire cost has no rule (annotate it, or give WIRE)")
        cls.WIRE = derived  # type: ignore[attr-defined]
    wire = getattr(cls, "WIRE", None)
    ok = (isinstance(wire, tuple) and len(wire) >= 2 and (len(wire) - 2) % 3 == 0
          and all(isinstance(x, str) if k >= 2 and (k - 2) % 3 == 0 else isinstance(x, int)
                  for k, x in enumerate(wire)))
    if not ok:
        raise TypeError(f"{cls.__name__}: WIRE must be (numbers, addresses) followed by one "
                        "(field, numbers_per_item, addresses_per_item) triple per tuple field")


MESSAGE_TYPES: dict[str, type] = {}
"""Every message class by name, as `message` made it (fault scenarios name types by it)."""


@dataclass_transform(frozen_default=True)
def message(cls: C) -> C:
    """Make `cls` a frozen, slotted dataclass whose constructor is cheap (and list it in `MESSAGE_TYPES`)."""
    _check_wire(cls)
    klass: Any = dataclasses.dataclass(frozen=True, slots=True)(cls)
    fields = dataclasses.fields(klass)
    names = {f.name for f in fields}
    for counted in klass.WIRE[2::3]:
        if counted not in names:
            raise TypeError(f"{cls.__name__}: WIRE counts items of {counted!r}, which is not a field")
    if any(f.default_factory is not dataclasses.MISSING for f in fields):
        raise TypeError(f"{cls.__name__}: message fields cannot use default_factory")
    namespace: dict[str, Any] = {}
    params, body = [], []
    for index, field in enumerate(fields):
        namespace[f"_set{index}"] = getattr(klass, field.name).__set__
        if field.default is dataclasses.MISSING:
            params.append(field.name)
        else:
            namespace[f"_default{index}"] = field.default
            params.append(f"{field.name}=_default{index}")
        body.append(f"    _set{index}(self, {field.name})")
    source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, namespace)  # the same technique dataclasses uses to build __init__
    init = namespace["__init__"]
    init.__qualname__ = f"{klass.__qualname__}.__init__"
    klass.__init__ = init
    MESSAGE_TYPES[klass.__name__] = klass
    return klass  # type: ignore[no-any-return]


@message
class ServerRequest:
    """A user asks the gateway which server to send its next task to."""

    user: Address


@message
class ServerReply:
    """The gateway names the allocator for the user's next task."""

    server: Address


@message
class TaskRequest:
    """A user's task: who, which task, its demand vector and the user's current G_i."""

    user: Address
    task: int
    demand: tuple[float, ...]
    share: float


@message
class Proposal:
    """An allocator offers to place task `task` of the receiving user; replies go to `proposer`."""

    task: int
    proposer: Address


@message
class Accept:
    """The user takes the first proposal for its current task."""

    user: Address
    task: int


@message
class Decline:
    """The user refuses a later proposal for a task already placed; the proposer drops it."""

    user: Address
    task: int


@message
class Launch:
    """The central scheduler tells a resource node to start a task it reserved there (on the
    `devices` it reserved, in the device model: `protocols.devices`)."""

    user: Address
    task: int
    demand: tuple[float, ...]
    devices: tuple[int, ...] = ()


@message
class TaskStarted:
    """The resource node tells the user its task runs; the user adds D_i to its allocation."""

    task: int
    server: Address


@message
class WalkTask:
    """A task its allocating server could not place, walking the peer-sampling graph for room.

    `home` is told if the walk ends without room; `hops` counts the hops taken so far,
    `visited` names the servers seen and `frontier` the servers their Cyclon views named
    that the walk has not visited yet (see `nodes.server`).
    """

    user: Address
    task: int
    demand: tuple[float, ...]
    home: Address
    hops: int
    visited: Addresses
    frontier: Addresses


@message
class WalkFailed:
    """A walk used up its hops without finding room for task `task` of `user`."""

    user: Address
    task: int


@message
class WalkAck:
    """Server `sender` received hop `hops` of the walk of task `task` of `user` (resilience on:
    the server that sent the hop stops sending it again)."""

    user: Address
    task: int
    hops: int
    sender: Address


@message
class TaskExit:
    """Task `task` of `user` has run its course on the receiving server (an environment input,
    not a network message: delivered by the run's task lifetimes at start + duration)."""

    user: Address
    task: int
    LOCAL: ClassVar[bool] = True  # delivered into the mailbox, never sent over the network


@message
class TaskEnded:
    """A server's task `task` of `user` ended; its demand is free again on `server`."""

    user: Address
    task: int
    server: Address


@message
class UserShare:
    """A finite user's `G_i` is now `share`; `waiting` is False once it has no task waiting
    (its last submitted task started), so its allocator stops counting it until its next task."""

    user: Address
    share: float
    waiting: bool


@message
class RequestAck:
    """The allocator `sender` holds task `task` of the receiving user (with resilience on, an
    allocator acknowledges every `TaskRequest` on receipt, so a lost request is sent again after
    a prompt wait, while one that arrived waits for its proposal without being repeated often)."""

    task: int
    sender: Address


@message
class ShareAck:
    """The allocator `sender` heard that `user` has nothing waiting (with resilience on, the user
    repeats that notice until it is acknowledged: lost, it would leave the user counted, and
    possibly the lowest, at a home for ever)."""

    user: Address
    sender: Address


@message
class EndAck:
    """`sender` (a user, or the central scheduler) heard that task `task` of `user` ended (with
    resilience on, a server repeats `TaskEnded` until each party acknowledged it)."""

    user: Address
    task: int
    sender: Address


@message
class PeerDown:
    """The failure detector's news that actor `peer` crashed (an environment input, like
    `TaskExit`: delivered by the run's failure detector, not over the network). Whatever ran or
    was reserved there is gone."""

    peer: Address
    LOCAL: ClassVar[bool] = True  # delivered into the mailbox, never sent over the network


@message
class PeerUp:
    """The failure detector's news that actor `peer` rejoined, empty (an environment input)."""

    peer: Address
    LOCAL: ClassVar[bool] = True  # delivered into the mailbox, never sent over the network


@message
class Forgotten:
    """The allocator `sender` knows nothing of task `task` the user accepted (it restarted since
    it proposed it, and no server reported the task running): the user asks again."""

    task: int
    sender: Address


@message
class ServerState:
    """A resource node tells a restarted central scheduler what runs on it: `running` holds
    `(user, task, demand)` triples (the scheduler rebuilds its view from these reports)."""

    server: Address
    running: Annotated[tuple[tuple[int, int, tuple[float, ...]], ...], Wire(1, 1, per_item=True)]  # a task id; a user


@message
class StateAck:
    """The central scheduler `sender` has `server`'s `ServerState` (it is repeated until then)."""

    server: Address
    sender: Address
