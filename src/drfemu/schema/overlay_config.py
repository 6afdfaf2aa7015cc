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
from drfemu.kernel.memory import available_memory
from drfemu.kernel.params import param
from drfemu.schema.params import DrawnUsers, OverlayParams, check_gradient_period, check_latency, check_values

__all__ = ["BYTES_PER_NODE", "MAX_OVERLAY_NODES", "MODES", "OverlayConfig", "check_memory",
           "memory_needed"]

MAX_OVERLAY_NODES = 100_000_000
"""Node ids are 32-bit in the cycle-driven engine; what a size needs of memory is checked
against the machine before the run starts (`check_memory`)."""

MODES = ("event", "cycle")

BYTES_PER_NODE = {"event": 8_000, "cycle": 2_000}
"""Peak memory a node costs an overlay run with the default views (c = P = 10), observed every
round, measured as the peak resident size over 10,000 to 1,000,000 nodes (`docs/overlay.md`,
"Scale"); the estimate scales it by the views' width."""

FIXED_BYTES = 150 * 2**20
"""The interpreter, numpy, scipy and the package: what a run needs before its first node."""

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
    mode: str = param(default="event", help="event (the emulated network: every exchange messages with latency) | "
                      "cycle (PeerSim's cycle-driven semantics over arrays: atomic exchanges, for millions of nodes).",
                      choices=MODES)

    @classmethod
    def build(cls, **given: Any) -> OverlayConfig:
        """A checked config from parameters by name (None or absent: the declared default).
        Raises `InputError` with one line naming the option. What `--mode cycle` does not read is
        declared on those parameters (`Param.when`: `("mode", ("event",))`) and named by
        `schema.params.unread_choices`, which the command line prints as a warning."""
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


def memory_needed(config: OverlayConfig, nodes: int, mode: str | None = None) -> int:
    """Bytes an overlay run of `nodes` nodes is expected to need at its peak in `mode` (default:
    the config's), from the measured cost of a node (`BYTES_PER_NODE`) scaled by the views' width."""
    width = (config.cyclon_view + config.neighbors) / 20
    return FIXED_BYTES + int(BYTES_PER_NODE[mode or config.mode] * max(1.0, width) * nodes)


def _gb(size: int) -> str:
    return f"{size / 2**30:.1f} GB"


def check_memory(config: OverlayConfig, nodes: int) -> None:
    """Refuse, before it starts, a run that needs more memory than the machine has: one line with
    what the size needs (and, in event mode, what the cycle-driven engine would)."""
    have = available_memory()
    need = memory_needed(config, nodes)
    if have is None or need <= have:
        return
    other = "" if config.mode == "cycle" else f"; --mode cycle needs about {_gb(memory_needed(config, nodes, 'cycle'))}"
    raise InputError(f"--nodes {nodes:,} needs about {_gb(need)} in {config.mode} mode and this process may take "
                     f"{_gb(have)} (the least of the machine's free memory, its cgroup's and its ulimit's){other}")
