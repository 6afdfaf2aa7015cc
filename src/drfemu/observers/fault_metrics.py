"""What a fault costs (issue 16): allocation rate and fairness before, during and after it,
the time to recover, and the messages spent on recovery.

`FaultTimeline` samples, after every allocation tick, the run's allocations so far, the
harness's minimum share now (`min_share()`: the placeable users' for endless users, the
present users' for tasks that end) and the messages sent so far. `windows(log)` then turns
every fault of the injector's log that has an end (an event with a `duration`, or churn as one
window from its first crash to its last recovery) into a record, with `w` the fault's length:
- `allocation_rate_{before,during,after}`: allocations per second over `[start − w, start)`,
  `[start, end)` and `[end, end + w)`, each clipped to the run;
- `min_share_{before,during,after}`: the minimum share at `start`, the lowest sampled during
  the fault, and the one at `end + w` (or the run's end);
- `time_to_recover_s`: from `end` until the minimum share is back at its value at `start`
  (0 when it never fell below; None when it never came back within the run);
- `messages_during` and `recovery_messages`: the messages sent from `start` until recovery
  (or `end` + `w`), and how many more that is than the rate before the fault would have sent.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any, Protocol

from drfemu.nodes.network import Network
from drfemu.nodes.port import RuntimePort
from drfemu.observers.observer import RunEnd
from drfemu.schema.result import Faults, Section, Timeline
from drfemu.schema.result_blocks import FaultRecord, FaultWindow

__all__ = ["NO_FAULTS", "FaultTimeline"]


NO_FAULTS = Faults(faults=[], fault_windows=[], fault_timeline=None)
"""The faults part of the result of a run without a fault scenario."""


class Judge(Protocol):
    """What the timeline samples of the harness (`observers.harness`, `observers.finite_harness`)."""

    @property
    def allocations(self) -> int:
        """Allocations so far."""

    def min_share(self) -> float:
        """The lowest dominant share now."""


class FaultTimeline:
    """Samples a run every tick for `windows`."""

    def __init__(self, runtime: RuntimePort, harness: Judge, network: Network,
                 log: list[dict[str, Any]]) -> None:
        """`log`: the fault injector's log, as it grows (`assembly.faults.FaultInjector.log`)."""
        self.harness = harness
        self.network = network
        self.log = log
        self.times: list[float] = [0.0]
        self.allocations: list[int] = [0]
        self.min_shares: list[float] = [0.0]
        self.messages: list[int] = [0]
        runtime.add_tick_hook(self.sample)

    def sections(self, end: RunEnd) -> list[Section]:
        """The faults part of the result: the injector's log, what each fault cost, the samples."""
        return [Faults(faults=[FaultRecord(**entry) for entry in self.log], fault_windows=self.windows(self.log),
                       fault_timeline=self.series())]

    def sample(self, now: float, _: int) -> None:
        self.times.append(now)
        self.allocations.append(self.harness.allocations)
        self.min_shares.append(self.harness.min_share())
        self.messages.append(self.network.messages_sent)

    def series(self, step: float = 1.0) -> Timeline:
        """The samples every `step` seconds (the result's `fault_timeline`)."""
        keep, next_t = [], 0.0
        for i, t in enumerate(self.times):
            if t >= next_t - 1e-9:
                keep.append(i)
                next_t = t + step
        return Timeline(time=[self.times[i] for i in keep], allocations=[self.allocations[i] for i in keep],
                        min_share=[_number(self.min_shares[i]) for i in keep],
                        messages=[self.messages[i] for i in keep])

    def _at(self, t: float) -> int:
        """Index of the last sample at or before `t`."""
        return max(0, min(len(self.times) - 1, bisect_left(self.times, t + 1e-9) - 1))

    def _rate(self, series: list[int], start: float, end: float) -> float | None:
        start, end = max(start, 0.0), min(end, self.times[-1])
        if end <= start:
            return None
        return (series[self._at(end)] - series[self._at(start)]) / (end - start)

    def windows(self, log: list[dict[str, Any]]) -> list[FaultWindow]:
        """One record per fault of `log` that ended (see the module)."""
        spans: list[tuple[str, float, float]] = []
        begun: dict[Any, tuple[str, float]] = {}
        for entry in log:
            if entry["event"] == "churn":
                continue
            action = entry["action"]
            if action.startswith("end of "):
                what, start = begun.pop(entry["event"], (action[7:], entry["at"]))
                spans.append((what, start, entry["at"]))
            else:
                begun[entry["event"]] = (action, entry["at"])
        churn = [entry["at"] for entry in log if entry["event"] == "churn"]
        if churn:
            spans.append(("churn", min(churn), max(churn)))
        return [self._window(*span) for span in sorted(spans, key=lambda s: (s[1], s[0]))]

    def _window(self, what: str, start: float, end: float) -> FaultWindow:
        w = max(end - start, 1e-9)
        shares = self.min_shares
        before = shares[self._at(start)]
        during = [x for t, x in zip(self.times, shares) if start <= t < end and not math.isnan(x)]
        back = None
        if not math.isnan(before):
            for t, x in zip(self.times[self._at(end):], shares[self._at(end):]):
                if t >= end and x >= before - 1e-12:
                    back = t
                    break
        stop = back if back is not None else end + w
        messages_during = self.messages[self._at(stop)] - self.messages[self._at(start)]
        rate = self._rate(self.messages, start - w, start)
        return FaultWindow(
            fault=what, start_s=start, end_s=end,
            allocation_rate_before=self._rate(self.allocations, start - w, start),
            allocation_rate_during=self._rate(self.allocations, start, end),
            allocation_rate_after=self._rate(self.allocations, end, end + w),
            min_share_before=_number(before),
            min_share_during=min(during) if during else None,
            min_share_after=_number(shares[self._at(end + w)]),
            time_to_recover_s=back - end if back is not None else None,
            messages_during=messages_during,
            recovery_messages=(messages_during - rate * (stop - start)) if rate is not None else None,
        )


def _number(x: float) -> float | None:
    return None if math.isnan(x) else x
