"""The kinds of wake-up of the node roles, each a frozen class of its own (`nodes.actor.Wake`).

A node asks to be woken with one (`Actor.wake_at`) and its `on_timer` tells them apart by type;
the fields say which task, attempt or notice the wake-up is about, so a node ignores one it no
longer needs by comparing them with its own state. Several double as the key of what they
repeat (a server's notices and walk hops, a resource node's unacknowledged notices).

`trace_form` gives each the tuple or text it was before wake-ups had classes: the event trace
writes that, so digests compare with those of earlier versions (`nodes.trace`).
"""

from __future__ import annotations

from dataclasses import dataclass

from drfemu.nodes.actor import Wake

__all__ = ["PlacementTimeout", "RepeatEnd", "RepeatIdle", "RepeatProposal", "RepeatState", "RepeatTaskEnd", "Reprobe",
           "ResendHop", "RetryTask", "RetryWalk", "ServerWake", "SubmitDue"]


# -- a distributed protocol's server (`nodes.server`) ------------------------------------------
@dataclass(frozen=True, slots=True)
class RetryWalk(Wake):
    """A homed user marked saturated: its task's walk is due to be tried again."""

    user: int
    task: int

    def trace_form(self) -> tuple[int, int]:
        return (self.user, self.task)


@dataclass(frozen=True, slots=True)
class PlacementTimeout(Wake):
    """A homed user's task went out to be placed and nothing was heard of it (resilience on)."""

    user: int
    task: int

    def trace_form(self) -> tuple[str, int, int]:
        return ("placing", self.user, self.task)


@dataclass(frozen=True, slots=True)
class RepeatProposal(Wake):
    """A proposal not yet answered by its user is due again (resilience on); also its notice's key."""

    user: int
    task: int

    def trace_form(self) -> tuple[str, int, int]:
        return ("proposal", self.user, self.task)


@dataclass(frozen=True, slots=True)
class RepeatEnd(Wake):
    """A task's end not yet acknowledged by its user is due again (resilience on); also its notice's key."""

    user: int
    task: int

    def trace_form(self) -> tuple[str, int, int]:
        return ("end", self.user, self.task)


@dataclass(frozen=True, slots=True)
class ResendHop(Wake):
    """A walk hop not yet acknowledged by `dst` is due again (resilience on); also the hop's key."""

    user: int
    task: int
    hops: int
    dst: int

    def trace_form(self) -> tuple[str, int, int, int, int]:
        return ("hop", self.user, self.task, self.hops, self.dst)


ServerWake = RetryWalk | PlacementTimeout | RepeatProposal | RepeatEnd | ResendHop


# -- a user (`nodes.user`) ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RetryTask(Wake):
    """Nothing was heard since the current task's last step (resilience on): ask, send or accept again."""

    task: int
    attempt: int

    def trace_form(self) -> tuple[str, int, int]:
        return ("retry", self.task, self.attempt)


@dataclass(frozen=True, slots=True)
class Reprobe(Wake):
    """No proposal came for the current task since it was sent: send it elsewhere (`--probe-retry`)."""

    task: int
    probe: int

    def trace_form(self) -> tuple[str, int, int]:
        return ("reprobe", self.task, self.probe)


@dataclass(frozen=True, slots=True)
class SubmitDue(Wake):
    """The next task of a finite user is due to be submitted."""

    def trace_form(self) -> str:
        return "submit"


@dataclass(frozen=True, slots=True)
class RepeatIdle(Wake):
    """A finite user's idle notice to its allocator is still unacknowledged (resilience on)."""

    attempt: int

    def trace_form(self) -> tuple[str, int, int]:
        return ("idle", self.attempt, 0)


# -- a central protocol's resource node (`nodes.resource_node`) ---------------------------------
@dataclass(frozen=True, slots=True)
class RepeatTaskEnd(Wake):
    """A task's end not yet acknowledged by its user or the scheduler is due again; also its notice's key."""

    user: int
    task: int

    def trace_form(self) -> tuple[int, int]:
        return (self.user, self.task)


@dataclass(frozen=True, slots=True)
class RepeatState(Wake):
    """The state report not yet acknowledged by the scheduler is due again; also its notice's key."""

    def trace_form(self) -> str:
        return "state"
