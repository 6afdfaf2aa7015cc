"""Bad input found by trying the tool as a new user would: each is one line, exit 2, before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drfemu.cli import main


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _workload(**extra: object) -> dict[str, object]:
    return {"resources": ["cpu"], "servers": [{"capacity": [4]}], "users": [{"demand": [1]}], **extra}


@pytest.mark.parametrize(
    ("make_args", "needle"),
    [
        (lambda d: ["run", "--workload", _write(d / "w.json", '{"resources":["cpu"],"servers":[{"capacity":[' + "9" * 400
                                                 + ']}],"users":[{"demand":[1]}]}')], "outside [1e-09, 1e+12]"),
        (lambda d: ["run", "--workload", _write(d / "w.json", "[" * 100_000)], "nested too deeply"),
        (lambda d: ["run", "--workload", _write(d / "w.json", json.dumps(_workload(
            servers=[{"capacity": [1e300]}], users=[{"demand": [1e-300]}])))], "outside [1e-09, 1e+12]"),
        (lambda d: ["run", "--workload", _write(d / "w.json", json.dumps(_workload(extra=1)))], "unknown key(s) extra"),
        (lambda d: ["run", "--workload", _write(d / "w.json", json.dumps(_workload(users=[{"id": None, "demand": [1]}])))],
         "id must be a non-empty string"),
        (lambda d: ["run", "--workload", str(d)], "is a directory"),
        (lambda d: ["run", "--workload", _write(d / "w.json", json.dumps(_workload())), "--machines", "5"],
         "--machines describes a generated case"),
        (lambda d: ["run", "--tick", "100"], "a unit is required"),
        (lambda d: ["run", "--tick", "0.0000004s"], "--tick must be at least 1e-06"),
        (lambda d: ["run", "--protocol", "probe", "--probe-d", "4", "--neighbors", "3"], "--probe-d (4) must be at most"),
        (lambda d: ["run", "--protocol", "dgdrf", "--neighbors", "100"], "must be below the number of servers"),
        (lambda d: ["run", "--json", str(d / "missing" / "out.json")], "does not exist"),
        (lambda d: ["run", "--log", str(d)], "it is a directory"),
        (lambda d: ["policy", "drf", "--capacity", "1e300,1e300", "--demand", "1e-300,1e-300"], "must lie in"),
        (lambda d: ["policy", "drf", "--capacity", "1e12,1e12", "--demand", "1e-9,1e-9"], "use --divisible"),
        (lambda d: ["overlay", "--nodes", "1000000000"], "--nodes must be at most 100000000"),
        (lambda d: ["run", "--protocol", "bdgdrf", "--fragmentation-mix", "all"], "--fragmentation-mix must be one of"),
        (lambda d: ["experiment", "online", "--plots", _write(d / "file", "") + "/sub"], "cannot write into --plots"),
        (lambda d: ["workload", "google"], "Missing option '-o'"),
        (lambda d: ["report", str(d)], "not a sweep directory"),
    ],
)
def test_bad_input_is_refused_in_one_line_before_any_work(make_args, needle: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(make_args(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("drfemu: error:") and needle in err, err


@pytest.mark.parametrize(
    ("manifest", "record", "needle"),
    [
        ('{"experiments": 3}', None, "sweep.json: not a sweep manifest"),
        ("\x00\x01binary", None, "not a sweep manifest"),
        ('{"experiments": []}', "{broken", "not a run record"),
        ('{"experiments": []}', '{"id": 1}', "not a run record"),
    ],
)
def test_a_broken_sweep_directory_names_the_file(manifest: str, record: str | None, needle: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sweep.json").write_text(manifest)
    (tmp_path / "runs").mkdir()
    if record is not None:
        (tmp_path / "runs" / "x.json").write_text(record)
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err


def test_an_option_the_protocol_never_reads_is_named_in_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--machines", "10", "--users", "3", "--neighbors", "3"]) == 0
    assert "--neighbors is not read by protocol drf" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "warning"), [
    (["--placement", "first-fit", "--fit-candidates", "4"], "--fit-candidates is not read under --placement first-fit"),
    (["--placement", "best-fit", "--fragmentation-mix", "workload"],
     "--fragmentation-mix is not read under --placement best-fit"),
    (["--fit-candidates", "4"], None),  # keep-room, bdgdrf's default, reads it
])
def test_an_option_the_placement_never_reads_is_named_in_a_warning(args: list[str], warning: str | None,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--protocol", "bdgdrf", "--machines", "10", "--users", "3", "--max-time", "2s", *args]) == 0
    err = capsys.readouterr().err
    assert (warning in err) if warning else "not read" not in err, err

def test_a_sweep_config_with_bad_values_is_a_config_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for grid, needle in (("machines = [0]", "--machines"), ('tick = ["-1s"]', "--tick"),
                         ('latency = ["uniform:5ms:1ms"]', "--latency")):
        config = tmp_path / "c.toml"
        config.write_text(f'name = "x"\ntitle = "x"\n[base]\nprotocol = "drf"\n[[grids]]\n{grid}\n')
        assert main(["sweep", str(config), "--out", str(tmp_path / "out"), "--workers", "1"]) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1, err


def test_an_internal_bug_shows_its_traceback_and_exits_70(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    import drfemu.api as api

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("an emulator bug, not the user's input")

    monkeypatch.setattr(api.Run, "execute", broken)
    assert main(["run", "--machines", "10", "--users", "3"]) == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error (a bug in drfemu" in err
    assert "an emulator bug" in err.splitlines()[-1]
