"""`drfemu policy` and `drfemu experiment`: the policy library on one pool."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from drfemu.experiments.cli.common import (
    CliError,
    app,
    check_writable,
    out,
    write_json,
)


def _vector(text: str, option: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise CliError(f"{option} {text!r}: expected comma-separated numbers such as 15,15") from None
    return values


@app.command()
def policy(
    name: Annotated[str, typer.Argument(help="Policy: drf, tda, adrf, swm, mlf-drs or ffmra.")],
    capacity: Annotated[str, typer.Option(help="Pool capacity per resource, e.g. 15,15.")],
    demand: Annotated[list[str], typer.Option(help="One user's task demand, e.g. 5,2; repeat per user.")],
    divisible: Annotated[bool, typer.Option(help="Divisible tasks (drf; mlf-drs and ffmra always are).")] = False,
    alpha: Annotated[float | None, typer.Option(help="α of the α-fair utility (adrf, swm; 1 = log).")] = None,
    beta: Annotated[str | None, typer.Option(help="adrf's β_i: d-max (default), D-max or d-rstar.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON.")] = None,
) -> None:
    """Run one policy of the library on one pool and print each user's allocation."""
    from drfemu.experiments.policies.run import PolicyOptions, run_policy

    document = run_policy(name, _vector(capacity, "--capacity"), [_vector(d, "--demand") for d in demand],
                          PolicyOptions(divisible, alpha, beta))
    table = Table(title=f"drfemu policy {name} — capacity {document['capacity']}"
                        + (" (divisible)" if divisible else ""))
    for column in ("user", "demand", "tasks", "allocation", "dominant share"):
        table.add_column(column, justify="right")
    for i, (user, d) in enumerate(zip(document["users"], demand), start=1):
        table.add_row(str(i), d, f"{user['tasks']:.4g}", ", ".join(f"{x:.4g}" for x in user["allocation"]),
                      f"{user['dominant_share']:.4f}")
    out.print(table)
    if name == "tda":
        for slot in document["slots"]:
            out.print(f"slot of {slot['duration']:.4f}: tasks {slot['tasks']}, shares "
                      + ", ".join(f"{x:.4f}" for x in slot["shares"]))
        out.print(f"case {document['case']}: minimum average share {document['min_average_share']:.4f}; DRF "
                  + ", ".join(f"{x:.4f}" for x in document["drf_shares"]) + f"; bound 1/Q {document['bound']:.4f}")
    if "social_welfare" in document:
        out.print(f"social welfare (α = {alpha:g}): {document['social_welfare']:.6g}")
    if json_path is not None:
        write_json(json_path, document)


@app.command()
def experiment(
    name: Annotated[str, typer.Argument(help="Experiment: adrf-swm or online.")],
    draws: Annotated[int, typer.Option(help="adrf-swm: random sets of trace users.")] = 100,
    seed: Annotated[int, typer.Option(help="adrf-swm: root seed of the draws.")] = 1,
    load_fraction: Annotated[float, typer.Option(help="online: pool size as a fraction of the first hour's mean load.")] = 0.8,
    tick: Annotated[float, typer.Option(help="online: the emulator's allocation tick, s.")] = 0.01,
    workers: Annotated[int, typer.Option(help="online: runs in parallel.")] = 2,
    minutes: Annotated[float, typer.Option(help="online: the first minutes of the trace (at most 60).")] = 60.0,
    plots: Annotated[Path | None, typer.Option(help="online: directory for the CDF figures.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON.")] = None,
) -> None:
    """Run an experiment of the policy library and print it next to the seed's numbers."""
    from drfemu.experiments.policies.experiments import adrf_vs_swm

    if plots is not None:
        try:
            plots.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CliError(f"--plots: cannot create {plots}: {error.strerror}") from None
        check_writable(plots / "probe.png")
    if json_path is not None:
        check_writable(json_path)
    if name == "adrf-swm":
        result = adrf_vs_swm(draws=draws, seed=seed)
        table = Table(title=f"ADRF against the SWM optimum: {draws} draws of 10–80 Google 2011 users "
                            f"(mean {result['mean_users']:.1f}; seed {seed})")
        for column in ("α", "SWM welfare", "ADRF β=d-max", "gap", "β=D-max gap", "β=d-rstar gap", "seed 002 gap"):
            table.add_column(column, justify="right")
        for row in result["rows"]:
            table.add_row(f"{row['alpha']:g}", f"{row['swm_mean_welfare']:.1f}", f"{row['adrf_d-max_mean_welfare']:.1f}",
                          f"{row['adrf_d-max_mean_gap']:.2%}", f"{row['adrf_D-max_mean_gap']:.2%}",
                          f"{row['adrf_d-rstar_mean_gap']:.2%}",
                          f"{row['seed_gap']:.2%} ({row['seed_swm']:g} vs {row['seed_adrf']:g})" if "seed_gap" in row
                          else "-")
    elif name == "online":
        from drfemu.experiments.running.runner import run_point
        from drfemu.experiments.sweeps.online import online_rules
        from drfemu.experiments.workloads.online import check_online_options

        if workers < 1:
            raise CliError("--workers must be at least 1")
        check_online_options(minutes, load_fraction)  # the options first, then what the machine lacks
        if importlib.util.find_spec("cvxpy") is None:
            raise CliError("experiment online sets each rule against the SWM optimum, which needs cvxpy: "
                           "pip install 'drfemu[optimum]'")
        result = online_rules(run_point, load_fraction=load_fraction, tick=tick, workers=workers, minutes=minutes)
        table = Table(title=f"Online rules on the emulator, the trace's first {minutes:g} min: "
                            f"{result['tasks']:,} tasks of "
                            f"{result['users']} users, one pool of {result['capacity'][0]:.1f} CPU × "
                            f"{result['capacity'][1]:.1f} memory ({load_fraction:g} of the mean load), tick {tick:g} s")
        for column in ("rule", "mean RMSE vs SWM", "median RMSE", "median delay s", "p90 delay s", "makespan s"):
            table.add_column(column, justify="right")
        for row in result["rows"]:
            table.add_row(row["rule"], f"{row['mean_rmse']:.2%}", f"{row['median_rmse']:.2%}",
                          f"{row['median_delay_s']:.0f}", f"{row['p90_delay_s']:.0f}", f"{row['makespan_s']:.0f}")
        if plots is not None:
            from drfemu.experiments.policies.plots import plot_online

            for path in plot_online(result, plots):
                out.print(f"wrote {path}")
    else:
        raise CliError(f"unknown experiment {name!r} (known: adrf-swm, online)")
    out.print(table)
    if json_path is not None:
        write_json(json_path, result)
