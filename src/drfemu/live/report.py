"""What a live worker reports to the coordinator when the run stops (issue 59): a typed struct on
the wire (msgspec, as the run's messages), checked field by field when it arrives, so a report a
worker of another version or a broken one sends is one clear error, not a `KeyError` later.

The distributed figures travel as the result section they are (`schema.result.Distributed`, as
JSON) and are read back as that section.
"""

from __future__ import annotations

import msgspec

from drfemu.live.channel import LiveError
from drfemu.schema.result import Distributed

__all__ = ["WorkerReport", "decode_report", "encode_report"]


class WorkerReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One worker's share of the run: its servers' traffic and events, its links' figures, its users'
    own accounts of their tasks, and the distributed figures of its servers (None: not distributed)."""

    traffic: dict[str, tuple[int, int, int]]  # by message type: sent, dropped, bytes
    delivered: int
    timer_events: int
    rejected: dict[str, int]  # datagrams refused, by reason
    send_errors: int
    wire_bytes: int
    latency_histogram: list[int]  # one-way latencies, binned by `nodes.live.latency_bin`
    late_tick_histogram: list[int]  # tick lateness, binned the same way
    ticks_over_half: int  # ticks later than half a tick
    users: dict[int, dict[str, int]]  # each of its users' counters, by actor id
    distributed: msgspec.Raw | None = None  # `Distributed` as JSON

    def distributed_section(self) -> Distributed | None:
        """The distributed figures as the result section they are."""
        return None if self.distributed is None else Distributed.model_validate_json(bytes(self.distributed))


def encode_report(report: WorkerReport) -> bytes:
    return msgspec.json.encode(report)


def decode_report(body: bytes, worker: int) -> WorkerReport:
    """`body` as a report, or a `LiveError` naming the worker and what is wrong with it."""
    try:
        return msgspec.json.decode(body, type=WorkerReport)
    except msgspec.ValidationError as error:
        raise LiveError(f"worker {worker} sent a report that is not one ({error}): a worker of another version?") from None
    except msgspec.DecodeError as error:
        raise LiveError(f"worker {worker} sent a report that is not JSON ({error})") from None
