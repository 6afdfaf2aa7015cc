"""The determinism checker (issue 16): per-event hashes, the first divergent event, `drfemu check`."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from drfemu.cli import main
from drfemu.nodes.gateway import Gateway
from drfemu.nodes.trace import Diverged, EventTrace
from drfemu.tools.check import check_runs, traced_run
from drfemu.workloads.points import build_run_config, canonical_params, run_id

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _events(trace: EventTrace, messages: list[str]) -> None:
    for k, text in enumerate(messages):
        trace.record(1000 * k, "deliver", k % 3, text)


def test_a_trace_stops_at_the_first_event_that_differs_from_its_reference() -> None:
    reference = EventTrace()
    _events(reference, ["a", "b", "c", "d"])
    same = EventTrace(reference.hashes.tobytes())
    _events(same, ["a", "b", "c", "d"])
    assert same.digest() == reference.digest() and same.count == 4
    checked = EventTrace(reference.hashes.tobytes())
    with pytest.raises(Diverged) as stop:
        _events(checked, ["a", "b", "x", "d"])
    assert (stop.value.index, stop.value.at_us, stop.value.line) == (2, 2000, "deliver 2 'x'")
    assert stop.value.context == ["0.000000 s: deliver 0 'a'", "0.001000 s: deliver 1 'b'"]
    assert not stop.value.agrees


def test_a_replay_says_whether_its_event_is_the_references() -> None:
    reference = EventTrace()
    _events(reference, ["a", "b", "c"])
    with pytest.raises(Diverged) as stop:
        _events(EventTrace(reference.hashes.tobytes(), describe_at=1), ["a", "b", "c"])
    assert stop.value.index == 1 and stop.value.agrees


def test_a_repr_with_a_memory_address_is_refused() -> None:
    with pytest.raises(TypeError, match="memory address"):
        EventTrace().record(0, "event", -1, object())


def _runs(*protocols: str, **params: object) -> list[tuple[str, dict[str, object]]]:
    points = [canonical_params({"protocol": p, "machines": 12, "users": 4, "neighbors": 2, **params})
              for p in protocols]
    return [(run_id(p), p) for p in points]


def test_same_seed_same_events_here_and_in_a_fresh_process() -> None:
    verdicts = list(check_runs(_runs("drf", "dgdrf"), build_run_config, workers=1))
    assert [v.ok for v in verdicts] == [True, True]
    assert all(v.events > 1000 for v in verdicts)
    assert traced_run(_runs("dgdrf")[0][1], build_run_config)["digest"] == verdicts[1].digest


def test_an_unseeded_draw_is_named_at_its_first_divergent_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deliberately broken build: the probe gateway picks servers from Python's global,
    unseeded generator. The checker must name the first reply that went elsewhere."""

    def unseeded_pick(self: Gateway) -> int:
        return self.servers[int(random.random() * len(self.servers))]

    monkeypatch.setattr(Gateway, "_pick", unseeded_pick)
    (verdict,) = check_runs(_runs("probe"), build_run_config, workers=1)
    assert not verdict.ok
    rerun = next(d for d in verdict.divergences if d.against == "rerun")
    assert rerun.got.startswith("deliver ") and "ServerReply(server=" in rerun.got
    assert rerun.context and rerun.at_s >= 0
    # The reference is not reproducible either, so what it did there can only be said when a
    # replay happens to draw the same server; either way the report says which.
    assert "ServerReply(server=" in rerun.expected or rerun.expected.startswith("(unknown: replayed here")
    assert "first divergent event #" in rerun.describe()


def test_drfemu_check_reports_every_run_and_exits_1_on_a_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "c.toml"
    config.write_text('seeds = [3]\n[base]\nmachines = 8\nusers = 3\nneighbors = 2\n'
                      '[[grids]]\nprotocol = ["fifo", "pdgdrf"]\n')
    assert main(["check", str(config), "--json", str(tmp_path / "v.json")]) == 0
    printed = capsys.readouterr().out
    assert "2 of 2 run(s) deterministic" in printed and printed.count("ok ") == 2
    document = json.loads((tmp_path / "v.json").read_text())
    assert [r["ok"] for r in document["runs"]] == [True, True]

    monkeypatch.setattr(Gateway, "_pick", lambda self: self.servers[random.randrange(len(self.servers))])
    config.write_text('seeds = [3]\n[base]\nmachines = 8\nusers = 3\nneighbors = 2\n[[grids]]\nprotocol = "probe"\n')
    assert main(["check", str(config)]) == 1
    assert "DIFFERS" in capsys.readouterr().out


def test_drfemu_check_refuses_a_bad_config_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[base]\nprotocol = "nope"\n')
    assert main(["check", str(config)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.slow
def test_every_protocol_is_deterministic_on_20_seeds_endless_and_finite() -> None:
    """The issue's bar on small cases (CI): every protocol × 20 seeds on Google 8 × 3, and × 5
    seeds on the finite 10 × 3 workload, each run capped at 10 virtual seconds.
    `drfemu check configs/check.toml` is the full set (480 runs to the end)."""
    from drfemu.protocols.registry import PROTOCOLS

    finite = str(CONFIGS / "workloads" / "finite-10x3.json")
    points = [{"machines": 8, "users": 3, "seed": seed} for seed in range(1, 21)]
    points += [{"workload": finite, "seed": seed, "sample_every": 1.0} for seed in range(1, 6)]
    runs = []
    for protocol in PROTOCOLS:
        for point in points:
            params = canonical_params({"protocol": protocol, "neighbors": 2, "max_time": 10.0, **point})
            runs.append((run_id(params), params))
    failed = [v.run for v in check_runs(runs, build_run_config, workers=2) if not v.ok]
    assert failed == []
