"""BDGDRF: homes allocate for their lowest user while it is within the band of the minimum share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import drfemu
from drfemu import UnreadOptionWarning
from drfemu.cli import main
from drfemu.kernel.messages import Proposal
from drfemu.protocols.bdgdrf import DEVICE_BAND_CAP, BdgdrfRule, MinimumNotice, UtilityNotice
from drfemu.protocols.centre import sees_top
from drfemu.schema.params import run_params, unread
from drfemu.sweeps.config import sweep_from_document
from tests.test_distributed_roles import node, request


def test_a_home_knows_the_minimum_when_its_view_is_short_or_holds_a_node_below_it() -> None:
    assert sees_top(5, -0.2, [(-0.1, 1, 0.0)], size=2)  # not full
    assert sees_top(5, -0.2, [(-0.1, 1, 0.0), (-0.3, 2, 0.0)], size=2)  # 2 is below
    assert sees_top(5, -0.2, [(-0.2, 1, 0.0), (-0.1, 2, 0.0)], size=2)  # a tie with a lower id is below
    assert not sees_top(5, -0.2, [(-0.1, 1, 0.0), (-0.15, 7, 0.0)], size=2)


def test_the_lowest_idle_user_within_the_band_allocates_once_a_tick() -> None:
    s = node(BdgdrfRule(band=1.0), capacity=(10.0, 10.0), homed={100: 0.1, 101: 0.1, 102: 0.1}, view=2)
    s.receive(request(100, 0, 0.30), 0.0)  # 0.30 < 0.25 + 0.1: in the band
    s.receive(request(101, 0, 0.34), 0.0)  # 0.34 < 0.35: in
    s.receive(request(102, 0, 0.36), 0.0)  # out
    s.gradient.offer([(-0.25, 1, 0.0), (-0.4, 2, 0.0)])  # the minimum 0.25 is a neighbour's
    s.take_outbox()
    s.on_tick(0.1)
    proposed = sorted(dst for dst, m in s.take_outbox() if isinstance(m, Proposal))
    assert proposed == [100]  # the lowest; 101 is in the band too, but a server allocates once a tick


def test_a_home_that_does_not_see_the_top_and_heard_no_rumour_waits() -> None:
    s = node(BdgdrfRule(), homed={100: 0.1}, view=2)
    s.receive(request(100, 0, 0.30), 0.0)
    s.gradient.offer([(-0.25, 1, 0.0), (-0.29, 2, 0.0)])  # both above: others may be higher still
    s.take_outbox()
    s.on_tick(0.1)
    assert not [m for _, m in s.take_outbox() if isinstance(m, Proposal)]


def test_a_new_share_is_pushed_to_the_view_and_merged_by_the_receiver() -> None:
    s = node(BdgdrfRule(), homed={100: 0.1}, view=2)
    s.gradient.offer([(-0.5, 1, 0.0), (-0.6, 2, 0.0)])
    s.receive(request(100, 0, 0.3), 1.0)
    notices = sorted(dst for dst, m in s.take_outbox() if isinstance(m, UtilityNotice))
    assert notices == [1, 2]
    other = node(BdgdrfRule(), sid=1, homed={101: 0.1}, view=2)
    other.receive(UtilityNotice((-0.3, 0, 1.0)), 1.001)
    assert (-0.3, 0, 1.0) in other.gradient.view
    quiet = node(BdgdrfRule(notify=False), homed={100: 0.1}, view=2)
    quiet.gradient.offer([(-0.5, 1, 0.0)])
    quiet.receive(request(100, 0, 0.3), 1.0)
    assert not [m for _, m in quiet.take_outbox() if isinstance(m, UtilityNotice)]


def test_a_fresher_rumoured_minimum_is_adopted_used_and_passed_on_once() -> None:
    s = node(BdgdrfRule(band=1.0, rumour_fanout=1), homed={100: 0.1}, view=2)
    s.cyclon.bootstrap([(0.0, 7, 0.0), (0.0, 8, 0.0)])
    s.receive(request(100, 0, 0.30), 0.0)
    s.gradient.offer([(-0.25, 1, 0.0), (-0.29, 2, 0.0)])  # both above: the view alone does not tell
    s.receive(MinimumNotice(0.22, 5.0), 5.0)
    s.receive(MinimumNotice(0.10, 4.0), 5.0)  # older: ignored
    s.take_outbox()
    s.on_tick(5.1)  # 0.30 < 0.22 + 0.1
    out = s.take_outbox()
    assert [dst for dst, m in out if isinstance(m, Proposal)] == [100]
    [(peer, rumour)] = [(dst, m) for dst, m in out if isinstance(m, MinimumNotice)]
    assert peer in (7, 8) and rumour == MinimumNotice(0.22, 5.0)
    s.on_tick(5.2)
    assert not [m for _, m in s.take_outbox() if isinstance(m, MinimumNotice)]  # nothing new to tell


def test_a_server_with_no_user_homed_is_idle_between_rumours() -> None:
    """Its tick only passes a rumour on: once passed, it asks the engine to skip its ticks until a
    fresher one arrives (an older one changes nothing, so it stays idle)."""
    s = node(BdgdrfRule(rumour_fanout=1), homed={})
    s.cyclon.bootstrap([(0.0, 7, 0.0)])
    assert not s.idle_tick
    s.on_tick(0.1)
    assert s.idle_tick and not s.take_outbox()
    s.receive(MinimumNotice(0.22, 5.0), 5.0)
    assert not s.idle_tick
    s.on_tick(5.1)
    assert s.take_outbox() == [(7, MinimumNotice(0.22, 5.0))] and s.idle_tick
    s.receive(MinimumNotice(0.10, 4.0), 5.2)
    assert s.idle_tick


@pytest.mark.parametrize("protocol, seed, faults", [("bdgdrf", 1, None), ("bdgdrf", 2, None),
                                                    ("bdgdrf", 1, "check-faults.toml"), ("ddrf-gradient", 1, None),
                                                    ("ddrf-gradient", 1, "check-faults.toml")])
def test_skipping_idle_ticks_changes_no_event(protocol: str, seed: int, faults: str | None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run, event for event, with the engine skipping idle servers' ticks and calling them
    (with crashes too, where a user is re-homed on a server that had none, and where a frozen
    ddrf-gradient server without users thaws as a neighbour crashes)."""
    from drfemu.nodes.runtime import Runtime
    from drfemu.tools.check import traced_run
    from drfemu.workloads.points import build_run_config, canonical_params

    given: dict[str, Any] = {"protocol": protocol, "machines": 30 if faults is None else 10,
                             "users": 6 if faults is None else 3, "neighbors": 2, "seed": seed, "max_time": 20.0}
    if faults is not None:
        given["faults"] = str(Path(__file__).resolve().parents[1] / "configs" / "faults" / faults)
    params = canonical_params(given)
    skipped = traced_run(params, build_run_config)
    start_ticks = Runtime.start_ticks

    def calling_every_ticker(self: Runtime, period: float, tickers: Any) -> Any:
        driver = start_ticks(self, period, tickers)
        driver.skips_idle = False
        return driver

    monkeypatch.setattr(Runtime, "start_ticks", calling_every_ticker)
    called = traced_run(params, build_run_config)
    assert skipped["digest"] == called["digest"] and skipped["events"] == called["events"]
    assert skipped["result"] == called["result"]


def test_only_a_home_that_believes_it_is_the_centre_starts_a_rumour() -> None:
    s = node(BdgdrfRule(rumour_fanout=2), homed={100: 0.1}, view=2)
    s.cyclon.bootstrap([(0.0, 7, 0.0), (0.0, 8, 0.0), (0.0, 9, 0.0)])
    s.receive(request(100, 0, 0.30), 0.0)
    s.gradient.offer([(-0.25, 1, 0.0), (-0.4, 2, 0.0)])  # knows the top (2 is below) but 1 is above
    s.take_outbox()
    s.on_tick(1.0)
    assert not [m for _, m in s.take_outbox() if isinstance(m, MinimumNotice)]
    s.gradient.offer([(-0.35, 1, 2.0)])  # 1's fresh share: nothing above now
    s.on_tick(2.0)
    rumours = [(dst, m) for dst, m in s.take_outbox() if isinstance(m, MinimumNotice)]
    assert len(rumours) == 2 and {m for _, m in rumours} == {MinimumNotice(0.30, 2.0)}


@pytest.mark.slow
def test_a_gpu_case_runs_end_to_end_keeping_room_and_reports_stranded_capacity(tmp_path: Path) -> None:
    case, out = tmp_path / "gpu.json", tmp_path / "run.json"
    assert main(["workload", "synthetic", "-o", str(case), "--machines", "12", "--users", "4", "--resources",
                 "cpu,mem,gpu", "--scarce", "gpu", "--holders", "0.25", "--demanders", "0.5"]) == 0
    workload = json.loads(case.read_text())
    assert sum(s["capacity"][2] > 0 for s in workload["servers"]) == 3
    assert sum(u["demand"][2] > 0 for u in workload["users"]) == 2
    assert main(["run", "--workload", str(case), "--protocol", "bdgdrf", "--neighbors", "2", "--max-time", "20s",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["status"] == "time-cap" and result["placement_mode"] == "keep-room"
    assert result["placement"]["fit_walks"] >= result["allocations"] > 0
    assert set(result["stranded"]) == {"cpu", "mem", "gpu"} and 0 <= result["stranded"]["gpu"] <= 1


def test_the_band_cap_bounds_a_big_task_by_the_smallest_task_the_home_has_seen() -> None:
    """`band_cap` (issue 60): with a cap of one smallest task, a user whose own half-task reaches
    past the minimum plus one smallest task waits; one within it still allocates."""
    def tick(band_cap: float, share: float) -> list[int]:
        s = node(BdgdrfRule(band=0.5, band_cap=band_cap), capacity=(10.0, 10.0), homed={100: 0.3, 101: 0.05}, view=2)
        s.receive(request(100, 0, share), 0.0)
        s.receive(request(101, 0, 0.5), 0.0)
        s.gradient.offer([(-0.2, 1, 0.0), (-0.4, 2, 0.0)])  # the minimum 0.2 is a neighbour's; 2 is below
        assert s.smallest_task_share() == 0.05
        s.take_outbox()
        s.on_tick(0.1)
        return [dst for dst, m in s.take_outbox() if isinstance(m, Proposal)]

    assert tick(0.0, 0.30) == [100]  # 0.30 < 0.2 + 0.5 · 0.3: in the band
    assert tick(1.0, 0.30) == []  # but not below 0.2 + 1 · 0.05
    assert tick(1.0, 0.24) == [100]  # within one smallest task
    assert tick(4.0, 0.30) == [100]  # a cap wider than the band changes nothing


def test_the_cap_when_home_full_applies_only_once_the_task_no_longer_fits_at_home() -> None:
    """`band_cap_when="home-full"` (issue 60): the same capped case as above allocates while the
    user's task (1, 1) still fits on its home's server, and waits once the home is full for it."""
    def tick(band_cap_when: str, free: float) -> list[int]:
        s = node(BdgdrfRule(band=0.5, band_cap=1.0, band_cap_when=band_cap_when), capacity=(10.0, 10.0),
                 homed={100: 0.3, 101: 0.05}, view=2)
        s.receive(request(100, 0, 0.30), 0.0)
        s.receive(request(101, 0, 0.5), 0.0)
        s.gradient.offer([(-0.2, 1, 0.0), (-0.4, 2, 0.0)])
        s.free[:] = [free, free]
        s.take_outbox()
        s.on_tick(0.1)
        return [dst for dst, m in s.take_outbox() if isinstance(m, Proposal)]

    assert tick("always", 10.0) == []  # capped, as in the test above
    assert tick("home-full", 10.0) == [100]  # its task fits at home: the band is not capped
    assert tick("home-full", 0.5) == []  # the home cannot hold it: capped
    with pytest.raises(ValueError, match="band_cap_when must be one of always, home-full"):
        BdgdrfRule(band_cap_when="sometimes")


def test_a_server_knows_the_smallest_task_of_its_users_and_of_the_mix_it_scores_by() -> None:
    plain = node(BdgdrfRule(), homed={100: 0.3, 101: 0.0}, view=2)
    assert plain.smallest_task_share() == 0.3  # a task that asks nothing is left out
    assert node(BdgdrfRule(), homed={}, view=2).smallest_task_share() == float("inf")
    scored = node(BdgdrfRule(), homed={100: 0.3}, view=2, placement="keep-room", scale=(0.1, 0.1),
                  known_mix=((7, (1.0, 2.0)), (8, (0.0, 0.0))))
    assert scored.smallest_task_share() == 0.2  # user 7's (1, 2) of a cluster of (10, 10)


def test_the_band_cap_runs_through_the_cli_and_is_echoed(tmp_path: Path) -> None:
    """End to end on a small Google case: the option reaches the rule (the capped run allocates
    in another order), the result echoes it, and a negative cap is refused with exit 2."""
    def run(*extra: str) -> dict[str, Any]:
        out = tmp_path / f"run{len(extra)}.json"
        assert main(["run", "--protocol", "bdgdrf", "--machines", "20", "--users", "8", "--neighbors", "2",
                     "--max-time", "30s", "--json", str(out), *extra]) == 0
        result: dict[str, Any] = json.loads(out.read_text())
        return result

    plain, capped = run(), run("--band-cap", "1")
    assert plain["band_cap"] == 0.0 and capped["band_cap"] == 1.0
    assert plain["band_cap_when"] == capped["band_cap_when"] == "always"
    assert capped["overlay"]["band_allocations"] < plain["overlay"]["band_allocations"]
    when_full = run("--band-cap", "1", "--band-cap-when", "home-full")
    assert when_full["band_cap_when"] == "home-full"
    assert when_full["overlay"]["band_allocations"] != capped["overlay"]["band_allocations"]
    assert main(["run", "--protocol", "bdgdrf", "--band-cap", "-1"]) == 2
    assert main(["run", "--protocol", "bdgdrf", "--band-cap-when", "sometimes"]) == 2
    with pytest.warns(UnreadOptionWarning, match="--band-cap-when is not read under --band-cap 0.0"):
        drfemu.run(protocol="bdgdrf", machines=20, users=8, neighbors=2, max_time="1s", band_cap_when="home-full")


def test_with_devices_the_band_is_capped_once_the_home_is_full_by_default() -> None:
    """Issue 60 (2026-12-03): where a resource is modelled as devices, BDGDRF's band cap defaults to
    `DEVICE_BAND_CAP` once the home is full (`DEVICE_DEFAULTS`); without devices it stays off; a value
    given wins, each of the two on its own; `--band-cap 0` leaves `--band-cap-when` at its declared
    `always`; and no other protocol's parameters move."""
    def cap(**given: Any) -> tuple[float, str]:
        values = run_params(protocol="bdgdrf", **given).protocol_values
        return values["band_cap"], values["band_cap_when"]

    assert cap(devices="gpu") == (DEVICE_BAND_CAP, "home-full")
    assert cap() == (0.0, "always")
    assert cap(devices="gpu", band_cap=0.0) == (0.0, "always")
    assert cap(devices="gpu", band_cap_when="always") == (DEVICE_BAND_CAP, "always")
    assert cap(devices="gpu", band_cap=2.0) == (2.0, "home-full")
    assert cap(band_cap=2.0) == (2.0, "always")
    for protocol in ("pdgdrf", "drf", "probe"):
        assert (run_params(protocol=protocol, devices="gpu").values()
                == run_params(protocol=protocol).values() | {"devices": "gpu"})
    assert not unread({"protocol": "bdgdrf", "devices": "gpu", "band_cap_when": "always"})
    assert unread({"protocol": "bdgdrf", "devices": "gpu", "band_cap": 0.0, "band_cap_when": "home-full"}) == [
        "--band-cap-when is not read under --band-cap 0.0"]


def test_the_device_default_is_the_run_its_options_name(tmp_path: Path) -> None:
    """End to end on a small GPU cluster with GPUs as devices: the default run is the run of
    `--band-cap 1.5 --band-cap-when home-full`, field for field (wall aside), and echoes them; a
    sweep's point carries the resolved defaults, so its tables can select by them."""
    def run(*extra: str) -> dict[str, Any]:
        out = tmp_path / f"run{len(extra)}.json"
        assert main(["run", "--protocol", "bdgdrf", "--workload", "gpu-cluster", "--devices", "gpu",
                     "--machines", "20", "--users", "8", "--neighbors", "2", "--max-time", "30s",
                     "--json", str(out), *extra]) == 0
        result: dict[str, Any] = json.loads(out.read_text())
        return {k: v for k, v in result.items() if "wall" not in k and k != "events_per_s"}

    default = run()
    assert default["band_cap"] == DEVICE_BAND_CAP and default["band_cap_when"] == "home-full"
    assert default == run("--band-cap", f"{DEVICE_BAND_CAP:g}", "--band-cap-when", "home-full")
    uncapped = run("--band-cap", "0")
    assert uncapped["band_cap"] == 0.0 and uncapped["band_cap_when"] == "always"
    sweep = sweep_from_document({"base": {"protocol": "bdgdrf", "workload": "gpu-cluster", "machines": 20},
                                 "cases": [{"devices": "gpu"}, {"devices": "gpu", "band_cap": 0.0}, {}]})
    points = [(p.params["band_cap"], p.params["band_cap_when"]) for p in sweep.experiments[0].points]
    assert points == [(DEVICE_BAND_CAP, "home-full"), (0.0, "always"), (0.0, "always")]
