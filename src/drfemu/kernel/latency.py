"""Time and latency: durations with units, and the latency models of the emulated network.

Virtual time inside the runtime is an integer number of microseconds (`US_PER_S` a second),
so latency models return whole microseconds and delivery instants compare exactly. This
module is pure (no actor, no C): the run-parameter schema parses durations and latency
specs with it without loading the runtime.
"""

from __future__ import annotations

import math
import random
import re
from typing import Protocol

from drfemu.kernel.errors import InputError

__all__ = ["US_PER_S", "ConstantLatency", "LatencyModel", "PairLatency", "UniformLatency", "parse_duration",
           "parse_latency", "to_us"]

US_PER_S = 1_000_000


def to_us(seconds: float) -> int:
    """Seconds to whole microseconds (rounded)."""
    return int(round(seconds * US_PER_S))


_ZERO = re.compile(r"^\s*0*\.?0+\s*$")
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|ms|us|µs|min|h|d)\s*$")
_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Parse '1ms', '0.5 s', '250us', '10min', '2h' or '116d' into seconds. A unit is required: a
    bare '100' is refused rather than guessed; only zero needs none ('0' is 0 s in any unit)."""
    if _ZERO.match(text):
        return 0.0
    match = _DURATION.match(text)
    if not match:
        hint = " (a unit is required)" if re.fullmatch(r"\s*[0-9.eE+-]+\s*", text) else ""
        raise InputError(f"not a duration: {text!r}{hint}; use e.g. 100ms, 0.1s, 250us")
    value = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(value) or value > 1e12:
        raise InputError(f"duration {text!r} is out of range (at most 1e12 s)")
    return value


class LatencyModel(Protocol):
    """Gives the one-way latency, in microseconds, of a message from `src` to `dst`."""

    def latency_us(self, src: int, dst: int) -> int: ...

    def bound_us(self) -> int:
        """The largest latency the model gives (timeouts derive from it)."""
        ...

    def floor_us(self) -> int:
        """The smallest latency the model gives."""
        ...

    def describe(self) -> str: ...


class ConstantLatency:
    """Every message takes the same time (default 1 ms)."""

    __slots__ = ("us",)

    def __init__(self, seconds: float = 0.001) -> None:
        if seconds < 0:
            raise InputError("latency must be non-negative")
        self.us = to_us(seconds)

    def latency_us(self, src: int, dst: int) -> int:
        return self.us

    def bound_us(self) -> int:
        return self.us

    def floor_us(self) -> int:
        return self.us

    def describe(self) -> str:
        return f"constant {self.us / 1000:g}ms"


class UniformLatency:
    """Each message independently takes a latency uniform in [low, high] (jitter)."""

    __slots__ = ("low_us", "span", "_random")

    def __init__(self, low: float, high: float, rng: random.Random) -> None:
        if not 0 <= low <= high:
            raise InputError("uniform latency needs 0 <= low <= high")
        self.low_us = to_us(low)
        self.span = to_us(high) - self.low_us + 1
        self._random = rng.random

    def latency_us(self, src: int, dst: int) -> int:
        return self.low_us + int(self._random() * self.span)

    def bound_us(self) -> int:
        return self.low_us + self.span - 1

    def floor_us(self) -> int:
        return self.low_us

    def describe(self) -> str:
        return f"uniform {self.low_us / 1000:g}..{(self.low_us + self.span - 1) / 1000:g}ms"


def _mix64(x: int) -> int:
    """splitmix64 finaliser: a fixed, well-spread hash of a 64-bit integer."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


class PairLatency:
    """A fixed base latency per unordered pair, uniform in [low, high], plus optional jitter.

    The base of a pair is a hash of (salt, pair), so it needs no memory at any scale and is
    the same in both directions; `jitter` adds an independent uniform [0, jitter] per message.
    """

    __slots__ = ("low_us", "span", "jitter_span", "salt", "_random")

    def __init__(self, low: float, high: float, rng: random.Random, jitter: float = 0.0) -> None:
        if not 0 <= low <= high or jitter < 0:
            raise InputError("pair latency needs 0 <= low <= high and jitter >= 0")
        self.low_us = to_us(low)
        self.span = to_us(high) - self.low_us + 1
        self.jitter_span = to_us(jitter) + 1 if jitter > 0 else 0
        self.salt = rng.getrandbits(62)
        self._random = rng.random

    def latency_us(self, src: int, dst: int) -> int:
        a, b = (src, dst) if src <= dst else (dst, src)
        base = self.low_us + _mix64(self.salt ^ (a << 32) ^ b) % self.span
        if self.jitter_span:
            base += int(self._random() * self.jitter_span)
        return base

    def bound_us(self) -> int:
        return self.low_us + self.span - 1 + max(self.jitter_span - 1, 0)

    def floor_us(self) -> int:
        return self.low_us

    def describe(self) -> str:
        text = f"per-pair {self.low_us / 1000:g}..{(self.low_us + self.span - 1) / 1000:g}ms"
        return text + (f" + jitter {(self.jitter_span - 1) / 1000:g}ms" if self.jitter_span else "")


def parse_latency(text: str, rng: random.Random) -> LatencyModel:
    """Parse a latency spec: '1ms' | 'uniform:LOW:HIGH' | 'pair:LOW:HIGH[:JITTER]'."""
    parts = [p.strip() for p in text.split(":")]
    try:
        if len(parts) == 1:
            return ConstantLatency(parse_duration(parts[0]))
        kind, args = parts[0].lower(), [parse_duration(p) for p in parts[1:]]
        if kind == "uniform" and len(args) == 2:
            return UniformLatency(args[0], args[1], rng)
        if kind == "pair" and len(args) in (2, 3):
            return PairLatency(args[0], args[1], rng, *args[2:])
    except ValueError as error:
        raise InputError(f"bad latency {text!r}: {error}") from None
    raise InputError(f"bad latency {text!r}: use 1ms, uniform:LOW:HIGH or pair:LOW:HIGH[:JITTER]")
