"""The result of a run: a typed, versioned document (`RunResult`) and its JSON Schema.

A run's result is the document `drfemu run --json` writes. `RunResult` holds it as built —
key order and values untouched, so `to_dict()` and `to_json()` give exactly that document —
and exposes its fields as typed attributes (`result.min_dominant_share`), validated once on
construction. The fields are declared once, here; the echo of the run parameters (`tick_s`,
`neighbors`, a protocol's own `probe_d`, …) is derived from the parameter declarations, so a
protocol from another package brings its echo keys along.

Versioning (`SCHEMA_VERSION`, the document's first key): a change that only adds keys raises
the minor number; one that renames, removes or retypes a key raises the major number.
Decision: keys that only some runs have (distributed runs' `placement` and `overlay`, finite
workloads' `series` and `swm`, live runs' `live`) are optional; the parts whose inner layout
belongs to one protocol or one mode (`overlay`, `placement`, `live`) are objects without a
fixed inner schema. Non-finite figures are `null` in JSON (`docs/metrics.md`).

Tidy tables: `allocation_table()` (one row per allocation, when the run kept its log) and
`series_table()` (a finite run's samples over time) are pandas DataFrames. Decision: pandas,
not Arrow: it is what a notebook plots and groups with, Arrow converts to it for that anyway,
and it is imported only when a table is asked for (the `tables` extra).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from drfemu.schema.params import all_params
from drfemu.kernel.params import Kind, Param

if TYPE_CHECKING:
    import pandas

__all__ = ["SCHEMA_ID", "SCHEMA_VERSION", "ResultDocument", "RunResult", "result_schema"]

SCHEMA_VERSION = "1.3"
SCHEMA_ID = f"https://drfemu.invalid/schema/run-result/{SCHEMA_VERSION}"

Number = float | None  # JSON has no infinity or NaN: a non-finite figure is null


class ResultDocument(BaseModel):
    """The fields every run's document has (and the optional ones some have), typed."""

    model_config = ConfigDict(frozen=True, extra="allow", title="drfemu run result")

    schema_version: str = Field(description="Version of this schema: MAJOR.MINOR.")
    protocol: str
    machines: int = Field(description="Servers of the workload.")
    users: int
    seed: int
    resources: list[str]
    latency: str = Field(description="The latency model, described.")
    finite_tasks: bool = Field(description="Whether the users' tasks end (a finite workload).")
    saturated: bool
    stalled: bool
    finished: bool
    status: str = Field(description="saturated, stalled, finished or cap.")
    end_reason: str
    run_time_s: Number = Field(description="Virtual time of the last allocation (finite: of the last task's end).")
    virtual_time_s: float
    allocations: int = Field(description="Tasks started.")
    ledger: dict[str, int] = Field(description="Every submitted task by state; lost is 0 in a correct run.")
    queueing_delay_s: dict[str, Number]
    queueing_delay_quantiles_s: list[Number]
    error_ratio: Number
    error_ratio_by_tolerance: dict[str, Number]
    error_series: dict[str, list[Number]]
    messages: dict[str, int]
    messages_dropped: dict[str, int]
    messages_dropped_by_cause: dict[str, int]
    faults: list[dict[str, Any]]
    fault_windows: list[dict[str, Any]]
    fault_timeline: dict[str, Any] | None
    bytes: dict[str, int]
    messages_total: int
    bytes_total: int
    messages_per_allocation: Number
    wall_time_s: float = Field(description="Wall time of the emulation on this machine.")
    events: int
    events_per_s: float
    workload: dict[str, Any] = Field(description="Where the workload came from.")
    distributed: bool
    saturation_retry_ticks: int
    gradient_max_age_periods: int
    ticks: int
    min_dominant_share: Number = Field(description="The poorest user's G_i (finite: its time average).")
    gini: Number
    jain: Number
    utilization: dict[str, Number]
    tasks: dict[str, int]
    unplaceable_users: list[str]
    # endless workloads
    std_dominant_share: Number = None
    ratio_20_20: Number = None
    stranded: dict[str, Number] | None = None
    fragmented: dict[str, Number] | None = Field(None, description="Per resource: the fraction of the cluster's total "
                                                 "free but usable by no task of the placeable users' mix.")
    fragmented_servers: dict[str, int] | None = Field(None, description="Per resource: servers holding such a "
                                                      "fragment.")
    fragmented_mean: dict[str, Number] | None = Field(None, description="Per resource: the fragmented share's mean "
                                                      "over the samples taken every --sample-every.")
    fragmented_series: dict[str, list[Number]] | None = Field(None, description="time_s and, per resource, the "
                                                              "fragmented share at each sample.")
    first_blocked: dict[str, Any] | None = Field(None, description="When an allocation first left some placeable "
                                                 "user's task fitting nowhere (that user saturated): time_s, user, and "
                                                 "per resource the fragmented and the free share then; null if none.")
    dominant_shares: dict[str, Number] | None = None
    # finite workloads
    time_averaged: dict[str, Any] | None = None
    series: dict[str, list[Number]] | None = None
    swm: dict[str, Any] | None = None
    # distributed protocols
    homes: int | None = None
    walk_ttl: int | None = None
    cyclon_view: int | None = None
    shuffle_length: int | None = None
    placement: dict[str, Any] | None = None
    overlay: dict[str, Any] | None = None
    # live runs
    live: dict[str, Any] | None = None


_JSON_TYPES: dict[Kind, Any] = {Kind.INT: int, Kind.FLOAT: Number, Kind.BOOL: bool, Kind.TEXT: str,
                                Kind.DURATION: float}


def _echo_fields(params: Sequence[Param]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for p in params:
        if p.echo is None or p.echo in ResultDocument.model_fields or p.echo in fields:
            continue
        kind = _JSON_TYPES[p.kind]
        fields[p.echo] = (kind | None, Field(None, description=f"{p.option}: {p.help}"))
    return fields


@cache
def _model(params: tuple[Param, ...]) -> type[ResultDocument]:
    """The document model with the echo keys of `params` (made once per set of declarations)."""
    return create_model("RunResultDocument", __base__=ResultDocument,  # type: ignore[call-overload, no-any-return]
                        **_echo_fields(params))


def result_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the result document, for the protocols registered now."""
    schema = _model(all_params()).model_json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "description": f"A drfemu run's result document, schema version {SCHEMA_VERSION}.", **schema}


def _json_safe(value: Any) -> Any:
    """`value` as JSON carries it: tuples as lists, non-finite floats as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


class RunResult:
    """The outcome and metrics of one run: typed fields, the `--json` document, tidy tables.

    Fields are attributes (`result.gini`, `result.ledger`); `result["key"]` reads the document.
    `allocation_log` holds one record per allocation when the run was asked to keep it.
    """

    __slots__ = ("_document", "allocation_log", "fields")

    def __init__(self, values: Mapping[str, Any], allocation_log: list[dict[str, Any]] | None = None) -> None:
        self._document = {"schema_version": SCHEMA_VERSION, **values}
        self.fields: ResultDocument = _model(all_params()).model_validate(_json_safe(self._document))
        self.allocation_log = allocation_log

    def __getattr__(self, name: str) -> Any:
        if name in RunResult.__slots__ or name.startswith("__"):  # not set yet (unpickling)
            raise AttributeError(name)
        try:
            return getattr(self.fields, name)
        except AttributeError:
            raise AttributeError(f"a run result has no field {name!r}") from None

    def __getitem__(self, key: str) -> Any:
        return self._document[key]

    def __contains__(self, key: object) -> bool:
        return key in self._document

    def __repr__(self) -> str:
        return (f"RunResult(protocol={self.fields.protocol!r}, status={self.fields.status!r}, "
                f"allocations={self.fields.allocations}, min_dominant_share={self.fields.min_dominant_share})")

    @property
    def values(self) -> dict[str, Any]:
        """The document (read it; to change it, take `to_dict()`)."""
        return self._document

    def to_dict(self) -> dict[str, Any]:
        """The result document, as `drfemu run --json` writes it (a copy; floats as computed)."""
        return dict(self._document)

    def to_json(self, indent: int | None = 2) -> str:
        """The result document as JSON text (non-finite figures as null)."""
        return json.dumps(_json_safe(self._document), indent=indent, allow_nan=False)

    def allocation_table(self) -> pandas.DataFrame:
        """One row per allocation: virtual time, user, server, G_i before and after, error flag."""
        if self.allocation_log is None:
            raise ValueError("this run kept no allocation log: run it with allocation_log=True")
        return _pandas().DataFrame.from_records(self.allocation_log)

    def series_table(self) -> pandas.DataFrame:
        """A finite run's samples over time, one row per sample (`time_s` and one column per metric)."""
        if self.fields.series is None:
            raise ValueError("only runs of tasks that end sample over time (this run's tasks never end)")
        return _pandas().DataFrame(self.fields.series)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("tables need pandas: pip install 'drfemu[tables]'") from None
    return pandas
