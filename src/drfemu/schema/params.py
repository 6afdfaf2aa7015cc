"""The run parameters: declared once here (and in each protocol's rule), used everywhere.

`CORE` declares every parameter a run has whatever its protocol; a protocol's own
parameters are its rule's `PARAMS` (`kernel.params.Param`), found through the registry.
From these declarations come
- the typed, validated run parameters (`RunParams`, a pydantic model made from them);
- the `drfemu run` options (`cli.run_options`) and their help;
- sweep-config validation (`canonical_params`), with the same one-line errors;
- the reset of parameters a protocol never reads (`readers`), so two sweep points that
  describe the same run get the same `run_id` and run once;
- the result's echo of the parameters (`echo`) and the table in `docs/parameters.md`
  (`drfemu params --markdown`).

Why pydantic: it validates a model built at run time from the declarations (`create_model`),
with bounds (`ge`, `gt`, `le`) and strict types, and reports every failure with its field,
which becomes our one-line error. msgspec is faster but its constraints and errors are
thinner, and validation here runs once per run, not per message.

Decisions: durations are text with a unit (`"100ms"`); a bare number in a config or in
Python is seconds, but a text without a unit (`--tick 100`) is refused. `case_seed` (the
Google case draw) defaults to `seed`, so replicates over seeds draw different cases unless
a config pins it. A parameter given but not read by the protocol is reset to its default
(sweeps), and `unread_given` names such parameters so the CLI can say so.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    create_model,
)
from pydantic.functional_validators import BeforeValidator

from drfemu.schema.workload import MAX_NODES, MAX_SEED
from drfemu.kernel.latency import US_PER_S, parse_duration, parse_latency
from drfemu.overlay.variants import GRADIENT_NAMES, default_max_age_periods
from drfemu.kernel.errors import InputError
from drfemu.kernel.params import Kind, Param
from drfemu.protocols.placement import PLACEMENT
from drfemu.protocols.registry import PROTOCOLS, Gateway, GradientUse, ProtocolSpec, get_protocol

__all__ = ["CASE", "CORE", "GENERATED", "GOOGLE", "GPU_CLUSTER", "SATURATION_RETRY_TICKS", "Checked", "RunParams", "all_params", "canonical_params",
           "check_gradient_period", "check_latency", "defaults", "echo", "param", "parameters_markdown",
           "protocol_defaults", "readers", "run_id", "run_params", "unread_given", "validate_declared"]

GOOGLE = "google"
GPU_CLUSTER = "gpu-cluster"
GENERATED = (GOOGLE, GPU_CLUSTER)
"""Workloads drawn from --machines, --users and --case-seed instead of read from a file."""

CORE: tuple[Param, ...] = (
    Param("protocol", Kind.TEXT, "drf", "Allocation protocol (drfemu protocols lists them).", echo="protocol"),
    Param("workload", Kind.TEXT, GOOGLE, "'google' (a case drawn from the Google 2011 trace), 'gpu-cluster' (a GPU-sharing cluster, "
          "workloads.gpu_cluster) or a workload JSON file."),
    Param("machines", Kind.INT, 100, "Machines drawn (with --workload google or gpu-cluster).", ge=1,
          le=MAX_NODES),
    Param("users", Kind.INT, 20, "Users drawn (with --workload google or gpu-cluster).", ge=1,
          le=MAX_NODES),
    Param("seed", Kind.INT, 1, "Root seed of every random stream.", ge=0, le=MAX_SEED, echo="seed"),
    Param("case_seed", Kind.INT, None, "Seed of the Google case draw (default: --seed).", ge=0, le=MAX_SEED),
    Param("tick", Kind.DURATION, 0.1, "Allocation tick.", ge=1e-6, unit="s", echo="tick_s"),
    Param("latency", Kind.TEXT, "1ms", "Latency: 1ms | uniform:LOW:HIGH | pair:LOW:HIGH[:JITTER]."),
    Param("stall_ticks", Kind.INT, 1000, "End as stalled after this many ticks without an allocation.", ge=1,
          le=10**9, unit="ticks"),
    Param("max_time", Kind.DURATION, 20_000.0, "Hard cap on virtual time.", gt=0, le=1e9, unit="s"),
    Param("neighbors", Kind.INT, 5, "P: gradient view size / out-degree of the fixed neighbour graph.", ge=1,
          le=10_000, echo="neighbors"),
    Param("shuffles_per_tick", Kind.FLOAT, 1.0, "Gradient exchanges per node per tick (may be below 1).", gt=0,
          le=1e6, echo="shuffles_per_tick"),
    Param("walk_ttl", Kind.INT, 0, "Hops a placement walk may take (0: the number of servers).", ge=0, le=10**9,
          unit="hops"),
    Param("cyclon_view", Kind.INT, 10, "Cyclon view size c.", ge=1, le=10_000),
    Param("shuffle_length", Kind.INT, 5, "Cyclon shuffle length ℓ (at most c).", ge=1, le=10_000),
    Param("idle_cyclon_every", Kind.INT, 1, "A server with no users to allocate for starts a Cyclon shuffle only "
          "every this many rounds (1: every round, as the thesis; more: less traffic, a protocol change that slows "
          "allocation — docs/performance.md).", ge=1, le=10**6, unit="rounds", echo="idle_cyclon_every"),
    Param("reconnect_every", Kind.INT, 10, "With faults: every this many rounds a server shuffles with a peer that "
          "left one of its Cyclon shuffles unanswered, which rejoins the sides of a healed partition (0: never — "
          "docs/faults.md).", ge=0, le=10**6, unit="rounds", echo="reconnect_every"),
    Param("mark_saturated", Kind.BOOL, True, "A failed walk marks its user saturated (reports +∞).",
          echo="mark_saturated"),
    Param("saturation_retry", Kind.INT, None, "Ticks before a saturated user's walk is retried, doubling (where tasks "
          "end, up to 100 ticks; 0: never; default: 50 on endless workloads, 1 on finite ones).", ge=0, le=10**9,
          unit="ticks", echo="saturation_retry_ticks"),
    Param("gradient", Kind.TEXT, "tman", "Gradient overlay: tman (ours: whole views, id-ordered ties, uniform partner) "
          "or kompics (the Kompics Toolbox component the thesis ran).", choices=GRADIENT_NAMES,
          echo="gradient_variant"),
    Param("idle_gradient_every", Kind.INT, 1, "A server with no users to allocate for starts a gradient exchange "
          "only every this many rounds (1: every round, as the thesis; more: less traffic, a protocol change — "
          "docs/performance.md measures its effect).", ge=1, le=10**6, unit="rounds", echo="idle_gradient_every"),
    Param("softmax_temperature", Kind.FLOAT, 500.0, "Kompics gradient: softmax temperature of the partner choice "
          "(small: the most preferred neighbour; 500, Kompics' value: almost uniform).", gt=0, le=1e9),
    Param("gradient_shuffle", Kind.INT, 0, "Kompics gradient: view entries sent per exchange (0: half of P, rounded "
          "up).", ge=0, le=10_000),
    PLACEMENT,
    Param("devices", Kind.TEXT, None, "A resource modelled as devices of one unit each, e.g. gpu: a task's fraction "
          "sits on one device, a task of n units takes n unused devices (protocols.devices; endless workloads without "
          "faults). Default: every resource a scalar.", echo="devices"),
    Param("fit_candidates", Kind.INT, 8, "Best-fit and min-fragmentation walks: fitting servers a walk compares.", ge=1, le=10**6,
          unit="servers"),
    Param("max_age", Kind.INT, 0, "Gradient descriptors expire after this many exchange periods (0: max(20, 5·P)).",
          ge=0, le=10**9, unit="periods"),
    Param("sample_every", Kind.DURATION, 10.0, "The period of samples over time: fragmentation in every run; "
          "fairness, utilisation and queues where tasks end (0: none).", ge=0, le=1e9, unit="s", echo="sample_every_s"),
    Param("faults", Kind.TEXT, None, "A fault scenario file (TOML; docs/faults.md): message loss, latency changes, "
          "partitions.", echo="fault_scenario"),
    Param("swm_every", Kind.DURATION, 700.0, "Tasks that end: the period of the samples compared with the SWM "
          "optimum (seed 002: 700 s; 0: none).", ge=0, le=1e9, unit="s", echo="swm_every_s"),
)

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

CASE = ("workload", "machines", "users", "case_seed")  # what the workload is, not how it is run

_DISTRIBUTED = ("neighbors", "walk_ttl", "cyclon_view", "shuffle_length", "idle_cyclon_every", "reconnect_every",
                "mark_saturated", "saturation_retry")
_GRADIENT = ("shuffles_per_tick", "max_age", "idle_gradient_every", "gradient", "softmax_temperature",
             "gradient_shuffle")
_WALKS = ("placement", "fit_candidates")


def _core_reader(name: str) -> Callable[[ProtocolSpec], bool]:
    if name in _DISTRIBUTED:
        return lambda spec: spec.distributed
    if name in _GRADIENT:
        return lambda spec: spec.gradient is not GradientUse.OFF
    if name in _WALKS:  # the walks of home-based protocols, and central rules that declare it (drf)
        return lambda spec: spec.gateway is Gateway.HOME or any(p.name == name for p in spec.params)
    return lambda spec: True


def all_params() -> tuple[Param, ...]:
    """The core parameters, then every registered protocol's own (each once), in registry order."""
    seen = {p.name for p in CORE}
    own: list[Param] = []
    for spec in PROTOCOLS.values():
        for p in spec.params:
            if p.name not in seen:
                seen.add(p.name)
                own.append(p)
    return CORE + tuple(own)


def defaults() -> dict[str, Any]:
    """Every parameter's default, by name (durations in seconds)."""
    return {p.name: p.default for p in all_params()}


def param(name: str) -> Param:
    for p in all_params():
        if p.name == name:
            return p
    raise KeyError(name)


def readers(name: str) -> list[str]:
    """The protocols that read parameter `name` (every protocol for the core ones that all read)."""
    if any(p.name == name for p in CORE):
        read = _core_reader(name)
        return [s.name for s in PROTOCOLS.values() if read(s)]
    return [s.name for s in PROTOCOLS.values() if any(p.name == name for p in s.params)]


def _reads(spec: ProtocolSpec, name: str) -> bool:
    if any(p.name == name for p in CORE):
        return _core_reader(name)(spec)
    return any(p.name == name for p in spec.params)


# -- validation ---------------------------------------------------------------------------------
def _duration(value: Any) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    if isinstance(value, bool):
        raise InputError("expected a duration such as '100ms'")
    return value


def _annotation(p: Param) -> Any:
    bounds: dict[str, Any] = {k: v for k, v in (("ge", p.ge), ("gt", p.gt), ("le", p.le)) if v is not None}
    if p.kind is Kind.INT:
        base: Any = StrictInt
    elif p.kind is Kind.BOOL:
        return StrictBool
    elif p.kind is Kind.TEXT:
        if p.choices:
            return Literal[p.choices] if p.default is not None else Literal[p.choices] | None  # type: ignore[valid-type]
        return str
    elif p.kind is Kind.DURATION:
        return Annotated[float, BeforeValidator(_duration), Field(allow_inf_nan=False, **bounds)]
    else:
        base = float
        return Annotated[base, BeforeValidator(_no_bool), Field(strict=False, allow_inf_nan=False, **bounds)]
    if p.default is None:
        return Annotated[base | None, Field(**bounds)]
    return Annotated[base, Field(**bounds)]


def _no_bool(value: Any) -> Any:
    if isinstance(value, (bool, str)):
        raise InputError("expected a number")
    return value


class Checked(BaseModel):
    """Base of every model generated from declarations: frozen, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class RunParams(Checked):
    """Base of the generated model of a run's parameters; times in seconds.

    The core run parameters are typed attributes here, for the type checker: their defaults,
    bounds and help are their `CORE` declarations, which the generated model applies (a test
    holds these types to the declared kinds). A protocol's own parameters are attributes of the
    generated model, read by name (`getattr(params, p.name)` over the protocol's `PARAMS`).
    """

    protocol: str
    seed: int
    tick: float
    latency: str
    stall_ticks: int
    max_time: float
    neighbors: int
    shuffles_per_tick: float
    walk_ttl: int
    cyclon_view: int
    shuffle_length: int
    idle_cyclon_every: int
    reconnect_every: int
    mark_saturated: bool
    saturation_retry: int | None
    gradient: str
    idle_gradient_every: int
    softmax_temperature: float
    gradient_shuffle: int
    placement: str
    devices: str | None
    fit_candidates: int
    max_age: int
    sample_every: float
    faults: str | None
    swm_every: float

    def saturation_retry_ticks(self, finite: bool) -> int:
        """The saturation retry in ticks; unset, it depends on the workload (`SATURATION_RETRY_TICKS`)."""
        return SATURATION_RETRY_TICKS[finite] if self.saturation_retry is None else self.saturation_retry

    def saturation_retry_cap_ticks(self, finite: bool) -> float:
        """The longest wait the saturation retry doubles to, in ticks (`RETRY_CAP_TICKS`; endless: none)."""
        return min(RETRY_CAP_TICKS, max(1, self.stall_ticks // 2)) if finite else math.inf

    @property
    def max_age_periods(self) -> int:
        """Gradient descriptor expiry in gradient periods; 0 asks for the default, max(20, 5·P)."""
        return self.max_age or default_max_age_periods(self.neighbors)


@cache
def _model(params: tuple[Param, ...], base: type[Checked]) -> type[Checked]:
    """The pydantic model of `params` on `base` (made once per set of declarations)."""
    fields = {p.name: (_annotation(p), p.default) for p in params}
    return create_model(f"{base.__name__}Model", __base__=base, **fields)  # type: ignore[call-overload, no-any-return]


def _validate(params: tuple[Param, ...], values: Mapping[str, Any], base: type[Checked] = Checked) -> Checked:
    try:
        return _model(params, base)(**values)
    except ValidationError as error:
        raise InputError(_one_line(error, {p.name: p for p in params})) from None


def _one_line(error: ValidationError, declared: Mapping[str, Param]) -> str:
    first = error.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else "?"
    if first["type"] == "extra_forbidden":
        return f"unknown run parameter {name!r} (known: {', '.join(declared)})"
    option = declared[name].option if name in declared else name
    kind, context, got = first["type"], first.get("ctx", {}), f", got {first.get('input')!r}"
    if kind == "greater_than_equal":
        return f"{option} must be at least {context['ge']:g}{got}"
    if kind == "greater_than":
        bound = "positive" if context["gt"] == 0 else f"above {context['gt']:g}"
        return f"{option} must be {bound}{got}"
    if kind == "less_than_equal":
        return f"{option} must be at most {context['le']:g}{got}"
    if kind == "literal_error":
        return f"{option} must be one of {', '.join(declared[name].choices)}{got}"
    if kind == "value_error":  # our own validators' messages name the value already
        return f"{option}: {first['msg'].removeprefix('Value error, ')}"
    expected = {"int_type": "an integer", "int_parsing": "an integer", "bool_type": "true or false",
                "float_type": "a finite number", "float_parsing": "a finite number", "finite_number": "a finite number",
                "string_type": "a text"}.get(kind)
    return f"{option}: {'must be ' + expected if expected else first['msg']}{got}"


def validate_declared(params: Iterable[Param], values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` checked against the declarations `params` (defaults filled in, durations in
    seconds); one `InputError` line naming the option otherwise. For commands other than
    `drfemu run` whose options are run parameters (`drfemu overlay`)."""
    return _validate(tuple(params), values).model_dump()


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


def _cross_checks(values: Mapping[str, Any], spec: ProtocolSpec) -> None:
    """Checks that involve two parameters, or a parameter and the protocol."""
    check_latency(values["latency"])
    if spec.distributed:
        if values["shuffle_length"] > values["cyclon_view"]:
            raise InputError(f"--shuffle-length ({values['shuffle_length']}) must be at most --cyclon-view "
                             f"({values['cyclon_view']})")
    if spec.gradient is not GradientUse.OFF:
        check_gradient_period(values["tick"], values["shuffles_per_tick"])
    check = getattr(spec.server_rule or spec.central_rule, "check_params", None)
    if check is not None:
        check(values)


def protocol_defaults(spec: ProtocolSpec) -> dict[str, Any]:
    """The protocol's own defaults for shared parameters (its rule's `DEFAULTS`), e.g. PDGDRF's
    `centre_ties = "strict"` where the declared default is DGDRF's `"id"`."""
    return dict(getattr(spec.server_rule or spec.central_rule, "DEFAULTS", {}))


def run_params(**values: Any) -> RunParams:
    """Validated run parameters (no case parameters) from keywords; what is not given (or None)
    takes the protocol's own default (`protocol_defaults`), else the declared one.
    Raises `ValueError` with one line naming the option."""
    given = {name: value for name, value in values.items() if value is not None}
    spec = get_protocol(given.get("protocol", param("protocol").default))
    params = _validate(tuple(p for p in all_params() if p.name not in CASE), {**protocol_defaults(spec), **given},
                       RunParams)
    assert isinstance(params, RunParams)
    _cross_checks(params.model_dump(), spec)
    return params


def canonical_params(params: Mapping[str, Any], base_dir: Path | None = None) -> dict[str, Any]:
    """All parameters with defaults filled in, types and bounds checked and unread ones reset.

    A workload or fault scenario path is made absolute (relative to `base_dir`) and must be a file;
    `machines`, `users` and `case_seed` describe a Google case and are refused beside a
    workload file. Durations become seconds. Raises `ValueError` with one line.
    """
    known = {p.name for p in all_params()}
    unknown = sorted(set(params) - known)
    if unknown:
        raise InputError(f"unknown run parameter(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    given = {k: v for k, v in params.items() if v is not None}
    workload = given.get("workload", GOOGLE)
    if not isinstance(workload, str):
        raise InputError(f"--workload: expected 'google' or a file path, got {workload!r}")
    case: dict[str, Any] = {"workload": workload}
    if workload not in GENERATED:
        stray = [param(n).option for n in ("machines", "users", "case_seed") if n in given]
        if stray:
            raise InputError(f"{', '.join(stray)} {'describe' if len(stray) > 1 else 'describes'} a Google case and "
                             "cannot be combined with --workload FILE")
        path = _readable(workload, base_dir, "--workload", "workload")
        case.update(workload=str(path), machines=None, users=None, case_seed=None)
    else:
        google = tuple(param(n) for n in CASE if n != "workload")
        case.update(_validate(google, {p.name: given[p.name] for p in google if p.name in given}).model_dump())
    if given.get("faults") is not None:
        given["faults"] = str(_readable(given["faults"], base_dir, "--faults", "fault scenario"))
    validated = run_params(**{k: v for k, v in given.items() if k not in CASE}).model_dump()
    spec = get_protocol(validated["protocol"])
    if workload in GENERATED and case["case_seed"] is None:
        case["case_seed"] = validated["seed"]
    merged = {**case, **validated}
    for name in list(merged):
        if name not in CASE and not _reads(spec, name):
            merged[name] = param(name).default
    _check_latency_within_run(merged["latency"], merged["max_time"])
    return {p.name: merged[p.name] for p in all_params() if p.name in merged}


def _check_latency_within_run(latency: str, max_time: float) -> None:
    """Refuse a latency whose shortest round trip (a request and its answer) outlasts the whole
    run: no allocation could ever be made, and the run would end 'stalled' saying nothing."""
    floor_s = parse_latency(latency, random.Random(0)).floor_us() / US_PER_S
    if 2 * floor_s >= max_time:
        raise InputError(f"--latency {latency}: a round trip takes at least {2 * floor_s:g} s, not less than "
                         f"--max-time {max_time:g} s; no allocation could be made")


def _readable(value: Any, base_dir: Path | None, option: str, what: str) -> Path:
    """The absolute path of a file a parameter names (relative to `base_dir`); it must exist."""
    if not isinstance(value, str):
        raise InputError(f"{option}: expected a file path, got {value!r}")
    path = Path(value).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if path.is_dir():
        raise InputError(f"{option}: {str(path)!r} is a directory, not a {what} file")
    if not path.is_file():
        raise InputError(f"{option}: file {str(path)!r} not found")
    return path.resolve()


def unread_given(params: Mapping[str, Any]) -> list[str]:
    """The options given (not None) that the chosen protocol never reads."""
    spec = get_protocol(params.get("protocol") or "drf")
    return [param(n).option for n, v in params.items()
            if v is not None and n not in CASE and n != "protocol" and not _reads(spec, n)
            and v != param(n).default]


def run_id(params: Mapping[str, Any]) -> str:
    """A readable, stable name for canonical `params`: protocol, size and a content hash.

    The hash covers the parameters whose value differs from the declared default (and the
    protocol, workload and case, always), so declaring a new parameter whose default keeps
    the old behaviour leaves every earlier run's name — and its sweep record — valid. The
    flip side: a record is named by its parameters, not by the code, so after changing a
    default (or any behaviour) sweep into a fresh directory, or delete the records it
    changes. A workload or fault scenario file enters the hash by its content, not its path.
    """
    declared = defaults()
    keyed = {name: value for name, value in params.items()
             if name in ("protocol", *CASE, "seed") or name not in declared or value != declared[name]}
    if keyed["workload"] not in GENERATED:
        keyed["workload"] = hashlib.sha256(Path(keyed["workload"]).read_bytes()).hexdigest()
    if keyed.get("faults") is not None:
        keyed["faults"] = hashlib.sha256(Path(keyed["faults"]).read_bytes()).hexdigest()
    digest = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:12]
    size = {GOOGLE: "", GPU_CLUSTER: "gpu"}.get(params["workload"], "file")
    if params["workload"] in GENERATED:
        size += f"{params['machines']}x{params['users']}"
    return f"{params['protocol']}-{size}-s{params['seed']}-{digest}"


def echo(params: RunParams, finite: bool = False) -> dict[str, Any]:
    """The parameters the result document repeats, under their `echo` keys; defaults that
    depend on the workload (`finite`: tasks end) as resolved."""
    values = params.model_dump()
    document = {p.echo: values[p.name] for p in all_params() if p.echo is not None and p.name in values}
    document["saturation_retry_ticks"] = params.saturation_retry_ticks(finite)
    document["gradient_max_age_periods"] = params.max_age_periods
    return document


def _markdown(params: Iterable[Param]) -> str:
    lines = ["| option | type | default | range | read by | meaning |", "|---|---|---|---|---|---|"]
    for p in params:
        bounds = [f"≥ {p.ge:g}" if p.ge is not None else "", f"> {p.gt:g}" if p.gt is not None else "",
                  f"≤ {p.le:g}" if p.le is not None else ""]
        range_ = ", ".join(b for b in bounds if b) + (f" {p.unit}" if p.unit and any(bounds) else "")
        who = readers(p.name) if p.name not in CASE else ["(the workload)"]
        read_by = "all" if len(who) == len(PROTOCOLS) else ", ".join(who)
        default = "—" if p.default is None else (f"{p.default:g} s" if p.kind is Kind.DURATION else repr(p.default))
        own = [f"{s.name}: {protocol_defaults(s)[p.name]!r}" for s in PROTOCOLS.values()
               if p.name in protocol_defaults(s)]
        if own:
            default += f" ({'; '.join(own)})"
        if p.choices:
            range_ = " \\| ".join(p.choices)
        lines.append(f"| `{p.option}` | {p.kind.value} | {default} | {range_ or '—'} | {read_by} | {p.help} |")
    return "\n".join(lines) + "\n"


def parameters_markdown() -> str:
    """The parameter table of `docs/parameters.md`."""
    return _markdown(all_params())
