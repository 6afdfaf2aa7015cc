"""One worker process of a live run (`python -m live.worker HOST:PORT INDEX
[BIND]`, or `drfemu live-worker` on another machine).

It connects to the coordinator, answers its challenge with proof that it holds the run's secret
(`DRFEMU_LIVE_SECRET`, `channel.proof`), builds every node of the run from the parameters it is sent
(`runner.build_nodes`: the same objects and random streams as everywhere), keeps the ones
dealt to it and runs them on a `nodes.realtime.RealtimeRuntime`, each on its own UDP socket at its
bind address (`nodes.live.DatagramLinks`). It forwards the nodes' events, and after every
allocation tick its protocol time (a clock frame: the coordinator's merge needs to know that no
earlier event is still to come). When the coordinator says stop it sends its counters; if the coordinator goes away or a
signal arrives, it closes its sockets and ends.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import traceback

import msgspec

from drfemu.assembly.build import build_nodes
from drfemu.kernel.errors import InputError
from drfemu.kernel.latency import US_PER_S, parse_latency
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
    READY,
    REPORT,
    SECRET_ENV,
    SETUP,
    LiveError,
    proof,
    read_frame,
    settle,
    write_frame,
    write_json,
)
from drfemu.live.report import NOT_DISTRIBUTED, WorkerReport, encode_report
from drfemu.nodes.live import LATENCY_BINS, DatagramLinks, latency_bin
from drfemu.nodes.network import Network
from drfemu.nodes.realtime import RealtimeRuntime
from drfemu.nodes.session import run_loop, timed
from drfemu.nodes.wire import Codec
from drfemu.workloads.points import build_run_config

__all__ = ["LIVE_PROMPT_FLOOR_S", "worker_main"]

LIVE_PROMPT_FLOOR_S = 0.002
"""The shortest prompt wait of a live run, in wall seconds. Decision (issue 37): a prompt wait is
four round trips at the latency model's bound (8 ms at 1 ms), which at time scale 0.1 is 0.8 ms
of wall time — inside the tail of real UDP and event-loop latency on one machine — so live runs
asked for answers already on their way (drf 100 × 20 at × 0.1 sent 45,026 messages against its
virtual twin's 41,782, allocations equal). A wall floor of 2 ms (p99 of the measured wall
latency at × 0.1 is 0.5 ms, `docs/live.md`) keeps the virtual time of the waits short."""


def _histogram(values: list[float]) -> list[int]:
    counts = [0] * LATENCY_BINS
    for value in values:
        counts[latency_bin(value)] += 1
    return counts


async def _worker(coordinator: tuple[str, int], index: int, bind: str | None, secret: str) -> str | None:
    """Serve the coordinator; the reason this worker could not (also sent to the coordinator),
    or None."""
    try:
        reader, writer = await asyncio.open_connection(*coordinator)
    except OSError as error:
        return f"cannot reach the coordinator at {coordinator[0]}:{coordinator[1]}: {error.strerror or error}"
    failure: str | None = None
    codec = Codec()
    links: DatagramLinks | None = None
    try:
        try:
            kind, challenge = await read_frame(reader, CHALLENGE_LIMIT)
            if kind != CHALLENGE:
                raise ConnectionError
        except (asyncio.IncompleteReadError, ConnectionError):
            return f"{coordinator[0]}:{coordinator[1]} is not a drfemu live coordinator (no challenge)"
        write_json(writer, HELLO, {"worker": index, "fingerprint": codec.fingerprint, "pid": os.getpid(),
                                   "proof": proof(secret, challenge)})
        try:
            kind, body = await read_frame(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            return f"the coordinator refused this worker (is {SECRET_ENV} the run's?)"
        if kind != SETUP:
            raise LiveError(f"expected the setup frame, got {chr(kind)!r}")
        setup = json.loads(body)
        config = build_run_config(setup["params"])
        params = config.params
        streams = RandomStreams(params.seed)
        latency = parse_latency(params.latency, streams.python("network/latency"))
        timeouts = config.timeouts(latency.bound_us() / US_PER_S)
        prompt = max(timeouts.prompt, LIVE_PROMPT_FLOOR_S / setup["time_scale"])
        nodes = build_nodes(config, streams, timeouts._replace(prompt=prompt))
        mine = set(setup["actors"])
        local = [a for a in nodes.actors if a.id in mine]
        host = bind or setup["bind"]
        network = Network(latency)
        links = DatagramLinks(network, codec)
        runtime = RealtimeRuntime(network, nodes.actors, time_scale=setup["time_scale"], hosted=mine, links=links)
        runtime.bus.subscribe_all(lambda event: write_frame(writer, EVENT, EVENT_CODEC.encode(index, 0, event)))
        try:
            await links.open(runtime, {a.id: (host, 0) for a in local})
        except OSError as error:  # an address this host cannot bind: the user's input, said in one line
            failure = f"cannot bind nodes at {host}: {error.strerror or error}"
            write_frame(writer, ERROR, failure.encode())
            return failure
        write_json(writer, READY, {"ports": links.bound_ports()})
        kind, body = await read_frame(reader)
        if kind != GO:
            raise LiveError(f"expected the go frame, got {chr(kind)!r}")
        go = json.loads(body)
        links.set_addresses({int(k): (h, p) for k, (h, p) in go["addresses"].items()})
        for user in nodes.users:
            runtime.call_at(0.0, user.start, actor=user)
        runtime.start_ticks(params.tick, nodes.tickers)
        late: list[float] = []  # protocol seconds each allocation tick came after its time
        live = runtime

        def on_tick(now: float, tick: int) -> None:
            late.append(live.lateness)
            write_frame(writer, CLOCK, CLOCK_BODY.pack(now))

        runtime.add_tick_hook(on_tick)
        nodes.setup.start(runtime)
        runtime.begin(time.monotonic() + (go["start"] - time.time()))
        stop = asyncio.ensure_future(read_frame(reader))
        running = asyncio.ensure_future(timed(runtime.run()))
        try:
            await asyncio.wait({stop, running}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            await settle({stop, running})
            raise
        runtime.stop()
        await settle({stop})
        await running  # returns once stopped; a handler's exception is raised here, with its traceback
        figures = nodes.setup.figures()
        write_frame(writer, REPORT, encode_report(WorkerReport(
            traffic={name: (t.sent, t.dropped, t.bytes) for name, t in network.tally().items()},
            delivered=runtime.delivered, timer_events=runtime.timer_events,
            rejected=dict(links.rejected), send_errors=links.send_errors, wire_bytes=links.wire_bytes,
            latency_histogram=list(links.latency_histogram),
            late_tick_histogram=_histogram([t * runtime.scale for t in late]),
            ticks_over_half=sum(t > params.tick / 2 for t in late),
            users={u.id: u.counters() for u in nodes.users if u.id in mine},
            distributed=NOT_DISTRIBUTED if figures is None else msgspec.Raw(figures.model_dump_json().encode()))))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the coordinator went away: stop
    except Exception:  # noqa: BLE001 - shown by the coordinator, which ends the run
        failure = traceback.format_exc()
        write_frame(writer, ERROR, failure.encode())
    finally:
        if links is not None:
            links.close()
        try:
            await writer.drain()
        except ConnectionError:
            pass
        writer.close()
    return failure


CHALLENGE_LIMIT = 64  # bytes: a coordinator's challenge is 32


def worker_main(coordinator: str, index: int, bind: str | None = None) -> str | None:
    """Run one live worker until its coordinator stops it or goes away, or a signal stops it;
    the reason it failed, or None."""
    host, _, port = coordinator.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise InputError(f"--coordinator: expected HOST:PORT, got {coordinator!r}")
    secret = os.environ.get(SECRET_ENV)
    if not secret:
        raise InputError(f"{SECRET_ENV} is not set: set it to the secret drfemu live printed (or was given)")
    return run_loop(_worker((host, int(port)), index, bind, secret), "best", signals=True)


if __name__ == "__main__":
    try:
        failure = worker_main(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
    except KeyboardInterrupt:  # stopped by its coordinator (SIGTERM) after its sockets closed
        sys.exit(0)
    sys.exit(1 if failure else 0)
