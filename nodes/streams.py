"""Independent, named random streams derived from one root seed.

Every concern that draws random numbers (workload sampling, latency jitter, message loss,
each node's protocol choices, faults) asks for its own stream by name, so adding draws in
one place never shifts the numbers another place sees. A name maps to a child of a numpy
`SeedSequence` through a stable CRC-32 of the name, never through Python's salted `hash`.

`python(name)` returns a `random.Random` (cheap scalar draws on hot paths);
`numpy(name)` returns a `numpy.random.Generator` (vectorised sampling).
"""

from __future__ import annotations

import random
import zlib

import numpy as np

__all__ = ["RandomStreams"]


class RandomStreams:
    """Factory of reproducible random streams keyed by `(root seed, name)`."""

    __slots__ = ("seed",)

    def __init__(self, seed: int) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = seed

    def _sequence(self, name: str) -> np.random.SeedSequence:
        key = zlib.crc32(name.encode("utf-8"))
        return np.random.SeedSequence(self.seed, spawn_key=(key,))

    def python(self, name: str) -> random.Random:
        """A `random.Random` for stream `name`."""
        state = self._sequence(name).generate_state(4, dtype=np.uint64)
        return random.Random(int.from_bytes(state.tobytes(), "little"))

    def numpy(self, name: str) -> np.random.Generator:
        """A numpy `Generator` (PCG64) for stream `name`."""
        return np.random.Generator(np.random.PCG64(self._sequence(name)))
