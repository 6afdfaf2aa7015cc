"""The resource node of the distributed protocols: an overlay peer with a capacity that
allocates, driven by its protocol's rule (SPEC §3–4).

`ServerNode` owns what every distributed protocol shares: capacity and reservations, the
handshake's proposals, placement walks (`protocols.placement`), the users homed on it
(`protocols.homes`: their shares, saturation marks, the eq. 4.2 utility it keeps in its
gradient) and the wake-ups that retry a saturated user's walk. What to allocate, and when,
is its rule's (`protocols.rule.ServerRule`): the server calls the rule at every tick and
hands it the messages the rule declares handlers for.

It proposes tasks to their users, reserving the demand at once, so two proposals can never
oversubscribe it, and refuses (`CapacityViolation`) to propose what does not fit; an
`Accept` starts the task and reports `TaskAllocated`, a `Decline` gives the reservation
back. A task that ends (`TaskExit`) frees its demand, is reported as `TaskFinished` and
announced to its user (`TaskEnded`); a homed user's `UserShare` updates its record.
Everything it knows came in its constructor (its parameters, its own random streams), its
mailbox and its wake-ups; everything it does leaves as messages, events and counters.

With resilience on (`rto` > 0, a run with faults; `protocols.resilience`) it repeats a
proposal until the user answers, answers a repeated `Accept` with the start notice (never
starting a task twice), offers a task it already offered, runs or ran only once, repeats a
task's end until the user acknowledges it, acknowledges a task's request when it first
arrives (`RequestAck`), and sends each hop of a walk again until the next server acknowledges
it (`WalkAck`; that server acts on the first copy only). A home that sent a task out to be
placed and heard nothing of it within the timeout (its walk, the proposal or the answer was lost: the timeout
covers the longest walk) makes it idle again, so its rule places it again, waiting twice as
long after each further silence up to `PLACEMENT_BACKOFF` timeouts (`placement_timeouts`); a
silent retry of a user marked saturated is retried after the same wait (silence is not a
full cluster, so the wait does not double). A user's
repeated request for the same task only refreshes its share (`protocols.homes`).

Crashes (issue 16; the failure detector delivers `PeerDown`/`PeerUp`): a server drops a crashed
peer from its Cyclon and gradient views and from a fixed neighbour set (it rejoins the fixed
set when it comes back; the overlays find it again by gossip), and adopts a user it was not
the home of when that user's task arrives (`HomeUsers(resilient=True)`: the gateway re-homed it).
A server that rejoins after a crash is a new node: nothing homed, a fresh Cyclon view from the
bootstrap service, fresh random streams (`NodeStreams(life=…)`).

`server_class(rule)` is the node class of one protocol: `ServerNode` with the rule's message
handlers added to its dispatch table (made once per rule class).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drfemu.kernel.events import TaskAllocated, TaskFinished
from drfemu.kernel.messages import (
    Accept,
    Decline,
    EndAck,
    PeerDown,
    PeerUp,
    Proposal,
    ShareAck,
    TaskEnded,
    TaskExit,
    TaskRequest,
    TaskStarted,
    UserShare,
    WalkAck,
    WalkFailed,
    WalkTask,
    handles,
)
from drfemu.kernel.resources import CapacityViolation, Vector, fits, give, take
from drfemu.kernel.streams import NodeStreams
from drfemu.nodes.rule_dispatch import acknowledging, answer_entry, record_entry, rule_entry
from drfemu.nodes.wakes import PlacementTimeout, RepeatEnd, RepeatProposal, ResendHop, RetryWalk, ServerWake
from drfemu.nodes.overlay_peer import OverlayPeer
from drfemu.overlay.gradient import NEG_INF, Gradient
from drfemu.protocols.cluster import drfh_heuristic
from drfemu.protocols.devices import EMPTY, Devices
from drfemu.protocols.fragmentation import DemandMix
from drfemu.protocols.homes import HomeUser, HomeUsers
from drfemu.protocols.placement import FIRST_FIT, IN_ORDER, KEEP_ROOM, SCORED_BY_MIX, FitPlace, FitWalk
from drfemu.protocols.polls import Answer
from drfemu.protocols.room import room_score
from drfemu.protocols.resilience import HOP_TRIES, PLACEMENT_BACKOFF, Notices
from drfemu.protocols.rule import ServerRule
from drfemu.protocols.walks import fit_walk_step, walk_step

__all__ = ["PLACEMENT_COUNTERS", "ServerConfig", "ServerNode", "server_class"]

PLACEMENT_COUNTERS = ("local", "walks", "walk_hops", "walks_placed", "walks_failed", "saturation_marks", "retries",
                      "proposals", "declined", "fit_walks", "fit_hops", "fit_misses", "placement_timeouts",
                      "hop_resends")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """What every server of a distributed run is built from: the run's parameters, resolved for
    its cluster (`assembly.distributed.server_config` derives it from the validated
    run parameters). Times are seconds.

    `fit_candidates` > 0 asks for a walk that compares that many fitting servers, scored as
    `placement` says (`protocols.placement`): best-fit by the DRFH heuristic normalised with
    `scale` (1 / the cluster total of each resource), min-fragmentation by the fragmentation the
    task adds, keep-room by the room it costs (`protocols.room`), both for the demand mix the
    server knows (from the start: `known_mix`, (user, demand) pairs), in-order by the server's
    place in the cluster's order;
    `device_resource` ≥ 0 models that resource as devices (`protocols.devices`);
    `saturation_retry_cap` is the longest wait the saturation retry doubles to; `total`
    (the cluster's capacity) and `users_active` (False: finite users, counted once a task
    arrives) go to the server's `HomeUsers`; `rto` > 0 turns resilience on, with `prompt_rto` the
    first wait for an answer given on receipt (a walk hop's acknowledgement, a user's answer to a
    proposal, the acknowledgement of a task's end; 0: `rto`) and `rejoin_via` the bootstrap
    service a server whose Cyclon view empties asks again. `gradient_period` is
    None for protocols that run no gradient exchanges.
    """

    view_size: int
    cyclon_view: int
    shuffle_length: int
    walk_ttl: int
    tick: float
    gradient_period: float | None = None
    max_age: float = math.inf
    mark_saturated: bool = True
    saturation_retry: float = math.inf
    saturation_retry_cap: float = math.inf
    fit_candidates: int = 0
    placement: str = FIRST_FIT
    known_mix: tuple[tuple[int, Vector], ...] = ()
    device_resource: int = -1
    scale: Vector = ()
    gradient: Callable[..., Any] = Gradient
    total: Vector = ()
    users_active: bool = True
    rto: float = 0.0
    prompt_rto: float = 0.0
    rejoin_via: int = -1
    reconnect_every: int = 0
    idle_cyclon_every: int = 1
    idle_gradient_every: int = 1

    def overlay_rounds(self) -> list[tuple[float, Callable[[OverlayPeer, float], None]]]:
        """The overlay rounds a server of this config runs, each with its period: Cyclon's every
        tick — reconnecting to unanswered peers with faults (`OverlayPeer.healing_cyclon_round`),
        sparse while idle with `idle_cyclon_every` > 1 — and, where the protocol uses it, the
        gradient's every `gradient_period` (sparse while idle with `idle_gradient_every` > 1)."""
        if self.rto > 0 and self.reconnect_every:
            cyclon = OverlayPeer.healing_cyclon_round
        elif self.idle_cyclon_every > 1:
            cyclon = OverlayPeer.sparse_cyclon_round
        else:
            cyclon = OverlayPeer.cyclon_round
        rounds: list[tuple[float, Callable[[OverlayPeer, float], None]]] = [(self.tick, cyclon)]
        if self.gradient_period is not None:
            rounds.append((self.gradient_period, OverlayPeer.sparse_gradient_round if self.idle_gradient_every > 1
                           else OverlayPeer.gradient_round))
        return rounds


class ServerNode(OverlayPeer):
    """A server that proposes tasks to users and places them locally or by a walk."""

    __slots__ = ("capacity", "free", "rule", "homes", "walk_ttl", "neighbors", "placement", "fit_candidates", "scale",
                 "rto", "prompt_rto", "notices", "mix", "scoring", "_streams", "_reserved", "_running",
                 "_ended", "_fixed", "_silences", "_hops", "_heard", "_heard_order", "acknowledged", "devices",
                 "_held_devices", "published", "room_version")

    def __init__(self, actor_id: int, capacity: Vector, rule: ServerRule, homed: Mapping[int, float],
                 streams: NodeStreams, config: ServerConfig) -> None:
        """`homed` maps each user homed here to its task share `s_i`; `streams` are this node's own;
        everything else comes from the run's `config`, the same for every server."""
        super().__init__(actor_id, config.view_size, config.cyclon_view, config.shuffle_length,
                         streams.python("overlay"), NEG_INF, config.max_age, config.gradient)
        self.rejoin_via = config.rejoin_via
        self.feeds_gradient = config.gradient_period is not None  # no gradient rounds: nothing reads it
        self.reconnect_every = config.reconnect_every
        self.idle_cyclon_every = config.idle_cyclon_every
        self.idle_gradient_every = config.idle_gradient_every
        self.capacity = capacity
        self.free = list(capacity)
        r = config.device_resource
        self.devices = Devices(r, capacity[r]) if r >= 0 else None  # the device model (`protocols.devices`)
        self._held_devices: dict[tuple[int, int], tuple[int, ...]] = {}  # ... and the devices each task holds
        self.rule = rule
        self.homes = HomeUsers(homed, config.mark_saturated, config.saturation_retry, config.total,
                               config.users_active, resilient=config.rto > 0, retry_cap=config.saturation_retry_cap)
        self.walk_ttl = config.walk_ttl
        self.neighbors: list[int] = []  # a fixed neighbour set, for rules that use one
        self.placement = dict.fromkeys(PLACEMENT_COUNTERS, 0)
        self.fit_candidates = config.fit_candidates
        self.scale = config.scale
        self.scoring = config.placement  # what a fitting server's score is (`_fit_score`)
        scored = config.placement in SCORED_BY_MIX
        self.mix = DemandMix(config.scale, config.known_mix) if scored else None  # what it scores by
        self._streams = streams  # its "walk" stream is made at the node's first walk
        self._reserved: dict[tuple[int, int], Vector] = {}
        self._running: dict[tuple[int, int], Vector] = {}
        self._ended: set[tuple[int, int]] = set()  # with resilience on: tasks that ran here and ended
        self.rto = config.rto
        self.prompt_rto = config.prompt_rto or config.rto
        self.notices = Notices(self.prompt_rto)  # proposals and end notices awaiting an answer (resilience on)
        self._silences: dict[int, tuple[int, int]] = {}  # user -> (task, placements timed out in a row)
        self._hops: dict[ResendHop, tuple[WalkTask | FitWalk, int]] = {}  # sent, unacknowledged
        self._heard: set[tuple[Any, ...]] = set()  # the walk copies heard lately (resilience on) ...
        self._heard_order: deque[tuple[float, tuple[Any, ...]]] = deque()  # ... with when to forget each
        self.acknowledged: dict[int, int] = {}  # user -> the task whose request it acknowledged last
        self.published: dict[type, tuple[Any, ...]] = {}  # a poll's request type -> the replies it gets (`republish`)
        self.room_version = 0  # moves whenever what `fits` reads (free resources, devices) changes
        self.gradient.set_utility(self.homes.utility())

    def start(self, neighbors: Sequence[int] = ()) -> None:
        """Set the fixed neighbour set the bootstrap drew (if the protocol uses one) and start the rule."""
        self.neighbors = list(neighbors)
        self._fixed = tuple(neighbors)
        self.rule.start(self)

    def counters(self) -> dict[str, int]:
        """The rule's figures for the result's `overlay` section."""
        return self.rule.counters()

    # -- what the rule calls --------------------------------------------------------------
    def peers(self) -> list[int]:
        """The servers in this node's Cyclon view: a fresh random sample of the others."""
        return self.cyclon.neighbors()

    def stream(self, name: str) -> random.Random:
        """This node's own random stream `name` (for rules that draw)."""
        return self._streams.python(name)

    def fits(self, demand: Vector) -> bool:
        """Does `demand` fit in this server's free capacity (and devices, in the device model)?
        What it reads changes only where `room_version` moves."""
        if not fits(demand, self.free, self.capacity):
            return False
        return self.devices is None or self.devices.fits(demand[self.devices.resource])

    def smallest_task_share(self) -> float:
        """The smallest share of the cluster that one task takes among the demands this server
        has seen: its homed users' latest tasks and, with a scored placement (keep-room,
        min-fragmentation), the mix it scores by — every walk's that visited it, and the mix it
        was given. `inf` before it has seen any. Decision: a task that asks nothing (share 0) is
        left out, so one such task cannot shrink a bound built on this to nothing."""
        smallest = min((r.task_share for _, r in self.homes if r.task_share > 0), default=math.inf)
        if self.mix is not None and self.mix.demands:
            shares = self.mix.arrays()[2]
            positive = shares[shares > 0]
            if len(positive):
                smallest = min(smallest, float(positive.min()))
        return smallest

    def republish(self) -> None:
        """The rule's published state may have changed (`protocols.polls`); also called as free resources change."""
        self.published.clear()

    def propose(self, user: int, task: int, demand: Vector) -> None:
        """Reserve `demand` here and offer the task to its user."""
        key = (user, task)
        if self.rto and (key in self._reserved or key in self._running or key in self._ended):
            return  # a repeated request or walk: the offer stands (and is repeated), or the task ran here
        if not self.fits(demand):
            raise CapacityViolation(f"server {self.id}: proposing task {task} of user {user} needing {demand} "
                                    f"with only {tuple(self.free)} free")
        if self.devices is not None:
            amount = demand[self.devices.resource]
            chosen = self.devices.choose(amount)
            self.devices.take(amount, chosen)
            self._held_devices[key] = chosen
        take(self.free, demand)
        self.room_version += 1
        self.republish()
        self._reserved[(user, task)] = demand
        self.placement["proposals"] += 1
        self.send(user, Proposal(task, self.id))
        if self.rto:
            notice = RepeatProposal(user, task)
            self.wake_after(self.notices.add(notice, {user}), notice)

    def allocate(self, user: int, record: HomeUser) -> None:
        """Allocate a homed user's pending task: place it here or send it walking."""
        task = record.pending
        assert task is not None and not record.busy, "allocate() needs an idle user"
        record.busy = True
        if self.rto:
            silent = self._silences.get(user)
            k = silent[1] if silent is not None and silent[0] == task.task else 0
            self.wake_after(self.rto * min(2 ** k, PLACEMENT_BACKOFF), PlacementTimeout(user, task.task))
        self.place(user, task.task, task.demand, self.id)

    def place(self, user: int, task: int, demand: Vector, home: int) -> None:
        """Place a task this server decided to allocate: first-fit, here if it fits, else by a
        walk; or best-fit, by a walk that starts here (`protocols.placement`)."""
        if self.fit_candidates:
            self.placement["fit_walks"] += 1
            self._fit_step(FitWalk(user, task, demand, home, 0, (self.id,), (), -1, float("inf"), self.fit_candidates))
        elif self.fits(demand):
            self.placement["local"] += 1
            self.propose(user, task, demand)
        else:
            self.placement["walks"] += 1
            self._step(WalkTask(user, task, demand, home, 0, (self.id,), ()))

    def fix_neighbors(self, neighbors: Sequence[int], now: float) -> None:
        """Fix the neighbour set and stop starting gradient exchanges (ddrf-gradient's freeze)."""
        self.neighbors = list(neighbors)
        self.gossip_gradient = False

    def thaw_neighbors(self) -> None:
        """Start gradient exchanges again (ddrf-gradient's thaw, after a failure changed what the
        fixed neighbour set should be); the neighbour set stands until the rule fixes a new one."""
        self.gossip_gradient = True

    # -- the handshake --------------------------------------------------------------------
    @handles(Accept)
    def on_accept(self, msg: Accept, now: float) -> None:
        key = (msg.user, msg.task)
        if self.rto:
            self.notices.drop(RepeatProposal(msg.user, msg.task))
            if key not in self._reserved:
                if key in self._running:
                    self.send(msg.user, TaskStarted(msg.task, self.id))  # the start notice was lost
                return
        demand = self._reserved.pop(key)
        self._running[key] = demand
        self.emit(TaskAllocated(now, self.id, msg.user, msg.task, demand, self._held_devices.get(key, EMPTY)))
        self.send(msg.user, TaskStarted(msg.task, self.id))

    @handles(Decline)
    def on_decline(self, msg: Decline, now: float) -> None:
        key = (msg.user, msg.task)
        if self.rto:
            self.notices.drop(RepeatProposal(msg.user, msg.task))
            if key not in self._reserved:
                return  # a repeated answer
        demand = self._reserved.pop(key)
        give(self.free, demand)
        self.room_version += 1
        self.republish()
        if self.devices is not None:
            self.devices.give(demand[self.devices.resource], self._held_devices.pop(key))
        self.placement["declined"] += 1

    @handles(TaskExit)
    def on_task_exit(self, msg: TaskExit, now: float) -> None:
        demand = self._running.pop((msg.user, msg.task))
        give(self.free, demand)
        self.room_version += 1
        self.republish()
        if self.devices is not None:
            self.devices.give(demand[self.devices.resource], self._held_devices.pop((msg.user, msg.task)))
        if not self._running and not self._reserved:
            self.free = list(self.capacity)  # no rounding residue once nothing runs or is reserved
            if self.devices is not None:
                self.devices.reset()
        self.emit(TaskFinished(now, self.id, msg.user, msg.task, demand))
        self.send(msg.user, TaskEnded(msg.user, msg.task, self.id))
        if self.rto:
            self._ended.add((msg.user, msg.task))
            notice = RepeatEnd(msg.user, msg.task)
            self.wake_after(self.notices.add(notice, {msg.user}), notice)

    @handles(EndAck)
    def on_end_ack(self, msg: EndAck, now: float) -> None:
        self.notices.ack(RepeatEnd(msg.user, msg.task), msg.sender)

    # -- crashes --------------------------------------------------------------------------
    @handles(PeerDown)
    def on_peer_down(self, msg: PeerDown, now: float) -> None:
        peer = msg.peer
        self.forget_peer(peer)
        if peer in self.neighbors:
            self.neighbors.remove(peer)
        self.rule.on_peer_down(self, peer)

    @handles(PeerUp)
    def on_peer_up(self, msg: PeerUp, now: float) -> None:
        """A peer rejoined, empty: it goes back into a fixed neighbour set it was in, and every
        homed user marked saturated retries its walk now (there is new room)."""
        if msg.peer in self._fixed and msg.peer not in self.neighbors:
            self.neighbors = [n for n in self._fixed if n in self.neighbors or n == msg.peer]
        for user, task in self.homes.room_appeared():
            self.wake_at(now, RetryWalk(user, task))

    # -- homed users ----------------------------------------------------------------------
    @handles(UserShare)
    def on_user_share(self, msg: UserShare, now: float) -> None:
        if self.rto and not msg.waiting:
            self.send(msg.user, ShareAck(msg.user, self.id))
        if self.homes.share_reported(msg):
            self._utility_changed(now)

    @handles(TaskRequest)
    def on_task_request(self, msg: TaskRequest, now: float) -> None:
        if self.mix is not None:
            self.mix.note(msg.user, msg.demand)
        self.homes.task_arrived(msg)
        self.idle_tick = False  # the user may be homed here only now (re-homed after a crash): the tick decides again
        self._utility_changed(now)

    @handles(WalkFailed)
    def on_walk_failed(self, msg: WalkFailed, now: float) -> None:
        newly, retry_at = self.homes.walk_failed(msg.user, msg.task, now)
        if newly:
            self.placement["saturation_marks"] += 1
            self._utility_changed(now)
        if retry_at is not None:
            self.wake_at(retry_at, RetryWalk(msg.user, msg.task))

    def _utility_changed(self, now: float) -> None:
        utility = self.homes.utility()
        if utility != self.gradient.utility:
            self.gradient.set_utility(utility)
            self.rule.on_utility(self, now)

    def on_timer(self, key: ServerWake, now: float) -> None:
        """A saturated user's retry is due: walk again if it is still wanted; or (resilience on)
        a placement went silent, or a proposal, an end notice or a walk hop is still unanswered."""
        match key:
            case RetryWalk(user=user, task=task):
                if self.homes.retry_due(user, task):
                    self.placement["retries"] += 1
                    self.allocate(user, self.homes.records[user])
            case PlacementTimeout(user=user, task=task):
                self._placement_silent(user, task, now)
            case RepeatProposal() | RepeatEnd():
                self._repeat(key, now)
            case ResendHop():
                self._resend_hop(key)

    def _placement_silent(self, user: int, task: int, now: float) -> None:
        record = self.homes.records.get(user)
        if record is None or not record.busy or record.pending is None or record.pending.task != task:
            return  # placed (the user's next task is here), failed (WalkFailed came), or re-placed
        silent = self._silences.get(user)
        self._silences[user] = (task, silent[1] + 1 if silent is not None and silent[0] == task else 1)
        self.placement["placement_timeouts"] += 1
        if record.saturated:  # a saturation retry went silent: the retries go on, at the same wait
            retry_at = self.homes.walk_went_silent(user, task, now)
            if retry_at is not None:
                self.wake_at(retry_at, RetryWalk(user, task))
        else:
            record.busy = False

    def _repeat(self, key: RepeatProposal | RepeatEnd, now: float) -> None:
        user, task = key.user, key.task
        proposal = key.__class__ is RepeatProposal
        if proposal and (user, task) not in self._reserved:
            self.notices.drop(key)
            return
        due = self.notices.due(key)
        if due is None:
            return
        for party in due[0]:
            self.send(party, Proposal(task, self.id) if proposal else TaskEnded(user, task, self.id))
        self.wake_after(due[1], key)

    # -- walks ----------------------------------------------------------------------------
    @handles(WalkTask)
    def on_walk(self, msg: WalkTask, now: float) -> None:
        if self.rto and not self._first_copy(msg, now):
            return
        if self.fits(msg.demand):
            self.placement["walks_placed"] += 1
            self.propose(msg.user, msg.task, msg.demand)
        else:
            self._step(msg)

    @handles(FitWalk)
    def on_fit_walk(self, msg: FitWalk, now: float) -> None:
        if self.rto and not self._first_copy(msg, now):
            return
        self._fit_step(msg)

    @handles(WalkAck)
    def on_walk_ack(self, msg: WalkAck, now: float) -> None:
        self._hops.pop(ResendHop(msg.user, msg.task, msg.hops, msg.sender), None)

    @handles(FitPlace)
    def on_fit_place(self, msg: FitPlace, now: float) -> None:
        self._take(msg)

    def _take(self, msg: FitPlace) -> None:
        """The best-fit walk chose this server: propose, or walk on first-fit if the room went."""
        if self.fits(msg.demand):
            self.placement["walks_placed"] += 1
            self.propose(msg.user, msg.task, msg.demand)
        else:
            self.placement["fit_misses"] += 1
            self._step(WalkTask(msg.user, msg.task, msg.demand, msg.home, 0, (self.id,), ()))

    def _fit_step(self, walk: FitWalk) -> None:
        h = self._fit_score(walk.user, walk.demand) if self.fits(walk.demand) else None
        dst, message = fit_walk_step(walk, self.id, h, self.cyclon.neighbors(), self.walk_ttl,
                                     self._streams.python("walk"))
        if message.__class__ is FitPlace:
            if dst == self.id:
                self._take(message)
                return
            if self.rto:  # the choice goes as a last hop with nothing left to gather, acknowledged like every hop
                message = FitWalk(walk.user, walk.task, walk.demand, walk.home, walk.hops + 1, walk.visited + (dst,),
                                  walk.frontier, dst, math.inf, 0)
        self.placement["walks_failed" if message.__class__ is WalkFailed else "fit_hops"] += 1
        self._send_step(dst, message)

    def _fit_score(self, user: int, demand: Vector) -> float:
        """A fitting server's score for a best-fit walk (lower is better): DRFH's heuristic, or
        the fragmentation the task adds or the room it costs (`protocols.room`) for the demand mix
        this server knows — which the walk's task joins (a walk carries its user's demand to every
        server it visits); or, in order, the server's id (its place in the workload's list)."""
        if self.scoring == IN_ORDER:
            return float(self.id)
        if self.mix is None:
            return drfh_heuristic(demand, self.free, self.scale)
        self.mix.note(user, demand)
        if self.scoring == KEEP_ROOM:
            mix, _, shares = self.mix.arrays()
            return room_score(demand, self.free, self.capacity, mix, shares, self.scale, self.devices)
        return self.mix.delta(demand, self.free, self.capacity, self.devices)

    def _step(self, walk: WalkTask) -> None:
        dst, message = walk_step(walk, self.cyclon.neighbors(), self.walk_ttl, self._streams.python("walk"))
        self.placement["walks_failed" if message.__class__ is WalkFailed else "walk_hops"] += 1
        self._send_step(dst, message)

    def _send_step(self, dst: int, message: WalkTask | FitWalk | FitPlace | WalkFailed) -> None:
        """Send a walk's next message; with resilience on, keep a hop (`WalkTask`, `FitWalk`) to
        send again until `dst` acknowledges it. Decision: on 20 servers at 20 % loss, a walk of
        20 hops and its failure report all arrived once in 108 walks (0.8^21), so a user whose
        task fits nowhere was never marked saturated, stayed the lowest and held the gradient's
        centre for good; with acknowledged hops only the last message (`WalkFailed`) is exposed,
        and the home's placement timeout covers it (a best-fit choice goes as a hop, `_fit_step`)."""
        self.send(dst, message)
        if self.rto and (message.__class__ is WalkTask or message.__class__ is FitWalk):
            hop: Any = message
            key = ResendHop(hop.user, hop.task, hop.hops, dst)
            self._hops[key] = (hop, 1)
            self.wake_after(self.prompt_rto, key)

    def _resend_hop(self, key: ResendHop) -> None:
        kept = self._hops.get(key)
        if kept is None:
            return  # acknowledged
        hop, sent = kept
        if sent >= HOP_TRIES:
            del self._hops[key]  # given up: the home's placement timeout re-places the task
            return
        self._hops[key] = (hop, sent + 1)
        self.placement["hop_resends"] += 1
        self.send(key.dst, hop)
        self.wake_after(self.prompt_rto * 2 ** sent, key)

    def _first_copy(self, hop: WalkTask | FitWalk, now: float) -> bool:
        """Acknowledge a walk hop to the server that sent it; True the first time this copy of the
        walk is heard. A walk is identified by its task, path and frontier, which a re-placement
        of the same task, drawn afresh from changed views, does not repeat; a copy is remembered
        for as long as its sender may send it again (`HOP_TRIES` doubling waits), and several
        walks of one user may be out at once (a re-placed task, the user's next one), so a copy
        acted on twice would fork the walk, and every fork fork again."""
        self.send(hop.visited[-2], WalkAck(hop.user, hop.task, hop.hops, self.id))
        heard, order = self._heard, self._heard_order
        while order and order[0][0] <= now:
            heard.discard(order.popleft()[1])
        copy = (hop.user, hop.task, hop.hops, hop.visited, hop.frontier)
        if copy in heard:
            return False
        heard.add(copy)
        order.append((now + self.prompt_rto * 2 ** (HOP_TRIES + 1), copy))
        return True

    # -- the tick -------------------------------------------------------------------------
    def on_tick(self, now: float) -> None:
        self.rule.on_tick(self, now)


_SERVER_CLASSES: dict[type[ServerRule], type[ServerNode]] = {}


def server_class(rule: type[ServerRule]) -> type[ServerNode]:
    """The node class of servers run by `rule`, made once per rule: the rule's handlers join the
    dispatch table (a rule's handler for a message the server also handles, such as `TaskRequest`, wins)."""
    made = _SERVER_CLASSES.get(rule)
    if made is not None:
        return made
    cls: type[ServerNode] = type(f"{rule.__name__}Server", (ServerNode,), {"__slots__": (), "__module__": __name__})
    dispatch = {**ServerNode.DISPATCH, **{t: rule_entry(h) for t, h in rule.HANDLERS.items()}}
    dispatch[TaskRequest] = acknowledging(dispatch[TaskRequest])
    for poll in rule.POLLS:  # `protocols.polls`
        if isinstance(poll, Answer):
            kind, entry = poll.request, answer_entry(poll.replies, poll.keep)
        else:
            kind, entry = poll.reply, record_entry(poll.table, poll.field)
        if kind in dispatch:
            raise TypeError(f"{rule.__name__} declares a poll on {kind.__name__}, which its server already handles")
        dispatch[kind] = entry
    cls.DISPATCH = dispatch  # set after the class is made: making it collects the dispatch of its own handlers
    if rule.NODE_TICK is not None:  # the rule's tick in C, without the node's frame (`ServerNode.on_tick`)
        cls.on_tick = rule.NODE_TICK(cls)  # type: ignore[method-assign]
    _SERVER_CLASSES[rule] = cls  # (`nodes.actor`)
    return cls
