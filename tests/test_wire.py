"""The live wire format (`nodes.wire`): every message survives the round trip exactly, and
nothing but a well-formed message decodes."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.nodes.wire import HEADER, VERSION, Codec, WireError

CODEC = Codec()
KINDS = CODEC._by_id  # noqa: SLF001 - the test enumerates what the codec numbers


def _values(annotation: Any) -> st.SearchStrategy[Any]:
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(-(2**62), 2**62)
    if annotation is float:
        return st.floats(allow_nan=False)
    args = typing.get_args(annotation)
    if len(args) == 2 and args[1] is Ellipsis:
        return st.lists(_values(args[0]), max_size=6).map(tuple)
    return st.tuples(*(_values(a) for a in args))


@st.composite
def messages(draw: Any) -> Any:
    kind = draw(st.sampled_from(KINDS))
    hints = typing.get_type_hints(kind.cls)
    return kind.cls(*(draw(_values(hints[f.name])) for f in dataclasses.fields(kind.cls)))


def test_the_codec_numbers_only_the_nodes_vocabulary() -> None:
    names = {kind.cls.__name__ for kind in KINDS}
    assert {"TaskRequest", "Proposal", "CyclonShuffle", "GradientReply", "FitWalk", "MinimumNotice"} <= names
    assert "Ping" not in names  # the benchmark's message is not part of a run
    assert Codec().fingerprint == CODEC.fingerprint


@settings(max_examples=300)
@given(messages(), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_every_message_survives_the_round_trip(msg: Any, sender: int, receiver: int) -> None:
    assert CODEC.decode(CODEC.encode(sender, receiver, msg)) == (sender, receiver, msg)


@settings(max_examples=500)
@given(st.binary(max_size=200))
def test_random_bytes_are_rejected_or_decode_to_a_message_never_an_exception(data: bytes) -> None:
    try:
        _, _, msg = CODEC.decode(data)
    except WireError:
        return
    assert msg.__class__ in {kind.cls for kind in KINDS}


@settings(max_examples=200)
@given(messages(), st.data())
def test_a_truncated_message_is_rejected(msg: Any, data: Any) -> None:
    whole = CODEC.encode(1, 2, msg)
    cut = data.draw(st.integers(0, len(whole) - 1))
    with pytest.raises(WireError):
        CODEC.decode(whole[:cut])


def test_fields_of_the_wrong_type_another_version_or_an_unknown_type_are_rejected() -> None:
    from drfemu.kernel.messages import TaskRequest

    good = CODEC.encode(1, 2, TaskRequest(3, 4, (0.5, 0.25), 0.1))
    kind = CODEC._by_class[TaskRequest]  # noqa: SLF001
    bad_fields = HEADER.pack(VERSION, kind.type_id, 1, 2) + b"\x94\xa1x\x04\x92\xcb" + good[-17:]
    for data in (bad_fields, bytes([VERSION + 1]) + good[1:], HEADER.pack(VERSION, 0xFFFF, 1, 2) + good[HEADER.size:]):
        with pytest.raises(WireError):
            CODEC.decode(data)
