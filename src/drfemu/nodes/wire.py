"""The wire format of live runs: one datagram per message, derived from the message declarations.

A datagram is a fixed header — version byte, message type id, sender actor id, receiver actor
id (`!BHII`, 11 bytes) — followed by the message's fields, in declaration order, as a MessagePack
array (msgspec). Type ids number the registered message classes that the node packages define
(`kernel.messages.MESSAGE_TYPES`) in name order, so every process that runs the same code
agrees on them; `Codec.fingerprint` names that agreement and live workers compare it before a
run.

Decoding is typed: each message type has a msgspec decoder built from its field annotations
(`tuple[float, ...]`, `int`, `bool`, …), so a datagram whose fields do not have the declared
types is rejected like a truncated or foreign one — `WireError`, never a half-built message.

Decisions: MessagePack over a hand-packed `struct` layout because messages carry variable-length
tuples (views, demand vectors, walk paths) and msgspec validates them against the annotations
in C; never pickle, which would run whatever a datagram names. The version byte changes whenever
the format of the header or the numbering does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct
import typing
from collections.abc import Mapping
from typing import Any

import msgspec

import drfemu.overlay.messages  # noqa: F401  (registers the overlay's messages)
import drfemu.protocols.placement  # noqa: F401  (registers the walks' messages)
from drfemu.kernel.messages import MESSAGE_TYPES
from drfemu.protocols.registry import PROTOCOLS

__all__ = ["HEADER", "NODE_PACKAGES", "VERSION", "Codec", "WireError", "node_message_types"]

VERSION = 1
NODE_PACKAGES = ("drfemu.kernel", "drfemu.protocols", "drfemu.overlay", "drfemu.nodes")
HEADER = struct.Struct("!BHII")  # version, type id, sender, receiver


def node_message_types() -> dict[str, type]:
    """The nodes' vocabulary by name: every message class defined in `NODE_PACKAGES`, with every
    built-in and installed protocol loaded first — the same whichever protocols this process has
    run (protocols are imported on first use, and their messages register as they are)."""
    PROTOCOLS.load_all()
    return {name: cls for name, cls in MESSAGE_TYPES.items()
            if cls.__module__.startswith(tuple(p + "." for p in NODE_PACKAGES))}

class WireError(ValueError):
    """A datagram that is not a well-formed message of this code's wire format."""


class _Kind:
    __slots__ = ("cls", "decoder", "fields", "type_id")

    def __init__(self, type_id: int, cls: type) -> None:
        hints = typing.get_type_hints(cls)
        self.type_id = type_id
        self.cls = cls
        self.fields = tuple(f.name for f in dataclasses.fields(cls))
        field_types: Any = tuple(hints[name] for name in self.fields)
        shape: Any = tuple[field_types] if self.fields else tuple[()]
        self.decoder = msgspec.msgpack.Decoder(shape)


class Codec:
    """Encodes `(sender, receiver, message)` to bytes and back, for the given message classes."""

    __slots__ = ("_by_class", "_by_id", "_encode", "fingerprint")

    def __init__(self, types: Mapping[str, type] | None = None) -> None:
        """`types` by name; by default the nodes' vocabulary: every registered message class
        defined in `kernel`, `protocols`, `overlay` or `nodes` (not a benchmark's or a test's)."""
        if types is None:
            types = node_message_types()
        names = sorted(types)
        if len(names) > 0xFFFF:
            raise ValueError("too many message types for a 2-byte type id")
        self._by_id = [_Kind(i, types[name]) for i, name in enumerate(names)]
        self._by_class = {kind.cls: kind for kind in self._by_id}
        self._encode = msgspec.msgpack.Encoder().encode
        schema = ";".join(f"{k.cls.__name__}({','.join(k.fields)})" for k in self._by_id)
        self.fingerprint = hashlib.sha256(f"{VERSION}:{schema}".encode()).hexdigest()[:16]

    def encode(self, sender: int, receiver: int, msg: Any) -> bytes:
        kind = self._by_class[msg.__class__]
        return (HEADER.pack(VERSION, kind.type_id, sender, receiver)
                + self._encode(tuple(getattr(msg, name) for name in kind.fields)))

    def decode(self, data: bytes) -> tuple[int, int, Any]:
        """`(sender, receiver, message)`; raises `WireError` for anything else."""
        if len(data) < HEADER.size:
            raise WireError(f"truncated datagram ({len(data)} bytes)")
        version, type_id, sender, receiver = HEADER.unpack_from(data)
        if version != VERSION:
            raise WireError(f"wire version {version}, expected {VERSION}")
        if type_id >= len(self._by_id):
            raise WireError(f"unknown message type id {type_id}")
        kind = self._by_id[type_id]
        try:
            values = kind.decoder.decode(memoryview(data)[HEADER.size:])
            return sender, receiver, kind.cls(*values)
        except (msgspec.DecodeError, msgspec.ValidationError, TypeError) as error:
            raise WireError(f"malformed {kind.cls.__name__}: {error}") from None
