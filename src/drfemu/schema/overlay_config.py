"""What determines an overlay-only run (`drfemu overlay`, `assembly.overlay_run`):
its own parameters, declared here beside the run parameters it shares, and the checked config.

Kept apart from the emulation so that the command line declares its options without loading
the overlays and the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from drfemu.schema.params import check_gradient_period, check_latency, param, validate_declared
from drfemu.overlay.variants import default_max_age_periods
from drfemu.kernel.errors import InputError
from drfemu.kernel.params import Kind, Param

__all__ = ["DEFAULTS", "MAX_OVERLAY_NODES", "OWN", "SHARED", "OverlayConfig", "overlay_params"]

MAX_OVERLAY_NODES = 200_000  # a documented bound: about 0.6 GB of node state at the most

OWN: tuple[Param, ...] = (
    Param("nodes", Kind.INT, None, "Nodes (default 1000; with a workload file for --utilities, its server count).",
          ge=2, le=MAX_OVERLAY_NODES),
    Param("rounds", Kind.INT, 50, "Rounds (allocation ticks) with static utilities.", ge=1, le=10**7, unit="rounds"),
    Param("utilities", Kind.TEXT, "random", "random | google | a workload JSON file (utility of eq. 4.2)."),
    Param("perturbations", Kind.INT, 0, "Centre perturbations after the static rounds.", ge=0, le=10**6),
    Param("drop_rank", Kind.INT, 0, "Random utilities: the centre drops below up to this many nodes (0: P).", ge=0,
          le=MAX_OVERLAY_NODES),
    Param("recovery_cap", Kind.INT, 200, "Give up on a perturbation's recovery after this many rounds.", ge=1,
          le=10**7, unit="rounds"),
    Param("observe_every", Kind.INT, 1, "Measure every this many rounds (the last is always measured).", ge=1,
          le=10**7, unit="rounds"),
)
"""The overlay run's own parameters; the others are the run parameters of the same name."""

SHARED = ("neighbors", "seed", "users", "cyclon_view", "shuffle_length", "shuffles_per_tick", "tick", "latency",
          "max_age", "gradient", "softmax_temperature", "gradient_shuffle")
"""Run parameters an overlay run reads, declared once in `schema.params`."""

DEFAULTS = {"neighbors": 10}
"""Defaults of the overlay study that differ from a run's (P = 10, the thesis's largest view)."""


def overlay_params() -> tuple[Param, ...]:
    """Every parameter of `drfemu overlay`, in option order."""
    shared = [replace(param(name), default=DEFAULTS.get(name, param(name).default)) for name in SHARED]
    users = next(i for i, p in enumerate(shared) if p.name == "users")
    shared[users] = replace(shared[users], help="Users of the Google case (with --utilities google).")
    return (OWN[0], shared[0], OWN[1], shared[1], OWN[2], *shared[2:], *OWN[3:])


@dataclass(frozen=True)
class OverlayConfig:
    """Everything that determines an overlay run (`overlay_params` declares each field, with its
    default, bounds and help; `build` fills and checks them). Times are seconds of virtual time."""

    nodes: int
    neighbors: int
    rounds: int
    seed: int
    utilities: str
    users: int
    cyclon_view: int
    shuffle_length: int
    shuffles_per_tick: float
    tick: float
    latency: str
    max_age: int
    gradient: str
    softmax_temperature: float
    gradient_shuffle: int
    perturbations: int
    drop_rank: int
    recovery_cap: int
    observe_every: int

    @classmethod
    def build(cls, **given: Any) -> OverlayConfig:
        """A checked config from parameters by name (None or absent: the declared default).
        Raises `InputError` with one line naming the option."""
        values = {name: value for name, value in given.items() if value is not None}
        checked = validate_declared(overlay_params(), values)
        if checked["nodes"] is None:
            checked["nodes"] = 1000
        config = cls(**checked)
        config.validate()
        return config

    @property
    def max_age_periods(self) -> int:
        """Gradient descriptor expiry in gradient periods; 0 asks for the default, max(20, 5·P)."""
        return self.max_age or default_max_age_periods(self.neighbors)

    def validate(self) -> None:
        """Checks that involve two parameters or a file (each alone is checked by `build`)."""
        if self.utilities not in ("random", "google") and not Path(self.utilities).is_file():
            raise InputError(f"--utilities: {self.utilities!r} is neither random, google nor a workload file")
        if self.shuffle_length > self.cyclon_view:
            raise InputError(f"--shuffle-length ({self.shuffle_length}) must be at most --cyclon-view "
                             f"({self.cyclon_view})")
        if self.neighbors >= self.nodes:
            raise InputError(f"--neighbors {self.neighbors} needs more than {self.neighbors} nodes (got {self.nodes})")
        if self.cyclon_view >= self.nodes:
            raise InputError(f"--cyclon-view must be between 1 and {self.nodes - 1}")
        check_gradient_period(self.tick, self.shuffles_per_tick)
        check_latency(self.latency)
