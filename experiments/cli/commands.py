"""The `drfemu` command line.

Bad input — an `InputError`: a bad option, a malformed workload, an unknown protocol — is
printed as one line `drfemu: error: …` on stderr with exit status 2, never with a traceback.
A capacity violation (a protocol bug caught by the checks) exits with status 3. Any other
exception is a bug in drfemu: its traceback is printed, then one line, and the exit status
is 70 (`EX_SOFTWARE`).
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import structlog
import typer
from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from drfemu.experiments.running.bench import run_bench
from drfemu.experiments.running.live_channel import LiveError
from drfemu.experiments.running.overlay_run import OverlayConfig, run_overlay
from drfemu.experiments.running.params import (
    all_params,
    canonical_params,
    param,
    parameters_markdown,
    readers,
    unread_given,
)
from drfemu.experiments.running.runner import (
    RunResult,
    build_run_config,
    run_emulation,
    run_point,
)
from drfemu.experiments.workloads.google import google_case
from drfemu.experiments.workloads.model import Workload
from drfemu.experiments.workloads.processes import ARRIVALS, DURATIONS
from drfemu.experiments.workloads.synthetic import synthetic_case
from drfemu.nodes.network import parse_duration
from drfemu.protocols.errors import InputError
from drfemu.protocols.params import Kind, Param
from drfemu.protocols.registry import PROTOCOLS, get_protocol
from drfemu.protocols.resources import CapacityViolation

__all__ = ["app", "main"]

app = typer.Typer(
    name="drfemu",
    help="Emulate distributed, gossip-overlay cluster schedulers that allocate multi-resource tasks fairly.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
workload_app = typer.Typer(help="Build workload files.", no_args_is_help=True)
app.add_typer(workload_app, name="workload")

out = Console()
err = Console(stderr=True)


INTERNAL_ERROR = 70  # sysexits' EX_SOFTWARE
INTERRUPTED = 130  # 128 + SIGINT, as shells report a Ctrl-C
MAX_OVERLAY_NODES = 200_000  # a documented bound: about 0.6 GB of node state at the most


class CliError(InputError):
    """A user error: printed as one line, exit status 2."""


def _duration(text: str, name: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise CliError(f"--{name}: {error}") from None
    if seconds <= 0:
        raise CliError(f"--{name} must be positive")
    return seconds


def _check_writable(path: Path) -> None:
    """Refuse, before any work, an output path that cannot be written."""
    if path.is_dir():
        raise CliError(f"cannot write {path}: it is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise CliError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CliError(f"cannot write {path}: permission denied")


@contextmanager
def _progress(start: str, every_s: float = 5.0) -> Iterator[Callable[[str], None]]:
    """A progress reporter: a live spinner on a terminal, else one line on stderr every
    `every_s` seconds of wall time (long commands are never silent)."""
    if err.is_terminal:
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                      transient=True) as bar:
            task = bar.add_task(start, total=None)
            yield lambda text: bar.update(task, description=text)
        return
    started = time.monotonic()
    last = [started]

    def report(text: str) -> None:
        now = time.monotonic()
        if now - last[0] >= every_s:
            last[0] = now
            print(f"drfemu: {text} ({now - started:.0f} s)", file=sys.stderr, flush=True)

    yield report


def _write_json(path: Path, document: dict[str, Any]) -> None:
    try:
        path.write_text(json.dumps(document, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot write {path}: {error.strerror}") from None


@contextmanager
def _allocation_log(path: Path | None, workload: Workload) -> Iterator[Callable[..., Any] | None]:
    """A structlog JSON-lines logger for allocations, with workload labels, or None."""
    if path is None:
        yield None
        return
    try:
        handle = path.open("w", encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot write {path}: {error.strerror}") from None
    logger = structlog.wrap_logger(
        structlog.WriteLogger(handle),
        processors=[structlog.processors.JSONRenderer()],
    )
    servers = [s.id for s in workload.servers]
    users = [u.id for u in workload.users]

    def log(event: str, **fields: Any) -> None:
        fields["user"] = users[fields["user"]]
        fields["server"] = servers[fields["server"]]
        logger.info(event, **fields)

    try:
        yield log
    finally:
        handle.close()


def _summary(result: RunResult) -> Table:
    r = result.to_dict()
    table = Table(title=f"drfemu run — {r['protocol']} on {r['machines']} machines × {r['users']} users (seed {r['seed']})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("outcome", f"{r['status']}: {r['end_reason']}"),
        ("allocations", f"{r['allocations']:,}"),
        ("run-time (virtual)", f"{r['run_time_s']:.1f} s"),
        *(_finite_rows(r) if r["finite_tasks"] else _endless_rows(r)),
        ("error ratio (τ=0)", f"{r['error_ratio']:.2%}"),
        ("error ratio τ=1/5/10/15%", " / ".join(f"{r['error_ratio_by_tolerance'][k]:.2%}" for k in ("0.01", "0.05", "0.1", "0.15"))),
        ("tasks waiting / placing / running / finished / lost", " / ".join(f"{r['ledger'][k]:,}" for k in (
            "waiting", "placing", "running", "finished", "lost"))),
        ("queueing delay p50 / p95 / p99", " / ".join(
            "–" if r["queueing_delay_s"][k] is None else f"{r['queueing_delay_s'][k]:.3g} s"
            for k in ("p50", "p95", "p99"))),
        ("messages", f"{r['messages_total']:,} ({r['bytes_total']:,} bytes)"
                     + ("" if r["messages_per_allocation"] is None else f", {r['messages_per_allocation']:,.0f} per allocation")),
        ("wall time", f"{r['wall_time_s']:.2f} s ({r['events_per_s']:,.0f} events/s)"),
    ]
    if r["distributed"]:
        placed = r["placement"]
        rows.insert(1, ("neighbours P / gradient exchanges per tick", f"{r['neighbors']} / {r['shuffles_per_tick']:g}"))
        rows.append(("placement", f"{placed['local']:,} local, {placed['walks']:,} walks ({placed['walk_hops']:,} hops, "
                                  f"{placed['walks_failed']:,} failed), {placed['saturation_marks']:,} users marked "
                                  f"saturated" + ("" if r["mark_saturated"] else " (marking off)")))
    if r["fault_scenario"] is not None:
        rows += _fault_rows(r)
    for name, value in rows:
        table.add_row(name, value)
    return table


def _fault_rows(r: dict[str, Any]) -> list[tuple[str, str]]:
    actions: dict[str, int] = {}
    for entry in r["faults"]:
        actions[entry["action"]] = actions.get(entry["action"], 0) + 1
    dropped = r["messages_dropped_by_cause"]
    return [
        ("faults played", ", ".join(f"{n} {action}" for action, n in actions.items()) or "message faults only"),
        ("messages lost / partitioned / to a down node", " / ".join(f"{dropped[k]:,}" for k in ("loss", "partition", "down"))),
        ("tasks killed / resubmitted / rerun", " / ".join(f"{r['ledger'][k]:,}" for k in ("killed", "resubmitted", "rerun"))),
    ]


def _endless_rows(r: dict[str, Any]) -> list[tuple[str, str]]:
    ratio = r["ratio_20_20"]
    return [
        ("minimum dominant share", f"{r['min_dominant_share']:.4f}"),
        ("Gini", f"{r['gini']:.4f}"),
        ("std of dominant shares", f"{r['std_dominant_share']:.6f}"),
        ("20:20 ratio", "∞" if ratio is None else f"{ratio:.3f}"),
        ("Jain's index", f"{r['jain']:.4f}"),
        ("utilisation", ", ".join(f"{k} {v:.1%}" for k, v in r["utilization"].items())),
        ("stranded", ", ".join(f"{k} {v:.1%}" for k, v in r["stranded"].items())),
    ]


def _finite_rows(r: dict[str, Any]) -> list[tuple[str, str]]:
    def number(x: float | None, form: str = ".4f") -> str:
        return "–" if x is None else format(x, form)

    swm = r["swm"]
    rmse = number(swm["mean_rmse"], ".2%") if swm.get("available") else f"– ({swm['reason']})"
    return [
        ("time-averaged minimum share / Gini / Jain", " / ".join(number(r["time_averaged"][k]) for k in (
            "min_share", "gini", "jain"))),
        ("time-averaged utilisation", ", ".join(f"{k} {number(v, '.1%')}" for k, v in r["utilization"].items())),
        ("mean RMSE against SWM", rmse),
    ]


def _option_type(p: Param) -> Any:
    return {Kind.INT: int, Kind.FLOAT: float, Kind.BOOL: bool, Kind.TEXT: str, Kind.DURATION: str}[p.kind] | None


def _option_help(p: Param) -> str:
    text = f"{p.help} ({'|'.join(p.choices)})" if p.choices else p.help
    if p.default is None:
        return text
    default = f"{p.default:g}s" if p.kind is Kind.DURATION else str(p.default).lower() if p.kind is Kind.BOOL else p.default
    return f"{text} [default: {default}]"


def _run_signature() -> inspect.Signature:
    """`drfemu run`'s options: one per declared run parameter (core and every registered
    protocol's own), all defaulting to None so that what the user gave can be told apart."""
    parameters = []
    for p in all_params():
        flags = [f"{p.option}/--no-{p.option[2:]}"] if p.kind is Kind.BOOL else [p.option]
        parameters.append(inspect.Parameter(
            p.name, inspect.Parameter.KEYWORD_ONLY, default=None,
            annotation=Annotated[_option_type(p), typer.Option(*flags, help=_option_help(p), show_default=False)]))
    parameters.append(inspect.Parameter("json_path", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        Path | None, typer.Option("--json", help="Write the result as JSON.")]))
    parameters.append(inspect.Parameter("log", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        Path | None, typer.Option(help="Write one JSON line per allocation.")]))
    return inspect.Signature(parameters)


def _run_params(options: dict[str, Any], *paths: Path | None) -> dict[str, Any]:
    """The canonical run parameters of the options given (warning of those the protocol does not
    read), once every output path is known to be writable."""
    given = {name: value for name, value in options.items() if value is not None}
    params = canonical_params(given)
    for option in unread_given(given):
        print(f"drfemu: warning: {option} is not read by protocol {params['protocol']}; ignored", file=sys.stderr)
    for path in paths:
        if path is not None:
            _check_writable(path)
    return params


def _warn_unplaceable(result: RunResult, case: Workload) -> None:
    demands = {u.id: list(u.demand) for u in case.users}
    for user in result["unplaceable_users"]:
        print(f"drfemu: warning: user {user!r} demands {demands[user]}, which fits on no server; "
              "it is reported and left out of the metrics", file=sys.stderr)


def run(**options: Any) -> None:
    """Run one emulation and print its summary."""
    json_path: Path | None = options.pop("json_path")
    log: Path | None = options.pop("log")
    params = _run_params(options, json_path, log)
    config = build_run_config(params)
    case = config.workload
    protocol = params["protocol"]
    with _allocation_log(log, case) as logger, _progress(f"{protocol}: starting") as report:

        def progress(now: float, allocations: int) -> None:
            report(f"{protocol}: {now:,.0f} s virtual, {allocations:,} allocations")

        result = run_emulation(config, log=logger, progress=progress)
    _warn_unplaceable(result, case)
    out.print(_summary(result))
    if json_path is not None:
        _write_json(json_path, result.to_dict())


def _live_signature() -> inspect.Signature:
    """`drfemu live`'s options: `drfemu run`'s and the live ones."""
    def option(name: str, kind: Any, default: Any, *flags: str, help: str) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                 annotation=Annotated[kind, typer.Option(*flags, help=help)])

    parameters = list(_run_signature().parameters.values())
    parameters += [
        option("processes", int, os.cpu_count() or 1, "--processes",
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
    from drfemu.experiments.running.live import LiveOptions, run_live

    json_path: Path | None = options.pop("json_path")
    log: Path | None = options.pop("log")
    host, _, port = options.pop("listen").rpartition(":")
    if not host or not port.isdigit():
        raise CliError("--listen: expected HOST:PORT")
    live_options = LiveOptions(processes=options.pop("processes"), remote=options.pop("remote_workers"),
                               time_scale=options.pop("time_scale"), bind=options.pop("bind"),
                               listen=(host, int(port)))
    params = _run_params(options, json_path, log)
    case = build_run_config(params).workload
    protocol = params["protocol"]
    with _allocation_log(log, case) as logger, _progress(f"{protocol} live: starting") as report:

        def progress(now: float, allocations: int) -> None:
            report(f"{protocol} live: {now:,.0f} s protocol time, {allocations:,} allocations")

        result = run_live(params, live_options, notice=lambda text: print(f"drfemu: {text}", file=sys.stderr),
                          log=logger, progress=progress)
    _warn_unplaceable(result, case)
    out.print(_summary(result))
    out.print(_live_table(result.to_dict()))
    if json_path is not None:
        _write_json(json_path, result.to_dict())


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


def _install_run_command() -> None:
    """(Re)declare `drfemu run` and `drfemu live` from the current registry, so a protocol
    registered after import (a plug-in, a test) brings its options along."""
    run.__signature__ = _run_signature()  # type: ignore[attr-defined]
    live.__signature__ = _live_signature()  # type: ignore[attr-defined]
    app.registered_commands[:] = [c for c in app.registered_commands if c.name not in ("run", "live")]
    app.command("run")(run)
    app.command("live")(live)


@app.command("live-worker")
def live_worker(
    coordinator: Annotated[str, typer.Option(help="HOST:PORT the coordinator (drfemu live) listens at.")],
    index: Annotated[int, typer.Option(help="This worker's number (the coordinator prints the ones it waits for).")],
    bind: Annotated[str | None, typer.Option(help="The address to bind this worker's nodes at.")] = None,
) -> None:
    """One worker of a live run on another machine: it gets its nodes from the coordinator."""
    from drfemu.experiments.running.live_worker import worker_main

    failure = worker_main(coordinator, index, bind)
    if failure is not None:
        print(f"drfemu: live worker {index}: {failure.strip()}", file=sys.stderr)
        raise typer.Exit(1)


@workload_app.command("google")
def workload_google(
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the workload JSON (required).")],
    machines: Annotated[int, typer.Option(help="Machines to draw.")] = 100,
    users: Annotated[int, typer.Option(help="Users to draw.")] = 20,
    seed: Annotated[int, typer.Option(help="Seed of the draw.")] = 1,
) -> None:
    """Write a Google 2011 test case (thesis §5.1) as a workload file."""
    case = google_case(machines, users, seed)
    _write_json(output, case.to_dict())
    out.print(f"wrote {output}: {machines} machines, {users} users (seed {seed})")


@workload_app.command("online")
def workload_online(
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the workload JSON (required).")],
    minutes: Annotated[float, typer.Option(help="The first minutes of the trace to replay (at most 60).")] = 60.0,
    load_fraction: Annotated[float, typer.Option(help="Cluster size as a fraction of the mean offered CPU and memory "
                                                     "load (both reach it).")] = 0.8,
    machines: Annotated[int | None, typer.Option(help="Exactly this many machines instead.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the machine draw.")] = 1,
    pool: Annotated[bool, typer.Option(help="One pool server of exactly the load fraction (seed 002's model).")] = (
        False),
) -> None:
    """Write the Google 2011 trace's first hour as a finite workload: every task with its real request, submit
    time and run time, on trace machines sized to the offered load (docs/workloads.md)."""
    from drfemu.experiments.workloads.online import online_case

    case = online_case(minutes, load_fraction, machines, seed, pool)
    _write_json(output, case.to_dict())
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
    from drfemu.experiments.workloads.trace_extract import build_extract

    if not trace_dir.is_dir():
        raise CliError(f"{trace_dir} is not a directory")
    machines, rows, jobs = build_extract(trace_dir, out_dir)
    out.print(f"{machines} machines, {rows} user-request rows, {jobs} first-hour jobs written to {out_dir}")


@workload_app.command("synthetic")
def workload_synthetic(
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the workload JSON (required).")],
    servers: Annotated[int, typer.Option(help="Servers to generate.")] = 100,
    users: Annotated[int, typer.Option(help="Users to generate.")] = 20,
    resources: Annotated[str, typer.Option(help="Comma-separated resource names.")] = "cpu,mem",
    seed: Annotated[int, typer.Option(help="Seed of the draw.")] = 1,
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
    case = synthetic_case(servers, users, names, seed, rare, holders, demanders, tasks, arrivals, durations)
    _write_json(output, case.to_dict())
    extra = f", scarce {', '.join(rare)} (holders {holders:g}, demanders {demanders:g})" if rare else ""
    extra += f", {tasks} tasks each ({arrivals}, {durations})" if tasks else ""
    out.print(f"wrote {output}: {servers} servers, {users} users, resources {', '.join(names)}{extra} (seed {seed})")


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
    gradient: Annotated[str, typer.Option(help=_option_help(param("gradient")), show_default=False)] = param("gradient").default,
    softmax_temperature: Annotated[float, typer.Option(help=_option_help(param("softmax_temperature")), show_default=False)] = param(
        "softmax_temperature").default,
    gradient_shuffle: Annotated[int, typer.Option(help=_option_help(param("gradient_shuffle")), show_default=False)] = param(
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
        tick=_duration(tick, "tick"), latency=latency, perturbations=perturbations, drop_rank=drop_rank,
        recovery_cap=recovery_cap, observe_every=observe_every, max_age=max_age, gradient=gradient,
        softmax_temperature=softmax_temperature, gradient_shuffle=gradient_shuffle,
    )
    config.validate()
    with _progress("overlay: starting") as report:

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
        _write_json(json_path, result)
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
    from drfemu.experiments.reports.overlay_study import overlay_study

    if csv is not None:
        _check_writable(csv)
    markdown, rows = overlay_study(seeds, rounds, perturbations)
    sys.stdout.write(markdown)
    if csv is not None:
        csv.write_text("\n".join(",".join(row) for row in rows) + "\n", encoding="utf-8")


@app.command()
def grid(
    out_path: Annotated[Path, typer.Option("--out", help="The Markdown page to write.")],
    sweep_dir: Annotated[Path | None, typer.Option("--sweep", help="A sweep directory holding the E1 runs.")] = None,
    from_json: Annotated[Path | None, typer.Option(help="Re-render an earlier --json file instead.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Also write the grid's runs as JSON.")] = None,
) -> None:
    """The protocol grid page (docs/protocol_grid.md) from a sweep's E1 runs."""
    from drfemu.experiments.reports.protocol_grid import render, sweep_rows

    if (sweep_dir is None) == (from_json is None):
        raise CliError("give --sweep DIR or --from-json FILE (one of them)")
    for path in (out_path, json_path):
        if path is not None:
            _check_writable(path)
    if from_json is not None:
        try:
            rows = json.loads(from_json.read_text(encoding="utf-8"))["runs"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise CliError(f"--from-json {from_json}: not a grid file ({type(error).__name__})") from None
    else:
        rows = sweep_rows(sweep_dir)  # type: ignore[arg-type]
    if not rows:
        raise CliError(f"{sweep_dir or from_json} holds no run of the grid")
    out_path.write_text(render(rows), encoding="utf-8")
    if json_path is not None:
        _write_json(json_path, {"runs": rows})
    out.print(f"wrote {out_path} from {len(rows)} runs")


@app.command()
def sweep(
    config: Annotated[Path, typer.Argument(help="Sweep config (TOML), see configs/.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for the run records and tables.")],
    workers: Annotated[int | None, typer.Option(help="Worker processes (default: the machine's cores).")] = None,
    dask: Annotated[str | None, typer.Option(help="Run on the dask.distributed scheduler at this address.")] = None,
) -> None:
    """Run every point of a sweep config, resuming where an earlier sweep into --out stopped."""
    from drfemu.experiments.sweeps.config import load_sweep
    from drfemu.experiments.sweeps.execute import dask_cluster, process_pool, run_sweep

    if dask is not None and workers is not None:
        raise CliError("give --workers or --dask, not both (a Dask cluster has its own workers)")
    if workers is not None and workers < 1:
        raise CliError("--workers must be at least 1")
    plan = load_sweep(config)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CliError(f"cannot create {out_dir}: {error.strerror}") from None
    n_workers = workers or os.cpu_count() or 1
    executor = dask_cluster(dask, run_point) if dask is not None else process_pool(n_workers, run_point)
    points = sum(len(e.points) for e in plan.experiments)
    out.print(f"sweep {config}: {len(plan.experiments)} experiment(s), {points} points, {len(plan.runs)} distinct runs "
              f"on {'Dask at ' + dask if dask else f'{n_workers} worker process(es)'}")
    failures: list[str] = []
    done = [0]
    stop_requested: list[int] = []  # Ctrl-C seen; checked after each run in case its exception was swallowed
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("ETA"), TimeRemainingColumn(), console=err, disable=not err.is_terminal) as bar:
        task = bar.add_task("sweep", total=None)

        def on_start(todo: int, skipped: int) -> None:
            bar.update(task, total=todo)
            if skipped:
                out.print(f"{skipped} run(s) already finished in {out_dir}: skipped")

        def on_record(record: dict[str, Any], finished: int, todo: int) -> None:
            if stop_requested:
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

        def on_interrupt(signum: int, frame: object) -> None:
            stop_requested.append(signum)
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGINT, on_interrupt)
        try:
            summary = run_sweep(plan, out_dir, executor, on_record=on_record, on_start=on_start)
        except KeyboardInterrupt:
            print(f"drfemu: interrupted after {done[0]} run(s) of this sweep; run the same command to resume",
                  file=sys.stderr)
            raise typer.Exit(130) from None
        finally:
            signal.signal(signal.SIGINT, previous)
    out.print(f"{summary.total} runs: {summary.skipped} already finished, {summary.ran} ran ({summary.failed} failed) "
              f"in {summary.wall_s / 60:.1f} min; tables {out_dir / 'runs.csv'}"
              + (f", {summary.parquet}" if summary.parquet else " (no Parquet: pip install 'drfemu[sweep]')"))
    for failure in failures:
        print(f"drfemu: run failed: {failure}", file=sys.stderr)
    if failures:
        raise typer.Exit(1)


@app.command()
def report(
    sweep_dir: Annotated[Path, typer.Argument(help="A sweep's --out directory.")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Where to write the report (default: SWEEP_DIR/report).")] = None,
) -> None:
    """Turn a sweep (finished or partial) into Markdown tables, PNG figures and one HTML page."""
    from drfemu.experiments.reports.render import write_report

    target = out_dir if out_dir is not None else sweep_dir / "report"
    written = write_report(sweep_dir, target)
    out.print(f"report: {written.tables} tables, {written.figures} figures from {written.runs} finished runs "
              f"({written.missing} points without a result) → {target / 'report.md'}, {target / 'report.html'}")


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
        _write_json(json_path, document)


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
        _check_writable(plots / "probe.png")
    if json_path is not None:
        _check_writable(json_path)
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

        if workers < 1:
            raise CliError("--workers must be at least 1")
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
        _write_json(json_path, result)


ONLINE_PROTOCOLS = "drf,c-adrf,naive-adrf,wmmf,fifo,probe,ddrf-random,ddrf-gradient,dgdrf,pdgdrf,bdgdrf"


@app.command("trace-replay")
def trace_replay(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for the workload and one result per protocol.")],
    protocols_: Annotated[str, typer.Option("--protocols", help="Comma-separated protocols.")] = ONLINE_PROTOCOLS,
    minutes: Annotated[float, typer.Option(help="The first minutes of the trace (at most 60).")] = 60.0,
    load_fraction: Annotated[float, typer.Option(help="Cluster size as a fraction of the offered load.")] = 0.8,
    seed: Annotated[int, typer.Option(help="Seed of the machine draw and of the runs.")] = 1,
    workers: Annotated[int, typer.Option(help="Runs in parallel.")] = 2,
    report: Annotated[Path | None, typer.Option(help="Write the Markdown report (figures beside it).")] = None,
) -> None:
    """Every protocol on the Google 2011 trace's own arrivals and run times (docs/results-online.md); resumable."""
    from drfemu.experiments.running.runner import run_point
    from drfemu.experiments.sweeps.online import run_online_protocols

    names = [p.strip() for p in protocols_.split(",") if p.strip()]
    for name in names:
        get_protocol(name)
    if workers < 1:
        raise CliError("--workers must be at least 1")
    if report is not None:
        from drfemu.experiments.reports.online import kept_part

        kept_part(report)  # a page that would lose its text is refused before anything runs

    def done(protocol: str, result: dict[str, Any]) -> None:
        out.print(f"{protocol}: {result['status']} at {result['run_time_s']:,.0f} s virtual in "
                  f"{result['wall_time_s']:,.0f} s wall")

    results = run_online_protocols(out_dir, names, run_point, {"seed": seed}, minutes, load_fraction, seed, workers,
                                   done)
    if report is not None:
        from drfemu.experiments.reports.online import write_online_report

        write_online_report(results, report)
        out.print(f"wrote {report}")


def _registry_document() -> list[dict[str, Any]]:
    return [{**spec.to_dict(), "parameters": [p.name for p in all_params() if spec.name in readers(p.name)],
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
                      ", ".join(param(n).option for n in entry["own_parameters"]) or "-", entry["summary"])
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
    for p in all_params():
        who = readers(p.name)
        table.add_row(p.option, p.kind.value, "-" if p.default is None else str(p.default),
                      "all" if len(who) == len(PROTOCOLS) else ", ".join(who), p.help)
    out.print(table)


@app.command()
def bench(
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
    figure: Annotated[Path | None, typer.Option(help="With --scale: write the log-log figure here (PNG).")] = None,
    baseline: Annotated[Path | None, typer.Option(help="With --scale: an earlier curve (its --json), drawn dashed "
                                                       "in the figure beside this one.")] = None,
) -> None:
    """Measure the runtime's message rate against a naive one-task-per-actor design and against
    the bare loop, the limit (or, with --live, the live runtime's rate across processes; with
    --scale, the cost of the distributed protocols as the cluster grows)."""
    if live and scale:
        raise CliError("--live and --scale measure different things; give one of them")
    if scale:
        _bench_scale(json_path, figure, baseline, servers, protocols, span, neighbors)
        return
    if live:
        _bench_live(json_path, processes, 200 if actors is None else actors, 4 if in_flight is None else in_flight,
                    seconds)
        return
    actors = 1000 if actors is None else actors
    in_flight = 10 if in_flight is None else in_flight
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
        _write_json(json_path, result.to_dict())


def _bench_scale(json_path: Path | None, figure: Path | None, baseline: Path | None, servers: str, protocols: str,
                 span: str, neighbors: int) -> None:
    from drfemu.experiments.reports.scale_plot import plot_scale_curve
    from drfemu.experiments.running.scale_bench import ScalePoint, run_scale_curve

    sizes = []
    for item in servers.split(","):
        if not item.strip().isdigit():
            raise CliError(f"--servers: expected whole numbers separated by commas, got {item.strip()!r}")
        sizes.append(int(item))
    names = [name.strip() for name in protocols.split(",") if name.strip()]
    span_s = _duration(span, "span")
    for path in (json_path, figure):
        if path is not None:
            _check_writable(path)
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
        _write_json(json_path, {"span_s": span_s, "neighbors": neighbors, "points": rows})
    if figure is not None:
        plot_scale_curve(rows, figure, f"cost curve, {span_s:g} s of virtual time a point, P = {neighbors}",
                         baseline=earlier, baseline_label=baseline.stem if baseline is not None else "baseline")
        out.print(f"wrote {figure}")


def _read_json(path: Path, prefix: str = "") -> Any:
    """The JSON document at `path`; one line (`prefix` first) when it cannot be read or parsed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CliError(f"{prefix}cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise CliError(f"{prefix}{path}: not JSON ({error.msg}, line {error.lineno})") from None
    except UnicodeDecodeError:
        raise CliError(f"{prefix}{path}: not JSON (not UTF-8 text)") from None


def _scale_baseline(path: Path) -> list[dict[str, Any]]:
    """The points of an earlier `drfemu bench --scale --json` file."""
    document = _read_json(path, "--baseline: ")
    points = document.get("points") if isinstance(document, dict) else None
    keys = {"protocol", "servers", "wall_per_virtual_s", "messages_per_server_tick"}
    if not isinstance(points, list) or not all(isinstance(p, dict) and keys <= set(p) for p in points):
        raise CliError(f"--baseline: {path} is not the JSON of drfemu bench --scale")
    return points


def _bench_live(json_path: Path | None, processes: int, actors: int, in_flight: int, seconds: float) -> None:
    from drfemu.experiments.running.live_bench import run_live_bench

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
        _write_json(json_path, result.to_dict())


@app.command()
def check(
    config: Annotated[Path, typer.Argument(help="Sweep config (TOML) naming the runs to check, e.g. configs/check.toml.")],
    workers: Annotated[int, typer.Option(help="Fresh processes replaying runs alongside.")] = 1,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write every verdict as JSON.")] = None,
) -> None:
    """Check determinism: run each run of CONFIG twice here and once in a fresh process, compare
    them event by event, and name the first event that differs. Exit 1 if any run differs."""
    from drfemu.experiments.running.check import check_runs
    from drfemu.experiments.sweeps.config import load_sweep

    if workers < 1:
        raise CliError("--workers must be at least 1")
    if json_path is not None:
        _check_writable(json_path)
    plan = load_sweep(config)
    out.print(f"check {config}: {len(plan.runs)} run(s), each twice here and once in a fresh process")
    verdicts = []
    for verdict in check_runs(list(plan.runs.items()), workers):
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
        _write_json(json_path, {"config": str(config), "runs": [v.to_dict() for v in verdicts]})
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
    from drfemu.experiments.reports.fault_study import fault_report
    from drfemu.experiments.sweeps.records import load_records

    if not (sweep_dir / "runs").is_dir():
        raise CliError(f"{sweep_dir}: no runs/ directory (run drfemu sweep configs/faults.toml --out {sweep_dir})")
    _check_writable(out_path)
    figure = figure if figure is not None else out_path.parent / "figures" / "faults-crash.png"
    link = os.path.relpath(figure, out_path.parent)
    out_path.write_text(fault_report(load_records(sweep_dir), figure, link), encoding="utf-8")
    out.print(f"wrote {out_path} and {figure}")


@app.command("live-report")
def live_report_command(
    files: Annotated[list[Path], typer.Argument(help="Result documents of drfemu run --json and drfemu live --json.")],
    out_path: Annotated[Path | None, typer.Option("--out", help="Write the Markdown here (default: print it).")
                        ] = None,
) -> None:
    """Live against virtual: the runs of FILES grouped by parameters and mode, each live group
    beside its virtual twins (docs/live.md)."""
    from drfemu.experiments.reports.live_compare import live_report

    text = live_report([(str(path), _read_json(path)) for path in files])
    if out_path is None:
        print(text, end="")
        return
    _check_writable(out_path)
    out_path.write_text(text, encoding="utf-8")
    out.print(f"wrote {out_path}")


def _fail(message: str, status: int) -> int:
    # Plain write, never wrapped: an error is exactly one line.
    print(f"drfemu: {message}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `drfemu` script; returns the exit status."""
    _install_run_command()
    try:
        status = app(args=argv, prog_name="drfemu", standalone_mode=False)
    except typer.Exit as done:
        return int(done.exit_code)
    except typer.Abort:
        return _fail("aborted", INTERRUPTED)
    except typer.TyperException as error:  # usage errors: unknown option, bad value, ...
        if type(error).__name__ == "NoArgsIsHelpError":  # `drfemu` or a group given no command
            print(error.format_message())  # type: ignore[attr-defined]
            return 0
        return _fail(f"error: {error.format_message()}", 2)  # type: ignore[attr-defined]
    except InputError as error:  # CliError, WorkloadError, SweepConfigError, PolicyInputError, UnknownProtocol, …
        return _fail(f"error: {error}", 2)
    except LiveError as error:
        return _fail(f"live run failed: {error}", 1)
    except CapacityViolation as error:
        return _fail(f"capacity violation (protocol bug, run aborted): {error}", 3)
    except Exception as error:  # noqa: BLE001 - anything else is a bug: show where it happened
        traceback.print_exc()
        return _fail(f"internal error (a bug in drfemu, please report it with the traceback above): "
                     f"{type(error).__name__}: {error}", INTERNAL_ERROR)
    if status == INTERRUPTED:  # typer's answer to Ctrl-C: the status, without a word
        return _fail("interrupted", INTERRUPTED)
    return status if isinstance(status, int) else 0
