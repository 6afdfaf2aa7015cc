"""Independent, named random streams derived from one root seed.

Every concern that draws random numbers asks for its own stream, so adding draws in one
place never shifts the numbers another place sees:

- run-level concerns (workload sampling, latency jitter, message loss, the gateway's draws)
  by name: `RandomStreams(seed).python("network/loss")`;
- each node by `(node id, name)`: `RandomStreams(seed).node(7)` is node 7's own
  `NodeStreams`, whose `python("overlay")` feeds its Cyclon and gradient choices and
  `python("walk")` its walk steps. One extra draw in node 7 never moves node 8's numbers,
  and a node in a process of its own, given only the root seed and its id, draws exactly
  what it would draw in the emulator.

A name maps to a child of a numpy `SeedSequence` through a stable CRC-32 of the name, never
through Python's salted `hash`; node streams have the spawn key `(NODE_KEY, node, crc)`, run
streams `(crc,)`, so the two families never coincide.
`python(...)` returns a `random.Random` (cheap scalar draws on hot paths; about 2.5 KB of
state, so a node creates its streams only when it first draws from them); `numpy(...)`
returns a `numpy.random.Generator` (vectorised sampling).
"""

from __future__ import annotations

import random
import zlib

import numpy as np

__all__ = ["NodeStreams", "RandomStreams"]

NODE_KEY = 0x6E6F6465  # "node": the first word of every node stream's spawn key


def _python(sequence: np.random.SeedSequence) -> random.Random:
    state = sequence.generate_state(4, dtype=np.uint64)
    return random.Random(int.from_bytes(state.tobytes(), "little"))


def _crc(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


class RandomStreams:
    """Factory of reproducible random streams keyed by `(root seed, name)`."""

    __slots__ = ("seed",)

    def __init__(self, seed: int) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = seed

    def _sequence(self, name: str) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.seed, spawn_key=(_crc(name),))

    def python(self, name: str) -> random.Random:
        """A `random.Random` for stream `name`."""
        return _python(self._sequence(name))

    def numpy(self, name: str) -> np.random.Generator:
        """A numpy `Generator` (PCG64) for stream `name`."""
        return np.random.Generator(np.random.PCG64(self._sequence(name)))

    def word(self, name: str) -> int:
        """A 64-bit seed for stream `name`, for a generator of another kind (the cycle-driven
        overlay's, `overlay.cycle.SplitMix64`)."""
        return int(self._sequence(name).generate_state(1, dtype=np.uint64)[0])

    def node(self, node: int, life: int = 0) -> NodeStreams:
        """Node `node`'s own streams; `life` > 0: those of its `life`-th restart after a crash
        (a node that rejoins empty draws afresh, not its first life's numbers again)."""
        return NodeStreams(self.seed, node, life)


class NodeStreams:
    """One node's streams, keyed by `(root seed, node id, name)` — and the life, after a
    restart — each made on first use."""

    __slots__ = ("seed", "node", "life", "_made")

    def __init__(self, seed: int, node: int, life: int = 0) -> None:
        self.seed = seed
        self.node = node
        self.life = life
        self._made: dict[str, random.Random] = {}

    def python(self, name: str) -> random.Random:
        """This node's `random.Random` for `name` (the same object on every call)."""
        rng = self._made.get(name)
        if rng is None:
            key = (NODE_KEY, self.node, _crc(name)) if not self.life else (NODE_KEY, self.node, _crc(name), self.life)
            sequence = np.random.SeedSequence(self.seed, spawn_key=key)
            rng = self._made[name] = _python(sequence)
        return rng
