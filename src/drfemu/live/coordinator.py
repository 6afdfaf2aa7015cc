"""Live runs (`drfemu live`): the run's nodes in worker processes on the real clock, over UDP.

The coordinator (this process) listens on TCP for its workers: `processes` it starts itself
(`python -m live.worker`) and `remote` ones started by hand on other machines
(`drfemu live-worker --coordinator HOST:PORT --bind ADDR`). Each worker builds every node of the
run from the same parameters (`runner.build_nodes`: same objects, same streams), keeps the ones
dealt to it (round robin over actor ids) and runs them on a `nodes.realtime.RealtimeRuntime`, each
node on its own UDP socket at the worker's bind address (`nodes.live.DatagramLinks`). The
coordinator owns the observers — the harness, the ledger — and feeds them the events the workers
forward; it ends the run when the harness does (saturation, stall, time cap) and builds the same
result document as a virtual run, from the same observer sections, plus a `live` block: the event
loop, the time scale, one-way latency percentiles, datagrams rejected, send errors and late ticks.

The control channel and its frames: `channel`; the workers: `worker`. The events
of different workers reach the coordinator interleaved as their frames arrive; `live_merge`
puts them back into node-time order before the harness and the ledger see them, and the
harness's ticks run on that merged time.

Decisions:
- UDP datagrams, not TCP: the protocols are written for messages that may be lost and are
  resent on timeouts (`protocols.resilience`, on in every live run), one datagram per
  message keeps message boundaries and per-message latency, and a node needs no connection
  state per peer. On loopback a datagram is lost only to a full socket buffer, counted.
- Timeouts are computed from `--latency` as in a virtual run with faults: it is the bound the
  protocols assume for one hop, in protocol time; at a small time scale real latencies may
  exceed it, which shows as retries and in the latency figures.
- Tasks that end are not run live yet: their ends come from the environment
  (`lifetimes`), which would have to cross processes; `drfemu live` refuses such workloads.
- A worker that dies ends the run: the coordinator stops the others and reports which one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import math
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from drfemu.assembly.build import build_nodes
from drfemu.assembly.config import RunConfig
from drfemu.assembly.run import build_harness, result_sections
from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import LatencyModel, parse_latency
from drfemu.kernel.streams import RandomStreams
from drfemu.live.channel import (
    CHALLENGE,
    CLOCK,
    CLOCK_BODY,
    ERROR,
    EVENT,
    EVENT_CODEC,
    GO,
    HELLO,
    REPORT,
    SECRET_ENV,
    SETUP,
    STOP,
    LiveError,
    new_challenge,
    proof,
    read_frame,
    run_secret,
    settle,
    write_frame,
    write_json,
)
from drfemu.live.merge import EventMerge
from drfemu.live.report import WorkerReport, decode_report
from drfemu.nodes.live import LATENCY_BINS, LATENCY_BINS_PER_DECADE, LATENCY_FLOOR_S
from drfemu.nodes.network import TrafficTally
from drfemu.nodes.port import EventBus
from drfemu.nodes.session import loop_name, run_loop
from drfemu.nodes.wire import Codec
from drfemu.observers.harness import STALLED, Harness, Listeners, RunOutcome
from drfemu.observers.ledger import TaskLedger
from drfemu.observers.observer import Observer, RunEnd
from drfemu.observers.traffic import Traffic
from drfemu.schema.result import Distributed, Live, RunResult, Section
from drfemu.schema.result_blocks import LiveFigures
from drfemu.tools.pools import checked_pool_size
from drfemu.workloads.points import build_run_config

__all__ = ["BIN_EDGES", "LiveError", "LiveOptions", "quantiles_of", "run_live"]

START_MARGIN = 0.5  # wall seconds between "go" and protocol time 0, for the frames to arrive
HANDSHAKE_TIMEOUT = 60.0  # wall seconds a worker may take to connect and bind its sockets
HELLO_LIMIT = 4096  # bytes of a hello: a client that announces more is refused before it is read
REPORT_TIMEOUT = 30.0
BIN_EDGES = LATENCY_FLOOR_S * np.logspace(0, LATENCY_BINS // LATENCY_BINS_PER_DECADE,
                                          LATENCY_BINS + 1)  # the edges of `nodes.live.latency_bin`'s bins


MAX_TIME_SCALE = 1000.0  # wall seconds per protocol second: a 100 ms tick every 100 s


@dataclass(frozen=True)
class LiveOptions:
    """How to run live: `processes` local workers, `remote` more expected to connect, protocol
    time × `time_scale` = wall time, nodes bound at `bind`, the coordinator listening at `listen`."""

    processes: int = 1
    remote: int = 0
    time_scale: float = 1.0
    bind: str = "127.0.0.1"
    listen: tuple[str, int] = ("127.0.0.1", 0)


def quantiles_of(histogram: Sequence[int] | np.ndarray, scale: float = 1.0) -> dict[str, float | None]:
    """p50, p90, p99 and max of a sample binned by `nodes.live.latency_bin` (each the upper edge
    of its bin, × `scale`); None for an empty sample."""
    histogram = np.asarray(histogram)
    total = int(histogram.sum())
    if not total:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    cumulative = np.cumsum(histogram)
    out: dict[str, float | None] = {}
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0)):
        index = int(np.searchsorted(cumulative, q * total - 1e-9))
        out[name] = float(BIN_EDGES[index + 1]) * scale
    return out


class _Reported:
    """The distributed set-up's figures as the workers reported them, summed: an observer's sections."""

    def __init__(self, parts: list[dict[str, Any]]) -> None:
        self.parts = parts

    def sections(self, end: RunEnd) -> list[Section]:
        return [Distributed(**_merge_distributed(self.parts))] if self.parts else []


class _Worker:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hello: Mapping[str, Any]) -> None:
        self.reader = reader
        self.writer = writer
        self.index = int(hello["worker"])
        self.fingerprint = hello["fingerprint"]
        self.pid = hello.get("pid")
        self.report: WorkerReport | None = None


def _check(config: RunConfig, options: LiveOptions) -> None:
    if config.workload.finite:
        raise InputError("drfemu live runs endless workloads; tasks that end are not run live yet")
    if config.params.faults is not None:
        raise InputError("drfemu live does not play fault scenarios (--faults); run them virtually")
    if options.processes < 0 or options.remote < 0 or options.processes + options.remote < 1:
        raise InputError("a live run needs at least one worker (--processes, --remote-workers)")
    if options.processes:
        checked_pool_size(options.processes, "--processes")
    if not 0 < options.time_scale <= MAX_TIME_SCALE:
        raise InputError(f"--time-scale must be in (0, {MAX_TIME_SCALE:g}], got {options.time_scale}")
    host, port = options.listen
    if not 0 <= port <= 65535:
        raise InputError(f"--listen {host}:{port}: a port is in [0, 65535] (0: any free one)")
    if options.processes:
        _check_bindable(options.bind)


def worker_count(options: LiveOptions, nodes: int) -> LiveOptions:
    """`options` with no more local workers than there are nodes to deal out (each worker runs at
    least one node); `InputError` if the remote workers alone outnumber the nodes."""
    if options.remote > nodes or (options.remote == nodes and options.processes):
        raise InputError(f"{options.processes + options.remote} workers for {nodes} nodes: each worker needs a node "
                         f"(at most {nodes} in all)")
    return dataclasses.replace(options, processes=min(options.processes, nodes - options.remote))


def _check_bindable(host: str) -> None:
    """Refuse a `--bind` address this machine cannot bind a UDP socket at, before any worker starts."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:  # nodes bind IPv4 (`nodes.live`)
            probe.bind((host, 0))
    except OSError as error:
        raise InputError(f"--bind {host}: cannot bind a UDP socket there ({error.strerror or error})") from None


async def _admit(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, secret: str) -> dict[str, Any] | str:
    """Challenge a client that connected; its hello if it proves it holds `secret`, else why not.
    Nothing but the challenge is sent to it before."""
    challenge = new_challenge()
    write_frame(writer, CHALLENGE, challenge)
    try:
        kind, body = await asyncio.wait_for(read_frame(reader, HELLO_LIMIT), HANDSHAKE_TIMEOUT)
    except TimeoutError:
        return f"it said nothing within {HANDSHAKE_TIMEOUT:g} s"
    except asyncio.IncompleteReadError:
        return "it closed the connection before its hello"
    except ConnectionError as error:
        return f"no hello ({error})"
    if kind != HELLO:
        return f"sent a {chr(kind)!r} frame before its hello"
    try:
        hello = json.loads(body)
        given = hello["proof"]
        hello["worker"] = int(hello["worker"])
    except (ValueError, KeyError, TypeError):
        return "its hello is not a worker's"
    if not isinstance(given, str) or not hmac.compare_digest(given, proof(secret, challenge)):
        return f"it did not prove it holds the run's secret ({SECRET_ENV})"
    return dict(hello)


async def _coordinate(params: Mapping[str, Any], config: RunConfig, options: LiveOptions, secret: tuple[str, bool],
                      size: int, loop_name: str, log: Callable[..., Any] | None,
                      progress: Callable[[float, int], None] | None) -> RunResult:
    count = options.processes + options.remote
    codec = Codec()
    arrivals: asyncio.Queue[_Worker] = asyncio.Queue()

    admitting: dict[asyncio.Future[Any], asyncio.StreamWriter] = {}
    closing: list[bool] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        admitting[task] = writer
        try:
            hello = await _admit(reader, writer, secret[0])
        finally:
            del admitting[task]
        if closing:  # the run ended while this client was to prove itself
            writer.close()
            return
        if isinstance(hello, str):
            peer = writer.get_extra_info("peername")
            where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "a client"
            print(f"drfemu live: refused {where}: {hello}", file=sys.stderr)
            writer.close()
            return
        await arrivals.put(_Worker(reader, writer, hello))

    server = await asyncio.start_server(accept, *options.listen)
    host, port = server.sockets[0].getsockname()[:2]
    children: list[asyncio.subprocess.Process] = []
    workers: dict[int, _Worker] = {}
    try:
        for index in range(options.processes):
            children.append(await asyncio.create_subprocess_exec(
                sys.executable, "-m", "drfemu.live.worker", f"{host}:{port}", str(index),
                stdin=asyncio.subprocess.DEVNULL, start_new_session=True,  # Ctrl-C reaches the coordinator only
                env={**os.environ, SECRET_ENV: secret[0]}))
        if options.remote:
            shown = f"{SECRET_ENV}={secret[0]}" if secret[1] else f"{SECRET_ENV}=<the same as here>"
            print(f"drfemu live: waiting for {options.remote} remote worker(s): {shown} "
                  f"drfemu live-worker --coordinator {host}:{port} --index N (N = {options.processes}..{count - 1})",
                  file=sys.stderr)
        deadline = time.monotonic() + HANDSHAKE_TIMEOUT
        while len(workers) < count:
            for index, child in enumerate(children):
                if child.returncode is not None:
                    raise LiveError(f"worker {index} (pid {child.pid}) exited with status {child.returncode} "
                                    "before the run began")
            if time.monotonic() > deadline:
                raise LiveError(f"only {len(workers)} of {count} workers connected within {HANDSHAKE_TIMEOUT:g} s")
            try:
                worker = await asyncio.wait_for(arrivals.get(), 0.2)
            except TimeoutError:
                continue
            if worker.fingerprint != codec.fingerprint:
                raise LiveError(f"worker {worker.index} speaks another wire format ({worker.fingerprint}, "
                                f"here {codec.fingerprint}): run the same drfemu on every host")
            if worker.index in workers or not 0 <= worker.index < count:
                raise LiveError(f"a worker connected with index {worker.index}; expected each of 0..{count - 1} once")
            workers[worker.index] = worker
        for index, worker in workers.items():
            write_json(worker.writer, SETUP, {"params": dict(params), "actors": list(range(index, size, count)),
                                         "bind": options.bind, "time_scale": options.time_scale})
        addresses: dict[int, tuple[str, int]] = {}
        for index, worker in workers.items():
            kind, body = await asyncio.wait_for(read_frame(worker.reader), HANDSHAKE_TIMEOUT)
            if kind == ERROR:
                raise LiveError(f"worker {index} failed to start: {body.decode()}")
            ports = json.loads(body)["ports"]
            peer = worker.writer.get_extra_info("peername")[0]
            for actor, (bound_host, bound_port) in ports.items():
                addresses[int(actor)] = (peer if bound_host in ("0.0.0.0", "") else bound_host, bound_port)
        start_wall = time.time() + START_MARGIN
        for worker in workers.values():
            write_json(worker.writer, GO,
                       {"addresses": {k: list(v) for k, v in addresses.items()}, "start": start_wall})
        return await _observe(config, workers, options, loop_name, log, progress)
    finally:
        closing.append(True)
        pending = set(admitting)  # clients still to prove themselves: closed, their admission ends at once
        for writer in admitting.values():
            writer.close()
        await asyncio.gather(*pending, return_exceptions=True)
        for worker in workers.values():
            worker.writer.close()
        while not arrivals.empty():  # admitted after the run had its workers
            arrivals.get_nowait().writer.close()
        for child in children:
            if child.returncode is None:
                try:
                    child.send_signal(signal.SIGTERM)
                    await asyncio.wait_for(child.wait(), 5.0)
                except (TimeoutError, ProcessLookupError):
                    if child.returncode is None:
                        child.kill()
                        await child.wait()
        server.close()
        await server.wait_closed()


async def _observe(config: RunConfig, workers: Mapping[int, _Worker], options: LiveOptions, loop_name: str,
                   log: Callable[..., Any] | None, progress: Callable[[float, int], None] | None) -> RunResult:
    """Feed the workers' events, merged into node-time order, to the harness and the ledger, with
    the harness's ticks between them, until the harness ends the run; then collect the reports."""
    params = config.params
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[RunOutcome] = loop.create_future()

    def on_finish(outcome: RunOutcome) -> None:
        if not finished.done():
            finished.set_result(outcome)

    harness = build_harness(config, Listeners(on_finish, log, progress))
    assert isinstance(harness, Harness)  # live runs refuse workloads whose tasks end
    hub = EventBus()
    ledger = TaskLedger(dict(zip(config.ids.users, (user.id for user in config.workload.users), strict=True)))
    ledger.subscribe(hub)
    harness.subscribe(hub)
    merge = EventMerge(workers)
    clock: dict[str, Any] = {"ticks": 0, "now": 0.0}  # the harness's ticks so far, and the time it last heard of
    unheard: list[Any] = []  # released after the harness ended the run

    def publish(events: list[Any]) -> None:
        for k, event in enumerate(events):
            if finished.done():
                unheard.extend(events[k:])
                return
            clock["now"] = max(clock["now"], event.time)
            hub.publish(event)

    def advance() -> None:
        """Give the harness every event and tick the horizon allows, in time order (a tick after
        the events of its instant, as in a virtual run)."""
        horizon = merge.horizon()
        while not finished.done():
            due = (clock["ticks"] + 1) * params.tick
            if due >= horizon:
                publish(merge.pop_ready())
                return
            publish(merge.pop_through(due))
            if finished.done():
                return
            clock["ticks"] += 1
            clock["now"] = due
            harness.on_tick(due, clock["ticks"])

    if not harness.placeable_shares():
        harness.finish("saturated", "no user's task fits on any server", 0.0)

    async def listen(worker: _Worker) -> None:
        while True:
            try:
                kind, body = await read_frame(worker.reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                if worker.report is None:
                    raise LiveError(f"worker {worker.index} (pid {worker.pid}) stopped before the end of the run; "
                                    "the others were stopped") from None
                return
            if kind == EVENT:
                event = EVENT_CODEC.decode(body)[2]
                merge.push(worker.index, event.time, event)
                advance()
            elif kind == CLOCK:
                merge.clock(worker.index, CLOCK_BODY.unpack(body)[0])
                advance()
            elif kind == REPORT:
                worker.report = decode_report(body, worker.index)
                return
            elif kind == ERROR:
                raise LiveError(f"worker {worker.index} failed:\n{body.decode()}")

    listeners = {asyncio.ensure_future(listen(w)) for w in workers.values()}
    started = time.perf_counter()
    pending_finish = asyncio.ensure_future(asyncio.shield(finished))
    try:
        done, _ = await asyncio.wait(listeners | {pending_finish}, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not pending_finish and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        if harness.outcome is None:  # a worker ended before the harness did
            harness.finish(STALLED, "a worker ended the run early", clock["now"])
        wall = time.perf_counter() - started
        for worker in workers.values():
            write_frame(worker.writer, STOP, b"")
        try:
            await asyncio.wait_for(asyncio.gather(*listeners), REPORT_TIMEOUT)
        except TimeoutError:
            raise LiveError(f"a worker did not report within {REPORT_TIMEOUT:g} s of the stop") from None
    finally:
        await settle(listeners | {pending_finish})
    reports = [report for i in sorted(workers) if (report := workers[i].report) is not None]
    if len(reports) < len(workers):  # every listener returned with its worker's report, or raised
        raise LiveError("a worker stopped without its report")
    # The workers ran on until the stop: the ledger hears the rest (the users' counters include
    # it), the harness, which judged the run up to its end, does not.
    for index in workers:
        merge.clock(index, math.inf)
    rest = EventBus()
    ledger.subscribe(rest)
    for event in unheard + merge.pop_ready():
        rest.publish(event)
    sections = _sections(config, harness, ledger, reports, clock["now"], wall, clock["ticks"])
    figures = _live_figures(reports, options, loop_name)
    sections.append(Live(live=LiveFigures(**figures, events_out_of_order=merge.out_of_order)))
    return RunResult.compose(sections, config.extension_echoes())


def _sections(config: RunConfig, harness: Harness, ledger: TaskLedger, reports: list[WorkerReport], end: float,
              wall: float, ticks: int) -> list[Section]:
    """The result's sections from the harness, the ledger and the workers' reports, composed as a
    virtual run's are (`assembly.run.result_sections`); the live figures come beside them."""
    traffic: dict[str, list[int]] = {}
    users: dict[int, Any] = {}
    for report in reports:
        for name, counts in report.traffic.items():
            total = traffic.setdefault(name, [0, 0, 0])
            for k in range(3):
                total[k] += counts[k]
        users.update(report.users)
    tally = {name: TrafficTally(*counts) for name, counts in sorted(traffic.items())}
    events = sum(r.delivered + r.timer_events for r in reports)
    run_end = RunEnd(now=end, wall=wall, events=events, ticks=ticks, allocations=harness.allocations,
                     users=dict(sorted(users.items())), submitted=config.workload.submitted_by(end))
    observers: list[Observer] = [harness, ledger, Traffic(lambda: tally, {"loss": 0, "partition": 0, "down": 0}),
                                 _Reported([d.model_dump() for r in reports if (d := r.distributed_section()) is not None])]
    return result_sections(config, _assumed_latency(config), run_end, observers, faults=False)


def _live_figures(reports: list[WorkerReport], options: LiveOptions, loop_name: str) -> dict[str, Any]:
    """The `live` block: the loop, the workers, the time scale, latencies, rejected datagrams, late ticks."""
    latency = np.sum([r.latency_histogram for r in reports], axis=0)
    late = np.sum([r.late_tick_histogram for r in reports], axis=0)
    rejected: dict[str, int] = {}
    for report in reports:
        for reason, n in report.rejected.items():
            rejected[reason] = rejected.get(reason, 0) + n
    return {
        "loop": loop_name,
        "workers": len(reports),
        "time_scale": options.time_scale,
        "transport": "udp",
        "bind": options.bind,
        "one_way_latency_us": quantiles_of(latency, 1e6),
        "datagrams_rejected": rejected,
        "send_errors": sum(r.send_errors for r in reports),
        "wire_bytes": sum(r.wire_bytes for r in reports),
        "tick_lateness_ms": quantiles_of(late, 1e3),
        "ticks_late_over_half_tick": sum(r.ticks_over_half for r in reports),
    }


def _assumed_latency(config: RunConfig) -> LatencyModel:
    """The run's latency model: not how live messages travel, but the bound its timeouts assume."""
    params = config.params
    return parse_latency(params.latency, RandomStreams(params.seed).python("network/latency"))


def _merge_distributed(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum the workers' counters (each counted only its own servers); the rest is the same in all."""
    merged = dict(parts[0])
    merged["placement"] = {k: sum(p["placement"][k] for p in parts) for k in parts[0]["placement"]}
    overlay: dict[str, Any] = {}
    for part in parts:
        for key, value in part["overlay"].items():
            if key == "frozen_at_s":
                overlay[key] = max((v for v in (overlay.get(key), value) if v is not None), default=None)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                overlay[key] = overlay.get(key, 0) + value
            else:
                overlay[key] = value
    merged["overlay"] = overlay
    return merged


def run_live(params: Mapping[str, Any], options: LiveOptions, notice: Callable[[str], None] | None = None,
             log: Callable[..., Any] | None = None,
             progress: Callable[[float, int], None] | None = None) -> RunResult:
    """Run the canonical run parameters `params` (`params.canonical_params`) live (see the
    module's docstring); bad input raises `InputError`, a run that cannot finish `LiveError`.
    `log` hears every allocation as the harness judged it (in the order the events arrived),
    `progress` the protocol time and allocations so far, every 50 ticks.
    Ctrl-C stops every worker before it propagates."""
    config = build_run_config(params)
    _check(config, options)
    size = len(build_nodes(config, RandomStreams(config.params.seed)).actors)
    dealt = worker_count(options, size)
    if dealt.processes < options.processes and notice is not None:
        notice(f"{size} nodes: starting {dealt.processes} worker process(es), not {options.processes} "
               "(each worker runs at least one node)")
    secret = run_secret()

    async def coordinate() -> RunResult:
        name = loop_name(asyncio.get_running_loop())
        if name != "uvloop" and notice is not None:
            notice("uvloop is not installed: the live run uses the standard asyncio loop")
        return await _coordinate(params, config, dealt, secret, size, name, log, progress)

    return run_loop(coordinate(), "best", signals=True)

