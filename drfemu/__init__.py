"""drfemu: an emulator of distributed, gossip-overlay cluster schedulers that allocate
multi-resource tasks fairly (DRF, FIFO, probes, DDRF, DGDRF, PDGDRF).

The public API, documented with examples in `docs/api.md`::

    import drfemu
    result = drfemu.run(protocol="pdgdrf", machines=50, users=10, neighbors=3)
    result.min_dominant_share, result.gini, result.allocations

Names are loaded on first use, so `import drfemu` and the stages a name does not need stay
cheap (importing the sweep or report stage loads no actor and no C extension).
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from drfemu.experiments.api import available_protocols, configure, register_protocol, run, run_config, sweep
    from drfemu.experiments.running.params import all_params as params
    from drfemu.experiments.running.results import SCHEMA_VERSION, RunResult, result_schema
    from drfemu.experiments.running.runner import RunConfig
    from drfemu.experiments.sweeps.execute import SweepSummary
    from drfemu.experiments.workloads.google import google_case
    from drfemu.experiments.workloads.model import Server, Task, User, Workload, load_workload, parse_workload
    from drfemu.experiments.workloads.online import online_case
    from drfemu.experiments.workloads.synthetic import synthetic_case
    from drfemu.protocols.errors import InputError
    from drfemu.protocols.params import Kind, Param
    from drfemu.protocols.registry import Gateway, GradientUse, ProtocolSpec

try:
    __version__ = version("drfemu")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

_WHERE = {
    "run": "drfemu.experiments.api", "sweep": "drfemu.experiments.api", "available_protocols": "drfemu.experiments.api",
    "register_protocol": "drfemu.experiments.api", "configure": "drfemu.experiments.api",
    "run_config": "drfemu.experiments.api", "RunConfig": "drfemu.experiments.running.runner",
    "params": ("drfemu.experiments.running.params", "all_params"),
    "RunResult": "drfemu.experiments.running.results", "SCHEMA_VERSION": "drfemu.experiments.running.results",
    "result_schema": "drfemu.experiments.running.results",
    "SweepSummary": "drfemu.experiments.sweeps.execute",
    "google_case": "drfemu.experiments.workloads.google", "online_case": "drfemu.experiments.workloads.online",
    "synthetic_case": "drfemu.experiments.workloads.synthetic",
    "Workload": "drfemu.experiments.workloads.model", "Server": "drfemu.experiments.workloads.model",
    "User": "drfemu.experiments.workloads.model", "Task": "drfemu.experiments.workloads.model",
    "load_workload": "drfemu.experiments.workloads.model", "parse_workload": "drfemu.experiments.workloads.model",
    "InputError": "drfemu.protocols.errors",
    "Param": "drfemu.protocols.params", "Kind": "drfemu.protocols.params",
    "ProtocolSpec": "drfemu.protocols.registry", "Gateway": "drfemu.protocols.registry",
    "GradientUse": "drfemu.protocols.registry",
}

__all__ = [
    "available_protocols",
    "configure",
    "Gateway",
    "google_case",
    "GradientUse",
    "InputError",
    "Kind",
    "load_workload",
    "online_case",
    "Param",
    "params",
    "parse_workload",
    "ProtocolSpec",
    "register_protocol",
    "result_schema",
    "run",
    "run_config",
    "RunConfig",
    "RunResult",
    "SCHEMA_VERSION",
    "Server",
    "sweep",
    "SweepSummary",
    "synthetic_case",
    "Task",
    "User",
    "Workload",
    "__version__",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'drfemu' has no attribute {name!r}")
    module, attribute = where if isinstance(where, tuple) else (where, name)
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
