"""The probe's offer skips a pass that would find nothing fitting (issue 58, `ProbeRule.offer`):
on any sequence of copies stored, room taken and given back, ticks and offers, a server whose
rule skips does exactly what one whose rule passes every time does."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from drfemu.kernel.messages import Accept, Decline, TaskExit
from drfemu.protocols.probe import ProbeRule, ProbeTask
from tests.test_distributed_roles import node


class EveryPass(ProbeRule):
    """The reference: every offer passes over the stored copies."""

    __slots__ = ()

    def offer(self, server: Any) -> None:
        self.unfit = -1
        super().offer(server)


AMOUNT = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
STEP = st.one_of(
    st.tuples(st.just("store"), st.integers(100, 104), st.integers(0, 6), st.sampled_from([0.0, 0.1, 0.2, 0.3]),
              st.tuples(AMOUNT, AMOUNT)),
    st.tuples(st.just("take"), st.integers(200, 203), st.tuples(AMOUNT, AMOUNT)),
    st.tuples(st.just("decline"), st.integers(0, 5)),
    st.tuples(st.just("run and end"), st.integers(0, 5)),
    st.tuples(st.just("tick")),
    st.tuples(st.just("offer")),
)


def _apply(server: Any, step: tuple[Any, ...], now: float) -> None:
    kind = step[0]
    if kind == "store":
        _, user, task, share, demand = step
        server.receive(ProbeTask(user, task, demand, share), now)
    elif kind == "take":  # another task reserves room here, as a proposal does
        _, user, demand = step
        if server.fits(demand):
            server.propose(user, len(server._reserved) + len(server._running), demand)
    elif kind in ("decline", "run and end"):
        reserved = sorted(server._reserved)
        if reserved:
            user, task = reserved[step[1] % len(reserved)]
            if kind == "decline":
                server.receive(Decline(user, task), now)
            else:
                server.receive(Accept(user, task), now)
                server.receive(TaskExit(user, task), now)
    elif kind == "tick":
        server.rule.ticks += 1
        server.rule.low_known = False
    else:
        server.rule.offer(server)


def _seen(server: Any) -> tuple[Any, ...]:
    rule = server.rule
    return (dict(rule.stored), rule.held_back, list(server.free), sorted(server._reserved), server.take_outbox(),
            rule._minimum())


ROOM_BACK = [("store", 100, 0, 0.1, (3.0, 3.0)), ("take", 200, (2.0, 2.0)), ("offer",), ("decline", 0), ("offer",)]
RUN_OUT = [("store", 100, 0, 0.1, (3.0, 3.0)), ("take", 200, (2.0, 2.0)), ("offer",), ("run and end", 0),
           ("tick",), ("offer",)]


@settings(max_examples=1000, deadline=None)
@given(st.lists(STEP, max_size=60), st.sampled_from([0.0, 0.5]))
@example(ROOM_BACK, 0.5)
@example(RUN_OUT, 0.0)
def test_an_offer_that_skips_does_what_one_that_passes_does(steps: list[tuple[Any, ...]], band: float) -> None:
    skipping = node(ProbeRule(probe_band=band), capacity=(4.0, 4.0), homed={}, neighbors=[1, 2])
    passing = node(EveryPass(probe_band=band), capacity=(4.0, 4.0), homed={}, neighbors=[1, 2])
    for at, step in enumerate(steps):
        _apply(skipping, step, at * 0.1)
        _apply(passing, step, at * 0.1)
        assert _seen(skipping) == _seen(passing)


class Counted(ProbeRule):
    """Counts the passes over the stored copies (each asks the band's minimum first)."""

    __slots__ = ("passes",)

    def _minimum(self) -> float:
        self.passes = getattr(self, "passes", 0) + 1
        return super()._minimum()


def test_a_pass_that_finds_nothing_fitting_is_skipped_until_a_copy_or_the_room_changes() -> None:
    s = node(Counted(), capacity=(4.0, 4.0), homed={}, neighbors=[1, 2])
    s.receive(ProbeTask(100, 0, (3.0, 3.0), 0.1), 0.0)
    s.propose(200, 0, (2.0, 2.0))  # the copy no longer fits
    s.rule.offer(s)
    s.rule.offer(s)
    assert s.rule.passes == 1  # the second pass is skipped
    s.receive(ProbeTask(101, 0, (3.0, 3.0), 0.2), 0.1)
    s.rule.offer(s)
    s.rule.offer(s)
    assert s.rule.passes == 2  # a copy stored: looked at again, once
    s.receive(Decline(200, 0), 0.2)
    s.take_outbox()
    s.rule.offer(s)
    assert s.rule.passes == 3  # the room given back: looked at again, and the lowest copy proposed
    assert s.rule.stored.keys() == {101} and s.take_outbox()[0][0] == 100
