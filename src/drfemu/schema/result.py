"""The result of a run: typed sections, composed into a versioned document (`RunResult`).

A run's result is the document `drfemu run --json` writes. Each part of it is a typed section
declared here — what was run (`Identity`, `Setup`, `Echo`), how it ended (`Outcome`), the tasks'
ledger, the errors, the messages and their cost, the engine's figures, the faults, the
fairness of the allocation (`EndlessFairness` or `FiniteFairness`), the distributed set-up's
figures and a live run's — and each is made by the observer that measured it. `RunResult` is
every section at once: its fields are typed attributes (`result.allocations` is an `int`), its
document is the sections' fields in this order, and `to_dict()`/`to_json()` give that
document. The JSON Schema (`result_schema`) is derived from the same classes.

The parameters a result repeats (its echo) are fields of `Echo` (and `Identity.tick_s`), each
naming the run parameter it repeats (`echoes`); the value and the description come from that
parameter. A protocol of another package may echo its own parameters (`Param.echo`): those keys
follow the echo in the document and are read as `result["key"]`.

Versioning (`SCHEMA_VERSION`, the document's first key): a change that only adds keys (or a
value of `status`: 1.4 added `blocked`; 1.5 the optional `samples`; 1.6 the delays per user and the
optional `reference`; 1.7 typed the inner blocks, the documents unchanged; 1.8 the echo's
`band_cap`; 1.9 its `band_cap_when`) raises the minor
number; one that renames, removes or retypes a key raises the major number.
Decision: keys that only some runs have (distributed runs' `placement` and `overlay`, finite
workloads' `series` and `swm`, live runs' `live`, sampled runs' `samples`) are optional and absent from the documents of
other runs. Every inner block is typed (`schema.result_blocks`: a fault, a fault's cost, the first
block, the SWM comparison, the overlay's and a live run's figures; the walks' counters as integers
by name, a protocol's own overlay counters as integers by name, a workload's `source` as JSON)
and keeps only the keys that apply to the run. Numbers keep their type (an
int stays an int); non-finite figures are `null` in JSON (`docs/metrics.md`).

Tidy tables: `allocation_table()` (one row per allocation, when the run kept its log) and
`series_table()` (a finite run's samples over time) are pandas DataFrames. Decision: pandas,
not Arrow: it is what a notebook plots and groups with, and it is imported only when a table
is asked for (the `tables` extra).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, create_model

from drfemu.kernel.params import Kind, Param
from drfemu.schema.params import RunParams, run_declarations
from drfemu.schema.result_blocks import (
    FaultRecord,
    FaultWindow,
    FirstBlocked,
    LiveFigures,
    Number,
    OverlayFigures,
    Section,
    Source,
    SwmComparison,
    echoes,
)
from drfemu.schema.result_echo import EchoFields

if TYPE_CHECKING:
    import pandas

__all__ = ["SCHEMA_ID", "SCHEMA_VERSION", "Cost", "Distributed", "Echo", "EndlessFairness", "Engine", "Errors",
           "Fairness", "Faults", "FiniteFairness", "Identity", "Ledger", "Live", "Messages", "Outcome", "Reference",
           "ReferenceRun", "RunResult", "SampleTable", "Samples", "Section", "Setup", "TimeAveraged", "Timeline",
           "finite_or_none", "result_schema"]

SCHEMA_VERSION = "1.9"
SCHEMA_ID = f"https://drfemu.invalid/schema/run-result/{SCHEMA_VERSION}"


def finite_or_none(x: float) -> float | None:
    """`x`, or None when it is not finite (JSON has no infinity: such a figure is written as null)."""
    return x if math.isfinite(x) else None


class Identity(Section):
    """What was run."""

    protocol: str
    machines: int = Field(description="Servers of the workload.")
    users: int
    seed: int
    resources: list[str]
    tick_s: Number = echoes("tick")
    latency: str = Field(description="The latency model, described.")
    finite_tasks: bool = Field(description="Whether the users' tasks end (a finite workload).")


class Outcome(Section):
    """How the run ended."""

    saturated: bool
    stalled: bool
    finished: bool
    status: str = Field(description="saturated, blocked (a blocking rule's lowest user fits nowhere and nothing can "
                                    "free room; since 1.4), stalled, finished or time-cap.")
    end_reason: str
    run_time_s: Number = Field(description="Virtual time of the last allocation (finite: of the last task's end).")
    virtual_time_s: float
    allocations: int = Field(description="Tasks started.")


class Ledger(Section):
    """Every task's fate and how long tasks waited."""

    ledger: dict[str, int] = Field(description="Every submitted task by state; lost is 0 in a correct run.")
    queueing_delay_s: dict[str, Number]
    queueing_delay_quantiles_s: Sequence[Number]
    queueing_delay_p99_by_user_s: Mapping[str, Number] = Field(
        default_factory=dict, description="Each user's p99 queueing delay over its started tasks (schema 1.6).")


class Errors(Section):
    """DRF errors (SPEC §5): the ratio, by tolerance, and over the allocations."""

    error_ratio: Number
    error_ratio_by_tolerance: dict[str, Number]
    error_series: Mapping[str, Sequence[Number]]


class Messages(Section):
    """Messages by type: sent, dropped, and why."""

    messages: dict[str, int]
    messages_dropped: dict[str, int]
    messages_dropped_by_cause: dict[str, int]


class Timeline(Section):
    """A run with faults sampled every second: allocations, the minimum share, messages so far."""

    time: Sequence[Number]
    allocations: list[int]
    min_share: Sequence[Number]
    messages: list[int]


class Faults(Section):
    """What the fault injector did, and what each fault cost."""

    faults: list[FaultRecord]
    fault_windows: list[FaultWindow]
    fault_timeline: Timeline | None


class Cost(Section):
    """Bytes by message type and the totals (the thesis's cost model)."""

    bytes: dict[str, int]
    messages_total: int
    bytes_total: int
    messages_per_allocation: Number


class Engine(Section):
    """What the run cost the machine, and the ticks it ran."""

    wall_time_s: float = Field(description="Wall time of the emulation on this machine.")
    events: int
    events_per_s: float
    ticks: int


class Setup(Section):
    """Where the workload came from, and whether the protocol is distributed."""

    workload: Source = Field(description="Where the workload came from.")
    distributed: bool


class Echo(EchoFields):
    """The run parameters the result repeats, under their echo keys (`Param.echo`), defaults
    resolved: the fields are written from the declarations (`schema.result_echo`)."""

    @classmethod
    def of(cls, params: RunParams, finite: bool) -> Echo:
        """The echo of `params`, the saturation retry and descriptor expiry as resolved (`finite`: tasks end)."""
        values = {key: params.value(name) for key, name in cls.echoed().items() if key not in cls.RESOLVED}
        return cls(**values, saturation_retry_ticks=params.saturation_retry_ticks(finite),
                   gradient_max_age_periods=params.max_age_periods)

    @classmethod
    def echoed(cls) -> dict[str, str]:
        """Echo key -> the run parameter it repeats."""
        return _echoed(cls)


def _echoed(section: type[Section]) -> dict[str, str]:
    return {key: str(info.json_schema_extra["echoes"]) for key, info in section.model_fields.items()
            if isinstance(info.json_schema_extra, dict) and "echoes" in info.json_schema_extra}


def extension_echoes(params: RunParams) -> dict[str, Any]:
    """The echoes plug-ins declare on their parameters (`Param.echo`), by key (the built-in ones are
    `Echo`'s fields)."""
    return {p.echo: params.value(p.name) for p in run_declarations()
            if p.echo is not None and p.name in params.protocol_values and p.echo not in Echo.model_fields}


class Fairness(Section):
    """How fair the allocation was, over the placeable users (finite: time averages)."""

    min_dominant_share: Number = Field(description="The poorest user's G_i (finite: its time average).")
    gini: Number
    jain: Number
    utilization: dict[str, Number]
    tasks: dict[str, int]
    unplaceable_users: list[str]


class EndlessFairness(Fairness):
    """The final allocation of endless users (the thesis's metrics) and its fragmentation."""

    std_dominant_share: Number = None
    ratio_20_20: Number = None
    stranded: dict[str, Number] | None = None
    fragmented: dict[str, Number] | None = Field(None, description="Per resource: the fraction of the cluster's total "
                                                 "free but usable by no task of the placeable users' mix.")
    fragmented_servers: dict[str, int] | None = Field(None, description="Per resource: servers holding such a "
                                                      "fragment.")
    fragmented_mean: dict[str, Number] | None = Field(None, description="Per resource: the fragmented share's mean "
                                                      "over the samples taken every --sample-every.")
    fragmented_series: Mapping[str, Sequence[Number]] | None = Field(None, description="time_s and, per resource, the "
                                                              "fragmented share at each sample.")
    first_blocked: FirstBlocked | None = Field(None, description="When an allocation first left some placeable "
                                                 "user's task fitting nowhere (that user saturated): time_s, user, and "
                                                 "per resource the fragmented and the free share then; null if none.")
    dominant_shares: dict[str, Number] | None = None


class TimeAveraged(Section):
    """Time averages of a finite run's samples (those with some user present)."""

    min_share: Number
    gini: Number
    jain: Number
    utilization: dict[str, Number]


class FiniteFairness(Fairness):
    """Fairness over time, for tasks that end: time averages, the samples, the SWM comparison."""

    time_averaged: TimeAveraged | None = None
    series: Mapping[str, Sequence[Number]] | None = None
    swm: SwmComparison | None = None


class Distributed(Section):
    """A distributed protocol's set-up and its servers' figures, summed."""

    homes: int | None = None
    cyclon_view: int | None = None
    shuffle_length: int | None = None
    walk_ttl: int | None = None
    placement: dict[str, int] | None = Field(None, description="The walks' counters, summed over servers.")
    overlay: OverlayFigures | None = None


class Live(Section):
    """A live run's figures (`docs/live.md`)."""

    live: LiveFigures | None = None


class SampleTable(BaseModel):
    """A run sampled over time (`observers.samples`): one entry per sample in every list."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    every_ticks: int = Field(description="Allocation ticks between two samples at the end of the run (the sampler "
                             "halves its rate as a run grows; the last sample is the run's end).")
    time_s: list[float]
    min_share: list[Number] = Field(description="The lowest dominant share (endless: of the placeable users; finite: "
                                    "of the users present; null with none).")
    allocations: list[int] = Field(description="Tasks started so far.")
    dominant_shares: dict[str, list[Number]] = Field(description="Each user's dominant share.")
    drf_reference: dict[str, Number] | None = Field(description="Each endless user's share under DRF on the cluster "
                                                    "as one pool, tasks divisible (null for tasks that end).")
    utilization: dict[str, list[Number]] = Field(description="Each resource's used fraction of the cluster.")
    messages: dict[str, list[int]] = Field(description="Messages sent so far, by type.")
    waiting: list[int] | None = Field(description="Tasks that end: tasks submitted and not started.")
    running: list[int] | None = Field(description="Tasks that end: tasks running.")
    started: list[int] = Field(description="Tasks started so far (each with its queueing delay).")
    delay_total_s: list[float] = Field(description="The queueing delays of the tasks started so far, summed: the "
                                       "mean delay of those started between two samples is the difference over "
                                       "the difference of `started`.")
    ideal_view_fraction: list[Number] | None = Field(description="Gradient protocols: the fraction of servers "
                                                     "whose gradient view is their ideal one.")


class Samples(Section):
    """The run over time, when it was sampled (`drfemu run --html`, `drfemu.run(samples=…)`)."""

    samples: SampleTable | None = None


class ReferenceRun(BaseModel):
    """The reference run of a run (`--reference`) and how each user fared in both (issue 60): what
    a reader needs to see "one 8-GPU task short" rather than a bare ratio."""

    model_config = ConfigDict(frozen=True)

    protocol: str = Field(description="The reference protocol, run with its default placement on the same case.")
    placement: str = Field(description="The reference run's placement.")
    min_dominant_share: Number
    run_time_s: Number
    min_share_ratio: Number = Field(description="This run's minimum dominant share over the reference's.")
    run_time_ratio: Number = Field(description="This run's run-time over the reference's.")
    tasks: dict[str, int] = Field(description="Each user's tasks in the reference run (as `tasks` counts them).")
    queueing_delay_p99_by_user_s: Mapping[str, Number] = Field(description="Each user's p99 queueing delay there.")
    users_short: int = Field(description="Users with fewer tasks here than in the reference run.")
    poorest_user: str | None = Field(description="This run's user with the lowest dominant share (ties: the first).")
    poorest_tasks: int | None = Field(description="Its tasks in this run.")
    poorest_reference_tasks: int | None = Field(description="Its tasks in the reference run.")


class Reference(Section):
    """A reference run beside this one, when asked for (`--reference drf`)."""

    reference: ReferenceRun | None = None


SECTIONS: tuple[type[Section], ...] = (Identity, Outcome, Ledger, Errors, Messages, Faults, Cost, Engine, Setup, Echo,
                                       EndlessFairness, FiniteFairness, Distributed, Live, Samples, Reference)
"""The sections in document order (`Fairness` comes with either of its two kinds)."""


def _json_safe(value: Any) -> Any:
    """`value` as JSON carries it: tuples as lists, non-finite floats as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


class RunResult(Reference, Samples, Live, Distributed, FiniteFairness, EndlessFairness, Echo, Setup, Engine, Cost,
                Faults, Messages, Errors, Ledger, Outcome, Identity):
    """The outcome and metrics of one run: typed fields, the `--json` document, tidy tables.

    Fields are attributes (`result.gini`, `result.ledger`); `result["key"]` reads the document,
    extension keys included. `allocation_log` holds one record per allocation when the run was
    asked to keep it. Made by `compose` from the sections the run's observers returned.
    """

    model_config = ConfigDict(frozen=True, extra="allow", title="drfemu run result")

    schema_version: str = Field(description="Version of this schema: MAJOR.MINOR.")
    _document: dict[str, Any] = PrivateAttr(default_factory=dict)
    _allocation_log: list[dict[str, Any]] | None = PrivateAttr(default=None)

    @classmethod
    def compose(cls, sections: Iterable[Section], extensions: Mapping[str, Any] | None = None) -> RunResult:
        """The result of the sections a run's observers made (each kind at most once), in document
        order, with a plug-in's echoes (`extensions`) after the `Echo` section."""
        made = {type(section): section for section in sections}
        document: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        for kind in SECTIONS:
            section = made.pop(kind, None)
            if section is not None:
                document.update(section.model_dump())
            if kind is Echo:
                document.update(extensions or {})
        if made:
            raise ValueError(f"not sections of a run result: {', '.join(k.__name__ for k in made)}")
        return cls.of_document(document)

    @classmethod
    def of_document(cls, document: Mapping[str, Any]) -> RunResult:
        """The result whose document is `document` (as `to_dict` gives it; validated against the schema)."""
        result = _model(tuple(run_declarations())).model_validate(_json_safe(dict(document)))
        result._document = dict(document)
        return result

    def __getitem__(self, key: str) -> Any:
        return self._document[key]

    def __contains__(self, key: object) -> bool:
        return key in self._document

    def __repr__(self) -> str:
        return (f"RunResult(protocol={self.protocol!r}, status={self.status!r}, allocations={self.allocations}, "
                f"min_dominant_share={self.min_dominant_share})")

    @property
    def allocation_log(self) -> list[dict[str, Any]] | None:
        """One record per allocation, when the run was asked to keep them (`drfemu.run(allocation_log=True)`)."""
        return self._allocation_log

    def keep_allocation_log(self, records: list[dict[str, Any]] | None) -> None:
        """Attach the allocation records a run kept (what `allocation_log` then gives)."""
        self._allocation_log = records

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
        if self.series is None:
            raise ValueError("only runs of tasks that end sample over time (this run's tasks never end)")
        return _pandas().DataFrame(self.series)

    def samples_table(self) -> pandas.DataFrame:
        """The run's samples (`samples`), one row per sample: `time_s`, `min_share`, `allocations`,
        `share:<user>`, `utilization:<resource>`, `messages:<type>`, `started`, `delay_total_s` (so
        far), and where sampled
        `waiting`, `running`, `ideal_view_fraction`."""
        table = self.samples
        if table is None:
            raise ValueError("this run was not sampled: run it with samples=N (drfemu run --html or --samples N)")
        columns: dict[str, Sequence[Any]] = {"time_s": table.time_s, "min_share": table.min_share,
                                             "allocations": table.allocations}
        columns.update({f"share:{user}": values for user, values in table.dominant_shares.items()})
        columns.update({f"utilization:{name}": values for name, values in table.utilization.items()})
        columns.update({f"messages:{name}": values for name, values in table.messages.items()})
        columns.update({"started": table.started, "delay_total_s": table.delay_total_s})
        for name in ("waiting", "running", "ideal_view_fraction"):
            values = getattr(table, name)
            if values is not None:
                columns[name] = values
        return _pandas().DataFrame(columns)


_JSON_TYPES: dict[Kind, Any] = {Kind.INT: int, Kind.FLOAT: Number, Kind.BOOL: bool, Kind.TEXT: str,
                                Kind.DURATION: float}


@cache
def _model(params: tuple[Param, ...]) -> type[RunResult]:
    """`RunResult` with the extension echoes of `params` declared (for the schema and validation)."""
    extensions = {p.echo: (_JSON_TYPES[p.kind] | None, Field(None, description=f"{p.option}: {p.help}"))
                  for p in params if p.echo is not None and p.echo not in RunResult.model_fields}
    if not extensions:
        return RunResult
    return create_model("RunResult", __base__=RunResult, **extensions)  # type: ignore[call-overload, no-any-return]


def result_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the result document, for the protocols registered now."""
    params = run_declarations()
    by_name = {p.name: p for p in params}
    schema = _model(params).model_json_schema(mode="serialization")
    for key, name in _echoed(RunResult).items():
        entry = schema["properties"][key]
        entry.pop("echoes", None)
        if name in by_name:
            entry["description"] = f"{by_name[name].option}: {by_name[name].help}"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "description": f"A drfemu run's result document, schema version {SCHEMA_VERSION}.", **schema}


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("tables need pandas: pip install 'drfemu[tables]'") from None
    return pandas
