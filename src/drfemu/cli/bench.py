"""`drfemu bench`: the engine's message rate, the live runtime's, and the cost curve."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from drfemu.cli.common import (
    CliError,
    app,
    check_plot_path,
    check_writable,
    duration_option,
    err,
    out,
    read_json,
    refuse_options_of_another_mode,
    write_json,
)


@app.command()
def bench(
    ctx: typer.Context,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the figures as JSON.")] = None,
    actors: Annotated[int | None, typer.Option(help="Actors exchanging messages [default: 1000; 200 with --live].")
                      ] = None,
    in_flight: Annotated[int | None, typer.Option(help="Messages in flight per actor [default: 10; 4 with --live].")
                         ] = None,
    repeats: Annotated[int, typer.Option(help="Timed samples per design (best is kept).")] = 3,
    live: Annotated[bool, typer.Option("--live", help="Measure the live runtime instead: pings over loopback UDP "
                                                      "between --processes worker processes.")] = False,
    processes: Annotated[int, typer.Option(help="With --live: worker processes.")] = 2,
    seconds: Annotated[float, typer.Option(help="With --live: wall seconds measured (after 1 s of warm-up).")] = 5.0,
    scale: Annotated[bool, typer.Option("--scale", help="Measure the cost curve instead: distributed protocols at "
                                                        "growing cluster sizes (docs/performance.md).")] = False,
    servers: Annotated[str, typer.Option(help="With --scale: cluster sizes, comma-separated.")
                       ] = "100,300,1000,3000,10000",
    protocols: Annotated[str, typer.Option(help="With --scale: protocols, comma-separated.")] = "pdgdrf,dgdrf",
    span: Annotated[str, typer.Option(help="With --scale: virtual time each point runs.")] = "10s",
    neighbors: Annotated[int, typer.Option(help="With --scale: gradient neighbours P.")] = 2,
    figure: Annotated[Path | None, typer.Option(help="With --scale: write the log-log figure here (.png, .pdf, "
                                                     ".svg, …).")] = None,
    baseline: Annotated[Path | None, typer.Option(help="With --scale: an earlier curve (its --json), drawn dashed "
                                                       "in the figure beside this one.")] = None,
) -> None:
    """Measure the runtime's message rate against a naive one-task-per-actor design and against
    the bare loop, the limit (or, with --live, the live runtime's rate across processes; with
    --scale, the cost of the distributed protocols as the cluster grows)."""
    if live and scale:
        raise CliError("--live and --scale measure different things; give one of them")
    mode = "--scale" if scale else "--live" if live else "the engine benchmark"
    scale_only = ("servers", "protocols", "span", "neighbors", "figure", "baseline")
    live_only = ("processes", "seconds")
    foreign = ((*live_only, "actors", "in_flight", "repeats") if scale else (*scale_only, "repeats") if live
               else (*scale_only, *live_only))
    refuse_options_of_another_mode(ctx, foreign, mode)
    if not 1 <= repeats <= 100:
        raise CliError("--repeats must be in [1, 100]")
    for name, value, high in (("--actors", actors, 1_000_000), ("--in-flight", in_flight, 10_000)):
        if value is not None and not 1 <= value <= high:
            raise CliError(f"{name} must be in [1, {high:,}]")
    if json_path is not None:
        check_writable(json_path, "--json")
    if scale:
        _bench_scale(json_path, figure, baseline, servers, protocols, span, neighbors)
        return
    if live:
        _bench_live(json_path, processes, 200 if actors is None else actors, 4 if in_flight is None else in_flight,
                    seconds)
        return
    actors = 1000 if actors is None else actors
    in_flight = 10 if in_flight is None else in_flight
    from drfemu.tools.bench import run_bench

    result = run_bench(actors=actors, in_flight=in_flight, repeats=repeats)
    table = Table(title=f"engine benchmark: {actors} actors, {in_flight} messages in flight each, 1 ms latency")
    table.add_column("design")
    table.add_column("messages/s (best)", justify="right")
    table.add_column("samples", justify="right")
    table.add_row("drfemu runtime", f"{result.messages_per_s:,.0f}", ", ".join(f"{x:,.0f}" for x in result.samples))
    table.add_row("naive (task + queue per actor)", f"{result.naive_messages_per_s:,.0f}",
                  ", ".join(f"{x:,.0f}" for x in result.naive_samples))
    table.add_row("bare loop (heapq, no actors): the limit", f"{result.bare_messages_per_s:,.0f}",
                  ", ".join(f"{x:,.0f}" for x in result.bare_samples))
    out.print(table)
    out.print(f"speedup over naive: {result.speedup:.2f}×; fraction of the bare loop: {result.limit_fraction:.2f} "
              f"(engine loops in {result.to_dict()['engine']})")
    if json_path is not None:
        write_json(json_path, result.to_dict())


def _bench_scale(json_path: Path | None, figure: Path | None, baseline: Path | None, servers: str, protocols: str,
                 span: str, neighbors: int) -> None:
    from drfemu.reports.scale_plot import plot_scale_curve
    from drfemu.studies.scale import ScalePoint, run_scale_curve

    sizes = []
    for item in servers.split(","):
        if not item.strip().isdigit():
            raise CliError(f"--servers: expected whole numbers separated by commas, got {item.strip()!r}")
        sizes.append(int(item))
    names = [name.strip() for name in protocols.split(",") if name.strip()]
    span_s = duration_option(span, "span")
    if figure is not None:
        check_plot_path(figure, "--figure")
    earlier = _scale_baseline(baseline) if baseline is not None else []
    table = Table(title=f"cost curve: {span_s:g} s of virtual time a point, P = {neighbors}", box=box.SIMPLE_HEAD,
                  caption="wall/virt: wall seconds per virtual second; MiB: the point's peak RSS")
    for column in ("proto", "servers", "users", "wall/virt", "events/s", "msg/srv-tick", "MiB", "setup s"):
        table.add_column(column, justify="left" if column == "proto" else "right", min_width=len(column))

    def done(p: ScalePoint) -> None:
        err.print(f"drfemu: {p.protocol} on {p.servers:,} servers: {p.wall_per_virtual_s:.3g} s a virtual second")
        table.add_row(p.protocol, f"{p.servers:,}", f"{p.users:,}", f"{p.wall_per_virtual_s:.3g}",
                      f"{p.events_per_s:,.0f}", f"{p.messages_per_server_tick:.2f}", f"{p.peak_rss_mib:,.0f}",
                      f"{p.setup_wall_s:.1f}")

    points = run_scale_curve(names, sizes, span_s, neighbors, done=done)
    out.print(table)
    rows = [p.to_dict() for p in points]
    if json_path is not None:
        write_json(json_path, {"span_s": span_s, "neighbors": neighbors, "points": rows})
    if figure is not None:
        plot_scale_curve(rows, figure, f"cost curve, {span_s:g} s of virtual time a point, P = {neighbors}",
                         baseline=earlier, baseline_label=baseline.stem if baseline is not None else "baseline")
        out.print(f"wrote {figure}")


def _scale_baseline(path: Path) -> list[dict[str, Any]]:
    """The points of an earlier `drfemu bench --scale --json` file."""
    document = read_json(path, "--baseline: ")
    points = document.get("points") if isinstance(document, dict) else None
    keys = {"protocol", "servers", "wall_per_virtual_s", "messages_per_server_tick"}
    if not isinstance(points, list) or not all(isinstance(p, dict) and keys <= set(p) for p in points):
        raise CliError(f"--baseline: {path} is not the JSON of drfemu bench --scale")
    return points


def _bench_live(json_path: Path | None, processes: int, actors: int, in_flight: int, seconds: float) -> None:
    from drfemu.live.bench import run_live_bench

    result = run_live_bench(processes=processes, actors=actors, in_flight=in_flight, seconds=seconds)
    table = Table(title=f"live benchmark: {actors} actors over {processes} process(es), {in_flight} pings in flight "
                        f"each, UDP on loopback, {result.loop}")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("messages/s (all processes)", f"{result.messages_per_s:,.0f}")
    table.add_row("messages/s per process", ", ".join(f"{x:,.0f}" for x in result.per_process_messages_per_s))
    for name, value in result.latency_us.items():
        table.add_row(f"one-way latency {name}", f"{value:,.0f} µs")
    table.add_row("send errors", str(result.send_errors))
    out.print(table)
    if json_path is not None:
        write_json(json_path, result.to_dict())
