"""`drfemu overlay` and `drfemu overlay-study`: Cyclon and the gradient alone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from drfemu.experiments.cli.common import (
    MAX_OVERLAY_NODES,
    CliError,
    app,
    check_writable,
    duration_option,
    option_help,
    out,
    progress_reporter,
    write_json,
)
from drfemu.experiments.running.overlay_run import OverlayConfig, run_overlay
from drfemu.experiments.running.params import (
    param,
)


def _overlay_rounds_table(result: dict[str, Any]) -> Table:
    table = Table(title=f"drfemu overlay — {result['nodes']} nodes, P = {result['view']}, Cyclon c = "
                        f"{result['cyclon_view']}, ℓ = {result['shuffle_length']} (seed {result['seed']})")
    for name in ("round", "centre ok", "false centres", "centre view exact", "validated", "ideal views",
                 "Cyclon connected", "in-degree std", "hops to centre"):
        table.add_column(name, justify="right")
    yes = {True: "yes", False: "no"}
    for r in result["rounds"]:
        hops = r["mean_hops_to_centre"]
        table.add_row(str(r["round"]), yes[r["centre_believes"]], str(r["false_centres"]), yes[r["centre_view_exact"]],
                      yes[r["centre_validated"]], f"{r['ideal_view_fraction']:.3f}", yes[r["cyclon_connected"]],
                      f"{r['indegree_std']:.2f}", "-" if hops is None else f"{hops:.1f}")
    return table


@app.command()
def overlay(
    nodes: Annotated[int | None, typer.Option(help="Nodes (default 1000; with a workload file, its server count).")] = None,
    view: Annotated[int, typer.Option(help="Gradient view size P.")] = 10,
    rounds: Annotated[int, typer.Option(help="Rounds (allocation ticks) with static utilities.")] = 50,
    seed: Annotated[int, typer.Option(help="Root seed of every random stream.")] = 1,
    utilities: Annotated[str, typer.Option(help="random | google | a workload JSON file (utility of eq. 4.2).")] = "random",
    users: Annotated[int, typer.Option(help="Users of the Google case (with --utilities google).")] = 20,
    cyclon_view: Annotated[int, typer.Option(help="Cyclon view size c.")] = 10,
    shuffle_length: Annotated[int, typer.Option(help="Cyclon shuffle length ℓ.")] = 5,
    shuffles_per_tick: Annotated[float, typer.Option(help="Gradient exchanges per node per tick (may be below 1).")] = 1.0,
    tick: Annotated[str, typer.Option(help="Allocation tick (one round), e.g. 100ms.")] = "100ms",
    latency: Annotated[str, typer.Option(help="Latency: 1ms | uniform:LOW:HIGH | pair:LOW:HIGH[:JITTER].")] = "1ms",
    perturbations: Annotated[int, typer.Option(help="Centre perturbations after the static rounds.")] = 0,
    drop_rank: Annotated[int, typer.Option(help="Random utilities: the centre drops below up to this many nodes (0: P).")] = 0,
    recovery_cap: Annotated[int, typer.Option(help="Give up on a perturbation's recovery after this many rounds.")] = 200,
    observe_every: Annotated[int, typer.Option(help="Measure every this many rounds (the last is always measured).")] = 1,
    max_age: Annotated[int, typer.Option(help="Gradient descriptors expire after this many exchange periods (0: max(20, 5·P)).")] = 0,
    gradient: Annotated[str, typer.Option(help=option_help(param("gradient")), show_default=False)] = param("gradient").default,
    softmax_temperature: Annotated[float, typer.Option(help=option_help(param("softmax_temperature")), show_default=False)] = param(
        "softmax_temperature").default,
    gradient_shuffle: Annotated[int, typer.Option(help=option_help(param("gradient_shuffle")), show_default=False)] = param(
        "gradient_shuffle").default,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Write a PNG of convergence (and recovery).")] = None,
) -> None:
    """Run Cyclon and the gradient overlay alone and print their convergence per round."""
    if nodes is not None and not 2 <= nodes <= MAX_OVERLAY_NODES:
        raise CliError(f"--nodes must be between 2 and {MAX_OVERLAY_NODES:,} (about 3 KB of state a node)")
    if utilities not in ("random", "google"):
        if not Path(utilities).is_file():
            raise CliError(f"--utilities: {utilities!r} is neither random, google nor a workload file")
        if nodes is not None:
            raise CliError("--nodes cannot be combined with a workload file (its servers are the nodes)")
    config = OverlayConfig(
        nodes=1000 if nodes is None else nodes, view=view, rounds=rounds, seed=seed, utilities=utilities,
        users=users, cyclon_view=cyclon_view, shuffle_length=shuffle_length, shuffles_per_tick=shuffles_per_tick,
        tick=duration_option(tick, "tick"), latency=latency, perturbations=perturbations, drop_rank=drop_rank,
        recovery_cap=recovery_cap, observe_every=observe_every, max_age=max_age, gradient=gradient,
        softmax_temperature=softmax_temperature, gradient_shuffle=gradient_shuffle,
    )
    config.validate()
    with progress_reporter("overlay: starting") as report:

        def progress(round_number: int, _: object) -> None:
            report(f"overlay: round {round_number:,}")

        result = run_overlay(config, progress=progress)
    out.print(_overlay_rounds_table(result))
    converged = result["rounds_to_converge"]
    out.print(f"rounds to converge (centre recognised, no false centre, centre view exact): "
              f"{'not within the observed rounds' if converged is None else converged}")
    recovery = result["recovery"]
    if result["perturbations"]:
        out.print(f"recovery after {recovery['perturbations']} perturbations: {recovery['recovered']} recovered within "
                  f"{recovery['cap_rounds']} rounds; rounds min {recovery['min']}, median {recovery['median']}, "
                  f"mean {recovery['mean'] if recovery['mean'] is None else round(recovery['mean'], 2)}, "
                  f"p90 {recovery['p90']}, max {recovery['max']}")
    out.print(f"emulation: {result['virtual_time_s']:.1f} s virtual in {result['emulation_wall_s']:.2f} s wall "
              f"({result['events_per_s']:,.0f} events/s, {result['exchanges_per_s']:,.0f} exchanges/s); "
              f"observers {result['observer_wall_s']:.2f} s; {result['messages_total']:,} messages, "
              f"{result['bytes_total']:,} bytes; gradient merge in {result['gradient_merge']}")
    if json_path is not None:
        write_json(json_path, result)
    if plot is not None:
        from drfemu.experiments.reports.overlay_plot import plot_overlay

        try:
            plot_overlay(result, plot)
        except OSError as error:
            raise CliError(f"cannot write {plot}: {error.strerror}") from None


@app.command("overlay-study")
def overlay_study_command(
    seeds: Annotated[int, typer.Option(help="Seeds of the convergence study.", min=1)] = 5,
    rounds: Annotated[int, typer.Option(help="Rounds observed per run.", min=1)] = 50,
    perturbations: Annotated[int, typer.Option(help="Centre perturbations of the recovery study (0: skip it).",
                                               min=0)] = 100,
    csv: Annotated[Path | None, typer.Option(help="Also write every round of seed 1 as CSV.")] = None,
) -> None:
    """The overlay study behind docs/overlay.md (Markdown on stdout): convergence per P, recovery."""
    from drfemu.experiments.running.overlay_study import overlay_study

    if csv is not None:
        check_writable(csv)
    markdown, rows = overlay_study(seeds, rounds, perturbations)
    sys.stdout.write(markdown)
    if csv is not None:
        csv.write_text("\n".join(",".join(row) for row in rows) + "\n", encoding="utf-8")
