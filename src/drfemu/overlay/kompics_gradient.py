"""The Kompics Toolbox gradient (`--gradient kompics`), as pure state with `Gradient`'s interface.

Read from `Decentrify/KompicsToolbox`, `gradient-core` (`GradientComp`, `util/GradientView`,
`util/GradientPreferenceComparator`, `ProbabilitiesHelper.getSoftMaxVal`); the thesis's runs
used this component. Where it differs from our T-Man gradient (`overlay.gradient`):

- **Preference** (relative to this node's utility `u₀`): a node of *equal* utility is most
  preferred; of two above `u₀` the lower (closer), of two below the higher (closer); across
  sides the higher. Utilities are not made a total order: equal utilities are not ordered by
  id (we order them by id only to make the sort deterministic; Kompics' is hash order).
- **Partner**: the view sorted by this node's preference, an index drawn by softmax over the
  rank positions, weight `exp((n + 1 − i) / T)` for position `i` of `n` (`--softmax-temperature
  T`; Kompics' reference value 500 is almost uniform for views of tens, a small `T` almost
  always picks the most preferred neighbour).
- **Exchange**: the `--gradient-shuffle` entries of the view most preferred *by the partner*
  (judged from the partner's descriptor), plus the sender's own descriptor; the partner
  answers the same way for the sender, then merges.
- **Merge**, at every batch received (exchanges and peer-sampling samples): the younger of two
  descriptors of a node is kept; then the *single oldest* entry is dropped if it is at least
  `max_age` old; then the least preferred entries go until `P` are left.
- **Timeout**: a partner that has not answered when the next exchange starts is removed from
  the view, and its late answer is ignored. Decision: Kompics arms a timeout of half the
  shuffle period; ours is the next period, which needs no timer of its own and differs only
  in when a silent partner is dropped (with latencies below half a period, never).

Ages are descriptor stamps against this node's clock (the T-Man gradient's freshness), so
"older than `max_age`" is Kompics' `age ≥ oldThreshold` with the age counted in seconds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

from drfemu.overlay.gradient import NEG_INF, OwnDescriptor, acknowledges, validation_set
from drfemu.overlay.messages import Descriptor, GradientReply, GradientShuffle

__all__ = ["KompicsGradient", "preference_key", "softmax_index"]


def preference_key(base: float, descriptor: Descriptor) -> tuple[int, float, int]:
    """Sort key of Kompics' preference relative to utility `base`: most preferred first."""
    utility, node = descriptor[0], descriptor[1]
    if utility == base:
        return (0, 0.0, node)
    if utility > base:
        return (1, utility, node)
    return (2, -utility, node)


def softmax_index(size: int, rng: random.Random, temperature: float) -> int:
    """`ProbabilitiesHelper.getSoftMaxVal`: an index into a list sorted most preferred first,
    position `i` weighted `exp((size + 1 − i) / temperature)`."""
    draw = rng.random()
    top = (size + 1) / temperature
    weights = [math.exp((size + 1 - i) / temperature - top) for i in range(size)]  # shifted: no overflow
    total = sum(weights)
    running = 0.0
    for i, weight in enumerate(weights):
        running += weight
        if running / total >= draw:
            return i
    return size - 1


class KompicsGradient(OwnDescriptor):
    """The Kompics gradient view of node `me`: at most `size` (P) descriptors."""

    __slots__ = ("me", "size", "rng", "utility", "max_age", "temperature", "shuffle_size", "timeouts", "_clock",
                 "_view", "_partner")

    def __init__(self, me: int, size: int, rng: random.Random, utility: float = NEG_INF,
                 max_age: float = float("inf"), *, temperature: float = 500.0, shuffle_size: int = 0) -> None:
        """`shuffle_size` 0 sends half the view, rounded up (Kompics' reference: 5 of 10)."""
        if size < 1:
            raise ValueError("the gradient view size P must be at least 1")
        if not max_age > 0 or not temperature > 0:
            raise ValueError("the gradient's maximum age and softmax temperature must be positive")
        self.me = me
        self.size = size
        self.rng = rng
        self.utility = utility
        self.max_age = max_age
        self.temperature = temperature
        self.shuffle_size = shuffle_size or -(-size // 2)
        self.timeouts = 0  # partners removed for not answering
        self._clock = 0.0
        self._own: Descriptor = (utility, me, NEG_INF)
        self._view: dict[int, Descriptor] = {}
        self._partner = -1  # the partner whose answer is awaited

    # -- inputs ---------------------------------------------------------------------------
    def set_utility(self, utility: float) -> None:
        self.utility = utility

    def offer(self, descriptors: Iterable[Descriptor]) -> None:
        """Peer-sampling samples, merged at once (Croupier samples in Kompics)."""
        self._merge(descriptors)

    def forget(self, node: int) -> None:
        """Drop `node` from the view (a failure detector says it crashed)."""
        self._view.pop(node, None)
        if self._partner == node:
            self._partner = -1

    # -- reading --------------------------------------------------------------------------
    @property
    def view(self) -> list[Descriptor]:
        """The view, most preferred first."""
        base = self.utility
        return sorted(self._view.values(), key=lambda d: preference_key(base, d))

    def believes_centre(self, strict: bool = False) -> bool:
        """No neighbour above this node: by utility alone with `strict` (Kompics' `isTop` lets
        ties pass the same way Algorithm 6 does), else in the id-broken total order."""
        if not self._view:
            return True
        top = max(self._view.values())
        return top[0] <= self.utility if strict else top < (self.utility, self.me)

    def members(self) -> frozenset[int]:
        return frozenset(self._view)

    def validation_set(self) -> tuple[int, frozenset[int]]:
        return validation_set(self.me, list(self._view.values()))

    def acknowledges(self, proposed: frozenset[int]) -> bool:
        return acknowledges(self._view.values(), proposed)

    def peek(self) -> list[Descriptor]:
        return self.view

    # -- the exchange ---------------------------------------------------------------------
    def initiate(self, now: float) -> tuple[int, GradientShuffle] | None:
        """Drop a partner that never answered, then start an exchange with a softmax-chosen one."""
        self._clock = now
        if self._partner >= 0:
            if self._view.pop(self._partner, None) is not None:
                self.timeouts += 1
            self._partner = -1
        if not self._view:
            return None
        view = self.view
        partner = view[softmax_index(len(view), self.rng, self.temperature)]
        self._partner = partner[1]
        return partner[1], GradientShuffle((self.descriptor(now), *self._for(partner)))

    def answer(self, request: GradientShuffle, now: float) -> GradientReply:
        """Answer with the entries the requester prefers, then merge the request."""
        self._clock = now
        reply = GradientReply((self.descriptor(now), *self._for(request.descriptors[0])))
        self._merge(request.descriptors)
        return reply

    def complete(self, reply: GradientReply) -> None:
        """Merge the awaited partner's answer; a late one (after its timeout) is ignored."""
        if reply.descriptors[0][1] != self._partner:
            return
        self._partner = -1
        self._merge(reply.descriptors)

    def _for(self, partner: Descriptor) -> list[Descriptor]:
        """The `shuffle_size` entries of the view most preferred by `partner` (never itself)."""
        base, node = partner[0], partner[1]
        ranked = sorted((d for d in self._view.values() if d[1] != node), key=lambda d: preference_key(base, d))
        return ranked[: self.shuffle_size]

    def _merge(self, descriptors: Iterable[Descriptor]) -> None:
        view, me = self._view, self.me
        for d in descriptors:
            node = d[1]
            if node == me:
                continue
            held = view.get(node)
            if held is None or d[2] > held[2]:
                view[node] = d
        if view:
            oldest = min(view.values(), key=lambda d: (d[2], d[1]))
            if oldest[2] <= self._clock - self.max_age:
                del view[oldest[1]]
        if len(view) > self.size:
            base = self.utility
            for d in sorted(view.values(), key=lambda d: preference_key(base, d))[self.size:]:
                del view[d[1]]
