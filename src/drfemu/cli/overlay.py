"""`drfemu overlay` and `drfemu overlay-study`: Cyclon and the gradient alone."""

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
    check_plot_path,
    check_writable,
    declared_option,
    declared_options,
    out,
    output_option,
    progress_reporter,
    write_json,
    write_text,
)
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.schema.params import unread_choices


def _overlay_rounds_table(result: dict[str, Any]) -> Table:
    config = result["config"]
    table = Table(title=f"drfemu overlay — {config['nodes']} nodes, P = {config['neighbors']}, Cyclon c = "
                        f"{config['cyclon_view']}, ℓ = {config['shuffle_length']} (seed {config['seed']})")
    for name in ("round", "centre ok", "false centres", "centre view exact", "validated", "ideal views",
                 "Cyclon connected", "in-degree std", "hops to centre"):
        table.add_column(name, justify="right")
    yes = {True: "yes", False: "no"}
    for r in result["round_rows"]:
        hops = r["mean_hops_to_centre"]
        table.add_row(str(r["round"]), yes[r["centre_believes"]], str(r["false_centres"]), yes[r["centre_view_exact"]],
                      yes[r["centre_validated"]], f"{r['ideal_view_fraction']:.3f}", yes[r["cyclon_connected"]],
                      f"{r['indegree_std']:.2f}", "-" if hops is None else f"{hops:.1f}")
    return table


def overlay(**options: Any) -> None:
    """Run Cyclon and the gradient overlay alone and print their convergence per round."""
    json_path: Path | None = options.pop("json_path")
    plot: Path | None = options.pop("plot")
    if json_path is not None:
        check_writable(json_path, "--json")
    if plot is not None:
        check_plot_path(plot, "--plot")
    if options.get("utilities") not in (None, "random", "google") and options.get("nodes") is not None:
        raise CliError("--nodes cannot be combined with a workload file (its servers are the nodes)")
    config = OverlayConfig.build(**options)
    for reason in unread_choices(OverlayConfig.PARAMS, options):
        print(f"drfemu: warning: {reason}; ignored", file=sys.stderr)
    from drfemu.studies.overlay import run_overlay_config

    with progress_reporter("overlay: starting") as report:

        def progress(round_number: int, _: object) -> None:
            report(f"overlay: round {round_number:,}")

        result = run_overlay_config(config, progress=progress)
    out.print(_overlay_rounds_table(result))
    converged = result["rounds_to_converge"]
    out.print(f"rounds to converge (centre recognised, no false centre, centre view exact): "
              f"{'not within the observed rounds' if converged is None else converged}")
    recovery = result["recovery"]
    if result["perturbation_rows"]:
        out.print(f"recovery after {len(result['perturbation_rows'])} perturbations: {recovery['recovered']} recovered "
                  f"within {config.recovery_cap} rounds; rounds min {recovery['min']}, median {recovery['median']}, "
                  f"mean {recovery['mean'] if recovery['mean'] is None else round(recovery['mean'], 2)}, "
                  f"p90 {recovery['p90']}, max {recovery['max']}")
    out.print(f"emulation: {result['virtual_time_s']:.1f} s virtual in {result['emulation_wall_s']:.2f} s wall "
              f"({result['events_per_s']:,.0f} events/s, {result['exchanges_per_s']:,.0f} exchanges/s); "
              f"observers {result['observer_wall_s']:.2f} s; {result['messages_total']:,} messages, "
              f"{result['bytes_total']:,} bytes; gradient merge in {result['gradient_merge']}")
    if json_path is not None:
        write_json(json_path, result)
    if plot is not None:
        from drfemu.reports.overlay_plot import plot_overlay

        try:
            plot_overlay(result, plot)
        except OSError as error:
            raise CliError(f"cannot write {plot}: {error.strerror}") from None


def overlay_signature() -> inspect.Signature:
    """`drfemu overlay`'s options: the overlay run's declarations (`OverlayConfig.PARAMS`), the
    run parameters among them inherited with their run spelling (`--neighbors`, not `--view`)."""
    return inspect.Signature([*declared_options(OverlayConfig.PARAMS),
                              output_option("json_path", "--json", "Write the result as JSON."),
                              output_option("plot", "--plot",
                                            "Write a figure of convergence (and recovery): .png, .pdf, .svg, …")])


overlay.__signature__ = overlay_signature()  # type: ignore[attr-defined]
app.command()(overlay)


@app.command("overlay-study")
def overlay_study_command(
    seeds: Annotated[int, typer.Option(help="Seeds of the convergence study.", min=1, max=1000)] = 5,
    rounds: Annotated[int, declared_option(OverlayConfig.PARAMS, "rounds")] = OverlayConfig.rounds,
    perturbations: Annotated[int, declared_option(OverlayConfig.PARAMS, "perturbations")] = 100,
    csv: Annotated[Path | None, typer.Option(help="Also write every round of seed 1 as CSV.")] = None,
) -> None:
    """The overlay study behind docs/overlay.md (Markdown on stdout): convergence per P, recovery."""
    from drfemu.studies.overlay import overlay_study

    if csv is not None:
        check_writable(csv, "--csv")
    markdown, rows = overlay_study(seeds, rounds, perturbations)
    sys.stdout.write(markdown)
    if csv is not None:
        write_text(csv, "\n".join(",".join(row) for row in rows) + "\n")
