"""drfemu: an emulator of distributed, gossip-overlay cluster schedulers that allocate
multi-resource tasks fairly (DRF, FIFO, probes, DDRF, DGDRF, PDGDRF).

The public API, documented with examples in `docs/api.md`::

    import drfemu
    result = drfemu.run(protocol="pdgdrf", machines=50, users=10, neighbors=3)
    result.min_dominant_share, result.gini, result.allocations

Each public name is written once, in the import block below, which the type checker reads;
at run time the same block is read as a table and each name is loaded on first use, so
`import drfemu` and the stages a name does not need stay cheap (importing the sweep or report
stage loads no actor and no C extension).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drfemu._version import __version__ as __version__

if TYPE_CHECKING:
    from drfemu.api import available_protocols as available_protocols
    from drfemu.api import available_workloads as available_workloads
    from drfemu.api import configure as configure
    from drfemu.api import params as params
    from drfemu.api import register_protocol as register_protocol
    from drfemu.api import register_workload as register_workload
    from drfemu.api import run as run
    from drfemu.api import run_config as run_config
    from drfemu.api import run_config_async as run_config_async
    from drfemu.api import sweep as sweep
    from drfemu.assembly.config import RunConfig as RunConfig
    from drfemu.kernel.errors import InputError as InputError
    from drfemu.kernel.errors import UnreadOptionWarning as UnreadOptionWarning
    from drfemu.kernel.params import Declared as Declared
    from drfemu.kernel.params import Duration as Duration
    from drfemu.kernel.params import Kind as Kind
    from drfemu.kernel.params import Param as Param
    from drfemu.kernel.params import param as param
    from drfemu.protocols.spec import Gateway as Gateway
    from drfemu.protocols.spec import GradientUse as GradientUse
    from drfemu.protocols.spec import ProtocolSpec as ProtocolSpec
    from drfemu.schema.params import RunParams as RunParams
    from drfemu.schema.result import SCHEMA_VERSION as SCHEMA_VERSION
    from drfemu.schema.result import RunResult as RunResult
    from drfemu.schema.result import result_schema as result_schema
    from drfemu.schema.workload import Server as Server
    from drfemu.schema.workload import Task as Task
    from drfemu.schema.workload import User as User
    from drfemu.schema.workload import Workload as Workload
    from drfemu.schema.workload import load_workload as load_workload
    from drfemu.schema.workload import parse_workload as parse_workload
    from drfemu.sweeps.execute import SweepSummary as SweepSummary
    from drfemu.workloads.google import google_case as google_case
    from drfemu.workloads.online import online_case as online_case
    from drfemu.workloads.registry import WorkloadSpec as WorkloadSpec
    from drfemu.workloads.synthetic import synthetic_case as synthetic_case


def _public_names() -> dict[str, tuple[str, str]]:
    """Name -> (module, attribute), read from this file's `TYPE_CHECKING` block."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    return {alias.asname or alias.name: (node.module or "", alias.name)
            for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names}


_WHERE = _public_names()

__all__ = sorted([*_WHERE, "__version__"], key=str.lower)


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'drfemu' has no attribute {name!r}")
    module, attribute = where
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
