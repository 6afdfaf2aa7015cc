"""`drfemu workload …`: workload files — one command per generated workload (`drfemu run
--workload NAME` draws the same case from the same options) and per file-only one
(`workloads.registry.FILE_ONLY`), each with the options its parameters declare; and `extract`,
which rebuilds the shipped Google 2011 extract."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from drfemu.cli.common import (
    CliError,
    check_writable,
    declared_options,
    out,
    output_directory,
    workload_app,
    write_json,
)
from drfemu.schema.params import check_values, declared
from drfemu.workloads.registry import WORKLOADS, WorkloadSpec, describe, file_only_workloads

__all__ = ["install_workload_commands"]

_OUTPUT = inspect.Parameter("output", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[
    Path, typer.Option("-o", "--output", help="Where to write the workload JSON (required).")])


def _command(spec: WorkloadSpec) -> Any:
    """`drfemu workload NAME`: its options are `spec`'s declared parameters (and `-o`); a
    `case_seed` not given is the run's default seed, so the file holds the case `drfemu run
    --workload NAME` draws from the same options."""

    def command(**options: Any) -> None:
        output: Path = options.pop("output")
        values = check_values(spec.params, {name: value for name, value in options.items() if value is not None})
        if values.get("case_seed", 0) is None:
            values["case_seed"] = declared("seed").default
        check_writable(output, "--output")
        case = spec.draw(**values)
        write_json(output, case.to_dict())
        detail = f"; {spec.detail(case)}" if spec.detail is not None else ""
        seed = f" (seed {values['case_seed']})" if "case_seed" in values else ""
        out.print(f"wrote {output}: {describe(case)}{detail}{seed}")

    command.__signature__ = inspect.Signature([_OUTPUT, *declared_options(spec.params)])  # type: ignore[attr-defined]
    command.__doc__ = f"Write {spec.summary} as a workload file."
    return command


def install_workload_commands() -> None:
    """(Re)declare a command per generated workload (built-in and plug-in: one registered after
    import brings its command along) and per file-only workload; a plug-in named like a command
    of this group keeps its `--workload` name but gets no command of its own."""
    files = file_only_workloads()
    taken = {"extract", *(spec.name for spec in files)}
    workload_app.registered_commands[:] = [c for c in workload_app.registered_commands if c.name == "extract"]
    for spec in (*(spec for spec in WORKLOADS.values() if spec.name not in taken), *files):
        workload_app.command(spec.name)(_command(spec))


@workload_app.command("extract")
def workload_extract(
    trace_dir: Annotated[Path, typer.Argument(help="A directory with the clusterdata-2011-2 machine_events and "
                                                   "task_events part files.")],
    out_dir: Annotated[Path, typer.Argument(help="Where to write the extract (experiments/data/google2011 ships it).")],
) -> None:
    """Rebuild the compact Google 2011 extract that ships inside the package."""
    from drfemu.workloads.trace_extract import build_extract

    if not trace_dir.is_dir():
        raise CliError(f"{trace_dir} is not a directory")
    with output_directory(out_dir, "OUT_DIR", owned_by=("machines.csv.gz", "user_requests.csv.gz",
                                                        "jobs_first_hour.csv.gz")):
        machines, rows, jobs = build_extract(trace_dir, out_dir)
    out.print(f"{machines} machines, {rows} user-request rows, {jobs} first-hour jobs written to {out_dir}")
