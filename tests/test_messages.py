"""`@message` makes frozen, slotted dataclasses with a fast constructor."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from drfemu.kernel.messages import TaskRequest, message
from drfemu.nodes.network import Network


@message
class Sample:
    a: int
    b: tuple[float, ...]
    c: float = 0.5
    WIRE: ClassVar[tuple[int, int]] = (2, 0)


def test_behaves_as_a_frozen_slotted_dataclass() -> None:
    m = Sample(1, (2.0,))
    assert dataclasses.is_dataclass(m) and m.c == 0.5
    assert m == Sample(1, (2.0,), 0.5) and hash(m) == hash(Sample(1, (2.0,)))
    assert not hasattr(m, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.a = 2  # type: ignore[misc]
    assert Sample(a=3, b=(), c=1.0).a == 3
    assert repr(Sample(1, ())) == "Sample(a=1, b=(), c=0.5)"


def test_constructor_checks_arguments() -> None:
    with pytest.raises(TypeError):
        Sample(1)  # type: ignore[call-arg]


def test_default_factory_is_refused() -> None:
    with pytest.raises(TypeError):

        @message
        class Bad:
            xs: list[int] = dataclasses.field(default_factory=list)


def test_variable_wire_size() -> None:
    network = Network()
    network.count([(0, TaskRequest(1, 0, (1.0, 2.0, 3.0), 0.0)), (0, TaskRequest(1, 1, (1.0,), 0.0))])
    # 3 + 2 numbers and 1 + 2 numbers, one address each, 28 bytes of overhead each
    assert network.tally()["TaskRequest"].bytes == (5 + 3) * 8 + 2 * 6 + 2 * 28


def test_one_send_at_a_time_is_tallied_as_a_batch_of_them() -> None:
    """`Network.count` takes a batch of one message of a type it has seen by a path of its own
    (a walk's hop, a live run's datagram): the tallies are those of the same sends in one batch."""
    sends = [(0, TaskRequest(1, 0, (1.0, 2.0, 3.0), 0.0)), (1, Sample(1, (2.0,))), (0, TaskRequest(1, 1, (1.0,), 0.0)),
             (2, TaskRequest(2, 0, (), 0.0)), (1, Sample(2, ()))]
    one_by_one, batched = Network(), Network()
    for send in sends:
        one_by_one.count([send])
    batched.count(sends)
    assert one_by_one.tally() == batched.tally()
    assert one_by_one.tally()["TaskRequest"].sent == 3


def test_wire_declarations_are_checked() -> None:
    with pytest.raises(TypeError, match="WIRE must be"):
        @message
        class Bad:
            x: int
            WIRE: ClassVar[None] = None
