"""Every reader of a user's file, fed mutated files: a result or one `InputError` line, never a
traceback (`kernel.files`, issue 59). Each test starts from a small valid file, checks it reads,
then lets hypothesis flip, insert, delete and cut bytes (and splice in the tokens that broke
readers before: quotes, NUL, NaN, 1e400, invalid UTF-8, gzip magic)."""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drfemu.cli import main
from drfemu.kernel import files
from drfemu.kernel.errors import InputError
from drfemu.schema.faults import load_scenario
from drfemu.schema.workload import load_workload
from drfemu.sweeps.config import load_sweep
from drfemu.sweeps.records import load_records
from drfemu.workloads.openb import NODES_FILE, PODS_FILE, OpenbTrace, openb_case, openb_replay
from drfemu.workloads.trace_extract import MACHINE_EVENTS, TASK_EVENTS, build_extract

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOKENS = [b'"', b",", b"\n", b"\r", b"\x00", b"\xff\xfe", b"\x1f\x8b", b"NaN", b"Infinity", b"inf", b"nan", b"-1",
          b"1e400", b"1e300", b"99999999999999999999999", b"[", b"{", b"}", b"=", b"'''", b"\xef\xbb\xbf", b"\t"]


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    """`base` after 1 to 6 random edits."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(["replace", "insert", "delete", "cut"]))
        if edit == "replace" and data:
            data[min(pos, len(data) - 1)] = draw(st.integers(0, 255))
        elif edit == "insert":
            data[pos:pos] = draw(st.sampled_from(TOKENS) | st.binary(min_size=1, max_size=6))
        elif edit == "delete":
            del data[pos:pos + draw(st.integers(1, 12))]
        elif edit == "cut":
            del data[pos:]
    return bytes(data)


@contextmanager
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def reads_or_says_why(read: Callable[[], Any]) -> None:
    """`read()` returns, or raises `InputError` with a one-line message; anything else fails the test."""
    try:
        read()
    except InputError as error:
        message = str(error)
        assert message and "\n" not in message, repr(message)


# -- the openb trace's CSVs ----------------------------------------------------------------------
NODES = (b"sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,32000,262144,0,\nopenb-node-0001,96000,786432,8,V100M32\n"
         b"openb-node-0002,64000,262144,2,T4\n")
PODS = (b"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
        b"openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
        b"openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061\n"
        b"openb-pod-0002,2000,4096,0,0,,BE,Succeeded,1000,9000,1000\n"
        b'openb-pod-0003,88000,327680,8,1000,"V100M16|V100M32",LS,Running,5000,90000,5000\n')


def _openb(nodes: bytes, pods: bytes) -> None:
    with folder() as trace:
        (trace / NODES_FILE).write_bytes(nodes)
        (trace / PODS_FILE).write_bytes(pods)

        def read() -> None:
            loaded = OpenbTrace.load(trace)
            openb_case(loaded, len(loaded.servers), 3, 1, 0.5)
            openb_replay(loaded)
        reads_or_says_why(read)


def test_the_openb_sample_reads() -> None:
    with folder() as trace:
        (trace / NODES_FILE).write_bytes(NODES)
        (trace / PODS_FILE).write_bytes(PODS)
        assert len(OpenbTrace.load(trace).pods) == 4


@SETTINGS
@given(mutated(NODES))
def test_a_mutated_openb_node_list_is_read_or_refused_in_one_line(nodes: bytes) -> None:
    _openb(nodes, PODS)


@SETTINGS
@given(mutated(PODS))
def test_a_mutated_openb_pod_list_is_read_or_refused_in_one_line(pods: bytes) -> None:
    _openb(NODES, pods)


# -- the Google trace's part files (`drfemu workload extract`) ---------------------------------------
MACHINES = b"0,5,0,HofLGzk1Or/8Ildj2+Lqv0UGGvY82NLoni8+J/Yy0RU=,0.5,0.2493\n0,6,0,HofL,0.5,0.2493\n"
TASKS = (b"600000000,,3418309,0,4155527081,0,70s3v5qRyCO/1PCdI6fVXnrW8FU/w+5CKRSa72xgcIo=,3,9,0.125,0.07446,0.0004244,0\n"
         b"600000100,,3418309,0,4155527081,1,70s3v5qRyCO/1PCdI6fVXnrW8FU/w+5CKRSa72xgcIo=,3,9,0.125,0.07446,0.0004244,0\n"
         b"900000000,,3418309,0,4155527081,4,70s3v5qRyCO/1PCdI6fVXnrW8FU/w+5CKRSa72xgcIo=,3,9,0.125,0.07446,0.0004244,0\n")


def _extract(machines: bytes, tasks: bytes, compress: bool = True) -> None:
    with folder() as base:
        trace = base / "trace"
        trace.mkdir()
        (trace / MACHINE_EVENTS).write_bytes(gzip.compress(machines) if compress else machines)
        (trace / TASK_EVENTS).write_bytes(gzip.compress(tasks) if compress else tasks)
        reads_or_says_why(lambda: build_extract(trace, base / "out"))


def test_the_google_sample_extracts() -> None:
    with folder() as base:
        (base / "t").mkdir()
        (base / "t" / MACHINE_EVENTS).write_bytes(gzip.compress(MACHINES))
        (base / "t" / TASK_EVENTS).write_bytes(gzip.compress(TASKS))
        assert build_extract(base / "t", base / "out") == (2, 1, 1)


@SETTINGS
@given(mutated(MACHINES), mutated(TASKS))
def test_mutated_google_part_files_are_read_or_refused_in_one_line(machines: bytes, tasks: bytes) -> None:
    _extract(machines, tasks)


@SETTINGS
@given(mutated(gzip.compress(TASKS)))
def test_a_corrupt_gzip_part_file_is_refused_in_one_line(compressed: bytes) -> None:
    _extract(gzip.compress(MACHINES), compressed, compress=False)


# -- workload JSON ---------------------------------------------------------------------------------
WORKLOAD = json.dumps({"resources": ["cpu", "mem"], "servers": [{"id": "a", "capacity": [8, 16]},
                                                               {"id": "b", "capacity": [4, 32]}],
                       "users": [{"id": "u", "demand": [1, 2], "tasks": [{"submit": 0, "duration": 3, "count": 2}]},
                                 {"id": "v", "demand": [2, 1], "tasks": [{"submit": 1.5, "duration": 10}]}]},
                      indent=1).encode()


def _workload(data: bytes) -> None:
    with folder() as base:
        (base / "w.json").write_bytes(data)
        reads_or_says_why(lambda: load_workload(base / "w.json"))


def test_the_workload_sample_reads() -> None:
    with folder() as base:
        (base / "w.json").write_bytes(WORKLOAD)
        assert len(load_workload(base / "w.json").users) == 2


@SETTINGS
@given(mutated(WORKLOAD))
def test_a_mutated_workload_file_is_read_or_refused_in_one_line(data: bytes) -> None:
    _workload(data)


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
                               ["resources", "servers", "users", "id", "capacity", "demand", "tasks", "submit",
                                "duration", "count", "source"]), inner, max_size=4), max_leaves=20)


@SETTINGS
@given(JSON_VALUES)
def test_any_json_document_is_a_workload_or_refused_in_one_line(document: Any) -> None:
    _workload(json.dumps(document).encode())


# -- sweep configs and fault scenarios (TOML) --------------------------------------------------------
SWEEP = (b'name = "E"\ntitle = "t"\nseeds = [1, 2]\n[base]\nworkload = "google"\nmachines = 10\nusers = 3\n'
         b'[[grids]]\nprotocol = ["drf", "dgdrf"]\nneighbors = [2]\n[[tables]]\nid = "T"\ntitle = "x"\n'
         b'rows = "protocol"\ncolumns = "neighbors"\nvalue = "min_dominant_share"\n')
SCENARIO = (b'loss = 0.01\nloss_by_type = { CyclonShuffle = 0.1 }\n[[event]]\nat = "6s"\naction = "crash"\n'
            b'target = "centre"\nduration = "6s"\n[[event]]\nat = "20s"\naction = "partition"\n'
            b'servers = 2\nduration = "5s"\n')


def _toml(data: bytes, read: Callable[[Path], Any]) -> None:
    with folder() as base:
        (base / "c.toml").write_bytes(data)
        reads_or_says_why(lambda: read(base / "c.toml"))


def test_the_toml_samples_read() -> None:
    with folder() as base:
        (base / "s.toml").write_bytes(SWEEP)
        (base / "f.toml").write_bytes(SCENARIO)
        assert len(load_sweep(base / "s.toml").runs) == 4
        assert len(load_scenario(base / "f.toml").events) == 2


@SETTINGS
@given(mutated(SWEEP))
def test_a_mutated_sweep_config_is_read_or_refused_in_one_line(data: bytes) -> None:
    _toml(data, load_sweep)


@SETTINGS
@given(mutated(SCENARIO))
def test_a_mutated_fault_scenario_is_read_or_refused_in_one_line(data: bytes) -> None:
    _toml(data, load_scenario)


# -- sweep records ---------------------------------------------------------------------------------
RECORD = json.dumps({"id": "drf-10x3-s1-abc", "params": {"protocol": "drf"}, "drfemu_version": "0.1.0", "status": "ok",
                     "result": {"schema_version": "1.6", "min_dominant_share": 0.25}}).encode()


@SETTINGS
@given(mutated(RECORD))
def test_a_mutated_sweep_record_is_read_or_refused_in_one_line(data: bytes) -> None:
    with folder() as out:
        (out / "runs").mkdir()
        (out / "runs" / "r.json").write_bytes(data)
        reads_or_says_why(lambda: load_records(out))


# -- the reader itself -------------------------------------------------------------------------------
def test_the_reader_names_the_file_the_line_and_the_problem(tmp_path: Path) -> None:
    cases = {
        b"a,b\n1,2\n3,\"4\n5,6\n": "line 3: a quoted field runs past its line",
        b"a,b\n1\n": "line 2, b: missing",
        b"a,b\n1,2,3\n": "line 2: 3 fields, the header names 2",
        b"a,b\n\xff\n": "line 2: not UTF-8 text (byte 0xff)",
        gzip.compress(b"a,b\n"): "gzip-compressed",
        b"a,b\n1,\x002\n": "line 2: a NUL character",
        b"": "empty",
        b"x,y\n": "line 1: no column a, b in the header",
    }
    for data, needle in cases.items():
        (tmp_path / "t.csv").write_bytes(data)
        try:
            list(files.csv_rows(tmp_path / "t.csv", ("a", "b"), "a test CSV"))
        except InputError as error:
            assert str(error).startswith(f"{tmp_path / 't.csv'}: ") and needle in str(error), (needle, str(error))
        else:
            raise AssertionError(f"{data!r} was read")
    (tmp_path / "t.json").write_text('{"a": [1, 2,\n NaN]}')
    for document, needle in (('{"a": [1, 2,\n NaN]}', "'NaN' is not a finite number"), ('{"a": 1e400}', "'1e400'"),
                             ('{"a":\n\n  }', "line 3: not JSON")):
        (tmp_path / "t.json").write_text(document)
        try:
            files.read_json(tmp_path / "t.json", "a test document")
        except InputError as error:
            assert needle in str(error), (needle, str(error))
        else:
            raise AssertionError(f"{document!r} was read")
    (tmp_path / "t.toml").write_text("a = inf\n")
    try:
        files.read_toml(tmp_path / "t.toml", "a test config")
    except InputError as error:
        assert "'inf' is not a finite number" in str(error)
    else:
        raise AssertionError("inf was read")
    for path, needle in ((tmp_path / "none.json", "no such file"), (tmp_path, "a directory"),
                         (Path("/dev/zero"), "not a regular file")):
        try:
            files.read_text(path, "a test file")
        except InputError as error:
            assert needle in str(error), (needle, str(error))
        else:
            raise AssertionError(f"{path} was read")


# -- the bad inputs of issue 59's sample, through the command line --------------------------------
@pytest.mark.parametrize(("edit", "args", "needle"), [
    (lambda t: (t / PODS_FILE).write_bytes(PODS.replace(b"openb-pod-0002", b'"openb-pod-0002')), [],
     "line 4: a quoted field runs past its line (a stray quote?)"),
    (lambda t: (t / PODS_FILE).write_bytes(gzip.compress(PODS)), [], "gzip-compressed"),
    (lambda t: (t / NODES_FILE).write_bytes(b"\x97\x10binary"), [], "line 1: not UTF-8 text (byte 0x97)"),
    (lambda t: (t / NODES_FILE).write_bytes(NODES.replace(b"0000,32000", b"0000,1e300")), [],
     "line 2, cpu_milli / 1000 entry 1e+297 is outside"),
    (None, ["openb-replay", "--minutes", "inf"], "--minutes must be at most 1.66667e+10, got inf"),
    (None, ["openb-replay", "--minutes", "nan"], "--minutes must be positive, got nan"),
    (None, ["openb-replay", "--users", "5"], "No such option: --users"),
    (None, ["openb-replay", "--gpu-users", "0.5"], "No such option: --gpu-users"),
    (None, ["openb-replay", "--max-duration", "500ms"], "--max-duration must be at least 1 s, got '500ms'"),
    (None, ["--gpu-users", "5"], "--gpu-users must be at most 1, got 5.0"),
    (None, ["--pods", "3"], "No such option: --pods"),
])
def test_a_bad_openb_input_is_one_line_naming_it(edit: Callable[[Path], Any] | None, args: list[str], needle: str,
                                                 tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / NODES_FILE).write_bytes(NODES)
    (tmp_path / PODS_FILE).write_bytes(PODS)
    if edit is not None:
        edit(tmp_path)
    command, rest = (args[0], args[1:]) if args[:1] == ["openb-replay"] else ("openb", args)
    status = main(["workload", command, "--openb-trace", str(tmp_path), "--output", str(tmp_path / "w.json"), *rest])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and needle in err, err


@pytest.mark.parametrize(("args", "needle"), [
    (["run", "--workload", "openb"], "give --openb-trace DIR"),
    (["workload", "openb-replay", "--output", "w.json"], "give --openb-trace DIR"),
    (["faults-campaign", "--sizes", "1000000000000x2", "--out", "c"], "--sizes: '1000000000000x2' is not SERVERSxUSERS"),
])
def test_an_option_is_named_as_the_command_spells_it(args: list[str], needle: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("DRFEMU_OPENB_TRACE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
