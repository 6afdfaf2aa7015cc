"""The network's figures as result sections: messages by type, what was dropped and why, and
their cost in bytes (the thesis's cost model, `kernel.messages.CostModel`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from drfemu.nodes.network import Network, TrafficTally
from drfemu.observers.observer import RunEnd
from drfemu.schema.result import Cost, Messages

__all__ = ["Traffic", "traffic_sections"]


def traffic_sections(tally: Mapping[str, TrafficTally], causes: Mapping[str, int],
                     allocations: int) -> tuple[Messages, Cost]:
    """Messages sent and dropped by type and by cause, bytes by type, the totals, and the
    messages per allocation (None before the first)."""
    sent = sum(t.sent for t in tally.values())
    messages = Messages(messages={name: t.sent for name, t in tally.items()},
                        messages_dropped={name: t.dropped for name, t in tally.items() if t.dropped},
                        messages_dropped_by_cause=dict(causes))
    cost = Cost(bytes={name: t.bytes for name, t in tally.items()}, messages_total=sent,
                bytes_total=sum(t.bytes for t in tally.values()),
                messages_per_allocation=sent / allocations if allocations else None)
    return messages, cost


class Traffic:
    """The observer of a run's traffic: what it carried, dropped and cost, as `tally()` and `causes`
    say at the end (a network's own, `of`; or a live run's, summed over its workers)."""

    def __init__(self, tally: Callable[[], Mapping[str, TrafficTally]], causes: Mapping[str, int]) -> None:
        self.tally = tally
        self.causes = causes

    @classmethod
    def of(cls, network: Network) -> Traffic:
        """The observer of `network`'s traffic."""
        return cls(network.tally, network.causes)

    def sections(self, end: RunEnd) -> tuple[Messages, Cost]:
        return traffic_sections(self.tally(), self.causes, end.allocations)
