"""Hardening (issue 41), through the command line: no traceback on a user's error, output
checked before the work, nothing left behind by a failed command, nothing meaningless accepted
without a word, bounded pools, signals handled like Ctrl-C, live runs that admit only their own
workers."""

from __future__ import annotations

import csv
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from drfemu._version import __version__
from drfemu.cli.common import CliError, check_writable
from drfemu.live.channel import proof
from drfemu.tools.pools import max_workers, worker_pool

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def drfemu(*args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "drfemu", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env or ENV)


def one_line_error(done: subprocess.CompletedProcess[str], needle: str, status: int = 2) -> None:
    """The command failed with `status` and said so in one `drfemu:` line holding `needle`."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == status, done.stderr
    assert len(lines) == 1 and lines[0].startswith("drfemu: ") and needle in lines[0], done.stderr


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00not text")
    (tmp_path / "empty.toml").write_text("")
    return tmp_path


# --- tracebacks -------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "needle"), [
    (["run", "--faults", "{dir}/binary.toml", "--max-time", "5s"], "not UTF-8"),
    (["sweep", "{dir}/binary.toml", "--out", "{dir}/o"], "binary.toml"),
    (["run", "--log", "/dev/full", "--machines", "5", "--users", "2", "--max-time", "5s"], "/dev/full"),
    (["overlay", "--plot", "{dir}/x.txt"], "name a figure file ending in one of"),
    (["overlay", "--plot", "/"], "name a figure file"),
    (["workload", "google", "--case-seed", "-1", "-o", "{dir}/g.json"], "--case-seed"),
    (["bench", "live", "--seconds", "nan"], "seconds in (0, 3600]"),
    (["live", "--time-scale", "inf", "--machines", "5", "--users", "2"], "--time-scale"),
    (["trace-replay", "--out", "{dir}/empty.toml", "--minutes", "1"], "not a directory"),
    (["trace-replay", "--out", "{dir}/o", "--minutes", "1", "--protocols", "drf", "--report", "{dir}/binary.toml"],
     "not a text page"),
    (["faults-campaign", "--out", "{dir}/o", "--schedules", "1", "--protocols", "drf", "--report",
      "{dir}/binary.toml"], "not a text page"),
])
def test_a_users_error_is_one_line_never_a_traceback(args: list[str], needle: str, scratch: Path) -> None:
    one_line_error(drfemu(*(a.format(dir=scratch) for a in args), cwd=scratch), needle)


def test_resuming_a_sweep_whose_manifest_is_corrupt_is_one_line(scratch: Path) -> None:
    config = _sweep_config(scratch, seeds=1)
    (scratch / "o").mkdir()
    (scratch / "o" / "sweep.json").write_text("{not json")
    one_line_error(drfemu("sweep", str(config), "--out", "o", "--workers", "1", cwd=scratch), "not a sweep manifest")
    assert (scratch / "o" / "sweep.json").read_text() == "{not json"  # the user's to move away, never overwritten


# --- output checked before the work ---------------------------------------------------------------


def test_an_output_the_system_refuses_is_refused_before_the_run(scratch: Path) -> None:
    done = drfemu("run", "--json", "/proc/drfemu.json", "--machines", "5", "--users", "2", cwd=scratch)
    one_line_error(done, "cannot write /proc/drfemu.json")
    assert done.stdout == ""  # no table: nothing ran


def test_the_writability_probe_writes_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(CliError, match="cannot write"):
        check_writable(Path("/proc/drfemu-probe.json"))  # os.access says yes here; the write says no
    check_writable(tmp_path / "new.json")
    assert list(tmp_path.iterdir()) == []
    kept = tmp_path / "kept.json"
    kept.write_text("earlier")
    check_writable(kept)
    assert kept.read_text() == "earlier"  # opened without truncating


# --- debris -------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["trace-replay", "--minutes", "-1", "--out", "made/o"],
    ["sweep", "{config}", "--out", "made/o", "--dask", "notanaddress"],
    ["workload", "extract", "{dir}/empty", "made/o"],
    ["report", "{dir}/unfinished", "--out", "made/o"],
    ["run", "--workload", "{dir}/too-big.json", "--log", "made.jsonl"],
])
def test_a_failed_command_leaves_nothing_it_created(args: list[str], scratch: Path) -> None:
    config = _sweep_config(scratch, seeds=1)
    _too_big(scratch / "too-big.json")
    (scratch / "empty").mkdir()
    (scratch / "unfinished" / "runs").mkdir(parents=True)
    (scratch / "unfinished" / "sweep.json").write_text(json.dumps({"experiments": []}))
    before = sorted(p.name for p in scratch.iterdir())
    done = drfemu(*(a.format(dir=scratch, config=config) for a in args), cwd=scratch)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert sorted(p.name for p in scratch.iterdir()) == before


# --- output where asked ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["sweep", "{config}", "--out", "{dir}"],
    ["trace-replay", "--minutes", "1", "--protocols", "drf", "--out", "{dir}"],
    ["faults-campaign", "--schedules", "1", "--protocols", "drf", "--out", "{dir}"],
])
def test_a_folder_of_other_files_is_refused_as_out(command: list[str], scratch: Path) -> None:
    config = _sweep_config(scratch, seeds=1)
    before = sorted(p.name for p in scratch.iterdir())
    done = drfemu(*(a.format(dir=scratch, config=config) for a in command), cwd=scratch)
    one_line_error(done, "a folder that holds other files")
    assert sorted(p.name for p in scratch.iterdir()) == before


# --- silent accepts -----------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "needle"), [
    (["trace-replay", "--protocols", "", "--out", "o", "--minutes", "1"], "names no protocol"),
    (["run", "--latency", "100s", "--max-time", "10s", "--machines", "5", "--users", "2"], "no allocation"),
    (["overlay", "--rounds", "0"], "--rounds"),
    (["live", "--listen", "127.0.0.1:99999", "--machines", "5", "--users", "2"], "[0, 65535]"),
    (["run", "--workload", "{dir}/too-big.json"], "fits on any of the 1 servers"),
    (["fault-report", "{dir}/sweep", "--out", "f.md"], "no finished run with a fault scenario"),
    (["report", "{dir}/hollow"], "not a run record"),
    (["policy", "tda", "--capacity", "1e9,1e9", "--demand", "1,2", "--demand", "2,1"], "bounded to"),
    (["experiment", "adrf-swm", "--draws", "1000000000"], "--draws"),
    (["bench", "--seconds", "2"], "No such option: --seconds"),
    (["bench", "--actors", "5", "live"], "--actors does not apply to bench live"),
    (["experiment", "adrf-swm", "--tick", "1"], "No such option: --tick"),
    (["check-log", "/dev/zero"], "not a regular file"),
    (["sweep", "/dev/zero", "--out", "o"], "not a regular file"),
])
def test_a_meaningless_input_is_refused_in_one_line(args: list[str], needle: str, scratch: Path) -> None:
    _too_big(scratch / "too-big.json")
    config = _sweep_config(scratch, seeds=1)
    assert drfemu("sweep", str(config), "--out", "sweep", "--workers", "1", cwd=scratch).returncode == 0
    hollow = scratch / "hollow"
    hollow.mkdir()
    (hollow / "sweep.json").write_text((scratch / "sweep" / "sweep.json").read_text())
    (hollow / "runs").mkdir()
    record = json.loads(next((scratch / "sweep" / "runs").glob("*.json")).read_text())
    (hollow / "runs" / f"{record['id']}.json").write_text(json.dumps({**record, "result": {}}))
    one_line_error(drfemu(*(a.format(dir=scratch) for a in args), cwd=scratch), needle)


@pytest.mark.parametrize(("args", "needle"), [
    (["run", "--faults", "{dir}/empty.toml", "--machines", "5", "--users", "2", "--max-time", "5s"],
     "is empty: no fault is played"),
    (["policy", "drf", "--capacity", "1,1", "--demand", "5,5"], "demands more than the whole pool"),
])
def test_a_legal_but_surprising_input_is_warned_in_one_line(args: list[str], needle: str, scratch: Path) -> None:
    done = drfemu(*(a.format(dir=scratch) for a in args), cwd=scratch)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("drfemu: warning:")]
    assert len(warnings) == 1 and needle in warnings[0], done.stderr


# --- pools --------------------------------------------------------------------------------------


def test_a_pool_beyond_the_machine_s_bound_is_refused_at_once(scratch: Path) -> None:
    config = _sweep_config(scratch, seeds=3)
    started = time.monotonic()
    done = drfemu("sweep", str(config), "--out", "o", "--workers", "100000", cwd=scratch)
    one_line_error(done, f"at most {max_workers()} on this machine")
    assert time.monotonic() - started < 30 and not (scratch / "o").exists()


def test_a_pool_left_by_an_exception_is_killed_not_waited_for() -> None:
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with worker_pool(2) as pool:
            jobs = [pool.submit(time.sleep, 60) for _ in range(2)]
            while not all(job.running() for job in jobs):
                time.sleep(0.01)
            workers = set(multiprocessing.active_children())
            raise KeyboardInterrupt
    assert time.monotonic() - started < 30
    assert workers and not any(worker.is_alive() for worker in workers)


def test_no_more_workers_start_than_there_are_runs(scratch: Path) -> None:
    config = _sweep_config(scratch, seeds=1)
    done = drfemu("sweep", str(config), "--out", "o", "--workers", "2", cwd=scratch)
    assert done.returncode == 0, done.stderr
    assert "on 1 worker process(es)" in done.stdout


@pytest.mark.parametrize("args", [
    ["sweep", "{config}", "--out", "o", "--workers", "2"],  # forked workers
    ["bench", "--actors", "50", "--in-flight", "2", "--repeats", "1"],  # spawned, with a resource tracker
])
def test_a_command_with_workers_leaves_no_process_of_its_own(args: list[str], scratch: Path) -> None:
    """Every process the command started (pool workers and multiprocessing's resource tracker
    alike) is gone when it exits."""
    config = _sweep_config(scratch, seeds=2)
    command = [sys.executable, "-m", "drfemu", *(arg.format(config=config) for arg in args)]
    done = subprocess.Popen(command, cwd=scratch, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=ENV, start_new_session=True)
    _, stderr = done.communicate(timeout=120)
    assert done.returncode == 0, stderr
    assert _group_members(done.pid) == [], f"a process of {args[0]} outlived it"


def test_a_resource_tracker_that_was_running_before_the_command_is_left_alone() -> None:
    """In-process use of a command beside the caller's own spawned pool: the tracker they share
    stays (stopping it would wait for the caller's workers, for ever)."""
    from concurrent.futures import ProcessPoolExecutor

    from drfemu.cli.stopping import signals_stop_the_command
    from drfemu.tools.pools import resource_tracker_pid

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(abs, -1).result(timeout=60) == 1
        running = resource_tracker_pid()
        assert running is not None
        with signals_stop_the_command():
            pass
        assert resource_tracker_pid() == running


# --- signals ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_a_sweep_and_its_workers_and_the_tables_match_the_records(number: int,
                                                                               scratch: Path) -> None:
    config = _sweep_config(scratch, seeds=40, machines=20, users=4)
    out = scratch / "o"
    sweep = subprocess.Popen([sys.executable, "-m", "drfemu", "sweep", str(config), "--out", str(out),
                              "--workers", "2"], cwd=scratch, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=ENV)
    deadline = time.monotonic() + 120
    while len(list((out / "runs").glob("*.json"))) < 2 and sweep.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    children = _descendants(sweep.pid)
    assert sweep.poll() is None and len(children) >= 2, "the sweep ended before it could be signalled"
    sweep.send_signal(number)
    _, stderr = sweep.communicate(timeout=60)
    assert sweep.returncode == 128 + number, stderr
    assert "Traceback" not in stderr
    assert f"stopped by {signal.Signals(number).name}" in stderr and "to resume" in stderr
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()], "a worker outlived the sweep"
    records = {p.stem for p in (out / "runs").glob("*.json")}
    assert 0 < len(records) < 40
    assert _table_ids(out) == records

    resumed = drfemu("sweep", str(config), "--out", str(out), "--workers", "2", cwd=scratch)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(records)} run(s) already finished" in resumed.stdout
    ids = [row["id"] for row in csv.DictReader((out / "runs.csv").open())]
    assert len(ids) == len(set(ids)) == 40 == len(list((out / "runs").glob("*.json")))


@pytest.mark.slow
def test_sighup_stops_a_run_with_129(scratch: Path) -> None:
    run = subprocess.Popen([sys.executable, "-m", "drfemu", "run", "--protocol", "dgdrf", "--machines", "2000",
                            "--users", "100"], cwd=scratch, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=ENV)
    time.sleep(3)
    assert run.poll() is None
    run.send_signal(signal.SIGHUP)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 129 and stderr.strip().splitlines()[-1] == "drfemu: stopped by SIGHUP", stderr


def _group_members(group: int) -> list[str]:
    """The processes, zombies aside, whose process group is `group`."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(stat.parent.name)
    return members


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _table_ids(out: Path) -> set[str]:
    with (out / "runs.csv").open() as table:
        return {row["id"] for row in csv.DictReader(table)}


# --- live runs admit only their own workers --------------------------------------------------------


@pytest.mark.slow
def test_a_live_worker_with_the_wrong_secret_is_refused_and_the_run_completes(scratch: Path) -> None:
    secret = "a-secret-of-the-run-0123456789"
    coordinator = subprocess.Popen(
        [sys.executable, "-m", "drfemu", "live", "--machines", "6", "--users", "2", "--max-time", "3s",
         "--processes", "1", "--remote-workers", "1"], cwd=scratch, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**ENV, "DRFEMU_LIVE_SECRET": secret})
    assert coordinator.stderr is not None
    waiting = coordinator.stderr.readline()
    assert "waiting for 1 remote worker" in waiting and secret not in waiting, waiting
    address = waiting.split("--coordinator ")[1].split()[0]
    host, port = address.rsplit(":", 1)
    silent = socket.create_connection((host, int(port)))  # connects and never says a word
    wrong = drfemu("live-worker", "--coordinator", address, "--index", "1", cwd=scratch,
                   env={**ENV, "DRFEMU_LIVE_SECRET": "not-the-secret-0123456789"})
    one_line_error(wrong, "refused this worker", status=1)
    right = drfemu("live-worker", "--coordinator", address, "--index", "1", cwd=scratch,
                   env={**ENV, "DRFEMU_LIVE_SECRET": secret})
    assert right.returncode == 0, right.stderr
    stdout, rest = coordinator.communicate(timeout=120)
    silent.close()
    assert coordinator.returncode == 0, rest
    assert "refused 127.0.0.1" in rest and "did not prove it holds the run's secret" in rest
    assert "Traceback" not in rest and "Task was destroyed" not in rest, rest  # the silent client, let go
    assert "allocations" in stdout


def test_the_proof_depends_on_the_secret_and_the_challenge() -> None:
    assert proof("s" * 16, b"a") == proof("s" * 16, b"a")
    assert proof("s" * 16, b"a") != proof("t" * 16, b"a")
    assert proof("s" * 16, b"a") != proof("s" * 16, b"b")
    assert "s" * 16 not in proof("s" * 16, b"a")


# --- smaller --------------------------------------------------------------------------------------


def test_version_and_run_first_in_help(scratch: Path) -> None:
    version = drfemu("--version", cwd=scratch)
    assert version.returncode == 0 and version.stdout.startswith("drfemu ")
    listed = drfemu("--help", cwd=scratch).stdout.split("Commands:")[1].split()
    assert listed[0] == "run"


def test_the_version_needs_no_installed_metadata(scratch: Path) -> None:
    """A source tree that was never installed (no dist-info to read) still knows its version."""
    blocked = ("import sys, importlib.metadata as m\n"
               "def gone(name): raise m.PackageNotFoundError(name)\n"
               "m.version = m.distribution = m.metadata = gone\n"
               "sys.argv = ['drfemu', '--version']\n"
               "from drfemu.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", blocked], cwd=scratch, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"drfemu {__version__}"


def test_zero_needs_no_unit(scratch: Path) -> None:
    one_line_error(drfemu("run", "--tick", "0", cwd=scratch), "--tick must be at least")
    done = drfemu("run", "--sample-every", "0", "--machines", "5", "--users", "2", "--max-time", "5s", cwd=scratch)
    assert done.returncode == 0, done.stderr


def _too_big(path: Path) -> None:
    """A workload whose one user's task fits on no server."""
    path.write_text(json.dumps({"resources": ["cpu", "mem"], "servers": [{"id": "s", "capacity": [1, 1]}],
                                "users": [{"id": "u", "demand": [2, 1]}]}))


def _sweep_config(folder: Path, seeds: int, machines: int = 6, users: int = 2) -> Path:
    path = folder / "sweep.toml"
    path.write_text(f'name = "hardening"\ntitle = "hardening"\n[base]\nmachines = {machines}\nusers = {users}\n'
                    f'protocol = "dgdrf"\nneighbors = 2\n[[grids]]\nseed = {list(range(1, seeds + 1))}\n')
    return path
