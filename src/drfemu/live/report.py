"""What a live worker reports to the coordinator when the run stops (issue 59): a typed struct on
the wire (msgspec, as the run's messages), checked field by field when it arrives, so a report a
worker of another version or a broken one sends is one clear error, not a `KeyError` later.

The distributed figures travel as the result section they are (`schema.result.Distributed`, as
JSON, or `null` for a protocol that is not distributed) and are read back, and checked, as that
section when the report arrives. (msgspec decodes a `Raw` field of any JSON value, but not one
declared `Raw | None`: it then accepts only `null`, which refused every distributed report.)
"""

from __future__ import annotations

import msgspec
from pydantic import ValidationError

from drfemu.live.channel import LiveError
from drfemu.schema.result import Distributed

__all__ = ["NOT_DISTRIBUTED", "WorkerReport", "decode_report", "encode_report"]

NOT_DISTRIBUTED = msgspec.Raw(b"null")
"""A report's `distributed` of a protocol that is not distributed."""


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
    distributed: msgspec.Raw = NOT_DISTRIBUTED  # `Distributed` as JSON

    def distributed_section(self) -> Distributed | None:
        """The distributed figures as the result section they are (None: not distributed)."""
        section = bytes(self.distributed)
        return None if section == b"null" else Distributed.model_validate_json(section)


def encode_report(report: WorkerReport) -> bytes:
    return msgspec.json.encode(report)


def decode_report(body: bytes, worker: int) -> WorkerReport:
    """`body` as a report, or a `LiveError` naming the worker and what is wrong with it."""
    try:
        report = msgspec.json.decode(body, type=WorkerReport)
        report.distributed_section()
        return report
    except msgspec.ValidationError as error:
        raise LiveError(f"worker {worker} sent a report that is not one ({error}): a worker of another version?") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the section"
        raise LiveError(f"worker {worker} sent distributed figures that are not ones ({where}: {first['msg']}): "
                        "a worker of another version?") from None
    except msgspec.DecodeError as error:
        raise LiveError(f"worker {worker} sent a report that is not JSON ({error})") from None
