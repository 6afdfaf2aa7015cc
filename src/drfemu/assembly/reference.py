"""A reference run beside a run (`--reference drf`, issue 60): the same case under a central
protocol with its default placement, and how each user fared in both.

A minimum share alone hides what moved: on a GPU cluster a user whose task is a whole server
can lose a third of its share for one task. With a reference the result names the poorest
user and its tasks in both runs, counts the users that got fewer tasks than under the
reference, and keeps the reference's tasks and p99 delays per user (`schema.result.ReferenceRun`).

Decisions: the reference reads only the run parameters it would read on its own (the case,
seed, tick, latency, devices, …); the placement and its options are its own defaults, as a
reader comparing against "DRF" expects. It runs after the run, in the same process, and
changes nothing of the run itself.
"""

from __future__ import annotations

from drfemu.assembly.config import RunConfig
from drfemu.protocols.placement import PlacementParams
from drfemu.protocols.registry import get_protocol
from drfemu.schema.params import reads, run_params
from drfemu.schema.result import Reference, ReferenceRun, RunResult

__all__ = ["reference_config", "reference_section"]

_OWN = frozenset({*(p.name for p in PlacementParams.PARAMS), "fit_candidates", "reference"})
"""What the reference takes from its own defaults, whatever the run gave."""


def reference_config(config: RunConfig) -> RunConfig | None:
    """The config of `config`'s reference run, or None when it asked for none."""
    name = config.params.reference
    if name is None:
        return None
    spec = get_protocol(name)
    values = config.params.values()
    given = {key: value for key, value in values.items() if key not in _OWN and key != "protocol" and reads(spec, key)}
    return RunConfig(config.workload, run_params(protocol=name, **given), loss=config.loss, cost=config.cost)


def reference_section(result: RunResult, reference: RunResult) -> Reference:
    """How `result`'s users fared against `reference`'s (same workload, so the same users)."""
    shares = {user: share for user, share in (result.dominant_shares or {}).items() if share is not None}
    poorest = min(shares, key=shares.__getitem__, default=None)
    tasks, theirs = result.tasks, reference.tasks
    return Reference(reference=ReferenceRun(
        protocol=reference.protocol, placement=reference.placement_mode or "",
        min_dominant_share=reference.min_dominant_share, run_time_s=reference.run_time_s,
        min_share_ratio=_ratio(result.min_dominant_share, reference.min_dominant_share),
        run_time_ratio=_ratio(result.run_time_s, reference.run_time_s),
        tasks=dict(theirs), queueing_delay_p99_by_user_s=dict(reference.queueing_delay_p99_by_user_s),
        users_short=sum(1 for user, count in tasks.items() if count < theirs.get(user, 0)),
        poorest_user=poorest, poorest_tasks=tasks.get(poorest) if poorest is not None else None,
        poorest_reference_tasks=theirs.get(poorest) if poorest is not None else None))


def _ratio(value: float | None, of: float | None) -> float | None:
    if value is None or of is None or of == 0:
        return None
    return value / of
