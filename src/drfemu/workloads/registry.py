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

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drfemu.kernel.params import Param, params_of
from drfemu.kernel.plugins import Registry, UnknownName
from drfemu.schema.workload import Workload

__all__ = ["BUILT_IN", "ENTRY_POINTS", "FILE_ONLY", "WORKLOADS", "UnknownWorkload", "WorkloadSpec", "describe",
           "file_only_workloads", "get_workload", "workload_declarations"]

ENTRY_POINTS = "drfemu.workloads"
"""The entry-point group through which other packages add generated workloads."""

BUILT_IN = {
    "google": "drfemu.workloads.google:SPEC",
    "gpu-cluster": "drfemu.workloads.gpu_cluster:SPEC",
    "openb": "drfemu.workloads.openb:SPEC",
}
"""The built-in generated workloads: name -> `module:SPEC`."""

FILE_ONLY = {
    "online": "drfemu.workloads.online:SPEC",
    "synthetic": "drfemu.workloads.synthetic:SPEC",
    "openb-replay": "drfemu.workloads.openb:REPLAY_SPEC",
}
"""Workloads that `drfemu workload NAME` writes to a file but `drfemu run --workload` does not draw:
name -> `module:SPEC`. Decision: their parameters share names with the run's but not meanings
(`--machines` there means "exactly this many" or "all the window's", `--minutes` a span of the
trace), and a run option has one declaration (`kernel.plugins`), so they stay out of the run's."""

UnknownWorkload = UnknownName


@dataclass(frozen=True)
class WorkloadSpec:
    """A generated workload: `draw(**values)` makes the `Workload` its parameters' values describe.

    `label` starts the names of its runs in a sweep (`google` cases: ""; default: the name);
    `detail`, if given, adds what `describe` cannot tell of a drawn case (`drfemu workload NAME`
    prints both)."""

    name: str
    summary: str
    declared: Any
    draw: Callable[..., Workload]
    label: str | None = None
    detail: Callable[[Workload], str] | None = None

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


def file_only_workloads() -> tuple[WorkloadSpec, ...]:
    """The `FILE_ONLY` workloads' specs, in that order (each imported)."""
    specs = []
    for where in FILE_ONLY.values():
        module, attribute = where.split(":")
        specs.append(getattr(importlib.import_module(module), attribute))
    return tuple(specs)


def describe(case: Workload) -> str:
    """One line of what `case` holds: its servers, users and resources, and its tasks if they end."""
    servers, users = len(case.servers), len(case.users)
    text = (f"{servers:,} server{'s' * (servers != 1)}, {users:,} user{'s' * (users != 1)} over "
            f"{', '.join(case.resources)}")
    if case.finite:
        last = max(t.submit for u in case.users for t in u.tasks or ())
        text += f"; {case.task_count:,} tasks arriving over {last:,.0f} s (run it with --max-time above that)"
    return text
