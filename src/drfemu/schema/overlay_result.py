"""The result of an overlay-only run (`drfemu overlay --json`, `assembly.overlay_run`): typed
fields, in document order. `rounds` holds one row per observed round (`round`, `time_s` and the
overlay's figures, `overlay.observe.OverlayMetrics`), `perturbations` one row per centre
perturbation; numbers keep their type, as in a run's result (`schema.result.Number`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from drfemu.schema.result import Number

__all__ = ["OverlayResult", "Recovery"]


class Recovery(BaseModel):
    """How the overlay recovered from its centre perturbations: counts and the rounds it took."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    perturbations: int
    recovered: int
    cap_rounds: int
    drop_rank: int | None = Field(description="Random utilities: the centre drops below up to this many nodes.")
    min: Number
    median: Number
    mean: Number
    p90: Number
    max: Number


class OverlayResult(BaseModel):
    """What an overlay-only run did: its set-up, the rounds observed, the perturbations, the cost."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: int
    mode: str = Field(description="The engine: event (the emulated network) or cycle (cycle-driven, atomic exchanges).")
    neighbors: int
    cyclon_view: int
    shuffle_length: int
    shuffles_per_tick: Number
    max_age_periods: int
    gradient: str
    softmax_temperature: Number = Field(description="The Kompics gradient's; null for ours.")
    tick_s: Number
    latency: str
    seed: int
    utilities: str
    users: int | None
    static_rounds: int
    observe_every: int
    rounds: list[dict[str, Any]]
    rounds_to_converge: int | None
    perturbations: list[dict[str, Any]]
    recovery: Recovery
    cyclon_rounds: int
    gradient_rounds: int
    cyclon_exchanges: int
    gradient_exchanges: int
    messages: dict[str, int]
    bytes: dict[str, int]
    messages_total: int
    bytes_total: int
    virtual_time_s: Number
    wall_time_s: float
    observer_wall_s: float
    emulation_wall_s: float
    events: int
    events_per_s: float
    exchanges_per_s: float
    gradient_merge: str = Field(description="Which gradient merge ran: C or Python.")
