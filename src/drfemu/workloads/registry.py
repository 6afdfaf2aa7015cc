"""Generated workloads by name: cases drawn from parameters rather than read from a file.

A generated workload is a `WorkloadSpec` — its name, a summary, its parameters (a `declaration`
class or a tuple of `Param`) and the function that draws a `Workload` from their values — in a
module of its own, plus one line in `BUILT_IN`; or, in a package of your own, one entry point
of the group `drfemu.workloads` naming its spec (`docs/api.md`). Its parameters then become
options of `drfemu run`, keys of sweep configs and rows of `drfemu params`, like the protocols'
own. `WORKLOADS` knows every workload by name without importing it (`kernel.plugins.Registry`).

Decisions: a parameter named `case_seed` whose value is not given takes the run's `--seed`
(`workloads.points`), so replicates over seeds draw different cases; two workloads that declare
a parameter of the same name must declare it alike (the built-in ones share
`schema.params.CaseParams`: `--machines`, `--users`, `--case-seed`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drfemu.kernel.params import Param, params_of
from drfemu.kernel.plugins import Registry, UnknownName
from drfemu.schema.workload import Workload

__all__ = ["BUILT_IN", "ENTRY_POINTS", "WORKLOADS", "UnknownWorkload", "WorkloadSpec", "get_workload",
           "workload_declarations"]

ENTRY_POINTS = "drfemu.workloads"
"""The entry-point group through which other packages add generated workloads."""

BUILT_IN = {
    "google": "drfemu.workloads.google:SPEC",
    "gpu-cluster": "drfemu.workloads.gpu_cluster:SPEC",
    "openb": "drfemu.workloads.openb:SPEC",
}
"""The built-in generated workloads: name -> `module:SPEC`."""

UnknownWorkload = UnknownName


@dataclass(frozen=True)
class WorkloadSpec:
    """A generated workload: `draw(**values)` makes the `Workload` its parameters' values describe.

    `label` starts the names of its runs in a sweep (`google` cases: ""; default: the name)."""

    name: str
    summary: str
    declared: Any
    draw: Callable[..., Workload]
    label: str | None = None

    @property
    def params(self) -> tuple[Param, ...]:
        return params_of(self.declared)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "parameters": [p.name for p in self.params]}


WORKLOADS: Registry[WorkloadSpec] = Registry("workload", WorkloadSpec, ENTRY_POINTS, BUILT_IN)


def get_workload(name: str) -> WorkloadSpec:
    """The generated workload named `name` (imported on first use)."""
    return WORKLOADS[name]


def workload_declarations() -> tuple[Param, ...]:
    """Every generated workload's parameters, each once, in registry order (every workload is loaded)."""
    return tuple({p.name: p for spec in WORKLOADS.values() for p in spec.params}.values())
