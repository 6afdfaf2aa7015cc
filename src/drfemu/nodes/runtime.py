"""The runtime: moves messages between actors and fires timers, as a coroutine on an asyncio loop.

Design (SPEC §2, "Speed"):
- Time is kept in integer microseconds. Everything due at the same instant — message
  deliveries, timers, the allocation tick — shares one `_Instant`; the instants wait in a heap
  of ints that the runtime owns. `run()` is a coroutine: it takes the earliest instant, runs
  it, and so on, on whatever asyncio loop awaits it (the default loop, uvloop, a user's own),
  yielding to that loop every `INSTANTS_PER_TURN` instants so the loop's other tasks (a
  progress display, a user's coroutine awaiting the run) still run. Nothing of the loop's
  clock or private state is used: in a virtual run, time is the instant's, and it jumps.
  (Decision, issue 40: when the loop held a timer per instant, thousands were pending on the
  trace hour and asyncio's `TimerHandle.__lt__`, written in Python, cost 10–15 % of a replay.)
- At an instant, deliveries go first, in the order they were sent: each message is put in
  its destination's mailbox, then every actor that received something is woken once and
  drains its whole mailbox; then periodic drivers fire in the order they were created;
  then one-off timers run in the order they were set. After each wake-up the runtime
  moves what the actor put in its outbox through the `Network` (with a fixed latency, the
  sends of all actors woken at one instant travel as one batch).
- Periodic work — the allocation tick, overlay rounds — is one driver (`Periodic`) per period
  that re-arms itself at `k · period` (never by accumulating floats) and calls its action on
  every actor of the driver in registration order (`every`, `start_ticks`).

When the next instant is due is the clock's business, and only `_pace` knows it: here it is
due at once (a virtual clock); `nodes.realtime.RealtimeRuntime` overrides `_pace` to wait for
the real clock to reach it, as SimPy's real-time environment overrides its `step`. Where an
outbox goes is the links' business: through the emulated `Network` into the heap here, as
datagrams in a live run (`nodes.live.DatagramLinks`). Both implement one port
(`nodes.port.RuntimePort`), which is all that set-up code and observers see.

Nodes report through their port (`Actor.emit`, `Actor.wake_at`): the runtime gives every
actor the same port list and empties it after every delivery phase, periodic driver and
timer — a wake-up becomes a timer calling the node's `on_timer(key, now)`, any other item is
an event handed, in emission order, to the handlers subscribed to its type (`bus`). Observers
(the harness) thus learn what happened without any node holding a reference to them.

A run ends when something calls `stop(result)`: `run()` then returns `result`. An exception
raised by any handler, tick or timer stops the runtime and `run()` raises it, so it surfaces
where the run is awaited. A virtual runtime whose heap empties before `stop` can never wake
again: `run()` raises `RuntimeIdle` instead of hanging.

A coroutine that waits virtual time asks the runtime (`await runtime.sleep(delay)`): the run
yields to the loop right after the instant that wakes it, so the coroutine runs at that
virtual time, before any later instant.

Same actors, same seed ⇒ the same events in the same order, on any machine and any loop. A
runtime given an `EventTrace` reports every delivery, timer, wake-up and event to it, which is
how `drfemu check` finds the first event where two runs part.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable, Collection, Iterable, Sequence
from functools import partial
from typing import Any, Protocol, TypeVar

from drfemu.kernel.compiled import compiled_module
from drfemu.kernel.latency import US_PER_S, to_us
from drfemu.nodes.actor import Actor, WakeAfter, WakeUp
from drfemu.nodes.lane import Lane, keep_lane_exact
from drfemu.nodes.network import Network
from drfemu.nodes.port import EventBus, Hook
from drfemu.nodes.trace import EventTrace, describe_callback, trace_form

__all__ = ["ENGINE_IMPLEMENTATION", "INSTANTS_PER_TURN", "Links", "Periodic", "Runtime", "RuntimeIdle", "deliver",
           "deliver_python"]

E = TypeVar("E")


class RuntimeIdle(RuntimeError):
    """A virtual runtime has nothing scheduled and was not stopped: it can never wake again."""


class Links(Protocol):
    """Where actors' outboxes go when not through the emulated network (a live run's datagrams)."""

    def flush(self, actor: Actor) -> None:
        """Send everything in `actor.outbox` and empty it."""


def deliver_python(deliveries: list[tuple[int, Any]], mailboxes: list[list[Any]], actors: list[Actor],
                   inline_drain: list[bool], now: float, batch: list[tuple[int, Any]] | None,
                   flush: Callable[[Actor], None]) -> None:
    """An instant's delivery phase: each message to its destination's mailbox, then every actor
    that received something woken once, in the order of its first message, to handle its
    mailbox in arrival order; its outbox then joins `batch` (or, with None, goes to `flush`).
    The reference for `src/native/_engine.c`, which does the same in C where it was built."""
    ready: list[int] = []
    for dst, msg in deliveries:
        mailbox = mailboxes[dst]
        if not mailbox:
            ready.append(dst)
        mailbox.append(msg)
    for dst in ready:
        actor = actors[dst]
        messages = mailboxes[dst]
        mailboxes[dst] = []
        actor.drain(messages, now)  # `inline_drain` tells the C version where it may do `Actor.drain` itself
        if actor.outbox:
            if batch is None:
                flush(actor)
            else:
                batch += actor.outbox
                actor.outbox.clear()


def fire_each_python(
    actors: list[Actor],
    action: Callable[[Any, float], None],
    now: float,
    batch: list[tuple[int, Any]] | None,
    flush: Callable[[Actor], None],
    skip_idle: bool = False,
) -> None:
    """A periodic driver's round: `action(actor, now)` for each actor in turn, its outbox then
    appended to `batch` (fixed latency) or, with `batch` None, handed to `flush`. With
    `skip_idle` (the tick driver), an actor whose `idle_tick` is true is skipped."""
    for actor in actors:
        if skip_idle and actor.idle_tick:
            continue
        action(actor, now)
        if actor.outbox:
            if batch is None:
                flush(actor)
            else:
                batch += actor.outbox
                actor.outbox.clear()


def call_on_tick_python(actor: Actor, now: float) -> None:
    """The tick driver's action: `actor.on_tick(now)`."""
    actor.on_tick(now)


if compiled_module("drfemu.nodes._engine") is not None:  # typed by its stub, `_engine.pyi`
    from drfemu.nodes._engine import call_on_tick, deliver, fire_each
    ENGINE_IMPLEMENTATION = "C"
else:
    deliver, fire_each, call_on_tick = deliver_python, fire_each_python, call_on_tick_python
    ENGINE_IMPLEMENTATION = "Python"


class _Instant:
    __slots__ = ("deliveries", "periodic", "timers")

    def __init__(self) -> None:
        self.deliveries: list[tuple[int, Any]] = []
        self.periodic: list[Periodic] = []
        self.timers: list[tuple[Actor | None, Callable[[float], None]]] = []


def _creation_order(driver: Periodic) -> int:
    return driver.index


class Periodic:
    """One periodic driver of a runtime (see `Runtime.every`), virtual or real-time alike."""

    __slots__ = ("runtime", "index", "period_us", "actors", "members", "action", "hooks", "count", "fired",
                 "cancelled", "skips_idle")

    def __init__(self, runtime: Runtime, index: int, period_us: int, actors: list[Actor],
                 action: Callable[[Any, float], None] | None, hooks: list[Hook]) -> None:
        self.runtime = runtime
        self.index = index
        self.period_us = period_us
        self.actors = actors  # the members that are up, in order
        self.members = [a.id for a in actors]
        self.action = action
        self.hooks = hooks
        self.count = 0  # the number of the next (or current) firing
        self.fired = 0
        self.cancelled = False
        self.skips_idle = False  # the tick driver: actors whose `idle_tick` is true are not called

    def cancel(self) -> None:
        """Fire no more (a firing already due at the current instant is skipped too)."""
        self.cancelled = True

    def arm(self) -> None:
        self.count += 1
        self.runtime._instant(self.count * self.period_us).periodic.append(self)

    def fire(self, now: float) -> None:
        if self.cancelled:
            return
        self.fired += 1
        runtime = self.runtime
        action = self.action
        if action is not None:
            batch: list[tuple[int, Any]] | None = [] if runtime._batched() else None
            runtime._fire_each(self.actors, action, now, batch, runtime._flush, self.skips_idle)
            if batch:
                runtime._post(batch)
            if runtime._port:
                runtime._drain_port()
        runtime.timer_events += len(self.actors)
        for hook in self.hooks:
            hook(now, self.count)
        if not (runtime._stopped or self.cancelled):
            self.arm()


INSTANTS_PER_TURN = 256
"""The most instants a virtual runtime runs before it yields to its loop once (see `run`)."""


class Runtime:
    """Runs a set of actors on a virtual clock, as the coroutine `run()` on any asyncio loop.

    `hosted`: the ids of the actors this runtime runs (default: all); the others live in other
    processes (a live run's other workers): periodic drivers and actor timers skip them. `links`:
    where outboxes go instead of the emulated `network` (a live run's datagrams)."""

    def __init__(self, network: Network, actors: Sequence[Actor], trace: EventTrace | None = None, *,
                 hosted: Collection[int] | None = None, links: Links | None = None) -> None:
        for index, actor in enumerate(actors):
            if actor.id != index:
                raise ValueError(f"actor ids must be 0..n-1 in order; position {index} holds id {actor.id}")
        self.network = network
        self.actors: list[Actor] = list(actors)
        self.hosted: frozenset[int] | None = frozenset(hosted) if hosted is not None else None
        self._mailboxes: list[list[Any]] = [[] for _ in self.actors]
        self._port: list[Any] = []
        for actor in self._hosted_actors(self.actors):
            self._port += actor.port  # anything a node emitted or asked for before the run
            actor.port = self._port
        self.bus = EventBus()
        self._inline_drain = [type(actor).drain is Actor.drain for actor in self.actors]
        self._links = links
        if links is not None:
            self._flush = links.flush  # type: ignore[method-assign]  # outboxes leave as datagrams
        self.now_us = 0
        self.delivered = 0
        self.timer_events = 0
        self._stopped = False
        self._outcome: Any = None
        self._error: BaseException | None = None
        self._running = False
        self._instants: dict[int, _Instant] = {}
        self._due: list[int] = []  # the instants' times, a heap of ints
        self._woken: list[asyncio.Future[None]] = []  # `sleep` futures resolved by the current turn
        self._waiter: asyncio.Future[None] | None = None  # what `_pace` awaits, if it waits (a real clock)
        self._tick_hooks: list[Hook] = []
        self._ticks: Periodic | None = None
        self._drivers: list[Periodic] = []
        self.down: set[int] = set()  # crashed actors (see `crash`)
        self.trace = trace
        self._lane: Lane | None = None
        self._adopt: Callable[[Actor], None] | None = None
        self._fire_each: Callable[..., None] = fire_each  # a periodic driver's round (the lane's, with one)

    # -- the lane (issue 57) ----------------------------------------------------------------
    def moves_messages_itself(self) -> bool:
        """Does this runtime host every actor and move every message through its emulated network
        (not a live run's datagrams)? Only then can messages travel as a lane's rows."""
        return self._links is None and self.hosted is None

    def use_lane(self, lane: Lane, stands_for: dict[type, type], carried: Callable[[type], int],
                 adopt: Callable[[Actor], None]) -> None:
        """Let `lane` carry messages as rows while the network's latency is fixed. `stands_for`
        maps each mark's class to its message type and `carried(type)` gives the items the rows
        of that type carried (the tally's bytes); `adopt(actor)` lets an actor that restarts
        send and receive rows.

        The rows in flight are turned back into the messages they stand for before the network
        changes, and the lane is open only while the latency is fixed (`nodes.lane`): a run with
        faults moves message objects from its first fault on, exactly as without a lane."""
        if not self.moves_messages_itself():
            raise ValueError("a lane needs a runtime that hosts every actor and moves every message itself")
        self._lane, self._adopt, self._fire_each = lane, adopt, lane.fire
        self.network.use_rows(stands_for, carried, keep_lane_exact(lane, self._mailboxes, self._instants, stands_for))

    def _hosted_actors(self, actors: Iterable[Actor]) -> list[Actor]:
        hosted = self.hosted
        return [a for a in actors if hosted is None or a.id in hosted]

    # -- time -----------------------------------------------------------------------------
    @property
    def now(self) -> float:
        """Current time of the runtime in seconds."""
        return self.now_us / US_PER_S

    @property
    def stopped(self) -> bool:
        """Has the run ended (stopped, or a handler raised)?"""
        return self._stopped

    def _instant(self, at_us: int) -> _Instant:
        """The instant at `at_us`, made (and put in the heap) if new."""
        instant = self._instants.get(at_us)
        if instant is None:
            instant = self._instants[at_us] = _Instant()
            heapq.heappush(self._due, at_us)
        return instant

    async def run(self) -> Any:
        """Run instants in time order until `stop` (return its result) or a handler raises
        (raise it). Between turns of at most `INSTANTS_PER_TURN` instants — and right after an
        instant that ends a `sleep` — it yields to the loop once."""
        if self._running:
            raise RuntimeError("this runtime is already running")
        self._running = True
        due = self._due
        try:
            while not self._stopped:
                turn = await self._pace()
                if self._stopped:
                    break
                for _ in range(turn):
                    self._run_instant(heapq.heappop(due))
                    if self._stopped or not due or self._woken:
                        break
        finally:
            self._running = False
        if self._error is not None:
            raise self._error
        return self._outcome

    async def _pace(self) -> int:
        """Wait until the earliest instant is due and say how many may run before the next wait.
        The virtual clock: due at once, after yielding to the loop once."""
        self._woken.clear()
        await asyncio.sleep(0)
        if not self._due and not self._stopped:
            raise RuntimeIdle("the virtual clock is idle: nothing is scheduled and the run was not stopped")
        return INSTANTS_PER_TURN

    def sleep(self, delay: float) -> asyncio.Future[None]:
        """A future that the runtime resolves `delay` seconds of its time from now (a coroutine
        awaiting it runs at that time, before any later instant)."""
        future = asyncio.get_running_loop().create_future()

        def wake(now: float) -> None:
            if not future.done():
                future.set_result(None)
                self._woken.append(future)

        self.call_at(self.now + max(0.0, delay), wake)
        return future

    # -- scheduling -----------------------------------------------------------------------
    def call_at(self, at: float, callback: Callable[[float], None], actor: Actor | None = None) -> None:
        """Run `callback(now)` at time `at` (seconds); then flush `actor`'s outbox if given
        (an actor hosted elsewhere: not here)."""
        if actor is not None and self.hosted is not None and actor.id not in self.hosted:
            return
        at_us = max(to_us(at), self.now_us)
        self._instant(at_us).timers.append((actor, callback))

    def subscribe(self, event_type: type[E], handler: Callable[[E], None]) -> None:
        """Call `handler(event)` for every event of `event_type` a node emits, in emission order."""
        self.bus.subscribe(event_type, handler)

    def publish(self, event: object) -> None:
        """Hand an event of the run's environment (not of a node: a crash, a recovery) to its
        subscribers now, as if a node had emitted it."""
        if self.trace is not None:
            self.trace.record(self.now_us, "event", -1, event)
        self.bus.publish(event)

    def _drain_port(self) -> None:
        """Arm the wake-ups nodes asked for and publish their events."""
        items = self._port[:]
        self._port.clear()
        if self.trace is not None:
            self._trace_port(items)
        publish = self.bus.publish
        for item in items:
            cls = item.__class__
            if cls is WakeUp or cls is WakeAfter:
                actor = self.actors[item.actor]
                at_us = max(to_us(item.at), self.now_us) if cls is WakeUp else self.now_us + to_us(item.delay)
                self._instant(at_us).timers.append((actor, partial(actor.on_timer, item.key)))
            else:
                publish(item)

    def _trace_port(self, items: list[Any]) -> None:
        record, now_us = self.trace.record, self.now_us  # type: ignore[union-attr]
        for item in items:
            if item.__class__ is WakeUp:
                record(now_us, "wake", item.actor, (to_us(item.at), trace_form(item.key)))
            elif item.__class__ is WakeAfter:
                record(now_us, "wake", item.actor, (now_us + to_us(item.delay), trace_form(item.key)))
            else:
                record(now_us, "event", -1, item)

    def every(self, period: float, actors: Iterable[Actor] = (), action: Callable[[Any, float], None] | None = None,
              hooks: Sequence[Hook] = ()) -> Periodic:
        """Call `action(actor, now)` for each of `actors` (those hosted here), in order, every
        `period` seconds.

        A driver with no actors (and no action) only runs its hooks: an observer.

        The k-th firing is at exactly k · period (integer µs, never accumulated floats),
        the first one period after time 0; each actor's outbox is flushed right after its
        call, then `hooks(now, k)` run. Drivers due at the same instant fire after that
        instant's deliveries and before its one-off timers, in the order they were
        created, whatever their periods. Returns the driver (`fired` counts its firings).
        """
        period_us = to_us(period)
        if period_us <= 0:
            raise ValueError("a period must be at least 1 µs")
        actors = list(actors)
        if actors and action is None:
            raise ValueError("a periodic driver with actors needs an action")
        driver = Periodic(self, len(self._drivers) + 1, period_us, self._hosted_actors(actors), action, list(hooks))
        self._drivers.append(driver)
        driver.arm()
        return driver

    def start_ticks(self, period: float, tickers: Iterable[Actor]) -> Periodic:
        """Call `on_tick(now)` on `tickers` every `period` seconds (the allocation tick), skipping
        a ticker while its `idle_tick` is true (`Actor`)."""
        self._ticks = self.every(period, tickers, call_on_tick)
        self._ticks.hooks = self._tick_hooks  # shared, so hooks added later are seen
        self._ticks.skips_idle = True
        return self._ticks

    def add_tick_hook(self, hook: Hook) -> None:
        """Call `hook(now, tick_number)` after every tick (observers: stall checks, progress)."""
        self._tick_hooks.append(hook)

    def stop(self, result: Any = None) -> None:
        """Stop processing (nothing more is delivered or fired); `run()` returns `result`."""
        if not self._stopped:
            self._stopped = True
            self._outcome = result
        self._drivers.clear()  # they point back at the runtime: no cycle outlives the run
        self._rouse()

    def _rouse(self) -> None:
        """Wake `_pace` if it waits (something arrived, or the run stopped)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, error: BaseException) -> None:
        if not self._stopped:
            self._stopped = True
            self._error = error
        self._drivers.clear()

    # -- delivery -------------------------------------------------------------------------
    def _batched(self) -> bool:
        """Is every send of this instant due at one instant (a fixed latency, the emulated network)?
        Asked at each instant: a fault window may change the latency."""
        return self._links is None and self.network.fixed_us >= 0

    def _post(self, out: list[tuple[int, Any]]) -> None:
        """Send a batch, from any actors, over a network whose latency is fixed."""
        self.network.count(out)
        due = self.now_us + self.network.fixed_us
        instant = self._instants.get(due)
        if instant is None:
            instant = self._instant(due)
        instant.deliveries += out

    def _flush(self, actor: Actor) -> None:
        out = actor.outbox
        actor.outbox = []
        network = self.network
        if network.fixed_us >= 0:
            self._post(out)
            return
        network.count(out)
        now_us = self.now_us
        src = actor.id
        due_of = network.due
        instants = self._instants
        for item in out:
            due = due_of(src, item[0], item[1], now_us)
            if due < 0:
                continue
            instant = instants.get(due)
            if instant is None:
                instant = self._instant(due)
            instant.deliveries.append(item)

    def deliver_at(self, at: float, dst: int, msg: Any) -> None:
        """Put `msg` in actor `dst`'s mailbox at time `at` (not before now), bypassing the
        network: an input from the node's own machine (a task's exit), not counted as traffic.
        It joins that instant's deliveries after the messages already due then; an input for an
        actor that is down is lost (cause `down`)."""
        if self.hosted is not None and dst not in self.hosted:
            raise ValueError(f"actor {dst} is not hosted by this runtime")
        if dst in self.down:
            self.network.drop(msg, "down")
            return
        self._instant(max(to_us(at), self.now_us)).deliveries.append((dst, msg))

    def inject(self, actor: Actor) -> None:
        """Send what `actor` queued outside a handler (e.g. at start-up) now."""
        if actor.outbox:
            self._flush(actor)
        if self._port:
            self._drain_port()

    # -- crashes (issue 16) -----------------------------------------------------------------
    def crash(self, actor_id: int) -> None:
        """Actor `actor_id` crashes: it receives, sends and fires nothing more until `restart`.

        Everything on its way to it is lost (counted as dropped, cause `down`), inputs from its
        own machine included; its periodic calls and its wake-ups stop. Its object stays in
        `actors` (a harness may still read its counters) but is never called again.
        """
        if actor_id in self.down:
            return
        self.down.add(actor_id)
        self.network.set_down(actor_id, True)
        for instant in self._instants.values():
            if any(dst == actor_id for dst, _ in instant.deliveries):
                kept = []
                for item in instant.deliveries:
                    if item[0] == actor_id:
                        self.network.drop(item[1], "down")
                    else:
                        kept.append(item)
                instant.deliveries = kept
        self._mailboxes[actor_id] = []
        for driver in self._drivers:
            if actor_id in driver.members:
                driver.actors = [a for a in driver.actors if a.id != actor_id]

    def restart(self, actor: Actor) -> None:
        """A fresh `actor` takes the place of the crashed one with its id (it rejoins empty: what
        it knows came in its constructor). Periodic drivers call it where they called the old one."""
        actor_id = actor.id
        if actor_id not in self.down:
            raise ValueError(f"actor {actor_id} is not down")
        self.down.discard(actor_id)
        self.network.set_down(actor_id, False)
        self._port += actor.port
        actor.port = self._port
        self.actors[actor_id] = actor
        self._inline_drain[actor_id] = type(actor).drain is Actor.drain
        if self._adopt is not None:
            self._adopt(actor)
        for driver in self._drivers:
            if actor_id in driver.members:
                driver.actors = [self.actors[i] for i in driver.members if i not in self.down]

    def _run_instant(self, at_us: int) -> None:
        instant = self._instants.pop(at_us)
        if self._stopped:
            return
        try:
            self._process(instant, at_us)
        except Exception as error:  # noqa: BLE001 - `run` raises it where the run is awaited
            self._fail(error)

    def _process(self, instant: _Instant, at_us: int) -> None:
        self.now_us = at_us
        now = at_us / US_PER_S
        deliveries = instant.deliveries
        trace = self.trace
        if deliveries:
            if trace is not None:
                for dst, msg in deliveries if self._lane is None else self._lane.render(deliveries):
                    trace.record(at_us, "deliver", dst, msg)
            self.delivered += len(deliveries)
            # With a fixed latency every send of this instant is due at the same instant:
            # collect them in one batch (same order as flushing actor by actor).
            batch: list[tuple[int, Any]] | None = [] if self._batched() else None
            lane = self._lane  # an instant that carries overlay marks, the lane delivers itself (`nodes.lane`)
            if lane is None or batch is None or not lane.deliver(deliveries, self._mailboxes, self.actors,
                                                                 self._inline_drain, now, batch):
                deliver(deliveries, self._mailboxes, self.actors, self._inline_drain, now, batch, self._flush)
            if batch:
                self._post(batch)
            if self._port:
                self._drain_port()
        periodic = instant.periodic
        if periodic:
            if len(periodic) > 1:
                periodic.sort(key=_creation_order)
            for driver in periodic:
                if self._stopped:
                    return
                driver.fire(now)
        down = self.down
        for owner, callback in instant.timers:
            if self._stopped:
                return
            if owner is not None and (down and owner.id in down or self.actors[owner.id] is not owner):
                continue  # a wake-up of a crashed node, or of its earlier life
            if trace is not None:
                trace.record(at_us, "timer", owner.id if owner is not None else -1, describe_callback(callback))
            callback(now)
            self.timer_events += 1
            if owner is not None and owner.outbox:
                self._flush(owner)
            if self._port:
                self._drain_port()

    @property
    def pending_instants(self) -> int:
        return len(self._instants)
