"""What a live run's coordinator and workers share: the control channel's frames, the event
codec, and clean cancellation (the event loop is `nodes.session`'s, as every run's).

The control channel is one TCP connection per worker carrying length-prefixed frames: a
4-byte length, a kind byte, and a body — JSON, the `nodes.wire` encoding of a
`kernel.events` event, or a worker's clock (never pickle). Frames: challenge (coordinator →
worker: 32 fresh random bytes), hello (worker → coordinator, with the wire fingerprint and its
proof of the run's secret), setup, ready (the ports its nodes bound), go (every
node's address and the wall time of protocol time 0), event, clock (the worker's protocol
time: every event it sends later is at that time or after), stop, report (counters at the
end), error (a worker's traceback).

Admission: the coordinator sends nothing but the challenge to a client until its hello carries
`proof(secret, challenge)`, an HMAC-SHA256 of the challenge under the run's secret; the secret
itself never crosses the wire. Local workers get it in their environment (`SECRET_ENV`), remote
ones from the user, who sets the same variable where they start `drfemu live-worker`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import secrets
import struct
from typing import Any

from drfemu.kernel import events as event_module
from drfemu.kernel.errors import InputError
from drfemu.nodes.wire import Codec

__all__ = ["CHALLENGE", "CLOCK", "CLOCK_BODY", "ERROR", "EVENT", "EVENT_CODEC", "GO", "HELLO", "MAX_FRAME",
           "READY", "REPORT", "SECRET_ENV", "SETUP", "STOP", "LiveError", "new_challenge", "proof",
           "read_frame", "run_secret", "settle", "write_frame", "write_json"]

FRAME = struct.Struct("!IB")
CLOCK_BODY = struct.Struct("!d")
HELLO, SETUP, READY, GO, EVENT, CLOCK, STOP, REPORT, ERROR, CHALLENGE = b"HSRGECXFZQ"
SECRET_ENV = "DRFEMU_LIVE_SECRET"
MIN_SECRET = 16  # characters of a secret the user chooses
MAX_FRAME = 1 << 30  # bytes: a frame announcing more is not the channel's
EVENT_CODEC = Codec({name: getattr(event_module, name) for name in event_module.__all__})


class LiveError(RuntimeError):
    """A live run could not run to its end (a worker died, did not answer, or disagreed)."""


async def read_frame(reader: asyncio.StreamReader, limit: int = MAX_FRAME) -> tuple[int, bytes]:
    """The next frame's kind and body; `ConnectionError` if it announces more than `limit` bytes."""
    head = await reader.readexactly(FRAME.size)
    size, kind = FRAME.unpack(head)
    if size > limit:
        raise ConnectionError(f"a frame of {size:,} bytes (at most {limit:,})")
    return kind, await reader.readexactly(size)


def run_secret() -> tuple[str, bool]:
    """The run's secret: `SECRET_ENV` if set (`InputError` if it is shorter than `MIN_SECRET`),
    else a fresh one; and whether it was made here."""
    given = os.environ.get(SECRET_ENV)
    if given is None:
        return secrets.token_hex(32), True
    if len(given) < MIN_SECRET:
        raise InputError(f"{SECRET_ENV} holds {len(given)} characters; a secret needs at least {MIN_SECRET} "
                         "(unset it and drfemu live makes one)")
    return given, False


def new_challenge() -> bytes:
    return secrets.token_bytes(32)


def proof(secret: str, challenge: bytes) -> str:
    """What a worker answers `challenge` with: HMAC-SHA256 under the run's secret, in hex."""
    return hmac.new(secret.encode(), b"drfemu live worker\0" + challenge, hashlib.sha256).hexdigest()


def write_frame(writer: asyncio.StreamWriter, kind: int, body: bytes) -> None:
    writer.write(FRAME.pack(len(body), kind) + body)


def write_json(writer: asyncio.StreamWriter, kind: int, value: Any) -> None:
    write_frame(writer, kind, json.dumps(value).encode())


async def settle(tasks: set[asyncio.Future[Any]]) -> None:
    """Cancel what is still running of `tasks` and collect every outcome (nothing left unretrieved)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
