"""`drfemu live`, `drfemu live-worker` and `drfemu live-report`: the same emulation on the real clock over UDP."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from drfemu.cli.common import (
    CliError,
    app,
    check_writable,
    out,
    progress_reporter,
    read_json,
    run_log_file,
    write_json,
    write_text,
)
from drfemu.cli.run import resolve_run_options, run_signature, summary_table, warn_unplaceable
from drfemu.tools.pools import available_cores


def live_signature() -> inspect.Signature:
    """`drfemu live`'s options: `drfemu run`'s and the live ones."""
    def option(name: str, kind: Any, default: Any, *flags: str, help: str) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                 annotation=Annotated[kind, typer.Option(*flags, help=help)])

    parameters = list(run_signature().parameters.values())
    parameters += [
        option("processes", int, available_cores(), "--processes",
               help="Worker processes to start on this machine; the nodes are dealt over them."),
        option("remote_workers", int, 0, "--remote-workers",
               help="Workers more to wait for, started by hand elsewhere (drfemu live-worker)."),
        option("time_scale", float, 1.0, "--time-scale",
               help="Wall seconds per protocol second (0.1: the 100 ms tick every 10 ms)."),
        option("bind", str, "127.0.0.1", "--bind", help="The address this machine's workers bind their nodes at."),
        option("listen", str, "127.0.0.1:0", "--listen", help="HOST:PORT where the coordinator waits for its workers."),
    ]
    return inspect.Signature(parameters)


def live(**options: Any) -> None:
    """Run one emulation live: the same nodes on the real clock, over UDP, across processes."""
    from drfemu.live.coordinator import LiveOptions, run_live
    from drfemu.observers.run_log import labelled_log

    json_path: Path | None = options.pop("json_path")
    log: Path | None = options.pop("log")
    host, _, port = options.pop("listen").rpartition(":")
    if not host or not port.isdigit():
        raise CliError("--listen: expected HOST:PORT")
    live_options = LiveOptions(processes=options.pop("processes"), remote=options.pop("remote_workers"),
                               time_scale=options.pop("time_scale"), bind=options.pop("bind"),
                               listen=(host, int(port)))
    point = resolve_run_options(options, json_path, log)
    params, case = point.params, point.config.workload
    protocol = params["protocol"]
    with run_log_file(log) as writer, progress_reporter(f"{protocol} live: starting") as report:

        def progress(now: float, allocations: int) -> None:
            report(f"{protocol} live: {now:,.0f} s protocol time, {allocations:,} allocations")

        result = run_live(params, live_options, notice=lambda text: print(f"drfemu: {text}", file=sys.stderr),
                          log=labelled_log(case, writer) if writer else None, progress=progress)
        warn_unplaceable(result, case)
    out.print(summary_table(result))
    out.print(_live_table(result.to_dict()))
    if json_path is not None:
        write_json(json_path, result.to_dict())


def _live_table(r: dict[str, Any]) -> Table:
    live = r["live"]
    table = Table(title=f"live: {live['workers']} worker(s) on {live['loop']}, time scale {live['time_scale']:g}")
    table.add_column("metric")
    table.add_column("value", justify="right")

    def quantiles(q: dict[str, float | None], unit: str) -> str:
        return " / ".join("–" if q[k] is None else f"{q[k]:.3g} {unit}" for k in ("p50", "p90", "p99", "max"))

    table.add_row("one-way latency p50 / p90 / p99 / max", quantiles(live["one_way_latency_us"], "µs"))
    table.add_row("tick lateness p50 / p90 / p99 / max", quantiles(live["tick_lateness_ms"], "ms"))
    table.add_row("ticks later than half a tick", f"{live['ticks_late_over_half_tick']:,}")
    table.add_row("datagrams rejected", ", ".join(f"{k}: {v:,}" for k, v in live["datagrams_rejected"].items()) or "0")
    table.add_row("send errors", f"{live['send_errors']:,}")
    return table


@app.command("live-worker")
def live_worker(
    coordinator: Annotated[str, typer.Option(help="HOST:PORT the coordinator (drfemu live) listens at.")],
    index: Annotated[int, typer.Option(help="This worker's number (the coordinator prints the ones it waits for).")],
    bind: Annotated[str | None, typer.Option(help="The address to bind this worker's nodes at.")] = None,
) -> None:
    """One worker of a live run on another machine: it gets its nodes from the coordinator, once it
    has proved it holds the run's secret (set DRFEMU_LIVE_SECRET as drfemu live printed it)."""
    from drfemu.live.worker import worker_main

    failure = worker_main(coordinator, index, bind)
    if failure is not None:
        print(f"drfemu: live worker {index}: {failure.strip()}", file=sys.stderr)
        raise typer.Exit(1)


@app.command("live-report")
def live_report_command(
    files: Annotated[list[Path], typer.Argument(help="Result documents of drfemu run --json and drfemu live --json.")],
    out_path: Annotated[Path | None, typer.Option("--out", help="Write the Markdown here (default: print it).")
                        ] = None,
) -> None:
    """Live against virtual: the runs of FILES grouped by parameters and mode, each live group
    beside its virtual twins (docs/live.md)."""
    from drfemu.reports.live_compare import live_report

    text = live_report([(str(path), read_json(path)) for path in files])
    if out_path is None:
        print(text, end="")
        return
    check_writable(out_path, "--out")
    write_text(out_path, text)
    out.print(f"wrote {out_path}")
