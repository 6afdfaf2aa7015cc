"""Random fault schedules (issue 37): scenario files drawn for a fault campaign.

`random_schedule(rng, …)` writes one fault scenario (`schema.faults`) as TOML
text, drawn from `rng` alone, so a campaign's seed names every schedule. A schedule holds what
a serious test of a scheduler throws at it, within bounds the protocols promise to survive
(`ScheduleBounds`): overall and per-type loss, timed loss windows, latency spikes, partitions,
crashes of servers and of the scheduler, centre or gateway, and churn. Decisions:
- every fault heals: partitions and crashes carry a `duration`, churn an `end`, so each run can
  end as its fault-free twin does and be judged against it;
- loss is drawn from 0, 1, 5, 10 and 20 % (at most `max_loss`), a type's or a window's the same
  way, over the message types that travel (`never_on_the_wire` ones are refused by a scenario);
- latency spikes are `uniform:1ms:X` with X up to 100 ms: their shortest round trip stays within
  the default tick, which DGDRF needs (`docs/faults.md`);
- crashes take at most 30 % of the servers, partitions cut off at most 30 %, so a cluster keeps
  most of its room.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from drfemu.kernel.messages import MESSAGE_TYPES, never_on_the_wire

__all__ = ["ScheduleBounds", "random_schedule"]

LOSSES = (0.0, 0.01, 0.05, 0.1, 0.2)


@dataclass(frozen=True)
class ScheduleBounds:
    """The limits of a drawn schedule: loss at most `max_loss`, every event at or after `start`
    and before `horizon` seconds, each lasting at most `longest` seconds."""

    max_loss: float = 0.2
    start: float = 0.5
    horizon: float = 30.0
    longest: float = 20.0


def random_schedule(rng: random.Random, servers: int, *, central: bool, gradient: bool,
                    bounds: ScheduleBounds = ScheduleBounds()) -> str:
    """One random fault scenario for a run on `servers` servers of a protocol that is `central`
    (it has a scheduler to crash) or runs a `gradient` (it has a centre to crash)."""
    losses = [p for p in LOSSES if p <= bounds.max_loss]
    wire = sorted(set(MESSAGE_TYPES) - never_on_the_wire())
    most = max(1, int(0.3 * servers))

    def when() -> str:
        return f"{rng.uniform(bounds.start, bounds.horizon):.3f}"

    def lasting() -> str:
        return f"{rng.uniform(0.2, bounds.longest):.3f}"

    lines = [f"loss = {rng.choice(losses)}", "", "[loss_by_type]"]
    lines += [f"{name} = {rng.choice(losses)}" for name in rng.sample(wire, rng.randint(0, 2))]
    events: list[list[str]] = []
    for _ in range(rng.randint(0, 2)):
        window = ['action = "loss"', f"loss = {rng.choice(losses)}", f"duration = {lasting()}"]
        if rng.random() < 0.5:
            window.append(f'messages = ["{rng.choice(wire)}"]')
        events.append(window)
    if rng.random() < 0.3:
        events.append(['action = "latency"', f'latency = "uniform:1ms:{rng.randint(2, 100)}ms"',
                       f"duration = {lasting()}"])
    for _ in range(rng.randint(0, 2)):
        events.append(['action = "partition"', f"servers = {rng.randint(1, most)}", f"duration = {lasting()}"])
    for _ in range(rng.randint(0, 2)):
        events.append(['action = "crash"', f"servers = {rng.randint(1, most)}", f"duration = {lasting()}"])
    targets = ["gateway"] + (["scheduler"] if central else []) + (["centre"] if gradient else [])
    if rng.random() < 0.4:
        events.append(['action = "crash"', f'target = "{rng.choice(targets)}"', f"duration = {lasting()}"])
    for event in events:
        lines += ["", "[[event]]", f"at = {when()}", *event]
    if rng.random() < 0.25:
        lines += ["", "[churn]", f"servers = {rng.randint(1, most)}", f'up = "exp:{rng.randint(5, 30)}"',
                  f'down = "exp:{rng.randint(1, 10)}"', f'end = "{bounds.horizon:.0f}s"']
    return "\n".join(lines) + "\n"
