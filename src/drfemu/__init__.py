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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from drfemu.api import available_protocols, configure, register_protocol, run, run_config, sweep
    from drfemu.schema.params import all_params as params
    from drfemu.schema.result import SCHEMA_VERSION, RunResult, result_schema
    from drfemu.assembly.run import RunConfig
    from drfemu.sweeps.execute import SweepSummary
    from drfemu.workloads.google import google_case
    from drfemu.schema.workload import Server, Task, User, Workload, load_workload, parse_workload
    from drfemu.workloads.online import online_case
    from drfemu.workloads.synthetic import synthetic_case
    from drfemu.kernel.errors import InputError
    from drfemu.kernel.params import Kind, Param
    from drfemu.protocols.registry import Gateway, GradientUse, ProtocolSpec

from drfemu._version import __version__

_WHERE = {
    "run": "drfemu.api", "sweep": "drfemu.api", "available_protocols": "drfemu.api",
    "register_protocol": "drfemu.api", "configure": "drfemu.api",
    "run_config": "drfemu.api", "RunConfig": "drfemu.assembly.run",
    "params": ("drfemu.schema.params", "all_params"),
    "RunResult": "drfemu.schema.result", "SCHEMA_VERSION": "drfemu.schema.result",
    "result_schema": "drfemu.schema.result",
    "SweepSummary": "drfemu.sweeps.execute",
    "google_case": "drfemu.workloads.google", "online_case": "drfemu.workloads.online",
    "synthetic_case": "drfemu.workloads.synthetic",
    "Workload": "drfemu.schema.workload", "Server": "drfemu.schema.workload",
    "User": "drfemu.schema.workload", "Task": "drfemu.schema.workload",
    "load_workload": "drfemu.schema.workload", "parse_workload": "drfemu.schema.workload",
    "InputError": "drfemu.kernel.errors",
    "Param": "drfemu.kernel.params", "Kind": "drfemu.kernel.params",
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
