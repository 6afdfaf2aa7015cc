"""Protocols and workloads from other packages: an installed distribution's `drfemu.protocols`
entry point adds a protocol, and its `drfemu.workloads` entry point a generated workload, each with
a parameter of its own, to the CLI, sweeps, the listings and `drfemu params`; a broken one is one
line naming it, and everything else works on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN = '''
"""A protocol of a package of the user's own: each tick a home polls two random peers for the
lowest share homed there (a poll the engine carries, `drfemu.protocols.polls`), and allocates
every `demo_every`-th tick for its lowest user if that user is no richer than what the peers told."""

import math

from drfemu.kernel.messages import Address, message
from drfemu.kernel.params import Kind, Param
from drfemu.protocols.polls import Answer, Record
from drfemu.protocols.registry import Gateway, ProtocolSpec
from drfemu.protocols.rule import Server, ServerRule


@message
class DemoAsk:
    sender: Address


@message
class DemoTell:
    sender: Address
    share: float


class DemoRule(ServerRule):
    PARAMS = (Param("demo_every", Kind.INT, 2, "demo: allocate every this many ticks.", ge=1, unit="ticks",
                    echo="demo_every"),)

    def __init__(self, demo_every: int = 2) -> None:
        self.every = demo_every
        self.ticks = 0
        self.mine = math.inf  # the lowest share homed here, as of the last tick: what this server publishes
        self.told: dict[int, float] = {}  # peer -> the lowest share it told since the last tick

    def on_tick(self, server: Server, now: float) -> None:
        self.ticks += 1
        lowest = server.homes.lowest()
        bound = min(self.told.values(), default=math.inf)
        self.mine = lowest[1].share if lowest is not None else math.inf
        server.republish()  # what it publishes changed
        self.told = {}
        for peer in server.peers()[:2]:
            server.send(peer, DemoAsk(server.id))
        if self.ticks % self.every == 0 and lowest is not None and lowest[1].idle() and lowest[1].share <= bound:
            server.allocate(*lowest)

    def tell(self, server: Server) -> tuple[DemoTell]:
        return (DemoTell(server.id, self.mine),)

    POLLS = (Answer(DemoAsk, tell), Record(DemoTell, "told", "share"))


SPEC = ProtocolSpec("demo", "a plug-in's protocol: homes poll two peers and allocate every few ticks", Gateway.HOME,
                    server_rule=DemoRule)
'''

WORKLOAD_PLUGIN = '''
"""A generated workload of a package of the user's own: `ring_size` identical servers, users
whose demands step through the resources."""

from drfemu.kernel.params import param
from drfemu.schema.params import CaseParams
from drfemu.schema.workload import Server, User, Workload
from drfemu.workloads.registry import WorkloadSpec


class RingParams(CaseParams):
    ring_size: int = param(default=4, help="ring: servers in the ring.", ge=1, le=1000)


def ring_case(machines: int, users: int, case_seed: int, ring_size: int) -> Workload:
    servers = tuple(Server(f"r{i}", (8.0, 16.0)) for i in range(ring_size))
    people = tuple(User(f"u{i}", (1.0 + i % 2, 1.0 + (i + 1) % 2)) for i in range(users))
    return Workload(("cpu", "mem"), servers, people, {"kind": "ring", "seed": case_seed})


SPEC = WorkloadSpec("ring", "a plug-in's workload: a ring of equal servers", RingParams, ring_case)
'''


def _distribution(site: Path, name: str, entry_points: str) -> None:
    """What pip leaves in site-packages for an installed distribution: its metadata and entry points."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A folder of installed distributions: a working plug-in and a broken one."""
    site = tmp_path / "site"
    (site / "drfemu_demo_plugin").mkdir(parents=True)
    (site / "drfemu_demo_plugin" / "__init__.py").write_text(PLUGIN)
    (site / "drfemu_demo_plugin" / "ring.py").write_text(WORKLOAD_PLUGIN)
    _distribution(site, "drfemu_demo_plugin", "[drfemu.protocols]\ndemo = drfemu_demo_plugin:SPEC\n"
                  "[drfemu.workloads]\nring = drfemu_demo_plugin.ring:SPEC\n")
    _distribution(site, "drfemu_broken_plugin", "[drfemu.protocols]\nbroken = drfemu_no_such_module:SPEC\n")
    return site


def _drfemu(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "drfemu", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


BROKEN = ("drfemu: warning: protocol plug-in 'broken' (drfemu_no_such_module:SPEC, from drfemu_broken_plugin) left "
          "out: ModuleNotFoundError: No module named 'drfemu_no_such_module'")


@pytest.mark.slow
def test_an_installed_package_adds_a_protocol_with_its_own_parameter(site: Path, tmp_path: Path) -> None:
    listed = _drfemu(site, "protocols", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr.strip().splitlines() == [BROKEN]  # one line, naming the plug-in and why
    registry = {entry["name"]: entry for entry in json.loads(listed.stdout)}
    assert registry["demo"]["own_parameters"] == ["demo_every"] and "drf" in registry

    params = _drfemu(site, "params", cwd=tmp_path)
    assert "--demo-every" in params.stdout

    out = tmp_path / "demo.json"
    done = _drfemu(site, "run", "--protocol", "demo", "--demo-every", "3", "--machines", "12", "--users", "4",
                   "--json", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["protocol"] == "demo" and result["demo_every"] == 3 and result["allocations"] > 0
    assert result["messages"]["DemoAsk"] == result["messages"]["DemoTell"] > 0  # every poll answered by the engine
    refused = _drfemu(site, "run", "--protocol", "demo", "--demo-every", "0", cwd=tmp_path)
    assert refused.returncode == 2 and "--demo-every must be at least 1" in refused.stderr

    config = tmp_path / "demo.toml"
    config.write_text('[base]\nmachines = 12\nusers = 4\n[[grids]]\nprotocol = "demo"\ndemo_every = [2, 4]\n')
    swept = _drfemu(site, "sweep", str(config), "--out", str(tmp_path / "sweep"), "--workers", "1", cwd=tmp_path)
    assert swept.returncode == 0, swept.stderr
    records = [json.loads(p.read_text()) for p in (tmp_path / "sweep" / "runs").glob("*.json")]
    assert sorted(r["result"]["demo_every"] for r in records) == [2, 4]
    assert all(r["status"] == "ok" for r in records)


@pytest.mark.slow
def test_a_broken_plugin_leaves_the_built_in_protocols_working(site: Path, tmp_path: Path) -> None:
    done = _drfemu(site, "run", "--protocol", "drf", "--machines", "10", "--users", "3", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stderr.strip().splitlines() == [BROKEN]


@pytest.mark.slow
def test_an_installed_package_adds_a_generated_workload_with_its_own_parameter(site: Path, tmp_path: Path) -> None:
    params = _drfemu(site, "params", cwd=tmp_path)
    assert params.returncode == 0, params.stderr
    assert "--ring-size" in params.stdout

    out = tmp_path / "ring.json"
    done = _drfemu(site, "run", "--protocol", "drf", "--workload", "ring", "--ring-size", "3", "--users", "4",
                   "--json", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["machines"] == 3 and result["users"] == 4 and result["allocations"] > 0
    refused = _drfemu(site, "run", "--workload", "ring", "--ring-size", "0", cwd=tmp_path)
    assert refused.returncode == 2 and "--ring-size must be at least 1" in refused.stderr
    alone = _drfemu(site, "run", "--workload", "google", "--ring-size", "3", cwd=tmp_path)
    assert alone.returncode == 2 and "--ring-size" in alone.stderr  # read by the ring only: not ignored

    written = tmp_path / "ring-case.json"
    command = _drfemu(site, "workload", "ring", "--ring-size", "5", "--users", "3", "-o", str(written), cwd=tmp_path)
    assert command.returncode == 0, command.stderr  # its own `drfemu workload ring`, with its declared options
    assert "5 servers, 3 users" in " ".join(command.stdout.split()) and len(json.loads(written.read_text())["servers"]) == 5

    config = tmp_path / "ring.toml"
    config.write_text('[base]\nworkload = "ring"\nusers = 4\n[[grids]]\nprotocol = "drf"\nring_size = [2, 5]\n')
    swept = _drfemu(site, "sweep", str(config), "--out", str(tmp_path / "sweep"), "--workers", "2", cwd=tmp_path)
    assert swept.returncode == 0, swept.stderr
    records = [json.loads(p.read_text()) for p in (tmp_path / "sweep" / "runs").glob("*.json")]
    assert sorted(r["result"]["machines"] for r in records) == [2, 5]
    assert all(r["status"] == "ok" for r in records)


@pytest.mark.slow
def test_a_broken_plugin_asked_for_by_name_says_why(site: Path, tmp_path: Path) -> None:
    _distribution(site, "drfemu_broken_workload", "[drfemu.workloads]\nbrokenring = drfemu_no_such_module:SPEC\n")
    for args, kind in ((["--protocol", "broken"], "protocol 'broken'"), (["--workload", "brokenring"],
                                                                          "workload 'brokenring'")):
        done = _drfemu(site, "run", *args, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert last == (f"drfemu: error: {kind} could not be loaded: ModuleNotFoundError: No module named "
                        "'drfemu_no_such_module'"), done.stderr
