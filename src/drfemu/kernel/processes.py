"""Arrival processes and run-time distributions for synthetic finite workloads (issue 15).

Specs are text, `NAME:ARG[:ARG]`, seconds throughout:

| spec | meaning |
|---|---|
| `poisson:RATE` | a Poisson process of RATE tasks/s (exponential gaps, the first after one gap) |
| `bursts:EVERY:SIZE` | bursts of SIZE tasks at once (a job), burst times a Poisson process with mean gap EVERY |
| `fixed:GAP` | one task every GAP seconds, from 0 |
| `exp:MEAN` | exponential run times of mean MEAN |
| `lognormal:MEDIAN:SIGMA` | log-normal run times (the heavy tail of trace run times) |
| `pareto:MIN:ALPHA` | Pareto run times from MIN with tail index ALPHA |
| `weibull:SCALE:SHAPE` | Weibull run times (also churn's session lengths: Rhea et al. 2004 find them Weibull-like) |
| `fixed:SECONDS` | every task runs SECONDS |

Times are rounded to the microsecond (the emulator's clock) and run times kept ≥ 1 µs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from drfemu.kernel.errors import InputError

__all__ = ["ARRIVALS", "DURATIONS", "SpecError", "arrival_process", "duration_distribution"]

Draw = Callable[[np.random.Generator, int], np.ndarray]

ARRIVALS = ("poisson:RATE", "bursts:EVERY:SIZE", "fixed:GAP")
DURATIONS = ("exp:MEAN", "lognormal:MEDIAN:SIGMA", "pareto:MIN:ALPHA", "weibull:SCALE:SHAPE", "fixed:SECONDS")


class SpecError(InputError):
    """An arrival-process or duration-distribution spec that is not one of the forms above; the
    message names it."""


def _parse(spec: str, forms: tuple[str, ...], what: str) -> tuple[str, list[float]]:
    name, *raw = spec.split(":")
    arity = {f.split(":")[0]: f.count(":") for f in forms}
    if name not in arity:
        raise SpecError(f"unknown {what} {spec!r} (known: {', '.join(forms)})")
    if len(raw) != arity[name]:
        form = next(f for f in forms if f.startswith(name + ":"))
        raise SpecError(f"{what} {spec!r} must be {form}")
    try:
        args = [float(x) for x in raw]
    except ValueError:
        raise SpecError(f"{what} {spec!r} needs numbers after the name") from None
    if not all(np.isfinite(a) and a > 0 for a in args):
        raise SpecError(f"{what} {spec!r}: every number must be positive")
    return name, args


def arrival_process(spec: str) -> Draw:
    """`draw(rng, n)`: n submit times in ascending order."""
    name, args = _parse(spec, ARRIVALS, "arrival process")
    if name == "poisson":
        rate = args[0]
        return lambda rng, n: np.round(np.cumsum(rng.exponential(1.0 / rate, n)), 6)
    if name == "fixed":
        gap = args[0]
        return lambda rng, n: np.round(np.arange(n) * gap, 6)
    every, size = args
    if size != int(size):
        raise SpecError(f"arrival process {spec!r}: SIZE must be a whole number of tasks")

    def bursts(rng: np.random.Generator, n: int) -> np.ndarray:
        count = -(-n // int(size))
        starts = np.cumsum(rng.exponential(every, count))
        return np.round(np.repeat(starts, int(size))[:n], 6)

    return bursts


def duration_distribution(spec: str) -> Draw:
    """`draw(rng, n)`: n run times."""
    name, args = _parse(spec, DURATIONS, "duration distribution")
    if name == "exp":
        draw: Draw = lambda rng, n: rng.exponential(args[0], n)  # noqa: E731
    elif name == "lognormal":
        draw = lambda rng, n: rng.lognormal(np.log(args[0]), args[1], n)  # noqa: E731
    elif name == "pareto":
        draw = lambda rng, n: args[0] * (1.0 + rng.pareto(args[1], n))  # noqa: E731
    elif name == "weibull":
        draw = lambda rng, n: args[0] * rng.weibull(args[1], n)  # noqa: E731
    else:
        draw = lambda rng, n: np.full(n, args[0])  # noqa: E731
    return lambda rng, n: np.maximum(np.round(draw(rng, n), 6), 1e-6)
