"""Run parameters by name: the one vocabulary of `drfemu run` options and sweep configs.

A run is described by a flat mapping of parameter names (the `drfemu run` options with `_`
for `-`) to values. `canonical_params` fills in the defaults, checks names and types, and
resets the parameters that cannot affect the chosen protocol to their defaults — `neighbors`
means nothing to central `drf`, `probe_d` only matters to `probe` — so that two points that
describe the same run get the same `run_id` and a sweep runs it once. `build_run_config`
turns canonical parameters into a `RunConfig`.

Decision: `case_seed` is the seed of the Google case draw; it defaults to the run `seed`
(as in `drfemu run`), so replicates over seeds draw different cases unless a config pins
`case_seed`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from experiments.google import google_case
from experiments.runner import RunConfig
from experiments.workload import load_workload
from nodes.network import parse_duration
from protocols.registry import get_protocol

__all__ = ["DEFAULTS", "build_run_config", "canonical_params", "run_id"]

DEFAULTS: dict[str, Any] = {
    "protocol": "drf",
    "workload": "google",
    "machines": 100,
    "users": 20,
    "seed": 1,
    "case_seed": None,
    "tick": "100ms",
    "latency": "1ms",
    "stall_ticks": 1000,
    "max_time": "20000s",
    "neighbors": 5,
    "shuffles_per_tick": 1.0,
    "probe_d": 2,
    "walk_ttl": 0,
    "cyclon_view": 10,
    "shuffle_length": 5,
    "mark_saturated": True,
    "saturation_retry": 50,
    "max_age": 0,
    "warmup_cap": 500,
}

_DISTRIBUTED_ONLY = ("neighbors", "walk_ttl", "cyclon_view", "shuffle_length", "mark_saturated", "saturation_retry")
_GRADIENT_ONLY = ("shuffles_per_tick", "max_age")


def _irrelevant(params: Mapping[str, Any]) -> set[str]:
    """Parameters that the protocol (and workload source) of `params` never reads."""
    spec = get_protocol(params["protocol"])
    unused: set[str] = set()
    if not spec.distributed:
        unused.update(_DISTRIBUTED_ONLY + _GRADIENT_ONLY + ("probe_d", "warmup_cap"))
    else:
        if spec.name != "probe":
            unused.add("probe_d")
        if spec.gradient == "off":
            unused.update(_GRADIENT_ONLY)
        if spec.gradient != "frozen":
            unused.add("warmup_cap")
    if params["workload"] != "google":
        unused.update(("machines", "users", "case_seed"))
    return unused


def _check_type(name: str, value: Any) -> Any:
    default = DEFAULTS[name]
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if name in ("tick", "max_time"):
        ok, kind = number or isinstance(value, str), "a duration such as '100ms', or seconds"
    elif name == "case_seed" or type(default) is int:
        ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, bool):
        ok, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, float):
        ok, kind = number, "a number"
    else:
        ok, kind = isinstance(value, str), "a string"
    if not ok:
        raise ValueError(f"parameter {name!r} must be {kind}, not {value!r}")
    return float(value) if isinstance(default, float) else value


def canonical_params(params: Mapping[str, Any], base_dir: Path | None = None) -> dict[str, Any]:
    """All parameters with defaults filled in, types checked and unused ones reset.

    A workload path is made absolute (relative to `base_dir`) and must exist. Raises
    `ValueError` naming the problem.
    """
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown run parameter(s): {', '.join(unknown)} (known: {', '.join(DEFAULTS)})")
    merged = dict(DEFAULTS)
    for name, value in params.items():
        merged[name] = _check_type(name, value)
    get_protocol(merged["protocol"])
    if merged["workload"] != "google":
        path = Path(merged["workload"]).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise ValueError(f"workload file {str(path)!r} not found")
        merged["workload"] = str(path.resolve())
    if merged["case_seed"] is None:
        merged["case_seed"] = merged["seed"]
    for name in _irrelevant(merged):
        merged[name] = DEFAULTS[name]
    return merged


def run_id(params: Mapping[str, Any]) -> str:
    """A readable, stable name for canonical `params`: protocol, size and a content hash.

    A workload file enters the hash by its content, not its path.
    """
    keyed = dict(params)
    if keyed["workload"] != "google":
        keyed["workload"] = hashlib.sha256(Path(keyed["workload"]).read_bytes()).hexdigest()
    digest = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:12]
    size = f"{params['machines']}x{params['users']}" if params["workload"] == "google" else "file"
    return f"{params['protocol']}-{size}-s{params['seed']}-{digest}"


def _seconds(value: str | float, name: str) -> float:
    try:
        seconds = parse_duration(value) if isinstance(value, str) else float(value)
    except ValueError as error:
        raise ValueError(f"parameter {name} (--{name.replace('_', '-')}): {error}") from None
    if not seconds > 0:
        raise ValueError(f"parameter {name} (--{name.replace('_', '-')}) must be positive")
    return seconds


def build_run_config(params: Mapping[str, Any]) -> RunConfig:
    """The validated `RunConfig` of canonical `params` (loads or draws the workload)."""
    if params["workload"] == "google":
        workload = google_case(params["machines"], params["users"], params["case_seed"])
    else:
        workload = load_workload(Path(params["workload"]))
    config = RunConfig(
        workload=workload,
        protocol=params["protocol"],
        seed=params["seed"],
        tick=_seconds(params["tick"], "tick"),
        latency=params["latency"],
        stall_ticks=params["stall_ticks"],
        max_time=_seconds(params["max_time"], "max_time"),
        neighbors=params["neighbors"],
        shuffles_per_tick=params["shuffles_per_tick"],
        probe_d=params["probe_d"],
        walk_ttl=params["walk_ttl"],
        cyclon_size=params["cyclon_view"],
        shuffle_length=params["shuffle_length"],
        mark_saturated=params["mark_saturated"],
        saturation_retry=params["saturation_retry"],
        max_age=params["max_age"],
        warmup_cap=params["warmup_cap"],
    )
    config.validate()
    return config
