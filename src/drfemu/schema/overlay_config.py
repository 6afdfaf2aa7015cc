"""What determines an overlay-only run (`drfemu overlay`, `assembly.overlay_run`): the run
parameters it shares, by inheritance from their declarations (`schema.params.OverlayParams`,
and `--users` of a drawn case), and its own, declared here.

Kept apart from the emulation so that the command line declares its options without loading
the overlays and the runtime.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.kernel.params import param
from drfemu.schema.params import DrawnUsers, OverlayParams, check_gradient_period, check_latency, check_values

__all__ = ["MAX_OVERLAY_NODES", "OverlayConfig"]

MAX_OVERLAY_NODES = 200_000  # a documented bound: about 0.6 GB of node state at the most


class OverlayConfig(DrawnUsers, OverlayParams):
    """Everything that determines an overlay run; times are seconds of virtual time. `build`
    fills in and checks the values. Its `--neighbors` defaults to 10, the largest view of the
    thesis's study."""

    DEFAULTS = {"neighbors": 10}

    nodes: int | None = param(default=None, help="Nodes (default 1000; with a workload file for --utilities, its "
                              "server count).", ge=2, le=MAX_OVERLAY_NODES)
    rounds: int = param(default=50, help="Rounds (allocation ticks) with static utilities.", ge=1, le=10**7,
                        unit="rounds")
    utilities: str = param(default="random", help="random | google | a workload JSON file (utility of eq. 4.2).")
    perturbations: int = param(default=0, help="Centre perturbations after the static rounds.", ge=0, le=10**6)
    drop_rank: int = param(default=0, help="Random utilities: the centre drops below up to this many nodes (0: P).",
                           ge=0, le=MAX_OVERLAY_NODES)
    recovery_cap: int = param(default=200, help="Give up on a perturbation's recovery after this many rounds.", ge=1,
                              le=10**7, unit="rounds")
    observe_every: int = param(default=1, help="Measure every this many rounds (the last is always measured).", ge=1,
                               le=10**7, unit="rounds")

    @classmethod
    def build(cls, **given: Any) -> OverlayConfig:
        """A checked config from parameters by name (None or absent: the declared default).
        Raises `InputError` with one line naming the option."""
        values = {name: value for name, value in given.items() if value is not None}
        checked = check_values(cls.PARAMS, values)
        if checked["nodes"] is None:
            checked["nodes"] = 1000
        config = cls(**checked)
        config.validate()
        return config

    def validate(self) -> None:
        """Checks that involve two parameters or a file (each alone is checked by `build`)."""
        assert self.nodes is not None, "build fills in the node count"
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
