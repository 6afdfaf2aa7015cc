"""A run point: what a sweep, the command line and the API name as one run — the workload (a
generated one with its parameters, or a file), the run parameters — in canonical form.

`point_declarations` lists every parameter a point may have: the run parameters
(`schema.params`), the choice of workload and every generated workload's own
(`workloads.registry`). From them come `drfemu run`'s options, `drfemu params` and the table of
`docs/parameters.md`, sweep-config validation (`canonical_params`) and the names of sweep runs
(`run_id`). `build_run_config` turns a canonical point into the `RunConfig` a run is assembled
from; `run_point` runs it (a sweep's unit of work).

Decisions: a parameter given but not read by the protocol (or by the workload) is reset to its
default, so two points that describe the same run get the same `run_id` and run once; a
workload or fault scenario path is made absolute and must be a file; a generated workload's
`case_seed`, when not given, is the run's `seed`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drfemu.assembly.config import RunConfig
from drfemu.kernel.errors import InputError
from drfemu.kernel.params import Declared, Kind, Param, param
from drfemu.protocols.registry import PROTOCOLS
from drfemu.schema.params import (
    CaseParams,
    ProtocolChoice,
    canonical_run,
    check_values,
    protocol_defaults,
    readers,
    run_declarations,
    run_params,
    unread,
)
from drfemu.schema.workload import Workload, load_workload
from drfemu.workloads.registry import WORKLOADS, WorkloadSpec, workload_declarations

__all__ = ["ALWAYS_NAMED", "Point", "WorkloadChoice", "build_run_config", "canonical_params", "configure_point",
           "configured", "declared",
           "defaults", "draw_workload", "parameters_markdown", "point_declarations", "run_id", "run_point",
           "run_workload", "unread_given"]

ALWAYS_NAMED = ("protocol", "seed", "workload", *(p.name for p in CaseParams.PARAMS))
"""What a run's name always covers (`run_id`), default or not: the protocol, the seed, the case."""


class WorkloadChoice(Declared):
    workload: str = param(default="google", help="A generated workload by name (drfemu workload --help lists "
                          "them; google: a case drawn from the Google 2011 trace) or a workload JSON file.")


def point_declarations() -> tuple[Param, ...]:
    """Every parameter of a run point, each once: the protocol, the workload and every generated
    workload's own, then the other run parameters (every protocol and workload is loaded)."""
    run = run_declarations()
    case = tuple(p for p in workload_declarations() if p.name not in {q.name for q in run})
    return (*run[:len(ProtocolChoice.PARAMS)], *WorkloadChoice.PARAMS, *case, *run[len(ProtocolChoice.PARAMS):])


def declared(name: str) -> Param:
    """The declaration of point parameter `name`."""
    for p in point_declarations():
        if p.name == name:
            return p
    raise KeyError(name)


def defaults() -> dict[str, Any]:
    """Every point parameter's default, by name (durations in seconds)."""
    return {p.name: p.default for p in point_declarations()}


def _generated(workload: str) -> WorkloadSpec | None:
    """The generated workload named `workload`, or None: it names a file. A plug-in of that name
    that could not be loaded is one line saying why (not "file not found")."""
    if workload in WORKLOADS or WORKLOADS.broken(workload) is not None:
        return WORKLOADS[workload]
    return None


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


def _case(workload: str, spec: WorkloadSpec | None, given: Mapping[str, Any], base_dir: Path | None) -> dict[str, Any]:
    """The workload part of a point: the generated workload's (`spec`) parameters checked, or the
    file's path."""
    others = [p for p in workload_declarations() if spec is None or p not in spec.params]
    stray = [p.option for p in others if p.name in given]
    if stray and spec is None:
        raise InputError(f"{', '.join(stray)} {'describe' if len(stray) > 1 else 'describes'} a generated case and "
                         "cannot be combined with --workload FILE")
    if stray:
        raise InputError(f"{', '.join(stray)} {'are' if len(stray) > 1 else 'is'} not a parameter of workload "
                         f"{workload!r}")
    case: dict[str, Any] = {p.name: None if p.name in ALWAYS_NAMED else p.default for p in others}
    if spec is None:
        return {"workload": str(_readable(workload, base_dir, "--workload", "workload")), **case}
    own = check_values(spec.params, {p.name: given[p.name] for p in spec.params if p.name in given})
    return {"workload": workload, **case, **own}


@dataclass(frozen=True)
class Point:
    """A run point checked in one pass: its canonical parameters and the config they build."""

    params: dict[str, Any]
    config: RunConfig


def _canonical(params: Mapping[str, Any],
               base_dir: Path | None) -> tuple[dict[str, Any], dict[str, Any], WorkloadSpec | None]:
    """The canonical point of `params`, its run parameters alone, and its generated workload (None
    for a file). Names and paths are checked first, then the values (`schema.params`)."""
    declarations = point_declarations()
    unknown = sorted(set(params) - {p.name for p in declarations})
    if unknown:
        raise InputError(f"unknown run parameter(s): {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(p.name for p in declarations))})")
    given = {k: v for k, v in params.items() if v is not None}
    workload = given.get("workload", WorkloadChoice.PARAMS[0].default)
    if not isinstance(workload, str):
        raise InputError(f"--workload: expected a generated workload's name or a file path, got {workload!r}")
    spec = _generated(workload)
    if given.get("faults") is not None:
        given["faults"] = str(_readable(given["faults"], base_dir, "--faults", "fault scenario"))
    case = _case(workload, spec, given, base_dir)
    run = canonical_run({k: v for k, v in given.items() if k not in case})
    if case.get("case_seed", 0) is None and spec is not None:
        case["case_seed"] = run["seed"]
    merged = {**case, **run}
    return {p.name: merged[p.name] for p in declarations if p.name in merged}, run, spec


def canonical_params(params: Mapping[str, Any], base_dir: Path | None = None) -> dict[str, Any]:
    """Every point parameter, with defaults filled in, types and bounds checked and unread ones
    reset; durations in seconds (what a sweep names a run by). Raises `InputError` with one line."""
    return _canonical(params, base_dir)[0]


def configure_point(params: Mapping[str, Any], base_dir: Path | None = None) -> Point:
    """The canonical point of `params` (`canonical_params`) and the `RunConfig` it builds, in one
    pass: the workload drawn (or read) once, the run parameters checked once."""
    point, run, spec = _canonical(params, base_dir)
    workload = (spec.draw(**{p.name: point[p.name] for p in spec.params}) if spec is not None
                else load_workload(Path(point["workload"])))
    return Point(point, RunConfig(workload, run_params(**run)))


def unread_given(params: Mapping[str, Any]) -> list[str]:
    """The options given (not None) that the chosen protocol never reads."""
    return unread({k: v for k, v in params.items() if k not in _case_names()})


def _case_names() -> set[str]:
    return {p.name for p in (*WorkloadChoice.PARAMS, *workload_declarations())}


def run_id(params: Mapping[str, Any]) -> str:
    """A readable, stable name for canonical `params`: protocol, size and a content hash.

    The hash covers the parameters whose value differs from the declared default (and the
    protocol, seed, workload and case, always: `ALWAYS_NAMED`), so declaring a new parameter
    whose default keeps the old behaviour leaves every earlier run's name — and its sweep record
    — valid. The flip side: a record is named by its parameters, not by the code, so after
    changing a default (or any behaviour) sweep into a fresh directory, or delete the records it
    changes. A workload or fault scenario file enters the hash by its content, not its path.
    """
    declared_defaults = defaults()
    keyed = {name: value for name, value in params.items()
             if name in ALWAYS_NAMED or name not in declared_defaults or value != declared_defaults[name]}
    spec = _generated(keyed["workload"])
    if spec is None:
        keyed["workload"] = hashlib.sha256(Path(keyed["workload"]).read_bytes()).hexdigest()
    if keyed.get("faults") is not None:
        keyed["faults"] = hashlib.sha256(Path(keyed["faults"]).read_bytes()).hexdigest()
    digest = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:12]
    size = "file" if spec is None else (spec.name if spec.label is None else spec.label)
    if spec is not None and params.get("machines") is not None and params.get("users") is not None:
        size += f"{params['machines']}x{params['users']}"
    return f"{params['protocol']}-{size}-s{params['seed']}-{digest}"


def draw_workload(params: Mapping[str, Any]) -> Workload:
    """The workload of canonical `params`: drawn by its generated workload, or read from its file."""
    spec = _generated(params["workload"])
    if spec is None:
        return load_workload(Path(params["workload"]))
    return spec.draw(**{p.name: params[p.name] for p in spec.params})


def build_run_config(params: Mapping[str, Any]) -> RunConfig:
    """The validated `RunConfig` of canonical `params` (loads or draws the workload)."""
    case = {"workload", *(p.name for p in workload_declarations())}
    return RunConfig(draw_workload(params), run_params(**{k: v for k, v in params.items() if k not in case}))


def run_workload(workload: Workload, params: Mapping[str, Any],
                 record: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The result document of a run of `workload` with `params` by name (validated; defaults fill
    the rest); `record` hears the run log (a fault campaign's unit of work)."""
    from drfemu.assembly.run import run_emulation  # the sweep stage loads no actor until it runs

    return run_emulation(RunConfig.build(workload, **params), record=record).to_dict()


def run_point(params: Mapping[str, Any], progress: Callable[[float, int], None] | None = None) -> dict[str, Any]:
    """The result document of the run that canonical `params` describe (a sweep's unit of work);
    `progress(virtual time, allocations)` hears how it goes."""
    from drfemu.assembly.run import run_emulation  # the sweep stage loads no actor until it runs

    return run_emulation(build_run_config(params), progress=progress).to_dict()


def _markdown(params: Iterable[Param]) -> str:
    lines = ["| option | type | default | range | read by | meaning |", "|---|---|---|---|---|---|"]
    case = {p.name for p in (*WorkloadChoice.PARAMS, *workload_declarations())}
    for p in params:
        bounds = [f"≥ {p.ge:g}" if p.ge is not None else "", f"> {p.gt:g}" if p.gt is not None else "",
                  f"≤ {p.le:g}" if p.le is not None else ""]
        range_ = ", ".join(b for b in bounds if b) + (f" {p.unit}" if p.unit and any(bounds) else "")
        who = readers(p.name) if p.name not in case else ["(the workload)"]
        read_by = "all" if len(who) == len(PROTOCOLS) else ", ".join(who)
        default = "—" if p.default is None else (f"{p.default:g} s" if p.kind is Kind.DURATION else repr(p.default))
        own = [f"{s.name}: {protocol_defaults(s)[p.name]!r}" for s in PROTOCOLS.values()
               if p.name in protocol_defaults(s)]
        own += [f"{s.name} with --devices: {device!r}" for s in PROTOCOLS.values()
                if (device := getattr(s.rule, "DEVICE_DEFAULTS", {}).get(p.name)) is not None]
        if own:
            default += f" ({'; '.join(own)})"
        if p.choices:
            range_ = " \\| ".join(p.choices)
        lines.append(f"| `{p.option}` | {p.kind.value} | {default} | {range_ or '—'} | {read_by} | {p.help} |")
    return "\n".join(lines) + "\n"


def parameters_markdown() -> str:
    """The parameter table of `docs/parameters.md`."""
    return _markdown(point_declarations())


def configured(protocol: str, workload: Workload, given: Mapping[str, Any]) -> RunConfig:
    """The config of a run of a `Workload` built in Python (`drfemu.configure`): the run
    parameters `given`, validated; a generated workload's parameters make no sense beside it."""
    stray = sorted(set(given) & {p.name for p in workload_declarations()})
    if stray:
        raise InputError(f"{', '.join(stray)} describe a generated case and cannot be combined with a Workload")
    return RunConfig(workload, run_params(protocol=protocol, **given))

