"""`drfemu policy` and `drfemu experiment adrf-swm|online`: the policy library on one pool."""

from __future__ import annotations

import importlib.util
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from drfemu.cli.common import (
    CliError,
    app,
    check_writable,
    declared_option,
    eta,
    out,
    output_directory,
    pool_size,
    progress_reporter,
    write_json,
)
from drfemu.schema.params import check_values, declared, run_declarations
from drfemu.workloads.online import OnlineParams


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
    from drfemu.studies.policy import PolicyOptions, run_policy

    if json_path is not None:
        check_writable(json_path, "--json")
    pool, demands = _vector(capacity, "--capacity"), [_vector(d, "--demand") for d in demand]
    document = run_policy(name, pool, demands, PolicyOptions(divisible, alpha, beta))
    for i, vector in enumerate(demands, start=1):
        over = [r for r, (x, c) in enumerate(zip(vector, pool)) if x > c]
        if over:
            print(f"drfemu: warning: user {i} demands more than the whole pool of resource "
                  f"{', '.join(str(r + 1) for r in over)}: it gets no task", file=sys.stderr)
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


experiment_app = typer.Typer(help="Run an experiment of the policy library and print it next to the seed's numbers.",
                             no_args_is_help=True)
app.add_typer(experiment_app, name="experiment")

JsonPath = Annotated[Path | None, typer.Option("--json", help="Write the result as JSON.")]
Minutes = Annotated[float, declared_option(OnlineParams.PARAMS, "minutes")]
LoadFraction = Annotated[float, declared_option(OnlineParams.PARAMS, "load_fraction")]


@experiment_app.command("adrf-swm")
def experiment_adrf_swm(
    draws: Annotated[int, typer.Option(help="Random sets of trace users.")] = 100,
    seed: Annotated[int, declared_option(run_declarations(), "seed")] = 1,
    json_path: JsonPath = None,
) -> None:
    """ADRF against the SWM optimum on random sets of Google 2011 users (seed 003's table)."""
    if json_path is not None:
        check_writable(json_path, "--json")
    table, result = _adrf_swm(draws, seed)
    out.print(table)
    if json_path is not None:
        write_json(json_path, result)


@experiment_app.command("online")
def experiment_online(
    load_fraction: LoadFraction = OnlineParams.load_fraction,
    tick: Annotated[str, declared_option(run_declarations(), "tick")] = "10ms",
    workers: Annotated[int, typer.Option(help="Runs in parallel.")] = 2,
    minutes: Minutes = OnlineParams.DEFAULTS["minutes"],
    plots: Annotated[Path | None, typer.Option(help="Directory for the CDF figures.")] = None,
    json_path: JsonPath = None,
) -> None:
    """The online rules on the trace's first hour, one pool, each against the SWM optimum (seed 002)."""
    if json_path is not None:
        check_writable(json_path, "--json")
    with output_directory(plots, "--plots") if plots is not None else nullcontext():
        table, result = _online(load_fraction, check_values([declared("tick")], {"tick": tick})["tick"], workers,
                                minutes, plots)
    out.print(table)
    if json_path is not None:
        write_json(json_path, result)


def _adrf_swm(draws: int, seed: int) -> tuple[Table, dict[str, Any]]:
    from drfemu.studies.adrf_swm import MAX_DRAWS, adrf_vs_swm

    if not 1 <= draws <= MAX_DRAWS:
        raise CliError(f"--draws must be in [1, {MAX_DRAWS:,}]")
    started = time.monotonic()
    with progress_reporter("adrf-swm: starting") as report:
        def progress(done: int, total: int) -> None:
            report(f"adrf-swm: {done:,} of {total:,} draws, {eta(started, done, total)}")

        result = adrf_vs_swm(draws=draws, seed=seed, progress=progress)
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
    return table, result


def _online(load_fraction: float, tick: float, workers: int, minutes: float,
            plots: Path | None) -> tuple[Table, dict[str, Any]]:
    from drfemu.sweeps.online import ONLINE_RULES, online_rules
    from drfemu.workloads.online import check_online_options
    from drfemu.workloads.points import run_point

    workers = pool_size(workers, len(ONLINE_RULES))
    check_online_options(minutes, load_fraction)  # the options first, then what the machine lacks
    if not 1e-6 <= tick <= 60:
        raise CliError(f"--tick must be in [1e-06, 60] s, got {tick:g}")
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
        from drfemu.studies.policy_plots import plot_online

        for path in plot_online(result, plots):
            out.print(f"wrote {path}")
    return table, result
