"""The Python API: what `import drfemu` offers, and what the command line is a layer over.

`run` takes the parameters of `drfemu run` by name (as `drfemu params` lists them, with
underscores), validated by the one schema (`schema.params`), and returns a
typed `RunResult`. `sweep` runs a sweep config — a TOML file or the same structure as a
dict — and returns its summary. `register_protocol` (`register_workload`) adds a protocol (a
generated workload) for this process; an installed package adds one for every process through
the `drfemu.protocols` (`drfemu.workloads`) entry points (`protocols.registry`,
`workloads.registry`). This module wires the stages together (the sweep stage is
handed the function that runs a point), so it sits above them, beside the CLI.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Unpack

from drfemu.assembly.config import RunConfig
from drfemu.assembly.run import Run
from drfemu.kernel.errors import InputError, UnreadOptionWarning
from drfemu.kernel.params import Param
from drfemu.observers.run_log import labelled_log
from drfemu.observers.samples import DEFAULT_POINTS, MAX_POINTS
from drfemu.protocols.registry import PROTOCOLS, ProtocolSpec, register
from drfemu.reports.pages import PAGES
from drfemu.reports.run_page import run_page
from drfemu.schema.params import unread
from drfemu.schema.result import RunResult
from drfemu.schema.workload import Workload
from drfemu.sweeps.config import Sweep, load_sweep, sweep_from_document
from drfemu.sweeps.execute import SweepSummary, dask_cluster, process_pool, run_sweep
from drfemu.sweeps.records import Record
from drfemu.tools.pools import available_cores, checked_pool_size
from drfemu.workloads.points import (
    WorkloadChoice,
    build_run_config,
    canonical_params,
    configured,
    point_declarations,
    run_id,
    run_point,
)
from drfemu.workloads.registry import WORKLOADS, WorkloadSpec
from drfemu.workloads.run_keywords import RunKeywords

__all__ = ["AllocationLog", "Progress", "available_protocols", "available_workloads", "configure", "params",
           "register_protocol", "register_workload", "run", "run_config", "sweep"]

Progress = Callable[[float, int], None]
"""Called now and then during a run with the virtual time (s) and the allocations so far."""


AllocationLog = bool | Callable[[dict[str, Any]], None]
"""False: keep no log; True: keep one record per allocation in the result; a callable: hand it
each record as it happens (what `drfemu run --log` writes)."""


GOOGLE = WorkloadChoice.PARAMS[0].default


def configure(protocol: str = "drf", workload: str | Path | Workload = GOOGLE,
              **params: Unpack[RunKeywords]) -> RunConfig:
    """The validated configuration of a run (its workload loaded or drawn); `run` takes the same
    arguments. Bad parameters raise `InputError` with the option named; one that the chosen protocol
    or placement does not read is ignored with an `UnreadOptionWarning` saying so."""
    return _configure(protocol, workload, params)


def _configure(protocol: str, workload: str | Path | Workload, params: Mapping[str, object]) -> RunConfig:
    """`configure`, its warnings pointed at the caller of `configure` or `run`."""
    given = {name: value for name, value in params.items() if value is not None}
    for reason in unread({"protocol": protocol, **given}):
        warnings.warn(f"{reason}; ignored", UnreadOptionWarning, stacklevel=3)
    if isinstance(workload, Workload):
        return configured(protocol, workload, given)
    return build_run_config(canonical_params({"protocol": protocol, "workload": str(workload), **given}))


def run_config(config: RunConfig, *, allocation_log: AllocationLog = False, progress: Progress | None = None,
               run_log: Callable[[dict[str, Any]], None] | None = None, samples: int = 0) -> RunResult:
    """Run the emulation `config` describes (see `run`). `run_log` hears every fact of the
    replayable run log (`observers.run_log`: the cluster, submissions, starts, ends,
    resubmissions, crashes, recoveries and fault windows), as it happens."""
    run, records = _prepared(config, allocation_log, progress, run_log, samples)
    result = run.execute()
    result.keep_allocation_log(records)
    return result


async def run_config_async(config: RunConfig, *, allocation_log: AllocationLog = False,
                           progress: Progress | None = None,
                           run_log: Callable[[dict[str, Any]], None] | None = None, samples: int = 0) -> RunResult:
    """`run_config` as a coroutine on the running event loop (asyncio's or uvloop), beside the
    loop's other tasks: the run yields to them between turns and gives the same result."""
    run, records = _prepared(config, allocation_log, progress, run_log, samples)
    result = await run.execute_async()
    result.keep_allocation_log(records)
    return result


def _prepared(config: RunConfig, allocation_log: AllocationLog, progress: Progress | None,
              run_log: Callable[[dict[str, Any]], None] | None,
              samples: int) -> tuple[Run, list[dict[str, Any]] | None]:
    """The run of `config`, and the list its allocation log goes to (`allocation_log=True`)."""
    if isinstance(samples, bool) or not isinstance(samples, int) or not 0 <= samples <= MAX_POINTS:
        raise InputError(f"--samples must be a whole number in [0, {MAX_POINTS:,}] (0: not sampled), got {samples!r}")
    records: list[dict[str, Any]] | None = None
    log = None
    if allocation_log is True:
        records = []
        log = labelled_log(config.workload, records.append)
    elif callable(allocation_log):
        log = labelled_log(config.workload, allocation_log)
    return Run(config, log, progress, record=run_log, samples=samples), records


def run(protocol: str = "drf", workload: str | Path | Workload = GOOGLE, *, allocation_log: AllocationLog = False,
        progress: Progress | None = None, samples: int = 0, **params: Unpack[RunKeywords]) -> RunResult:
    """Run one emulation and return its result.

    `workload`: ``"google"`` (a case of `machines` × `users` drawn from the Google 2011 trace
    with `case_seed`, default `seed`), a workload JSON file, or a `Workload` built in Python.
    `params`: any run parameter by name (`drfemu params`); what is not given takes its
    default. `allocation_log=True` keeps one record per allocation (`RunResult.allocation_log`,
    `allocation_table()`); `samples=N` keeps N to 2N samples of the run over time
    (`RunResult.samples`, `samples_table()`: what a run's page draws; the same run, sampled or
    not). Bad parameters raise `InputError` with the option named.
    """
    return run_config(_configure(protocol, workload, params), allocation_log=allocation_log, progress=progress,
                      samples=samples)


def run_point_with_page(pages: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A sweep's unit of work that also keeps its run's page (`sweep(pages=True)`): the run, sampled
    (`DEFAULT_POINTS`), its page written to `pages/<run id>.html`; the record keeps the result without
    the samples, as an unsampled run's (the same run, event for event)."""
    result = run_config(build_run_config(params), samples=DEFAULT_POINTS)
    (Path(pages) / f"{run_id(params)}.html").write_text(run_page(result), encoding="utf-8")
    document = result.to_dict()
    del document["samples"]
    return document


def sweep(config: str | Path | Mapping[str, Any] | Sweep, out: str | Path, *, workers: int | None = None,
          dask: str | None = None, on_start: Callable[[int, int], None] | None = None,
          on_record: Callable[[Record, int, int], None] | None = None, pages: bool = False) -> SweepSummary:
    """Run every run of a sweep config into `out` (resumable: finished runs are skipped).

    `config`: a TOML file (`docs/experiments.md`), a dict of the same structure, whose
    relative workload and fault paths are taken from the current folder, or a loaded `Sweep`. Runs go to a pool of
    `workers` processes (default: the machine's cores; 1: this process; at most
    `tools.pools.max_workers()`, and never more than there are runs) or to the
    dask.distributed scheduler at `dask`. A protocol registered in this process with
    `register_protocol` reaches pool workers only where they fork (Linux's default); for any
    other pool, install it as an entry point. `on_start(todo, skipped)` hears the plan once,
    `on_record(record, done, todo)` each finished run. `pages=True` also keeps each run's page in
    `out/pages/<run>.html`, which `drfemu report` links to (a run already recorded keeps its page,
    or has none).
    """
    if workers is not None and dask is not None:
        raise InputError("give workers or dask, not both (a Dask cluster has its own workers)")
    if workers is not None:
        checked_pool_size(workers)
    if isinstance(config, Sweep):
        plan = config
    else:
        plan = load_sweep(Path(config)) if isinstance(config, (str, Path)) else sweep_from_document(config)
    unit: Callable[[Mapping[str, Any]], dict[str, Any]] = run_point
    if pages:
        kept = Path(out) / PAGES
        try:
            kept.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise InputError(f"cannot create {kept}: {error.strerror}") from None
        unit = partial(run_point_with_page, str(kept.resolve()))
    executor = (dask_cluster(dask, unit) if dask is not None else process_pool(workers or available_cores(), unit))
    return run_sweep(plan, Path(out), executor, on_record=on_record, on_start=on_start)


def params() -> tuple[Param, ...]:
    """Every run parameter (`drfemu params`): the run's, every protocol's own and every generated
    workload's, each once."""
    return point_declarations()


def register_protocol(spec: ProtocolSpec) -> ProtocolSpec:
    """Add a protocol to this process's registry (its parameters become run parameters)."""
    return register(spec)


def available_protocols() -> dict[str, ProtocolSpec]:
    """The registered protocols by name: the built-in ones, then those of installed packages."""
    return dict(PROTOCOLS)


def register_workload(spec: WorkloadSpec) -> WorkloadSpec:
    """Add a generated workload to this process (its parameters become run parameters)."""
    return WORKLOADS.register(spec)


def available_workloads() -> dict[str, WorkloadSpec]:
    """The generated workloads by name: the built-in ones, then those of installed packages."""
    return dict(WORKLOADS)
