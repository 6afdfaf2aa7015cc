"""The result of an overlay-only run (`drfemu overlay --json`, `assembly.overlay_run`), composed
of sections so that no name is written twice:

- `config`: the run's parameters, each under its declared name (`schema.overlay_config`), read
  from the declarations, never listed here; one the run does not read (`Param.when`: the
  latency in cycle mode) is null; `nodes` and `users` are the counts that ran (a workload
  file's servers and users; `users` null with random utilities) and `drop_rank` the rank that
  perturbations drew below (its 0 is P; null with a workload's utilities, which it does not move);
- `OverlayTraffic`: what the engine did — the rounds of each overlay, the exchanges, the traffic
  by message type, the events, the virtual time (the engines report it as this section);
- the observations: `round_rows` (one per observed round: `round`, `time_s` and the overlay's
  figures, `overlay.observe.OverlayMetrics`), `perturbation_rows` (one per centre perturbation)
  and their summary `recovery`;
- the cost in wall time.

Decision (issue 59): the rows were `rounds` and `perturbations`, the names of the parameters that
count them; they are named for what they are. Numbers keep their type, as in a run's result
(`schema.result.Number`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from drfemu.schema.result import Number

__all__ = ["OverlayResult", "OverlayTraffic", "Recovery"]

Row = dict[str, Number | bool | None]
"""A row of observations: a figure by name (`int`, `float`, `bool`, or null where undefined)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Recovery(_Frozen):
    """How the overlay recovered from its centre perturbations: counts and the rounds it took."""

    recovered: int = Field(description="Perturbations the overlay recovered from within `config.recovery_cap` "
                                       "rounds (of `len(perturbation_rows)`).")
    min: Number
    median: Number
    mean: Number
    p90: Number
    max: Number


class OverlayTraffic(_Frozen):
    """What an engine did in an overlay run (event-driven or cycle-driven alike)."""

    network: str = Field(description="The latency model that ran, or 'atomic' (cycle mode: exchanges complete "
                                     "within their cycle).")
    virtual_time_s: Number
    cyclon_rounds: int
    gradient_rounds: int
    cyclon_exchanges: int
    gradient_exchanges: int
    messages: dict[str, int]
    bytes: dict[str, int]
    events: int
    gradient_merge: str = Field(description="Which gradient merge ran: C or Python.")


class OverlayResult(OverlayTraffic):
    """What an overlay-only run did: its parameters, the engine's traffic, the observations, the cost."""

    config: dict[str, Number | str | None] = Field(description="The run's parameters by declared name (`drfemu "
                                                               "params`); null where the run does not read one.")
    round_rows: list[Row]
    rounds_to_converge: int | None
    perturbation_rows: list[Row]
    recovery: Recovery
    messages_total: int
    bytes_total: int
    wall_time_s: float
    observer_wall_s: float
    emulation_wall_s: float
    events_per_s: float
    exchanges_per_s: float
