"""`drfemu bench`, `bench overlay`, `bench live`, `bench scale`: the engine's message rate, a run's overlay
traffic, the live runtime's rate, and the cost curve — one command each, so each has its own options."""

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
    declared_option,
    duration_option,
    err,
    out,
    read_json,
    refuse_options_of_another_mode,
    write_json,
)
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.schema.params import declared, run_declarations


JsonPath = Annotated[Path | None, typer.Option("--json", help="Write the figures as JSON.")]

bench_app = typer.Typer(invoke_without_command=True)
app.add_typer(bench_app, name="bench")


def _rates_table(title: str, rate: str, rows: list[tuple[str, float, tuple[float, ...]]]) -> Table:
    """A design per row: its best rate and every timed sample."""
    table = Table(title=title)
    table.add_column("design")
    table.add_column(rate, justify="right")
    table.add_column("samples", justify="right")
    for design, best, samples in rows:
        table.add_row(design, f"{best:,.0f}", ", ".join(f"{x:,.0f}" for x in samples))
    return table


@bench_app.callback()
def bench(
    ctx: typer.Context,
    json_path: JsonPath = None,
    actors: Annotated[int, typer.Option(help="Actors exchanging messages.", min=1, max=1_000_000)] = 1000,
    in_flight: Annotated[int, typer.Option(help="Messages in flight per actor.", min=1, max=10_000)] = 10,
    repeats: Annotated[int, typer.Option(help="Timed samples per design (best is kept).", min=1, max=100)] = 3,
) -> None:
    """Measure the runtime's message rate against a naive one-task-per-actor design and against
    the bare loop, the limit; `drfemu bench live` measures the live runtime across processes,
    `drfemu bench scale` the cost of the distributed protocols as the cluster grows."""
    if ctx.invoked_subcommand is not None:  # the engine benchmark's options are its own
        refuse_options_of_another_mode(ctx, [p.name for p in ctx.command.params if p.name],
                                       f"bench {ctx.invoked_subcommand} (its own options follow it)")
        return
    if json_path is not None:
        check_writable(json_path, "--json")
    from drfemu.tools.bench import run_bench

    result = run_bench(actors=actors, in_flight=in_flight, repeats=repeats)
    out.print(_rates_table(f"engine benchmark: {actors} actors, {in_flight} messages in flight each, 1 ms latency",
                           "messages/s (best)", [
                               ("drfemu runtime", result.messages_per_s, result.samples),
                               ("naive (task + queue per actor)", result.naive_messages_per_s, result.naive_samples),
                               ("bare loop (heapq, no actors): the limit", result.bare_messages_per_s,
                                result.bare_samples)]))
    out.print(f"speedup over naive: {result.speedup:.2f}×; fraction of the bare loop: {result.limit_fraction:.2f} "
              f"(engine loops in {result.to_dict()['engine']})")
    if json_path is not None:
        write_json(json_path, result.to_dict())


@bench_app.command("scale")
def bench_scale(
    json_path: JsonPath = None,
    servers: Annotated[str, typer.Option(help="Cluster sizes, comma-separated.")] = "100,300,1000,3000,10000",
    protocols: Annotated[str, typer.Option(help="Protocols, comma-separated.")] = "pdgdrf,dgdrf",
    span: Annotated[str, typer.Option(help="Virtual time each point runs.")] = "10s",
    neighbors: Annotated[int, declared_option(run_declarations(), "neighbors")] = 2,
    figure: Annotated[Path | None, typer.Option(help="Write the log-log figure here (.png, .pdf, .svg, …).")] = None,
    baseline: Annotated[Path | None, typer.Option(help="An earlier curve (its --json), drawn dashed in the figure "
                                                       "beside this one.")] = None,
) -> None:
    """Measure the cost curve: the distributed protocols at growing cluster sizes (docs/performance.md)."""
    from drfemu.reports.scale_plot import plot_scale_curve
    from drfemu.studies.scale import ScalePoint, run_scale_curve

    sizes = []
    for item in servers.split(","):
        if not item.strip().isdigit():
            raise CliError(f"--servers: expected whole numbers separated by commas, got {item.strip()!r}")
        sizes.append(int(item))
    names = [name.strip() for name in protocols.split(",") if name.strip()]
    if json_path is not None:
        check_writable(json_path, "--json")
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
    """The points of an earlier `drfemu bench scale --json` file."""
    document = read_json(path, "--baseline: ")
    points = document.get("points") if isinstance(document, dict) else None
    keys = {"protocol", "servers", "wall_per_virtual_s", "messages_per_server_tick"}
    if not isinstance(points, list) or not all(isinstance(p, dict) and keys <= set(p) for p in points):
        raise CliError(f"--baseline: {path} is not the JSON of drfemu bench scale")
    return points


@bench_app.command("overlay")
def bench_overlay(
    json_path: JsonPath = None,
    nodes: Annotated[int, declared_option(OverlayConfig.PARAMS, "nodes")] = 10_000,
    rounds: Annotated[int, declared_option(OverlayConfig.PARAMS, "rounds")] = 20,
    neighbors: Annotated[int, declared_option(run_declarations(), "neighbors")] = declared("neighbors").default,
    repeats: Annotated[int, typer.Option(help="Timed samples of each (best is kept).", min=1, max=100)] = 3,
) -> None:
    """Measure the overlay traffic of a protocol run (a Cyclon shuffle and a gradient exchange per
    server per tick, 1 ms latency) against the bare loop (docs/performance.md)."""
    from drfemu.tools.overlay_bench import run_overlay_bench

    if json_path is not None:
        check_writable(json_path, "--json")
    result = run_overlay_bench(nodes=nodes, rounds=rounds, neighbors=neighbors, repeats=repeats)
    out.print(_rates_table(f"overlay benchmark: {nodes:,} servers, {rounds} ticks, P = {neighbors}, 1 ms latency",
                           "per second (best)", [
                               ("overlay messages (drfemu runtime)", result.messages_per_s, result.samples),
                               ("bare loop events (heapq, no actors)", result.bare_events_per_s,
                                result.bare_samples)]))
    out.print(f"overlay messages a second / bare loop events a second: {result.bare_multiple:.2f}; "
              f"exchanges a second: {result.exchanges_per_s:,.0f}")
    if json_path is not None:
        write_json(json_path, result.to_dict())


@bench_app.command("live")
def bench_live(
    json_path: JsonPath = None,
    processes: Annotated[int, typer.Option(help="Worker processes.")] = 2,
    actors: Annotated[int, typer.Option(help="Actors exchanging pings.", min=1, max=1_000_000)] = 200,
    in_flight: Annotated[int, typer.Option(help="Pings in flight per actor.", min=1, max=10_000)] = 4,
    seconds: Annotated[float, typer.Option(help="Wall seconds measured (after 1 s of warm-up).")] = 5.0,
) -> None:
    """Measure the live runtime: pings over loopback UDP between worker processes."""
    from drfemu.live.bench import run_live_bench

    if json_path is not None:
        check_writable(json_path, "--json")

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
