"""The architecture's promises, checked: protocols as plug-ins, nodes that stand alone (the layers:
`test_layers.py`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drfemu.assembly.config import RunConfig
from drfemu.assembly.run import run_emulation
from drfemu.cli import main
from drfemu.kernel.streams import NodeStreams, RandomStreams
from drfemu.protocols.registry import PROTOCOLS, unregister
from drfemu.schema.params import readers
from drfemu.workloads.google import google_case
from tests.toy_protocol import register_toy

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def toy() -> Iterator[None]:
    register_toy()
    try:
        yield
    finally:
        unregister("toy")


def test_a_protocol_with_its_own_parameter_runs_from_the_cli_and_in_a_sweep(toy: None, tmp_path: Path) -> None:
    assert readers("toy_every") == ["toy"]
    out = tmp_path / "toy.json"
    assert main(["run", "--protocol", "toy", "--toy-every", "3", "--machines", "12", "--users", "4",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["toy_every"] == 3 and result["overlay"]["toy_allocations"] >= result["allocations"] > 0  # some walks fail
    assert main(["run", "--protocol", "toy", "--toy-every", "0"]) == 2  # its bound is enforced like any other
    config = tmp_path / "toy.toml"
    config.write_text('name = "toy"\ntitle = "toy"\n[base]\nprotocol = "toy"\nmachines = 12\nusers = 4\n'
                      "[[grids]]\ntoy_every = [1, 4]\n")
    assert main(["sweep", str(config), "--out", str(tmp_path / "sweep"), "--workers", "1"]) == 0
    records = [json.loads(p.read_text()) for p in (tmp_path / "sweep" / "runs").glob("*.json")]
    assert sorted(r["result"]["toy_every"] for r in records) == [1, 4]
    assert main(["protocols", "--json"]) == 0


def test_the_registry_prints_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protocols", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in entries] == list(PROTOCOLS)
    probe = next(e for e in entries if e["name"] == "probe")
    assert probe["gateway"] == "random" and probe["own_parameters"] == ["probe_d", "probe_load", "probe_retry", "probe_band", "probe_poll_every"] and "neighbors" in probe["parameters"]


def test_one_extra_draw_in_one_node_leaves_every_other_nodes_draws_unchanged() -> None:
    def draws(extra_in: int | None) -> dict[int, list[float]]:
        streams = RandomStreams(7)
        nodes = {n: streams.node(n) for n in range(5)}
        if extra_in is not None:
            nodes[extra_in].python("overlay").random()
        return {n: [s.python("overlay").random() for _ in range(3)] for n, s in nodes.items()}

    plain, shifted = draws(None), draws(2)
    assert plain[2] != shifted[2]
    assert {n: d for n, d in plain.items() if n != 2} == {n: d for n, d in shifted.items() if n != 2}
    assert NodeStreams(7, 3).python("walk").random() == RandomStreams(7).node(3).python("walk").random()
    assert NodeStreams(7, 3).python("walk").random() != RandomStreams(7).python("walk").random()


def _reachable(value: Any, seen: set[int], depth: int = 0) -> Iterator[Any]:
    if id(value) in seen or depth > 6:
        return
    seen.add(id(value))
    yield value
    if isinstance(value, dict):
        children = list(value.keys()) + list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        children = list(value)
    else:
        names = [n for k in type(value).__mro__ for n in getattr(k, "__slots__", ())]
        children = [getattr(value, n) for n in names if hasattr(value, n)] + list(getattr(value, "__dict__", {}).values())
    for child in children:
        yield from _reachable(child, seen, depth + 1)


ABOVE_NODES = tuple(f"drfemu.{layer}" for layer in ("schema", "observers", "assembly", "tools", "workloads", "sweeps",
                                                    "reports", "studies", "live", "api", "cli"))


@pytest.mark.parametrize("protocol", ["drf", "probe", "ddrf-gradient", "pdgdrf"])
def test_after_a_run_no_node_holds_a_harness_sweep_or_cli_object(protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import drfemu.nodes.runtime

    built: list[Any] = []
    real = drfemu.nodes.runtime.Runtime.__init__

    def spy(self: Any, network: Any, actors: Any, *rest: Any, **options: Any) -> None:
        built.extend(actors)
        real(self, network, actors, *rest, **options)

    monkeypatch.setattr(drfemu.nodes.runtime.Runtime, "__init__", spy)
    run_emulation(RunConfig.build(google_case(12, 4, 1), protocol=protocol, neighbors=2))
    assert built
    for actor in built:
        for value in _reachable(actor, set()):
            module = type(value).__module__
            assert not module.startswith(ABOVE_NODES), f"{type(actor).__name__} {actor.id} reaches {type(value)}"
            assert not str(getattr(value, "__module__", None) or "").startswith(ABOVE_NODES)  # no bound callback either
