"""The run parameters: declared once, as typed classes, and every registered protocol's own.

`RunParams` is the one declaration of the parameters every run has, whatever its protocol,
grouped so that what is shared is declared once: `OverlayParams` (what the overlays read; the
`drfemu overlay` command shares them) and the placement, declared with the walks that read it
(`protocols.placement.PlacementParams`). A protocol's own parameters are its rule's `PARAMS`,
found through the registry; a drawn case's are `CaseParams`, which the built-in generated
workloads read (`workloads.registry`). From these declarations come
- the typed, validated run parameters (`run_params`: a `RunParams`, whose `protocol_values`
  holds the protocols' own), checked by a pydantic model made from them (`schema.params`);
- the `drfemu run` options and their help, sweep-config validation (`workloads.points`), the
  reset of parameters a protocol never reads (`reads`), the result's echo (`schema.result.Echo`)
  and the table in `docs/parameters.md` (`drfemu params --markdown`).

Decisions: a parameter given but not read by the protocol is reset to its default (sweeps) and
named by the command line; `case_seed` (the draw of a generated case) defaults to `seed`, so
replicates over seeds draw different cases unless a config pins it.

Values are checked against the declarations (`check_values`) by a pydantic model made from the
`Param`s, with one-line errors that name the option. Why pydantic: it validates a model built at run time from the declarations (`create_model`),
with bounds (`ge`, `gt`, `le`) and strict types, and reports every failure with its field,
which becomes our one-line error. msgspec is faster but its constraints and errors are
thinner, and validation here runs once per run, not per message.

Decisions: durations are text with a unit (`"100ms"`); a bare number in a config or in Python
is seconds, but a text without a unit (`--tick 100`) is refused. Integers and booleans are
strict (no `"3"`, no `True` for a count); a float takes an int but not a bool or a text.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, create_model
from pydantic.functional_validators import BeforeValidator

from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import US_PER_S, parse_duration, parse_latency
from drfemu.kernel.params import Declared, Duration, Kind, Param, ReadBy, param
from drfemu.overlay.variants import GRADIENT_NAMES, default_max_age_periods
from drfemu.protocols.placement import COMPARING, PlacementParams
from drfemu.protocols.registry import PROTOCOLS, Gateway, GradientUse, ProtocolSpec, get_protocol
from drfemu.schema.workload import LARGEST, MAX_NODES, MAX_SEED

__all__ = ["RETRY_CAP_TICKS", "SATURATION_RETRY_TICKS", "CaseParams", "CaseSeed", "DrawnMachines", "GpuCaseParams", "TraceSpan", "OverlayParams", "RunParams",
           "check_gradient_period", "canonical_run", "check_latency", "check_values", "declared", "protocol_defaults", "reads", "readers",
           "run_declarations", "run_params", "unread", "unread_choices"]

SATURATION_RETRY_TICKS = {False: 50, True: 1}
"""`--saturation-retry` when not given, by whether tasks end. Decision: with endless tasks a
walk that found no room means the cluster is full for good, so the retry is rare (5 s at the
thesis's tick); with tasks that end, room frees every fraction of a second (the trace hour
ends about 4 tasks a second), and a 5 s wait starves the marked user while others take that
room (docs/results-online.md: PDGDRF's minimum share 0.0001 at 50 ticks, 0.248 at 1). Without
a cap on the doubling (`RETRY_CAP_TICKS`) both DDRFs were less fair at 1 tick than at 50 (errors
17.8 % → 32.0 % over random neighbours); with it they are fairer than at 50 (13.0 %)."""

RETRY_CAP_TICKS = 100
"""With tasks that end, the saturation retry's doubling stops at this many ticks (and at half
the stall window, `--stall-ticks`). Decision, from a stall: on the trace replay a user of
PDGDRF whose walks had failed eleven times in the tail of the hour waited 2^10 ticks for its
next retry, longer than the 1,000-tick stall window, so the run ended stalled with 5 tasks
waiting on an idle cluster. Room frees every fraction of a second where tasks end, so an
ever longer wait is never right there; endless workloads keep the unbounded doubling (a walk
that found no room there means the cluster is full for good)."""


class ProtocolChoice(Declared):
    protocol: str = param(default="drf", help="Allocation protocol (drfemu protocols lists them).")


class OverlayParams(Declared):
    """What a run's overlays read; `drfemu overlay` shares these declarations (`schema.overlay_config`)."""

    seed: int = param(default=1, help="Root seed of every random stream.", ge=0, le=MAX_SEED)
    tick: Duration = param(default=0.1, help="Allocation tick.", ge=1e-6, unit="s")
    latency: str = param(default="1ms", help="Latency: 1ms | uniform:LOW:HIGH | pair:LOW:HIGH[:JITTER].",
                         when=("mode", ("event",)))
    neighbors: int = param(default=5, help="P: gradient view size / out-degree of the fixed neighbour graph.", ge=1,
                           le=10_000, read_by=ReadBy.DISTRIBUTED, echo="neighbors")
    shuffles_per_tick: float = param(default=1.0, help="Gradient exchanges per node per tick (may be below 1).", gt=0,
                                     le=1e6, read_by=ReadBy.GRADIENT, echo="shuffles_per_tick")
    cyclon_view: int = param(default=10, help="Cyclon view size c.", ge=1, le=10_000, read_by=ReadBy.DISTRIBUTED)
    shuffle_length: int = param(default=5, help="Cyclon shuffle length ℓ (at most c).", ge=1, le=10_000,
                                read_by=ReadBy.DISTRIBUTED)
    gradient: str = param(default="tman", help="Gradient overlay: tman (ours: whole views, id-ordered ties, uniform "
                          "partner) or kompics (the Kompics Toolbox component the thesis ran).", choices=GRADIENT_NAMES,
                          read_by=ReadBy.GRADIENT, when=("mode", ("event",)), echo="gradient_variant")
    softmax_temperature: float = param(default=500.0, help="Kompics gradient: softmax temperature of the partner "
                                       "choice (small: the most preferred neighbour; 500, Kompics' value: almost "
                                       "uniform).", gt=0, le=1e9, read_by=ReadBy.GRADIENT,
                                       when=("mode", ("event",)))
    gradient_shuffle: int = param(default=0, help="Kompics gradient: view entries sent per exchange (0: half of P, "
                                  "rounded up).", ge=0, le=10_000, read_by=ReadBy.GRADIENT,
                                  when=("mode", ("event",)))
    max_age: int = param(default=0, help="Gradient descriptors expire after this many exchange periods (0: "
                         "max(20, 5·P)).", ge=0, le=10**9, unit="periods", read_by=ReadBy.GRADIENT,
                         echo="gradient_max_age_periods")

    @property
    def max_age_periods(self) -> int:
        """Gradient descriptor expiry in gradient periods; 0 asks for the default, max(20, 5·P)."""
        return self.max_age or default_max_age_periods(self.neighbors)


class RunParams(PlacementParams, OverlayParams, ProtocolChoice):
    """The parameters every run has (times in seconds); `protocol_values` holds the values of
    every registered protocol's own parameters, by name (`value` reads either kind)."""

    stall_ticks: int = param(default=1000, help="End as stalled after this many ticks without an allocation.", ge=1,
                             le=10**9, unit="ticks")
    max_time: Duration = param(default=20_000.0, help="Hard cap on virtual time.", gt=0, le=1e9, unit="s")
    walk_ttl: int = param(default=0, help="Hops a placement walk may take (0: the number of servers).", ge=0, le=10**9,
                          unit="hops", read_by=ReadBy.DISTRIBUTED)
    idle_cyclon_every: int = param(default=1, help="A server with no users to allocate for starts a Cyclon shuffle "
                                   "only every this many rounds (1: every round, as the thesis; more: less traffic, a "
                                   "protocol change that slows allocation — docs/performance.md).", ge=1, le=10**6,
                                   unit="rounds", read_by=ReadBy.DISTRIBUTED, echo="idle_cyclon_every")
    reconnect_every: int = param(default=10, help="With faults: every this many rounds a server shuffles with a peer "
                                 "that left one of its Cyclon shuffles unanswered, which rejoins the sides of a healed "
                                 "partition (0: never — docs/faults.md).", ge=0, le=10**6, unit="rounds",
                                 read_by=ReadBy.DISTRIBUTED, echo="reconnect_every")
    mark_saturated: bool = param(default=True, help="A failed walk marks its user saturated (reports +∞).",
                                 read_by=ReadBy.DISTRIBUTED, echo="mark_saturated")
    saturation_retry: int | None = param(default=None, help="Ticks before a saturated user's walk is retried, "
                                         "doubling (where tasks end, up to 100 ticks; 0: never; default: 50 on endless "
                                         "workloads, 1 on finite ones).", ge=0, le=10**9, unit="ticks",
                                         read_by=ReadBy.DISTRIBUTED, echo="saturation_retry_ticks")
    idle_gradient_every: int = param(default=1, help="A server with no users to allocate for starts a gradient "
                                     "exchange only every this many rounds (1: every round, as the thesis; more: less "
                                     "traffic, a protocol change — docs/performance.md measures its effect).", ge=1,
                                     le=10**6, unit="rounds", read_by=ReadBy.GRADIENT, echo="idle_gradient_every")
    devices: str | None = param(default=None, help="A resource modelled as devices of one unit each, e.g. gpu: a "
                                "task's fraction sits on one device, a task of n units takes n unused devices "
                                "(protocols.devices; endless workloads without faults). Default: every resource a "
                                "scalar.", echo="devices")
    fit_candidates: int = param(default=8, help="Best-fit, min-fragmentation, keep-room and in-order walks: fitting "
                                "servers a walk compares.", ge=1, le=10**6, unit="servers",
                                read_by=ReadBy.WALKS, when=("placement", COMPARING))
    sample_every: Duration = param(default=10.0, help="The period of samples over time: fragmentation in every run; "
                                   "fairness, utilisation and queues where tasks end (0: none).", ge=0, le=1e9,
                                   unit="s", echo="sample_every_s")
    reference: str | None = param(default=None, help="Also run this central protocol (e.g. drf) with its default "
                                  "placement on the same case and seed, and report each user's tasks beside that "
                                  "run's (the result's reference; docs/metrics.md).")
    faults: str | None = param(default=None, help="A fault scenario file (TOML; docs/faults.md): message loss, "
                               "latency changes, partitions.", echo="fault_scenario")
    swm_every: Duration = param(default=700.0, help="Tasks that end: the period of the samples compared with the SWM "
                                "optimum (seed 002: 700 s; 0: none).", ge=0, le=1e9, unit="s", echo="swm_every_s")
    protocol_values: Mapping[str, Any] = field(default_factory=dict)

    def value(self, name: str) -> Any:
        """The value of run parameter `name`, whether every run has it or a protocol declares it."""
        return self.protocol_values[name] if name in self.protocol_values else getattr(self, name)

    def values(self) -> dict[str, Any]:
        """Every parameter by name: those every run has, in declaration order, then the protocols' own."""
        return {p.name: getattr(self, p.name) for p in RunParams.PARAMS} | dict(self.protocol_values)

    def saturation_retry_ticks(self, finite: bool) -> int:
        """The saturation retry in ticks; unset, it depends on the workload (`SATURATION_RETRY_TICKS`)."""
        return SATURATION_RETRY_TICKS[finite] if self.saturation_retry is None else self.saturation_retry

    def saturation_retry_cap_ticks(self, finite: bool) -> float:
        """The longest wait the saturation retry doubles to, in ticks (`RETRY_CAP_TICKS`; endless: none)."""
        return min(RETRY_CAP_TICKS, max(1, self.stall_ticks // 2)) if finite else math.inf


class DrawnMachines(Declared):
    machines: int = param(default=100, help="Machines drawn (with a generated workload, e.g. --workload google; "
                          "drfemu workload online and openb-replay draw, when not given, as many as the load needs "
                          "or all the trace's).", ge=1, le=MAX_NODES)


class DrawnUsers(Declared):
    users: int = param(default=20, help="Users drawn (with a generated workload, e.g. --workload google; "
                       "drfemu overlay --utilities google).", ge=1, le=MAX_NODES)


class CaseSeed(Declared):
    case_seed: int | None = param(default=None, help="Seed of the case draw (default: the run's --seed; drfemu "
                                  "workload: 1).", ge=0, le=MAX_SEED)


class TraceSpan(Declared):
    minutes: float | None = param(default=None, help="The minutes of the trace replayed (drfemu workload online: its "
                                  "first, at most 60; openb-replay: the window from --start; default: all).", gt=0,
                                  le=LARGEST / 60)


class CaseParams(CaseSeed, DrawnUsers, DrawnMachines):
    """What a generated case is drawn from (`workloads.registry`: the built-in generated workloads read these)."""


class GpuCaseParams(CaseParams):
    """A drawn GPU-sharing case's: `CaseParams` and the share of its users that ask for GPUs (the
    `gpu-cluster` and `openb` workloads share this declaration)."""

    gpu_users: float | None = param(default=None, help="Share of the users drawn asking for GPUs (default: the "
                                    "workload's own mix; gpu-cluster 0.8, openb the trace's).", ge=0, le=1)


# -- checking values ------------------------------------------------------------------------------
class _Checked(BaseModel):
    """Base of every model generated from declarations: frozen, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    if isinstance(value, bool):
        raise InputError("expected a duration such as '100ms'")
    return value


def _no_bool(value: Any) -> Any:
    if isinstance(value, (bool, str)):
        raise InputError("expected a number")
    return value


def _annotation(p: Param) -> Any:
    bounds: dict[str, Any] = {k: v for k, v in (("ge", p.ge), ("gt", p.gt), ("le", p.le)) if v is not None}
    if p.kind is Kind.BOOL:
        return StrictBool
    if p.kind is Kind.TEXT:
        if p.choices:
            return Literal[p.choices] if p.default is not None else Literal[p.choices] | None  # type: ignore[valid-type]
        return str
    if p.kind in (Kind.DURATION, Kind.FLOAT):
        before = _duration if p.kind is Kind.DURATION else _no_bool
        number = Annotated[float, BeforeValidator(before), Field(strict=False, allow_inf_nan=False, **bounds)]
        return number if p.default is not None else number | None
    if p.default is None:
        return Annotated[StrictInt | None, Field(**bounds)]
    return Annotated[StrictInt, Field(**bounds)]


@cache
def _model(params: tuple[Param, ...]) -> type[_Checked]:
    """The pydantic model of `params` (made once per set of declarations)."""
    fields = {p.name: (_annotation(p), p.default) for p in params}
    return create_model("CheckedParams", __base__=_Checked, **fields)  # type: ignore[call-overload, no-any-return]


def check_values(params: Iterable[Param], values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` checked against the declarations `params`: defaults filled in, durations in
    seconds, in declaration order; an `InputError` of one line naming the option otherwise."""
    declared = tuple(params)
    try:
        return _model(declared)(**values).model_dump()
    except ValidationError as error:
        raise InputError(_one_line(error, {p.name: p for p in declared})) from None


def _bound(value: float) -> str:
    """A bound as a user wrote it: an integer in full, a fraction as `:g` gives it."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def _one_line(error: ValidationError, declared: Mapping[str, Param]) -> str:
    first = error.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else "?"
    if first["type"] == "extra_forbidden":
        return f"unknown run parameter {name!r} (known: {', '.join(declared)})"
    option = declared[name].option if name in declared else name
    kind, context, got = first["type"], first.get("ctx", {}), f", got {first.get('input')!r}"
    unit = " s" if name in declared and declared[name].kind is Kind.DURATION else ""
    if kind == "greater_than_equal":
        return f"{option} must be at least {_bound(context['ge'])}{unit}{got}"
    if kind == "greater_than":
        bound = "positive" if context["gt"] == 0 else f"above {_bound(context['gt'])}{unit}"
        return f"{option} must be {bound}{got}"
    if kind == "less_than_equal":
        return f"{option} must be at most {_bound(context['le'])}{unit}{got}"
    if kind == "literal_error":
        return f"{option} must be one of {', '.join(declared[name].choices)}{got}"
    if kind == "value_error":  # our own validators' messages name the value already
        return f"{option}: {first['msg'].removeprefix('Value error, ')}"
    expected = {"int_type": "an integer", "int_parsing": "an integer", "bool_type": "true or false",
                "float_type": "a finite number", "float_parsing": "a finite number", "finite_number": "a finite number",
                "string_type": "a text"}.get(kind)
    return f"{option}: {'must be ' + expected if expected else first['msg']}{got}"


# -- who reads what -------------------------------------------------------------------------------
_EVERY_RUN = {p.name: p for p in RunParams.PARAMS}


def _core_reader(p: Param) -> Callable[[ProtocolSpec], bool]:
    """Whether a protocol reads `p`, a parameter every run has, by its declaration (`Param.read_by`)."""
    if p.read_by is ReadBy.DISTRIBUTED:
        return lambda spec: spec.distributed
    if p.read_by is ReadBy.GRADIENT:
        return lambda spec: spec.gradient is not GradientUse.OFF
    if p.read_by is ReadBy.WALKS:  # the walks of home-based protocols, and central rules that declare it (drf)
        return lambda spec: spec.gateway is Gateway.HOME or any(q.name == p.name for q in spec.params)
    return lambda spec: True


def reads(spec: ProtocolSpec, name: str) -> bool:
    """Does protocol `spec` read run parameter `name`?"""
    if name in _EVERY_RUN:
        return _core_reader(_EVERY_RUN[name])(spec)
    return any(p.name == name for p in spec.params)


def readers(name: str) -> list[str]:
    """The protocols that read run parameter `name`."""
    return [spec.name for spec in PROTOCOLS.values() if reads(spec, name)]


def run_declarations() -> tuple[Param, ...]:
    """Every run parameter: `RunParams`', then every registered protocol's own (each once), in
    registry order (every protocol is loaded)."""
    seen = set(_EVERY_RUN)
    own: list[Param] = []
    for spec in PROTOCOLS.values():
        for p in spec.params:
            if p.name not in seen:
                seen.add(p.name)
                own.append(p)
    return RunParams.PARAMS + tuple(own)


def declared(name: str) -> Param:
    """The declaration of run parameter `name`."""
    for p in run_declarations():
        if p.name == name:
            return p
    raise KeyError(name)


def protocol_defaults(spec: ProtocolSpec, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The protocol's own defaults (its rule's `DEFAULTS`), e.g. PDGDRF's `centre_ties = "strict"`
    where the declared default is DGDRF's `"id"`. With `given` (run parameters by name, None for
    unset): where it models a resource as devices (`devices`), the rule's `DEVICE_DEFAULTS` over
    them (BDGDRF's band cap once the home is full); and of those not given, one that would not be
    read under the values it decides by (`Param.when`) is left out, so that it keeps its declared
    default (with `--band-cap 0`, `--band-cap-when` is the declared `always`, as without devices)."""
    defaults = dict(getattr(spec.rule, "DEFAULTS", {}))
    if given is None:
        return defaults
    given = {name: value for name, value in given.items() if value is not None}
    if given.get("devices") is not None:
        defaults.update(getattr(spec.rule, "DEVICE_DEFAULTS", {}))
    values = {**defaults, **given}
    declarations = {p.name: p for p in run_declarations()}
    for name in [n for n in defaults if n not in given]:
        when = declarations[name].when
        if when is not None and not declarations[name].read_under(
                {when[0]: values.get(when[0], declarations[when[0]].default)}):
            del defaults[name]
    return defaults


def check_latency(text: str) -> None:
    """A latency spec that `kernel.latency.parse_latency` accepts, or one line naming --latency."""
    try:
        parse_latency(text, random.Random(0))
    except ValueError as error:
        raise InputError(f"--latency: {error}") from None


def check_gradient_period(tick: float, shuffles_per_tick: float) -> None:
    """A gradient period (tick / exchanges per tick) of at least the 1 µs time resolution."""
    if round(tick / shuffles_per_tick * 1e6) < 1:
        raise InputError("--shuffles-per-tick is too high for --tick (a gradient period below 1 µs)")


def _check_latency_within_run(latency: str, max_time: float) -> None:
    """Refuse a latency whose shortest round trip (a request and its answer) outlasts the whole
    run: no allocation could ever be made, and the run would end 'stalled' saying nothing."""
    floor_s = parse_latency(latency, random.Random(0)).floor_us() / US_PER_S
    if 2 * floor_s >= max_time:
        raise InputError(f"--latency {latency}: a round trip takes at least {2 * floor_s:g} s, not less than "
                         f"--max-time {max_time:g} s; no allocation could be made")


def _check_reference(name: str | None) -> None:
    """`--reference` names a registered central protocol (a reference places centrally, by its own rule)."""
    if name is None:
        return
    try:
        spec = get_protocol(name)
    except InputError as error:
        raise InputError(f"--reference: {error}") from None
    if spec.central_rule is None:
        raise InputError(f"--reference: {name} is not a central protocol (e.g. drf; drfemu protocols lists them)")


def _cross_checks(values: Mapping[str, Any], spec: ProtocolSpec) -> None:
    """Checks that involve two parameters, or a parameter and the protocol."""
    check_latency(values["latency"])
    _check_latency_within_run(values["latency"], values["max_time"])
    if spec.distributed and values["shuffle_length"] > values["cyclon_view"]:
        raise InputError(f"--shuffle-length ({values['shuffle_length']}) must be at most --cyclon-view "
                         f"({values['cyclon_view']})")
    if spec.gradient is not GradientUse.OFF:
        check_gradient_period(values["tick"], values["shuffles_per_tick"])
    _check_reference(values["reference"])
    check = getattr(spec.rule, "check_params", None)
    if check is not None:
        check(values)


def canonical_run(given: Mapping[str, Any]) -> dict[str, Any]:
    """The run parameters of `given` (not None) checked (`run_params`), every one by name, and those
    the protocol does not read reset to their declared defaults (so two sweep points that
    describe the same run are equal)."""
    values = run_params(**given).values()
    spec = get_protocol(values["protocol"])
    declarations = {p.name: p for p in run_declarations()}
    return {name: value if name == "protocol" or reads(spec, name) else declarations[name].default
            for name, value in values.items()}


def unread_choices(params: Iterable[Param], given: Mapping[str, Any],
                   defaults: Mapping[str, Any] | None = None) -> list[str]:
    """Why each option among `given` (not None, not its default) is not read under the value another
    of `params` takes (`Param.when`), e.g. "--fit-candidates is not read under --placement
    first-fit". `defaults`: defaults of the deciding parameters other than the declared ones (a
    protocol's own, `protocol_defaults`)."""
    declarations = {p.name: p for p in params}
    reasons = []
    for name, value in given.items():
        p = declarations.get(name)
        if value is None or p is None or value == p.default or p.when is None or p.when[0] not in declarations:
            continue
        decider = declarations[p.when[0]]
        chosen = given.get(decider.name)
        if chosen is None:
            chosen = (defaults or {}).get(decider.name, decider.default)
        if not p.read_under({decider.name: chosen}):
            reasons.append(f"{p.option} is not read under {decider.option} {chosen}")
    return reasons


def unread(given: Mapping[str, Any]) -> list[str]:
    """Why each option among `given` (run parameters, not None) that differs from its default is
    not read — by the chosen protocol (`Param.read_by`), or under the value another option takes
    (`Param.when`, `unread_choices`) — e.g. "--neighbors is not read by protocol drf". Decision (one
    policy for every option that would not be read, `docs/cli.md`): the command warns and runs."""
    spec = get_protocol(given.get("protocol") or ProtocolChoice.PARAMS[0].default)
    declarations = run_declarations()
    by_name = {p.name: p for p in declarations}
    protocol_unread = [name for name, value in given.items()
                       if value is not None and name in by_name and name != "protocol"
                       and value != by_name[name].default and not reads(spec, name)]
    return ([f"{by_name[name].option} is not read by protocol {spec.name}" for name in protocol_unread]
            + unread_choices(declarations, {k: v for k, v in given.items() if k not in protocol_unread},
                             protocol_defaults(spec, given)))


def run_params(**values: Any) -> RunParams:
    """Validated run parameters from keywords; what is not given (or None) takes the protocol's
    own default (`protocol_defaults`, for the values given), else the declared one. Raises
    `InputError` with one line naming the option."""
    given = {name: value for name, value in values.items() if value is not None}
    spec = get_protocol(given.get("protocol", ProtocolChoice.PARAMS[0].default))
    checked = check_values(run_declarations(), {**protocol_defaults(spec, given), **given})
    _cross_checks(checked, spec)
    every_run = {name: value for name, value in checked.items() if name in _EVERY_RUN}
    return RunParams(**every_run, protocol_values={n: v for n, v in checked.items() if n not in _EVERY_RUN})
