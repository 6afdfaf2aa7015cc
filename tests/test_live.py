"""Live mode (`drfemu live`, `nodes.live`, `live.coordinator`): nodes on the real clock
over loopback UDP. Short runs only; `docs/live.md` has the measured comparison."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from drfemu.assembly.build import build_nodes
from drfemu.assembly.run import run_emulation
from drfemu.cli import main
from drfemu.kernel.messages import Accept, Proposal, TaskRequest
from drfemu.kernel.streams import RandomStreams
from drfemu.live.coordinator import BIN_EDGES, quantiles_of
from drfemu.nodes.live import LATENCY_BINS, STAMP, DatagramLinks, latency_bin
from drfemu.nodes.network import Network
from drfemu.nodes.realtime import RealtimeRuntime
from drfemu.nodes.session import run_loop
from drfemu.nodes.wire import Codec
from drfemu.protocols.resilience import Timeouts
from drfemu.workloads.points import build_run_config, canonical_params

CODEC = Codec()


def test_a_latency_falls_in_the_bin_whose_edges_hold_it_and_quantiles_report_upper_edges() -> None:
    rng = random.Random(3)
    for _ in range(2_000):
        seconds = 10 ** rng.uniform(-6.9, 0.9)
        i = latency_bin(seconds)
        assert BIN_EDGES[i] <= seconds * (1 + 1e-12) and seconds <= BIN_EDGES[i + 1] * (1 + 1e-12)
    assert latency_bin(-0.003) == 0 and latency_bin(100.0) == LATENCY_BINS - 1
    histogram = [0] * LATENCY_BINS
    for seconds in [50e-6] * 60 + [2e-3] * 39 + [0.5]:
        histogram[latency_bin(seconds)] += 1
    q = quantiles_of(histogram, 1e6)
    assert 50 < q["p50"] < 50 * 1.13 and 2_000 < q["p90"] < 2_000 * 1.13  # type: ignore[operator]
    assert 2_000 < q["p99"] < 2_000 * 1.13 and 500_000 < q["max"] < 500_000 * 1.13  # type: ignore[operator]
    assert quantiles_of([0] * LATENCY_BINS)["p50"] is None


def test_ten_thousand_bad_datagrams_are_counted_and_crash_no_node() -> None:
    """Random, truncated and foreign datagrams at every node of a small run: each is rejected and
    counted by reason, none reaches a handler, no node fails."""
    config = build_run_config(canonical_params({"machines": 4, "users": 2}))
    nodes = build_nodes(config, RandomStreams(1), Timeouts(0.01, 0.001))

    async def scenario() -> tuple[RealtimeRuntime, DatagramLinks]:
        links = DatagramLinks(Network(), CODEC)
        runtime = RealtimeRuntime(Network(), nodes.actors, links=links)
        await links.open(runtime, {a.id: ("127.0.0.1", 0) for a in nodes.actors})
        links.set_addresses(links.bound_ports())
        running = asyncio.ensure_future(runtime.run())
        targets = list(links.bound_ports().items())
        rng = random.Random(7)
        good = [CODEC.encode(0, 5, TaskRequest(5, 1, (0.1, 0.1), 0.0)), CODEC.encode(4, 0, Proposal(1, 0)),
                CODEC.encode(5, 1, Accept(5, 1))]
        foreign = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        foreign.setblocking(False)
        try:
            for i in range(10_000):
                node, address = targets[rng.randrange(len(targets))]
                stamp = STAMP.pack(time.time())
                form = i % 5
                if form == 0:
                    data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80)))
                elif form == 1:
                    whole = stamp + rng.choice(good)
                    data = whole[:rng.randrange(len(whole))]
                elif form == 2:  # well formed, but from an address no node has
                    data = stamp + CODEC.encode(rng.choice([t[0] for t in targets]), node, Accept(1, 1))
                elif form == 3:  # well formed, for another receiver
                    data = stamp + CODEC.encode(0, node + 1, Accept(1, 1))
                else:
                    data = stamp + bytes(rng.randrange(256) for _ in range(rng.randrange(11, 60)))
                foreign.sendto(data, address)
                if i % 50 == 49:
                    await asyncio.sleep(0.002)
            await asyncio.sleep(0.2)
            assert not running.done()  # no handler raised
            runtime.stop()
            await running
        finally:
            foreign.close()
            links.close()
        return runtime, links

    runtime, links = run_loop(scenario())
    assert runtime.delivered == 0
    assert sum(links.rejected.values()) == 10_000, links.rejected
    assert links.rejected["unknown sender"] >= 2_000 and links.rejected["wrong receiver"] >= 2_000


@pytest.mark.parametrize("args, message", [
    (["live", "--bind", "192.0.2.1"], "--bind 192.0.2.1: cannot bind a UDP socket there"),  # TEST-NET-1: no host has it
    (["live", "--time-scale", "0"], "--time-scale must be in (0, 1000]"),
    (["live", "--listen", "nowhere"], "--listen: expected HOST:PORT"),
    (["live-worker", "--coordinator", "nowhere", "--index", "0"], "--coordinator: expected HOST:PORT"),
])
def test_bad_live_options_are_refused_in_one_line_before_any_worker_starts(
        args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_worker_that_cannot_reach_its_coordinator_says_so_in_one_line(capsys: pytest.CaptureFixture[str],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRFEMU_LIVE_SECRET", "a-secret-of-sixteen-characters")
    with socket.socket() as closed:  # a port nothing listens at
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert main(["live-worker", "--coordinator", f"127.0.0.1:{port}", "--index", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot reach the coordinator" in err[0]


@pytest.mark.slow
def test_a_live_drf_run_saturates_like_the_virtual_one(tmp_path: Path) -> None:
    out, log, virtual_out = tmp_path / "live.json", tmp_path / "live.jsonl", tmp_path / "virtual.json"
    done = subprocess.run([sys.executable, "-m", "drfemu.cli", "live", "--machines", "10", "--users", "3",
                           "--processes", "2", "--time-scale", "0.1", "--json", str(out), "--log", str(log)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    live = json.loads(out.read_text())
    virtual = run_emulation(build_run_config(canonical_params({"machines": 10, "users": 3}))).to_dict()
    assert live["status"] == virtual["status"] == "saturated"
    assert live["min_dominant_share"] == pytest.approx(virtual["min_dominant_share"], rel=0.05)
    assert live["ledger"]["lost"] == 0
    assert live["live"]["workers"] == 2 and live["live"]["datagrams_rejected"] == {}
    assert live["live"]["one_way_latency_us"]["p50"] is not None
    assert len(log.read_text().splitlines()) == live["allocations"]
    virtual_out.write_text(json.dumps(virtual))
    report = subprocess.run([sys.executable, "-m", "drfemu.cli", "live-report", str(virtual_out), str(out)],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    rows = [line for line in report.stdout.splitlines() if line.startswith("| drf 10 × 3")]
    assert [row.split(" | ")[1] for row in rows] == ["virtual", "live × 0.1"]


@pytest.mark.slow
def test_a_live_distributed_run_reports_its_servers_figures(tmp_path: Path) -> None:
    """The workers' distributed figures reach the result (a report that carried them was refused
    once, ending every live run of a distributed protocol with an error)."""
    out = tmp_path / "live.json"
    done = subprocess.run([sys.executable, "-m", "drfemu.cli", "live", "--machines", "10", "--users", "3",
                           "--protocol", "pdgdrf", "--neighbors", "2", "--processes", "2", "--time-scale", "0.1",
                           "--json", str(out)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    live = json.loads(out.read_text())
    params = {"machines": 10, "users": 3, "protocol": "pdgdrf", "neighbors": 2}
    virtual = run_emulation(build_run_config(canonical_params(params))).to_dict()
    assert live["status"] == virtual["status"] == "saturated" and live["ledger"]["lost"] == 0
    assert live["distributed"] is True
    for key in ("homes", "cyclon_view", "shuffle_length", "walk_ttl"):
        assert live[key] == virtual[key], key
    assert live["placement"]["proposals"] >= live["allocations"] > 0
    assert live["overlay"]["gradient"] == virtual["overlay"]["gradient"]


def _workers_of(parent: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == parent and b"drfemu.live.worker" in cmdline:
                pids.append(int(entry))
    return pids


@pytest.mark.slow
def test_a_worker_that_dies_stops_the_run_cleanly() -> None:
    """Kill one worker mid-run: the coordinator names it, stops the others, exits 1, and leaves
    no worker process behind."""
    coordinator, workers = _start_endless_live_run()
    try:
        assert len(workers) == 2
        time.sleep(4.0)  # past start-up: the run is under way
        os.kill(workers[0], signal.SIGKILL)
        _, err = coordinator.communicate(timeout=60)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
    assert coordinator.returncode == 1
    assert "stopped before the end of the run" in err
    _assert_gone(coordinator.pid, workers)


def _assert_gone(coordinator: int, workers: list[int]) -> None:
    time.sleep(0.5)
    assert _workers_of(coordinator) == []
    assert all(not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
               for pid in workers)


def _start_endless_live_run() -> tuple[subprocess.Popen[str], list[int]]:
    coordinator = subprocess.Popen([sys.executable, "-m", "drfemu.cli", "live", "--machines", "10", "--users",
                                    "3", "--protocol", "dgdrf", "--neighbors", "2", "--processes", "2",
                                    "--max-time", "10000s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        workers = _workers_of(coordinator.pid)
    return coordinator, workers


@pytest.mark.slow
def test_ctrl_c_stops_every_worker_and_says_so() -> None:
    coordinator, workers = _start_endless_live_run()
    try:
        assert len(workers) == 2
        time.sleep(4.0)
        coordinator.send_signal(signal.SIGINT)
        _, err = coordinator.communicate(timeout=60)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
    assert coordinator.returncode == 130
    assert err.strip().splitlines()[-1] == "drfemu: interrupted"
    assert "Traceback" not in err and "never retrieved" not in err
    _assert_gone(coordinator.pid, workers)


def test_a_worker_report_is_checked_field_by_field_when_it_arrives() -> None:
    from drfemu.live.channel import LiveError
    from drfemu.live.report import WorkerReport, decode_report, encode_report
    from drfemu.schema.result import Distributed

    report = WorkerReport(traffic={"Proposal": (3, 0, 96)}, delivered=5, timer_events=2, rejected={}, send_errors=0,
                          wire_bytes=96, latency_histogram=[1, 2], late_tick_histogram=[0], ticks_over_half=0,
                          users={7: {"submitted": 1}})
    assert decode_report(encode_report(report), 0) == report and report.distributed_section() is None
    figures = Distributed(homes=3, cyclon_view=4, placement={"local": 2})
    distributed = msgspec.structs.replace(report, distributed=msgspec.Raw(figures.model_dump_json().encode()))
    assert decode_report(encode_report(distributed), 1).distributed_section() == figures
    foreign = encode_report(distributed).replace(b'"homes":3', b'"homes":"three"')
    with pytest.raises(LiveError, match=r"worker 2 sent distributed figures that are not ones \(homes: "):
        decode_report(foreign, 2)
    for body, needle in ((b'{"traffic": {}}', "not one"), (b"{", "not JSON"),
                         (encode_report(report).replace(b'"delivered":5', b'"delivered":"5"'), "not one")):
        with pytest.raises(LiveError, match=needle):
            decode_report(body, 3)
