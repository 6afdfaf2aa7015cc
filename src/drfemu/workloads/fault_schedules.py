"""Random fault schedules (issue 37, widened in issue 52): scenario files drawn for a fault campaign.

`random_schedule(rng, …)` writes one fault scenario (`schema.faults`) as TOML text, drawn from
`rng` alone, so a campaign's seed names every schedule. A schedule holds what a user writes to
test a scheduler, within bounds the protocols promise to survive (`ScheduleBounds`): standing
loss overall and per message type; timed loss windows — bursts on every message, on some types,
or on some links, short ones up to 95 %; latency spikes, uniform or per pair with jitter;
partitions of a count or of named servers; crashes of a count of servers with a duration, or of
named servers and their recovery as a later event; crashes of the scheduler, the centre or the
gateway; and churn with exponential or Weibull times down, over a window. Decisions:
- `transient` (the default): every fault heals — partitions and crashes carry a `duration` or a
  `recover` event, churn an `end` — so an endless run must end saturated as its fault-free twin
  does; with `transient=False` one or two crashes of servers never recover, beside the faults
  that heal (a run must then saturate on what is left). Churn ends either way: churn for ever
  keeps faults planned, and a run can then end only at its time cap;
- standing loss is drawn from 0, 1, 5, 10 and 20 % (at most `max_loss`); a window above
  `max_loss` lasts at most `BURST` seconds, so heavy loss comes in bursts (issue 52 found stalls
  with bursts of 95 % on every message for 0.7 s), over the message types that travel
  (`never_on_the_wire` ones are refused by a scenario);
- latency spikes reach 150 ms at most for at most `BURST` seconds (above 100 ms, which stays
  within the default tick's round trip, DGDRF slows: `docs/faults.md`);
- crashes take at most 30 % of the servers, partitions cut off at most 30 %, so a cluster keeps
  most of its room.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from drfemu.kernel.messages import never_on_the_wire
from drfemu.nodes.wire import node_message_types

__all__ = ["BURST", "ScheduleBounds", "random_schedule"]

LOSSES = (0.0, 0.01, 0.05, 0.1, 0.2)
BURSTS = (0.3, 0.5, 0.8, 0.95)
BURST = 3.0
"""The longest a loss window above `max_loss`, or a latency spike above 100 ms, lasts (seconds)."""


@dataclass(frozen=True)
class ScheduleBounds:
    """The limits of a drawn schedule: standing loss at most `max_loss`, every event at or after
    `start` and before `horizon` seconds, each lasting at most `longest` seconds."""

    max_loss: float = 0.2
    start: float = 0.5
    horizon: float = 30.0
    longest: float = 20.0


class _Draw:
    """The draws of one schedule, from `rng` alone."""

    def __init__(self, rng: random.Random, servers: int, bounds: ScheduleBounds) -> None:
        self.rng, self.servers, self.bounds = rng, servers, bounds
        self.losses = [p for p in LOSSES if p <= bounds.max_loss]
        self.wire = sorted(set(node_message_types()) - never_on_the_wire())
        self.most = max(1, int(0.3 * servers))
        self.islanded: set[int] = set()

    def when(self) -> float:
        return self.rng.uniform(self.bounds.start, self.bounds.horizon)

    def lasting(self, longest: float | None = None) -> str:
        return f"{self.rng.uniform(0.2, longest or self.bounds.longest):.3f}"

    def named(self) -> list[int]:
        return sorted(self.rng.sample(range(self.servers), self.rng.randint(1, self.most)))

    def island(self) -> str:
        """A partition's servers: a count, or named servers on no other named island of the
        schedule (a partition never moves a server between islands: `schema.faults`)."""
        free = sorted(set(range(self.servers)) - self.islanded)
        if self.rng.random() < 0.5 or not free:
            return f"servers = {self.rng.randint(1, self.most)}"
        named = sorted(self.rng.sample(free, self.rng.randint(1, min(self.most, len(free)))))
        self.islanded.update(named)
        return f"servers = {named}"

    def loss_window(self) -> list[str]:
        rng = self.rng
        burst = rng.random() < 0.5
        loss = rng.choice(BURSTS) if burst else rng.choice(self.losses)
        window = ['action = "loss"', f"loss = {loss}", f"duration = {self.lasting(BURST if burst else None)}"]
        kind = rng.random()
        if kind < 0.35:
            types = rng.sample(self.wire, rng.randint(1, 3))
            window.append("messages = [" + ", ".join(f'"{t}"' for t in types) + "]")
        elif kind < 0.55 and self.servers > 1:
            pairs = {tuple(rng.sample(range(self.servers), 2)) for _ in range(rng.randint(1, 3))}
            window.append("links = [" + ", ".join(f"[{a}, {b}]" for a, b in sorted(pairs)) + "]")
        return window

    def latency(self) -> list[str]:
        rng = self.rng
        high = rng.randint(2, 150)
        spec = f"uniform:1ms:{high}ms" if rng.random() < 0.5 else f"pair:1ms:{high}ms:{rng.randint(0, 20)}ms"
        return ['action = "latency"', f'latency = "{spec}"', f"duration = {self.lasting(BURST if high > 100 else None)}"]

    def churn(self) -> list[str]:
        rng = self.rng
        begin = rng.uniform(self.bounds.start, self.bounds.horizon / 2)
        down = f"exp:{rng.randint(1, 10)}" if rng.random() < 0.6 else f"weibull:{rng.randint(2, 15)}:1.5"
        return ["", "[churn]", f"servers = {rng.randint(1, self.most)}", f'up = "exp:{rng.randint(5, 30)}"',
                f'down = "{down}"', f'start = "{begin:.3f}s"', f'end = "{rng.uniform(begin + 1, self.bounds.horizon):.3f}s"']


def random_schedule(rng: random.Random, servers: int, *, central: bool, gradient: bool,
                    bounds: ScheduleBounds = ScheduleBounds(), transient: bool = True) -> str:
    """One random fault scenario for a run on `servers` servers of a protocol that is `central`
    (it has a scheduler to crash) or runs a `gradient` (it has a centre to crash); `transient`:
    every fault heals (see the module)."""
    draw = _Draw(rng, servers, bounds)
    lines = [f"loss = {rng.choice(draw.losses)}", "", "[loss_by_type]"]
    lines += [f"{name} = {rng.choice(draw.losses)}" for name in rng.sample(draw.wire, rng.randint(0, 2))]
    events: list[tuple[float, list[str]]] = []
    for _ in range(rng.randint(0, 3)):
        events.append((draw.when(), draw.loss_window()))
    if rng.random() < 0.4:
        events.append((draw.when(), draw.latency()))
    for _ in range(rng.randint(0, 2)):
        events.append((draw.when(), ['action = "partition"', draw.island(), f"duration = {draw.lasting()}"]))
    for _ in range(rng.randint(0, 2)):
        if rng.random() < 0.5:
            events.append((draw.when(), ['action = "crash"', f"servers = {rng.randint(1, draw.most)}",
                                         f"duration = {draw.lasting()}"]))
        else:
            named, at = draw.named(), draw.when()
            events.append((at, ['action = "crash"', f"servers = {named}"]))
            events.append((at + float(draw.lasting()), ['action = "recover"', f"servers = {named}"]))
    if not transient:
        for _ in range(rng.randint(1, 2)):
            events.append((draw.when(), ['action = "crash"', f"servers = {rng.randint(1, max(1, draw.most // 2))}"]))
    targets = ["gateway"] + (["scheduler"] if central else []) + (["centre"] if gradient else [])
    if rng.random() < 0.4:
        events.append((draw.when(), ['action = "crash"', f'target = "{rng.choice(targets)}"',
                                     f"duration = {draw.lasting()}"]))
    for at, event in events:
        lines += ["", "[[event]]", f"at = {at:.3f}", *event]
    if rng.random() < 0.3:
        lines += draw.churn()
    return "\n".join(lines) + "\n"
