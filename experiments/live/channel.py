"""What a live run's coordinator and workers share: the control channel's frames, the event
codec, the event loop, and clean cancellation.

The control channel is one TCP connection per worker carrying length-prefixed frames: a
4-byte length, a kind byte, and a body — JSON, the `nodes.wire` encoding of a
`protocols.events` event, or a worker's clock (never pickle). Frames: hello (worker →
coordinator, with the wire fingerprint), setup, ready (the ports its nodes bound), go (every
node's address and the wall time of protocol time 0), event, clock (the worker's protocol
time: every event it sends later is at that time or after), stop, report (counters at the
end), error (a worker's traceback).
"""

from __future__ import annotations

import asyncio
import json
import signal
import struct
from typing import Any

from drfemu.nodes.wire import Codec
from drfemu.protocols import events as event_module

__all__ = ["CLOCK", "CLOCK_BODY", "ERROR", "EVENT", "EVENT_CODEC", "GO", "HELLO", "READY", "REPORT", "SETUP",
           "STOP", "LiveError", "event_loop", "read_frame", "settle", "until_signalled", "write_frame",
           "write_json"]

FRAME = struct.Struct("!IB")
CLOCK_BODY = struct.Struct("!d")
HELLO, SETUP, READY, GO, EVENT, CLOCK, STOP, REPORT, ERROR = b"HSRGECXFZ"
EVENT_CODEC = Codec({name: getattr(event_module, name) for name in event_module.__all__})


class LiveError(RuntimeError):
    """A live run could not run to its end (a worker died, did not answer, or disagreed)."""


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The next frame's kind and body."""
    head = await reader.readexactly(FRAME.size)
    size, kind = FRAME.unpack(head)
    return kind, await reader.readexactly(size)


def write_frame(writer: asyncio.StreamWriter, kind: int, body: bytes) -> None:
    writer.write(FRAME.pack(len(body), kind) + body)


def write_json(writer: asyncio.StreamWriter, kind: int, value: Any) -> None:
    write_frame(writer, kind, json.dumps(value).encode())


def event_loop() -> tuple[asyncio.AbstractEventLoop, str]:
    """A new uvloop loop, or the standard one where uvloop is not installed; and its name."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop(), "asyncio"
    return uvloop.new_event_loop(), "uvloop"


def until_signalled(loop: asyncio.AbstractEventLoop, work: Any) -> Any:
    """Run the coroutine `work` on `loop`; SIGINT or SIGTERM cancels it (its clean-up runs) and
    then raises KeyboardInterrupt."""
    task = loop.create_task(work)
    signals = (signal.SIGINT, signal.SIGTERM)
    for number in signals:
        loop.add_signal_handler(number, task.cancel)
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    finally:
        for number in signals:
            loop.remove_signal_handler(number)


async def settle(tasks: set[asyncio.Future[Any]]) -> None:
    """Cancel what is still running of `tasks` and collect every outcome (nothing left unretrieved)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
