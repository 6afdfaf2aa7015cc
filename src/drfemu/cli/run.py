"""`drfemu run`, `protocols`, `params` and `schema`: one emulation through the Python API
(`api`), and what a run can be given and gives back."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from drfemu.cli.common import (
    CliError,
    app,
    check_writable,
    declared_options,
    out,
    output_option,
    progress_reporter,
    read_json,
    run_log_file,
    write_json,
    write_text,
)
from drfemu.protocols.registry import PROTOCOLS
from drfemu.schema.params import readers, unread
from drfemu.schema.workload import Workload
from drfemu.workloads.points import (
    Point,
    configure_point,
    declared,
    parameters_markdown,
    point_declarations,
)

if TYPE_CHECKING:
    from drfemu.schema.result import RunResult


def _number(x: float | None, form: str = ".4f") -> str:
    return "–" if x is None else format(x, form)


def summary_table(result: RunResult) -> Table:
    """The run's figures as a table (each read from its typed field)."""
    r = result
    table = Table(title=f"drfemu run — {r.protocol} on {r.machines} machines × {r.users} users (seed {r.seed})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    ledger, delay = r.ledger, r.queueing_delay_s
    rows = [
        ("outcome", f"{r.status}: {r.end_reason}"),
        ("allocations", f"{r.allocations:,}"),
        ("run-time (virtual)", f"{_number(r.run_time_s, '.1f')} s"),
        *(_finite_rows(r) if r.finite_tasks else _endless_rows(r)),
        ("error ratio (τ=0)", _number(r.error_ratio, ".2%")),
        ("error ratio τ=1/5/10/15%", " / ".join(_number(r.error_ratio_by_tolerance[k], ".2%")
                                                for k in ("0.01", "0.05", "0.1", "0.15"))),
        ("tasks waiting / placing / running / finished / lost", " / ".join(f"{ledger[k]:,}" for k in (
            "waiting", "placing", "running", "finished", "lost"))),
        ("queueing delay p50 / p95 / p99", " / ".join(
            "–" if delay[k] is None else f"{delay[k]:.3g} s" for k in ("p50", "p95", "p99"))),
        ("messages", f"{r.messages_total:,} ({r.bytes_total:,} bytes)"
                     + ("" if r.messages_per_allocation is None else f", {r.messages_per_allocation:,.0f} per allocation")),
        ("wall time", f"{r.wall_time_s:.2f} s ({r.events_per_s:,.0f} events/s)"),
    ]
    if r.distributed and r.placement is not None:
        placed = r.placement
        rows.insert(1, ("neighbours P / gradient exchanges per tick", f"{r.neighbors} / {_number(r.shuffles_per_tick, 'g')}"))
        rows.append(("placement", f"{placed['local']:,} local, {placed['walks']:,} walks ({placed['walk_hops']:,} hops, "
                                  f"{placed['walks_failed']:,} failed), {placed['saturation_marks']:,} users marked "
                                  f"saturated" + ("" if r.mark_saturated else " (marking off)")))
    if r.fault_scenario is not None:
        rows += _fault_rows(r)
    if r.reference is not None:
        rows += _reference_rows(result)
    for name, value in rows:
        table.add_row(name, value)
    return table


def _reference_rows(result: RunResult, shown: int = 3) -> list[tuple[str, str]]:
    """The reference run beside this one: the ratios, and the users short of their tasks there
    (the `shown` furthest short, each with its tasks in both runs)."""
    ref = result.reference
    assert ref is not None
    name = f"{ref.protocol} ({ref.placement})"
    short = sorted(((ref.tasks[u] - n, u) for u, n in result.tasks.items() if n < ref.tasks.get(u, 0)), reverse=True)
    listed = ", ".join(f"{u} {result.tasks[u]} vs {ref.tasks[u]}" for _, u in short[:shown])
    ratio = "–" if ref.min_share_ratio is None else f"{ref.min_share_ratio:.3f}"
    time_ratio = "–" if ref.run_time_ratio is None else f"{ref.run_time_ratio:.2f}"
    poorest = "–" if ref.poorest_user is None else (
        f"{ref.poorest_user}: {ref.poorest_tasks} vs {ref.poorest_reference_tasks}")
    more = ", …" if len(short) > shown else ""
    return [
        (f"vs {name}: minimum share / run-time", f"{ratio} / {time_ratio} of its"),
        ("poorest user: tasks here vs there", poorest),
        ("users with fewer tasks than there", f"{ref.users_short}" + (f" ({listed}{more})" if short else "")),
    ]


def _fault_rows(r: RunResult) -> list[tuple[str, str]]:
    actions: dict[str, int] = {}
    for entry in r.faults:
        actions[entry.action] = actions.get(entry.action, 0) + 1
    dropped = r.messages_dropped_by_cause
    return [
        ("faults played", ", ".join(f"{n} {action}" for action, n in actions.items()) or "message faults only"),
        ("messages lost / partitioned / to a down node", " / ".join(f"{dropped[k]:,}" for k in ("loss", "partition", "down"))),
        ("tasks killed / resubmitted / rerun", " / ".join(f"{r.ledger[k]:,}" for k in ("killed", "resubmitted", "rerun"))),
    ]


def _shares(figures: dict[str, float | None] | None, servers: dict[str, int] | None = None) -> str:
    if figures is None:
        return "–"
    return ", ".join(f"{k} {_number(v, '.1%')}" + ("" if servers is None else f" ({servers[k]})")
                     for k, v in figures.items())


def _endless_rows(r: RunResult) -> list[tuple[str, str]]:
    ratio = r.ratio_20_20
    return [
        ("minimum dominant share", _number(r.min_dominant_share)),
        ("Gini", _number(r.gini)),
        ("std of dominant shares", _number(r.std_dominant_share, ".6f")),
        ("20:20 ratio", "∞" if ratio is None else f"{ratio:.3f}"),
        ("Jain's index", _number(r.jain)),
        ("utilisation", _shares(r.utilization)),
        ("stranded", _shares(r.stranded)),
        ("fragmented (servers)", _shares(r.fragmented, r.fragmented_servers)),
    ]


def _finite_rows(r: RunResult) -> list[tuple[str, str]]:
    swm, averaged = r.swm, r.time_averaged
    rmse = (_number(swm.mean_rmse, ".2%") if swm is not None and swm.available
            else f"– ({swm.reason if swm is not None else 'not computed'})")
    return [
        ("time-averaged minimum share / Gini / Jain", " / ".join(
            _number(x) for x in ((averaged.min_share, averaged.gini, averaged.jain) if averaged else (None,) * 3))),
        ("time-averaged utilisation", _shares(r.utilization)),
        ("mean RMSE against SWM", rmse),
    ]


def run_signature() -> inspect.Signature:
    """`drfemu run`'s options: one per declared run parameter (core and every registered
    protocol's own), all defaulting to None so that what the user gave can be told apart."""
    return inspect.Signature([*declared_options(point_declarations()),
                              output_option("json_path", "--json", "Write the result as JSON."),
                              output_option("log", "--log", "Write one JSON line per allocation.")])


def run_command_signature() -> inspect.Signature:
    """`drfemu run`'s own options besides the shared ones: its page and its samples (a live run is
    not sampled)."""
    from drfemu.observers.samples import DEFAULT_POINTS

    samples = inspect.Parameter("samples", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        int | None, typer.Option("--samples", help=f"Keep N to 2N samples of the run over time in the result "
                                 f"(--json; drfemu show --html draws them) [default: {DEFAULT_POINTS} with --html, "
                                 "else none]; the run is the same.")])
    return inspect.Signature([*run_signature().parameters.values(),
                              output_option("html", "--html", "Write the run's page: a self-contained HTML file of "
                                            "charts over virtual time (opens offline)."), samples])


def resolve_run_options(options: dict[str, Any], *paths: Path | None) -> Point:
    """The run the options given describe (warning of those the protocol does not read), once
    every output path is known to be writable."""
    given = {name: value for name, value in options.items() if value is not None}
    point = configure_point(given)
    params = point.params
    for reason in unread(given):
        print(f"drfemu: warning: {reason}; ignored", file=sys.stderr)
    faults = params["faults"]
    if faults is not None and not Path(faults).read_text(encoding="utf-8", errors="replace").strip():
        print(f"drfemu: warning: --faults {given['faults']} is empty: no fault is played (resilience is on, as with "
              "configs/faults/none.toml)", file=sys.stderr)
    for path in paths:
        if path is not None:
            check_writable(path)
    return point


def warn_unplaceable(result: RunResult, case: Workload) -> None:
    """A warning per user whose task fits on no server; a run where that is every user is
    meaningless (nothing could be allocated), and is refused in one line, exit 2."""
    demands = {u.id: list(u.demand) for u in case.users}
    if case.users and len(result["unplaceable_users"]) == len(case.users):
        raise CliError(f"no user's task fits on any of the {len(case.servers)} servers (each demand exceeds every "
                       "server's capacity in some resource): nothing could be allocated")
    for user in result["unplaceable_users"]:
        print(f"drfemu: warning: user {user!r} demands {demands[user]}, which fits on no server; "
              "it is reported and left out of the metrics", file=sys.stderr)


def run(**options: Any) -> None:
    """Run one emulation and print its summary."""
    from drfemu import api

    json_path: Path | None = options.pop("json_path")
    log: Path | None = options.pop("log")
    html_path: Path | None = options.pop("html")
    samples: int | None = options.pop("samples")
    point = resolve_run_options(options, json_path, log, html_path)
    if samples is None:
        from drfemu.observers.samples import DEFAULT_POINTS

        samples = DEFAULT_POINTS if html_path is not None else 0
    elif samples <= 0 and html_path is not None:
        raise CliError("--html draws the run's samples: give --samples of at least 1 (or leave it out)")
    config = point.config
    protocol = config.params.protocol
    with run_log_file(log) as writer, progress_reporter(f"{protocol}: starting") as report:

        def progress(now: float, allocations: int) -> None:
            report(f"{protocol}: {now:,.0f} s virtual, {allocations:,} allocations")

        result = api.run_config(config, allocation_log=writer or False, progress=progress, run_log=writer,
                                samples=samples)
        warn_unplaceable(result, config.workload)
    out.print(summary_table(result))
    if json_path is not None:
        write_json(json_path, result.to_dict())
    if html_path is not None:
        from drfemu.reports.run_page import run_page

        write_text(html_path, run_page(result))


@app.command()
def show(
    result_path: Annotated[Path, typer.Argument(metavar="RESULT", help="A result document (drfemu run --json).")],
    html_path: Annotated[Path, typer.Option("--html", help="Where to write the run's page.")],
) -> None:
    """Write the page of a run already made (its result must hold samples: drfemu run --samples N)."""
    from drfemu.reports.run_page import run_page
    from drfemu.schema.result import RunResult

    check_writable(html_path, "--html")
    document = read_json(result_path, "RESULT: ")
    if not isinstance(document, dict):
        raise CliError(f"RESULT {result_path}: not a run's result document (a JSON object)")
    try:
        result = RunResult.of_document(document)
    except ValueError as error:
        first = str(error).splitlines()
        raise CliError(f"RESULT {result_path}: not a run's result document ({first[1] if len(first) > 1 else first[0]})"
                       ) from None
    write_text(html_path, run_page(result))
    out.print(f"wrote {html_path}")


def _registry_document() -> list[dict[str, Any]]:
    return [{**spec.to_dict(), "parameters": [p.name for p in point_declarations() if spec.name in readers(p.name)],
             "own_parameters": [p.name for p in spec.params]} for spec in PROTOCOLS.values()]


@app.command()
def protocols(
    as_json: Annotated[bool, typer.Option("--json", help="Print the registry as JSON.")] = False,
) -> None:
    """List the allocation protocols (name, gateway, gradient use, parameters read, summary)."""
    if as_json:
        print(json.dumps(_registry_document(), indent=2))
        return
    table = Table(title="protocols")
    for column in ("name", "gateway", "gradient", "own parameters", "what it does"):
        table.add_column(column)
    for entry in _registry_document():
        table.add_row(entry["name"], entry["gateway"], entry["gradient"] if entry["distributed"] else "-",
                      ", ".join(declared(n).option for n in entry["own_parameters"]) or "-", entry["summary"])
    out.print(table)


@app.command()
def params(
    markdown: Annotated[bool, typer.Option(help="Print the table of docs/parameters.md.")] = False,
) -> None:
    """List every run parameter: option, type, default, range, which protocols read it."""
    if markdown:
        print(parameters_markdown(), end="")
        return
    table = Table(title="run parameters")
    for column in ("option", "type", "default", "read by", "meaning"):
        table.add_column(column)
    for p in point_declarations():
        who = readers(p.name)
        table.add_row(p.option, p.kind.value, "-" if p.default is None else str(p.default),
                      "all" if len(who) == len(PROTOCOLS) else ", ".join(who), p.help)
    out.print(table)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the result document (`drfemu run --json`), with its version."""
    from drfemu.schema.result import result_schema

    print(json.dumps(result_schema(), indent=2))


@app.command("check-log")
def check_log_command(
    log: Annotated[Path, typer.Argument(help="A run log written by drfemu run --log.")],
) -> None:
    """Re-check a run from its log alone: capacity at every instant, no task running twice, every
    end matching a start; prints the ledger the log shows. Exit 1 at the first violation."""
    from drfemu.tools.log_check import check_log_file

    result = check_log_file(log)
    ledger = ", ".join(f"{name} {count:,}" for name, count in result.ledger.items())
    if not result.ok:
        print(f"drfemu: {log}: {result.violation}", file=sys.stderr)
        raise typer.Exit(1)
    out.print(f"{log}: {result.records:,} records, capacity and tasks consistent; {ledger}")
