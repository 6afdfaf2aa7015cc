"""`drfemu sweep`, `report`, `grid`, `check`, `fault-report`, `faults-campaign` and `trace-replay`:
many runs, and the pages made of them."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from drfemu.cli.common import (
    CliError,
    app,
    check_page,
    check_plot_path,
    check_writable,
    declared_option,
    err,
    out,
    output_directory,
    pool_size,
    progress_reporter,
    read_json,
    write_json,
    write_text,
)
from drfemu.cli.stopping import resumable, stopped
from drfemu.kernel.files import read_text
from drfemu.protocols.registry import get_protocol
from drfemu.schema.params import run_declarations
from drfemu.tools.pools import WORKERS_PER_CORE
from drfemu.workloads.online import OnlineParams


@app.command()
def sweep(
    config: Annotated[Path, typer.Argument(help="Sweep config (TOML), see configs/.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for the run records and tables.")],
    workers: Annotated[int | None, typer.Option(help="Worker processes (default: the machine's cores; at most "
                                                     f"{WORKERS_PER_CORE} per core, never more than runs).")] = None,
    dask: Annotated[str | None, typer.Option(help="Run on the dask.distributed scheduler at this address.")] = None,
    pages: Annotated[bool, typer.Option("--pages", help="Also keep each run's page (OUT/pages/<run>.html), linked "
                                                         "from drfemu report's page; the runs are the same.")] = False,
) -> None:
    """Run every point of a sweep config, resuming where an earlier sweep into --out stopped."""
    from drfemu import api
    from drfemu.sweeps.config import load_sweep

    if dask is not None and workers is not None:
        raise CliError("give --workers or --dask, not both (a Dask cluster has its own workers)")
    plan = load_sweep(config)
    n_workers = pool_size(workers, len(plan.runs))
    points = sum(len(e.points) for e in plan.experiments)
    failures: list[str] = []
    done = [0]
    with output_directory(out_dir, owned_by=("sweep.json",)), \
            Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                     TextColumn("ETA"), TimeRemainingColumn(), console=err, disable=not err.is_terminal) as bar:
        out.print(f"sweep {config}: {len(plan.experiments)} experiment(s), {points} points, {len(plan.runs)} distinct "
                  f"runs on {'Dask at ' + dask if dask else f'{n_workers} worker process(es)'}")
        task = bar.add_task("sweep", total=None)

        def on_start(todo: int, skipped: int) -> None:
            bar.update(task, total=todo)
            if skipped:
                out.print(f"{skipped} run(s) already finished in {out_dir}: skipped")

        def on_record(record: dict[str, Any], finished: int, todo: int) -> None:
            if stopped():
                raise KeyboardInterrupt  # the signal's own exception was swallowed (e.g. by a finaliser)
            done[0] = finished
            ok = record["status"] == "ok"
            if not ok:
                failures.append(f"{record['id']}: {record['error']}")
            bar.update(task, completed=finished, description=f"sweep ({len(failures)} failed)")
            if bar.disable:
                wall = record["result"]["wall_time_s"] if ok else None
                print(f"[{finished}/{todo}] {record['id']} {'ok' if ok else 'FAILED'}"
                      + (f" {wall:.1f} s" if wall is not None else ""), file=sys.stderr, flush=True)

        with resumable(lambda: f"{done[0]} run(s) of this sweep finished; tables rewritten from the records on "
                                "disk"):
            summary = api.sweep(plan, out_dir, workers=None if dask else n_workers, dask=dask, on_start=on_start,
                                on_record=on_record, pages=pages)
    out.print(f"{summary.total} runs: {summary.skipped} already finished, {summary.ran} ran ({summary.failed} failed) "
              f"in {summary.wall_s / 60:.1f} min; tables {out_dir / 'runs.csv'}"
              + (f", {summary.parquet}" if summary.parquet else " (no Parquet: pip install 'drfemu[sweep]')"))
    for failure in failures:
        print(f"drfemu: run failed: {failure}", file=sys.stderr)
    if failures:
        raise typer.Exit(1)


def protocol_list(text: str) -> list[str]:
    """The protocols of a comma-separated --protocols, each known; at least one."""
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise CliError("--protocols names no protocol (drfemu protocols lists them)")
    for name in names:
        get_protocol(name)
    return names


@app.command()
def report(
    sweep_dir: Annotated[Path, typer.Argument(help="A sweep's --out directory.")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Where to write the report (default: SWEEP_DIR/report).")] = None,
) -> None:
    """Turn a sweep (finished or partial) into Markdown tables, PNG figures and one HTML page."""
    from drfemu.reports.render import write_report

    target = out_dir if out_dir is not None else sweep_dir / "report"
    with output_directory(target, owned_by=("report.md", "report.html")):
        written = write_report(sweep_dir, target)
    out.print(f"report: {written.tables} tables, {written.figures} figures from {written.runs} finished runs "
              f"({written.missing} points without a result) → {target / 'report.md'}, {target / 'report.html'}")


@app.command()
def grid(
    out_path: Annotated[Path, typer.Option("--out", help="The Markdown page to write.")],
    sweep_dir: Annotated[Path | None, typer.Option("--sweep", help="A sweep directory holding the E1 runs.")] = None,
    from_json: Annotated[Path | None, typer.Option(help="Re-render an earlier --json file instead.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Also write the grid's runs as JSON.")] = None,
) -> None:
    """The protocol grid page (docs/protocol_grid.md) from a sweep's E1 runs."""
    from drfemu.reports.protocol_grid import render, sweep_rows

    if (sweep_dir is None) == (from_json is None):
        raise CliError("give --sweep DIR or --from-json FILE (one of them)")
    for path in (out_path, json_path):
        if path is not None:
            check_writable(path)
    if from_json is not None:
        document = read_json(from_json, "--from-json ")
        rows = document.get("runs") if isinstance(document, dict) else None
        if not isinstance(rows, list):
            raise CliError(f"--from-json {from_json}: not a grid file (JSON with a list of runs under \"runs\", "
                           "as grid --json writes)")
    else:
        rows = sweep_rows(sweep_dir)  # type: ignore[arg-type]
    if not rows:
        raise CliError(f"{sweep_dir or from_json} holds no run of the grid")
    try:
        page = render(rows)
    except (KeyError, TypeError, ValueError, AttributeError):
        if from_json is None:
            raise  # rows made here: a bug
        raise CliError(f"--from-json {from_json}: its runs are not grid runs (write it with grid --json)") from None
    write_text(out_path, page)
    if json_path is not None:
        write_json(json_path, {"runs": rows})
    out.print(f"wrote {out_path} from {len(rows)} runs")


@app.command()
def check(
    config: Annotated[Path, typer.Argument(help="Sweep config (TOML) naming the runs to check, e.g. configs/check.toml.")],
    workers: Annotated[int, typer.Option(help="Fresh processes replaying runs alongside.")] = 1,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write every verdict as JSON.")] = None,
) -> None:
    """Check determinism: run each run of CONFIG twice here and once in a fresh process, compare
    them event by event, and name the first event that differs. Exit 1 if any run differs."""
    from drfemu.sweeps.config import load_sweep
    from drfemu.tools.check import check_runs
    from drfemu.workloads.points import build_run_config

    if json_path is not None:
        check_writable(json_path, "--json")
    plan = load_sweep(config)
    workers = pool_size(workers, len(plan.runs))
    out.print(f"check {config}: {len(plan.runs)} run(s), each twice here and once in a fresh process")
    verdicts = []
    for verdict in check_runs(list(plan.runs.items()), build_run_config, workers):
        verdicts.append(verdict)
        status = "ok" if verdict.ok else "DIFFERS"
        out.print(f"{status:7} {verdict.run}  {verdict.events:,} events  {verdict.digest[:16]}", highlight=False)
        for divergence in verdict.divergences:
            out.print(f"        {divergence.describe()}", highlight=False, soft_wrap=True)
            for line in divergence.context:
                out.print(f"          after {line}", highlight=False, soft_wrap=True)
        for against, keys in verdict.result_differences.items():
            out.print(f"        same events, but the {against} result differs in: {', '.join(keys)}", highlight=False)
    failed = [v.run for v in verdicts if not v.ok]
    out.print(f"{len(verdicts) - len(failed)} of {len(verdicts)} run(s) deterministic")
    if json_path is not None:
        write_json(json_path, {"config": str(config), "runs": [v.to_dict() for v in verdicts]})
    if failed:
        raise typer.Exit(1)


@app.command("fault-report")
def fault_report_command(
    sweep_dir: Annotated[Path, typer.Argument(help="A sweep of configs/faults.toml (its --out directory).")],
    out_path: Annotated[Path, typer.Option("--out", help="The Markdown to write.")] = Path("docs/faults-results.md"),
    figure: Annotated[Path | None, typer.Option(help="The crash figure (default: figures/faults-crash.png beside "
                                                     "--out).")] = None,
) -> None:
    """The fault study's tables and figure (docs/faults-results.md) from a sweep of configs/faults.toml."""
    from drfemu.reports.fault_campaign import campaign_section, with_campaign
    from drfemu.reports.fault_study import fault_report
    from drfemu.sweeps.records import load_records

    if not (sweep_dir / "runs").is_dir():
        raise CliError(f"{sweep_dir}: no runs/ directory (run drfemu sweep configs/faults.toml --out {sweep_dir})")
    check_page(out_path, "--out")
    if figure is not None:
        check_plot_path(figure, "--figure")
    figure = figure if figure is not None else out_path.parent / "figures" / "faults-crash.png"
    records = load_records(sweep_dir)
    if not any(r["status"] == "ok" and r["params"].get("faults") for r in records.values()):
        raise CliError(f"{sweep_dir}: no finished run with a fault scenario "
                       f"({len(records)} record(s)); sweep configs/faults.toml into it first")
    link = os.path.relpath(figure, out_path.parent)
    before = read_text(out_path, "a text page (its campaign section is kept)", CliError) if out_path.is_file() else ""
    page = fault_report(records, figure, link)  # the study and the campaign share the page:
    write_text(out_path, with_campaign(page, campaign_section(before)))  # keep the campaign's
    out.print(f"wrote {out_path} and {figure}")


FAULT_KINDS = ("transient", "permanent")


@app.command("faults-campaign")
def faults_campaign(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for the scenarios, twins and one line per case.")],
    schedules: Annotated[int, typer.Option(help="Random fault schedules (cases) to run.")] = 500,
    seed: Annotated[int, declared_option(run_declarations(), "seed")] = 1,
    workers: Annotated[int, typer.Option(help="Worker processes (never more than cases).")] = 2,
    sizes: Annotated[str, typer.Option(help="Cluster sizes drawn from, SERVERSxUSERS, comma-separated.")] = (
        "6x2,10x3,20x5,30x6,50x10,100x20"),
    protocols_: Annotated[str, typer.Option("--protocols", help="Comma-separated protocols, or 'all'.")] = "all",
    max_loss: Annotated[float, typer.Option(help="Largest standing loss a schedule draws (overall, per type, a "
                                                 "window; bursts above it last at most 3 s).")] = 0.2,
    fault_kind: Annotated[str, typer.Option(help="transient: every fault heals; permanent: one or two crashes of "
                                                 "servers never recover, beside faults that heal.")] = "transient",
    report: Annotated[Path | None, typer.Option(help="Write the table into this Markdown page (its campaign "
                                                     "section), e.g. docs/faults-results.md.")] = None,
) -> None:
    """Random fault schedules × every protocol × endless and finite users, each checked for lost and
    duplicated tasks, capacity, its log, its end and determinism (docs/faults.md). Exit 1 if any failed."""
    from drfemu.protocols.registry import PROTOCOLS
    from drfemu.sweeps.campaign import campaign_cases, parse_sizes
    from drfemu.workloads.fault_schedules import ScheduleBounds

    workers = pool_size(workers, schedules)
    if not 0 <= max_loss <= 0.2:
        raise CliError("--max-loss must be in [0, 0.2]: the protocols promise to end at up to 20 % loss")
    if fault_kind not in FAULT_KINDS:
        raise CliError(f"--fault-kind must be one of {', '.join(FAULT_KINDS)}, not {fault_kind!r}")
    names = sorted(PROTOCOLS) if protocols_.strip() == "all" else protocol_list(protocols_)
    if report is not None:
        check_page(report, "--report")
    drawn = campaign_cases(schedules, seed, names, parse_sizes(sizes), ScheduleBounds(max_loss=max_loss),
                           transient=fault_kind == "transient")
    with output_directory(out_dir, owned_by=("campaign.jsonl", "twins.json", "scenarios")), \
            resumable(f"each finished case is kept in {out_dir / 'campaign.jsonl'}"):
        records = _campaign(drawn, out_dir, workers, schedules, names, sizes, seed)
    _campaign_table_and_page(records, out_dir, report, f"--schedules {schedules} --seed {seed} --sizes {sizes} "
                             f"--max-loss {max_loss:g} --fault-kind {fault_kind}")


def _campaign(drawn: Any, out_dir: Path, workers: int, schedules: int, names: list[str], sizes: str,
              seed: int) -> list[dict[str, Any]]:
    from drfemu.reports.fault_campaign import failed
    from drfemu.sweeps.campaign import run_campaign
    from drfemu.workloads.points import run_workload

    out.print(f"fault campaign: {schedules} cases over {len(names)} protocol(s), sizes {sizes}, seed {seed}, "
              f"{workers} worker(s)")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=err) as progress:
        task = progress.add_task("cases", total=schedules)

        def on_record(record: dict[str, Any], done: int, total: int) -> None:
            progress.update(task, completed=done)
            for failure in failed(record):
                progress.console.print(f"case {record['index']} ({record['protocol']}, {record['scenario']}): "
                                       f"{failure}")

        return run_campaign(drawn, out_dir, run_workload, workers, on_record)


def _campaign_table_and_page(records: list[dict[str, Any]], out_dir: Path, report: Path | None, options: str) -> None:
    from rich.table import Table

    from drfemu.reports.fault_campaign import campaign_markdown, campaign_rows, failed, with_campaign

    shown = ("protocol", "endless", "finite", "ended by design", "min share / fault-free (median / worst)",
             "finite run length / fault-free (median / worst)")
    table = Table(title=f"fault campaign: {len(records)} cases")
    for column in ("protocol", "cases", "failed", *shown[3:]):
        table.add_column(column)
    for row in campaign_rows(records):
        cases = [r for r in records if r["protocol"] == row["protocol"]]
        table.add_row(row["protocol"], str(len(cases)), str(sum(bool(failed(r)) for r in cases)),
                      *(str(row[c]) for c in shown[3:]))
    out.print(table)
    bad = sum(bool(failed(r)) for r in records)
    if report is not None:
        command = f"drfemu faults-campaign {options} --out {out_dir} --report {report}"
        before = read_text(report, "a text page (its other sections are kept)", CliError) if report.is_file() else ""
        write_text(report, with_campaign(before, campaign_markdown(records, command)))
        out.print(f"wrote {report}")
    out.print(f"{len(records) - bad} of {len(records)} cases passed; records in {out_dir / 'campaign.jsonl'}")
    if bad:
        raise typer.Exit(1)


Minutes = Annotated[float, declared_option(OnlineParams.PARAMS, "minutes")]
LoadFraction = Annotated[float, declared_option(OnlineParams.PARAMS, "load_fraction")]
ONLINE_PROTOCOLS = "drf,c-adrf,naive-adrf,wmmf,fifo,probe,ddrf-random,ddrf-gradient,dgdrf,pdgdrf,bdgdrf"


@app.command("trace-replay")
def trace_replay(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for the workload and one result per protocol.")],
    protocols_: Annotated[str, typer.Option("--protocols", help="Comma-separated protocols.")] = ONLINE_PROTOCOLS,
    minutes: Minutes = OnlineParams.DEFAULTS["minutes"],
    load_fraction: LoadFraction = OnlineParams.load_fraction,
    seed: Annotated[int, declared_option(run_declarations(), "seed")] = 1,
    workers: Annotated[int, typer.Option(help="Runs in parallel.")] = 2,
    report: Annotated[Path | None, typer.Option(help="Write the Markdown report (figures beside it).")] = None,
) -> None:
    """Every protocol on the Google 2011 trace's own arrivals and run times (docs/results-online.md); resumable."""
    from drfemu.sweeps.online import ReplayProgress, run_online_protocols
    from drfemu.workloads.online import check_online_options
    from drfemu.workloads.points import run_point

    names = protocol_list(protocols_)
    check_online_options(minutes, load_fraction)
    n_workers = pool_size(workers, len(names))
    if report is not None:
        from drfemu.reports.online import kept_part

        kept_part(report)  # a page that would lose its text is refused before anything runs
        check_writable(report, "--report")
        check_writable(report.with_suffix(".html"), "--report")

    def done(protocol: str, result: dict[str, Any]) -> None:
        out.print(f"{protocol}: {result['status']} at {result['run_time_s']:,.0f} s virtual in "
                  f"{result['wall_time_s']:,.0f} s wall")

    with progress_reporter("trace-replay: starting", every_s=30.0) as say:
        def progress(state: ReplayProgress) -> None:
            say(f"trace-replay: {state.line()}")

        with output_directory(out_dir, owned_by=("workload.json",)), \
                resumable(f"each finished protocol's result is kept in {out_dir}"):
            results = run_online_protocols(out_dir, names, run_point, {"seed": seed}, minutes, load_fraction, seed,
                                           n_workers, done, progress)
    if report is not None:
        from drfemu.reports.online import write_online_report

        write_online_report(results, report)
        out.print(f"wrote {report}")
