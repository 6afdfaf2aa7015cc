"""`drfemu workload …`: workload files from the Google 2011 trace, the Alibaba GPU trace and synthetic draws."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from drfemu.cli.common import (
    CliError,
    check_writable,
    out,
    output_directory,
    workload_app,
    write_json,
)
from drfemu.kernel.processes import ARRIVALS, DURATIONS
from drfemu.schema.workload import MAX_SEED
from drfemu.workloads.google import google_case
from drfemu.workloads.gpu_cluster import gpu_cluster_case
from drfemu.workloads.synthetic import synthetic_case

OutputFile = Annotated[Path, typer.Option("-o", "--output", help="Where to write the workload JSON (required).")]
DrawSeed = Annotated[int, typer.Option(help="Seed of the draw.", min=0, max=MAX_SEED)]


@workload_app.command("google")
def workload_google(
    output: OutputFile,
    machines: Annotated[int, typer.Option(help="Machines to draw.")] = 100,
    users: Annotated[int, typer.Option(help="Users to draw.")] = 20,
    seed: DrawSeed = 1,
) -> None:
    """Write a Google 2011 test case (thesis §5.1) as a workload file."""
    check_writable(output, "--output")
    case = google_case(machines, users, seed)
    write_json(output, case.to_dict())
    out.print(f"wrote {output}: {machines} machines, {users} users (seed {seed})")


@workload_app.command("online")
def workload_online(
    output: OutputFile,
    minutes: Annotated[float, typer.Option(help="The first minutes of the trace to replay (at most 60).")] = 60.0,
    load_fraction: Annotated[float, typer.Option(help="Cluster size as a fraction of the mean offered CPU and memory "
                                                     "load (both reach it).")] = 0.8,
    machines: Annotated[int | None, typer.Option(help="Exactly this many machines instead.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the machine draw.", min=0, max=MAX_SEED)] = 1,
    pool: Annotated[bool, typer.Option(help="One pool server of exactly the load fraction (seed 002's model).")] = (
        False),
) -> None:
    """Write the Google 2011 trace's first hour as a finite workload: every task with its real request, submit
    time and run time, on trace machines sized to the offered load (docs/workloads.md)."""
    from drfemu.workloads.online import online_case

    check_writable(output, "--output")
    case = online_case(minutes, load_fraction, machines, seed, pool)
    write_json(output, case.to_dict())
    source = case.source
    out.print(f"wrote {output}: {source['tasks']:,} tasks of {len(case.users)} users over {minutes:g} min on "
              f"{len(case.servers)} {'pool server' if pool else 'machines'} (capacity {source['capacity'][0]:.4g} CPU, "
              f"{source['capacity'][1]:.4g} "
              f"memory; offered load {source['offered_load'][0]:.4g}, {source['offered_load'][1]:.4g}; seed {seed})")


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


@workload_app.command("synthetic")
def workload_synthetic(
    output: OutputFile,
    servers: Annotated[int, typer.Option(help="Servers to generate.")] = 100,
    users: Annotated[int, typer.Option(help="Users to generate.")] = 20,
    resources: Annotated[str, typer.Option(help="Comma-separated resource names.")] = "cpu,mem",
    seed: DrawSeed = 1,
    scarce: Annotated[str, typer.Option(help="Comma-separated resources only some servers have and some users "
                                             "demand (e.g. gpu).")] = "",
    holders: Annotated[float, typer.Option(help="Fraction of servers that have each scarce resource.")] = 0.25,
    demanders: Annotated[float, typer.Option(help="Fraction of users that demand each scarce resource.")] = 0.5,
    tasks: Annotated[int, typer.Option(help="Tasks per user, which end (0: endless users, the thesis's).")] = 0,
    arrivals: Annotated[str, typer.Option(help=f"With --tasks: {' | '.join(ARRIVALS)}.")] = "poisson:1",
    durations: Annotated[str, typer.Option(help=f"With --tasks: {' | '.join(DURATIONS)}.")] = "exp:10",
) -> None:
    """Write a synthetic workload with any number of resources (optionally some scarce: the GPU case)."""
    names = tuple(name.strip() for name in resources.split(",") if name.strip())
    rare = tuple(name.strip() for name in scarce.split(",") if name.strip())
    check_writable(output, "--output")
    case = synthetic_case(servers, users, names, seed, rare, holders, demanders, tasks, arrivals, durations)
    write_json(output, case.to_dict())
    extra = f", scarce {', '.join(rare)} (holders {holders:g}, demanders {demanders:g})" if rare else ""
    extra += f", {tasks} tasks each ({arrivals}, {durations})" if tasks else ""
    out.print(f"wrote {output}: {servers} servers, {users} users, resources {', '.join(names)}{extra} (seed {seed})")


@workload_app.command("gpu-cluster")
def workload_gpu_cluster(
    output: OutputFile,
    servers: Annotated[int, typer.Option(help="Servers to generate.")] = 100,
    users: Annotated[int, typer.Option(help="Users to generate.")] = 40,
    seed: DrawSeed = 1,
    gpu_users: Annotated[float, typer.Option(help="Fraction of users that want GPUs.")] = 0.8,
    whole: Annotated[float, typer.Option(help="Fraction of the GPU users that want whole GPUs.")] = 0.3,
) -> None:
    """Write a GPU-sharing cluster (cores, GiB, GPUs; servers of four kinds, fractional and whole-GPU users);
    `--workload gpu-cluster` draws the same case from --machines, --users and --case-seed."""
    check_writable(output, "--output")
    case = gpu_cluster_case(servers, users, seed, gpu_users, whole)
    write_json(output, case.to_dict())
    out.print(f"wrote {output}: {servers} servers, {users} users (GPU users {gpu_users:g}, whole {whole:g}; "
              f"seed {seed})")


@workload_app.command("openb")
def workload_openb(
    output: OutputFile,
    trace: Annotated[str, typer.Option(help="The folder of the Alibaba GPU trace's openb CSV files (default: "
                                            "$DRFEMU_OPENB_TRACE); read where it lies, never copied.")] = "",
    machines: Annotated[int | None, typer.Option(help="Servers drawn from the trace's 1,523 (default: 100; with "
                                                       "--finite, all).")] = None,
    users: Annotated[int | None, typer.Option(help="Endless users, each with a drawn pod's request (default: "
                                                   "20).")] = None,
    seed: DrawSeed = 1,
    gpu_users: Annotated[float | None, typer.Option(help="Share of users drawn from GPU pods (default: the "
                                                          "trace's mix, 87 %).")] = None,
    finite: Annotated[bool, typer.Option("--finite", help="Replay pods as tasks that end, at their creation "
                                                          "times, instead of endless users.")] = False,
    tasks: Annotated[int | None, typer.Option(help="With --finite: at most this many pods of the window.")] = None,
    minutes: Annotated[float | None, typer.Option(help="With --finite: the window's length.")] = None,
    start: Annotated[str, typer.Option(help="With --finite: the window's start into the trace (e.g. 116d, "
                                            "10000000s).")] = "0",
    max_duration: Annotated[str, typer.Option(help="With --finite: a pod runs at most this long.")] = "1h",
    idle_gap: Annotated[str, typer.Option(help="With --finite: a stretch longer than this with no pod running is "
                                               "shortened to it.")] = "600s",
) -> None:
    """Write a case of the Alibaba GPU-sharing trace openb (the FGD paper's): endless users with its pods'
    requests on its servers, or with --finite its pods as tasks that end (docs/workloads.md)."""
    from drfemu.kernel.latency import parse_duration
    from drfemu.workloads.openb import load_trace, openb_case, openb_replay

    replay_options = {"--tasks": tasks, "--minutes": minutes}
    if not finite:
        given = [name for name, value in replay_options.items() if value is not None]
        given += [name for name, value, default in (("--start", start, "0"), ("--max-duration", max_duration, "1h"),
                                                    ("--idle-gap", idle_gap, "600s")) if value != default]
        if given:
            raise CliError(f"{', '.join(given)} {'describe' if len(given) > 1 else 'describes'} a replay: add --finite")
    else:
        endless = [name for name, value in (("--users", users), ("--gpu-users", gpu_users)) if value is not None]
        if endless:
            verb = "describe" if len(endless) > 1 else "describes"
            raise CliError(f"{', '.join(endless)} {verb} endless users: a replay (--finite) has one user per request "
                           "shape of its pods")
    check_writable(output, "--output")
    loaded = load_trace(trace or None, "--trace")
    if finite:
        case = openb_replay(loaded, tasks, minutes, _seconds(start, "--start", parse_duration), machines, seed,
                            _seconds(max_duration, "--max-duration", parse_duration),
                            _seconds(idle_gap, "--idle-gap", parse_duration))
        src = case.source
        span = max(t.submit for u in case.users for t in u.tasks or ())
        write_json(output, case.to_dict())
        out.print(f"wrote {output}: {src['tasks']} pods of openb as tasks of {len(case.users)} request shapes on "
                  f"{src['machines']} servers, arriving over {span:,.0f} s ({src['idle_removed_s']:,.0f} s of idle "
                  f"stretches removed{_left_out(src['left_out'])}); "
                  "run it with --max-time above that")
        return
    users = 20 if users is None else users
    case = openb_case(loaded, 100 if machines is None else machines, users, seed, gpu_users)
    write_json(output, case.to_dict())
    gpus = sum(1 for u in case.users if u.demand[2] > 0)
    out.print(f"wrote {output}: {len(case.servers)} servers and {users} users of openb ({gpus} asking for GPUs; "
              f"seed {seed})")


def _left_out(count: int) -> str:
    return f"; {count} pods fit on no server and were left out" if count else ""


def _seconds(text: str, option: str, parse: Callable[[str], float]) -> float:
    try:
        return parse(text)
    except ValueError as error:
        raise CliError(f"{option}: {error}") from None
