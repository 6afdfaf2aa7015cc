"""What a result is built of: a section (`Section`), an echoed parameter (`echoes`), a figure
(`Number`), and the typed blocks inside the sections (issue 59): what a fault, a fault's cost, the
first block of an allocation, the SWM comparison, the distributed figures and a live run's
figures hold, field by field, in place of free-form mappings.

A block keeps the keys it was made with (`Block`): an optional key that does not apply to a run
is left out of its document, as before the blocks were typed, so every result document is the
same. `Number` is a figure that may be absent as null (non-finite figures are null in JSON).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)

__all__ = ["Block", "FaultRecord", "FaultWindow", "FirstBlocked", "LiveFigures", "Number", "OverlayFigures",
           "Quantiles", "Section", "Source", "SwmComparison", "echoes"]

if TYPE_CHECKING:
    Number: TypeAlias = float | None
else:  # the same for the type checker (an int is a float there); validation keeps an int an int
    Number = Annotated[int | float | None, WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "null"}]})]
"""A figure: JSON has no infinity or NaN, so a non-finite one is null; an int stays an int."""


def _as_json(value: Any) -> Any:
    """Tuples as lists, recursively: what JSON makes of them anyway."""
    if isinstance(value, tuple | list):
        return [_as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    return value


Source = Annotated[dict[str, JsonValue], BeforeValidator(_as_json)]
"""Where a workload came from: a JSON object whose keys each workload chooses (a file's own
`source`, a generated workload's parameters)."""


def echoes(name: str, *, required: bool = False) -> Any:
    """Declare a field that repeats run parameter `name` (its description is the parameter's);
    `required`: every document has it (otherwise it may be null or absent)."""
    return Field(... if required else None, json_schema_extra={"echoes": name})


class Section(BaseModel):
    """A part of the result document, made by one observer."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Block(BaseModel):
    """A typed block that dumps only the keys it was given (`model_fields_set`, extras included).
    It is also read as the mapping it was before it was typed (`result.overlay["thaws"]`,
    `"frozen_at_s" in result.overlay`, `.get(key)`), so scripts that read it so keep working."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __getitem__(self, key: str) -> Any:
        return self.model_dump()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.model_dump()

    def get(self, key: str, default: Any = None) -> Any:
        """The value of `key`, or `default` when the block has no such key."""
        return self.model_dump().get(key, default)

    @model_serializer(mode="wrap")
    def _given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        return {key: value for key, value in dumped.items() if key in self.model_fields_set}


class FaultRecord(Block):
    """One entry of the fault injector's log (`assembly.faults`): what it did, when, to whom."""

    at: int | float = Field(description="Virtual time, s.")
    event: int | str = Field(description="The scenario's event number, or churn.")
    action: str = Field(description="crash, recover, loss, latency, partition, heal, fence, end of …")
    latency: str | None = Field(None, description="The latency model it set, described.")
    servers: list[int] | None = Field(None, description="The servers it chose (actor ids).")
    already_on_an_island: list[int] | None = None
    recovered: list[int] | None = None
    actors: list[int] | None = Field(None, description="The actors it crashed or recovered.")
    loss: Number = Field(None, description="The loss it set.")
    links: list[list[int]] | None = Field(None, description="The directed links the loss applies to.")
    messages: list[str] | None = Field(None, description="The message types the loss applies to.")


class FaultWindow(Block):
    """What one fault that ended cost (`observers.fault_metrics`)."""

    fault: str
    start_s: int | float
    end_s: int | float
    allocation_rate_before: Number
    allocation_rate_during: Number
    allocation_rate_after: Number
    min_share_before: Number
    min_share_during: Number
    min_share_after: Number
    time_to_recover_s: Number
    messages_during: int
    recovery_messages: Number


class FirstBlocked(Block):
    """When an allocation first left some placeable user's task fitting nowhere."""

    time_s: int | float
    user: str
    fragmented: dict[str, Number] = Field(description="Per resource, the fragmented share then.")
    free: dict[str, Number] = Field(description="Per resource, the free share then.")


class SwmComparison(Block):
    """A finite run's shares against the SWM optimum over time, or why it could not be computed."""

    available: bool
    reason: str | None = None
    alpha: Number = None
    times: list[float] | None = None
    rmse: list[float] | None = None
    mean_rmse: Number = None
    median_rmse: Number = None


class OverlayFigures(Block):
    """A distributed run's overlay: the gradient's use, when its homes froze (DDRF-gradient), the
    Kompics gradient's timed-out partners, and the protocol's own counters, summed over servers
    (`counters()` of its rule: integers by name)."""

    model_config = ConfigDict(frozen=True, extra="allow")
    __pydantic_extra__: dict[str, int]

    gradient: str
    frozen_at_s: Number = None
    homes_frozen: int | None = None
    homes_frozen_on_ideal_view: int | None = None
    partners_timed_out: int | None = None


class Quantiles(Block):
    """p50, p90, p99 and the maximum of a sample (None for an empty one)."""

    p50: Number
    p90: Number
    p99: Number
    max: Number


class LiveFigures(Block):
    """A live run's figures (`docs/live.md`)."""

    loop: str
    workers: int
    time_scale: int | float
    transport: str
    bind: str
    one_way_latency_us: Quantiles
    datagrams_rejected: dict[str, int]
    send_errors: int
    wire_bytes: int
    tick_lateness_ms: Quantiles
    ticks_late_over_half_tick: int
    events_out_of_order: int
