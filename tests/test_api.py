"""The Python API: `drfemu.run`, `drfemu.sweep`, workload builders, `register_protocol`, the result
schema; and `docs/api.md`'s examples, run as doctests."""

from __future__ import annotations

import doctest
import json
import os
from pathlib import Path

import pytest

import drfemu
from drfemu.cli import main
from drfemu.protocols.registry import unregister
from drfemu.workloads.registry import WORKLOADS
from tests.toy_protocol import ToyRule

ROOT = Path(__file__).resolve().parent.parent


def test_run_returns_typed_fields_and_the_document_the_cli_writes(tmp_path: Path) -> None:
    result = drfemu.run(protocol="drf-bestfit", machines=20, users=5, seed=3)
    out = tmp_path / "r.json"
    assert main(["run", "--protocol", "drf-bestfit", "--machines", "20", "--users", "5", "--seed", "3",
                 "--json", str(out)]) == 0
    written = json.loads(out.read_text())
    mine = json.loads(result.to_json())
    for wall in ("wall_time_s", "events_per_s"):
        written.pop(wall), mine.pop(wall)
    assert mine == written
    assert next(iter(written)) == "schema_version" and written["schema_version"] == drfemu.SCHEMA_VERSION
    assert isinstance(result.min_dominant_share, float) and result.min_dominant_share == result["min_dominant_share"]
    assert result.allocations == sum(result.tasks.values()) and result.ledger["lost"] == 0
    assert result.protocol == "drf-bestfit" and result.saturated


def test_run_takes_a_workload_built_in_python_and_keeps_the_allocation_log() -> None:
    case = drfemu.parse_workload({"resources": ["cpu", "mem"], "servers": [{"id": "s0", "capacity": [9, 18]}],
                                  "users": [{"id": "A", "demand": [1, 4]}, {"id": "B", "demand": [3, 1]}]})
    result = drfemu.run(protocol="drf", workload=case, allocation_log=True)
    assert result.tasks == {"A": 3, "B": 2}  # the DRF paper's example
    assert result.allocation_log is not None and len(result.allocation_log) == result.allocations == 5
    assert {r["user"] for r in result.allocation_log} == {"A", "B"}
    assert {r["server"] for r in result.allocation_log} == {"s0"}
    pandas = pytest.importorskip("pandas", reason="tables need pandas (the tables extra)")
    table = result.allocation_table()
    assert isinstance(table, pandas.DataFrame) and list(table["user"]).count("A") == 3


def test_run_refuses_bad_parameters_with_one_line() -> None:
    with pytest.raises(drfemu.InputError, match="unknown run parameter"):
        drfemu.run(protocol="drf", neighbours=3)
    with pytest.raises(drfemu.InputError, match="--neighbors must be at least 1"):
        drfemu.run(protocol="pdgdrf", neighbors=0)
    case = drfemu.google_case(10, 3, 1)
    with pytest.raises(drfemu.InputError, match="machines describe a generated case"):
        drfemu.run(workload=case, machines=10)


def test_the_schema_is_published_and_not_vacuous(capsys: pytest.CaptureFixture[str]) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="validating needs jsonschema (the test extra)")
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == drfemu.result_schema() and drfemu.SCHEMA_VERSION in schema["$id"]
    document = json.loads(drfemu.run(protocol="fifo", machines=10, users=3).to_json())
    jsonschema.validate(document, schema)
    for key, wrong in (("allocations", "many"), ("ledger", [1]), ("neighbors", "five")):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**document, key: wrong}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({k: v for k, v in document.items() if k != "gini"}, schema)


def test_sweep_takes_a_config_as_data(tmp_path: Path) -> None:
    config = {"base": {"machines": 10, "users": 3}, "grids": [{"protocol": ["drf", "fifo"]}], "seeds": [1, 2]}
    summary = drfemu.sweep(config, tmp_path / "out", workers=1)
    assert (summary.total, summary.ran, summary.failed) == (4, 4, 0)
    again = drfemu.sweep(config, tmp_path / "out", workers=1)
    assert (again.skipped, again.ran) == (4, 0)
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "runs").glob("*.json")]
    assert {r["result"]["schema_version"] for r in records} == {drfemu.SCHEMA_VERSION}
    with pytest.raises(drfemu.InputError, match="unknown key"):
        drfemu.sweep({"grid": []}, tmp_path / "bad", workers=1)


def test_a_protocol_registered_in_python_runs_through_the_api() -> None:
    drfemu.register_protocol(drfemu.ProtocolSpec("toy-api", "toy, registered from a script", drfemu.Gateway.HOME,
                                                 server_rule=ToyRule))
    try:
        assert "toy-api" in drfemu.available_protocols()
        result = drfemu.run(protocol="toy-api", toy_every=3, machines=12, users=4)
        assert result["toy_every"] == 3 and result.allocations > 0
    finally:
        unregister("toy-api")


@pytest.mark.slow
def test_the_api_page_examples_run_as_doctests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas", reason="docs/api.md shows tidy tables, which need pandas (the tables extra)")
    monkeypatch.chdir(tmp_path)  # the examples write their files here
    os.environ.setdefault("COLUMNS", "120")
    protocols, workloads = set(drfemu.available_protocols()), set(drfemu.available_workloads())
    try:
        failed, attempted = doctest.testfile(str(ROOT / "docs" / "api.md"), module_relative=False,
                                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    finally:  # the page registers a protocol and a workload of its own
        for name in set(drfemu.available_protocols()) - protocols:
            unregister(name)
        for name in set(drfemu.available_workloads()) - workloads:
            WORKLOADS.unregister(name)
    assert attempted > 10 and failed == 0


def test_every_public_name_resolves_from_where_the_package_says() -> None:
    """`drfemu/__init__.py` writes each name once, in the block the type checker reads; the lazy
    table is read from that block, and every name loads."""
    import drfemu as package

    for name in package.__all__:
        assert getattr(package, name) is not None
