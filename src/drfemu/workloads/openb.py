"""Workloads from the Alibaba GPU-sharing trace `openb` (cluster-trace-gpu-v2023; Weng et al., USENIX
ATC 2023, the FGD paper): its 1,523 servers with their real capacities and its 8,152 pods' requests.

The trace is read from where it lies — a folder holding `openb_node_list_all_node.csv` and
`openb_pod_list_default.csv`, given as `trace` (`--openb-trace`), else the environment variable
`DRFEMU_OPENB_TRACE` — and never copied into the package: its terms allow research use and ask
to be told of papers that use it (`PROVENANCE.md` beside the files).

Resources are `cpu` (cores: `cpu_milli / 1000`), `mem` (GiB: `memory_mib / 1024`) and `gpu`
(devices). A pod's GPU request is `gpu_milli / 1000` of one GPU when it asks for one GPU (a
fraction, or a whole one at 1000) and `num_gpu` whole GPUs when it asks for more.

Two kinds of case:
- **endless** (`openb_case`): `machines` servers drawn without replacement from the trace's nodes,
  and `users` endless users, each with the request of a pod drawn at random; `gpu_users` (a
  fraction) sets the share of users drawn from the pods that ask for GPUs, else the trace's own
  mix (87 % of its pods ask for a GPU or part of one). Decision: a drawn pod whose request fits
  on none of the drawn servers (a pod asking for 8 GPUs among servers that have fewer) is
  drawn again, up to 1,000 times per user, so every user can place a task;
- **finite** (`openb_replay`): the pods created in a window of the trace as tasks that end — each
  submitted at its creation time and running `deletion_time − creation_time` seconds (at least
  one second; at most `max_duration`, so a pod that ran for months ends within the replay) — on
  every node of the trace or on `machines` of them. Decision: the trace names no tenant, so a
  user is one request shape (cpu, memory, GPUs): pods of one shape come from one job or one
  kind of job, which is what DRF shares among. The window starts `start` seconds into the
  trace (creation times count from the trace's first pod) and lasts `minutes`; `pods` keeps
  the first so many of it; times are shifted so the window starts at 0. Decision: a stretch
  longer than `idle_gap` (600 s) in which none of the replay's pods would run is shortened to
  `idle_gap` — the trace's first pods are followed by 116 days with no new one — which keeps
  every pair of pods that overlapped in the trace overlapping, and no other (but for a task
  that waits longer than `idle_gap` to start). The trace's pods arrive about ten an hour after
  its first day, so a window of an hour on the whole cluster has no contention: draw fewer
  `machines`. The `gpu_spec` column (a GPU model a pod insists
  on) is empty for every pod of this file, and the node's `model` is therefore not read.

Every draw comes from the stream `workload/openb` of the seed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from drfemu.kernel.files import csv_rows
from drfemu.kernel.params import Declared, Duration, param
from drfemu.kernel.streams import RandomStreams
from drfemu.schema.params import CaseSeed, DrawnMachines, GpuCaseParams, TraceSpan, check_values
from drfemu.schema.workload import (
    LARGEST,
    MAX_NODES,
    MAX_TASKS,
    Server,
    Task,
    User,
    Workload,
    WorkloadError,
    check_amount,
)
from drfemu.workloads.registry import WorkloadSpec

__all__ = ["NODES_FILE", "PODS_FILE", "REPLAY_SPEC", "SPEC", "TRACE_ENV", "OpenbParams", "OpenbReplayParams",
           "OpenbTrace", "Pod", "load_trace", "openb_case", "openb_replay", "trace_folder"]

NODES_FILE = "openb_node_list_all_node.csv"
PODS_FILE = "openb_pod_list_default.csv"
TRACE_ENV = "DRFEMU_OPENB_TRACE"
RESOURCES = ("cpu", "mem", "gpu")
ATTRIBUTION = ("Alibaba cluster-trace-gpu-v2023 (openb), Weng et al., USENIX ATC 2023; research use, see the "
               "trace's PROVENANCE.md")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "deletion_time")
REDRAWS = 1000


@dataclass(frozen=True, slots=True)
class Pod:
    """One pod of the trace: its request in (cores, GiB, GPUs) and its lifetime in seconds."""

    name: str
    demand: tuple[float, float, float]
    created: float
    deleted: float


@dataclass(frozen=True)
class OpenbTrace:
    """The trace's servers, as (name, capacity), and its pods in creation order."""

    folder: Path
    servers: tuple[tuple[str, tuple[float, float, float]], ...]
    pods: tuple[Pod, ...]

    @classmethod
    def load(cls, folder: Path | str) -> OpenbTrace:
        """Read the two files of `folder`; `WorkloadError` naming the file and line of a bad row."""
        folder = Path(folder)
        servers = tuple((row["sn"], (_amount(row, "cpu_milli", where, 1000), _amount(row, "memory_mib", where, 1024),
                                     _amount(row, "gpu", where, 1)))
                        for row, where in _rows(folder / NODES_FILE, NODE_COLUMNS))
        pods = [Pod(row["name"], _pod_demand(row, where), _time(row, "creation_time", where),
                    _time(row, "deletion_time", where))
                for row, where in _rows(folder / PODS_FILE, POD_COLUMNS)]
        if not servers or not pods:
            raise WorkloadError(f"the openb trace in {folder} has no {'servers' if not servers else 'pods'}")
        pods.sort(key=lambda pod: pod.created)  # stable: ties keep the file's order
        return cls(folder, servers, tuple(pods))


def trace_folder(trace: str | Path | None, option: str = "--openb-trace") -> Path:
    """The folder of the trace: `trace`, else `$DRFEMU_OPENB_TRACE`; one line naming both when
    neither is given or the folder lacks the files (`option`: the command's option for the folder)."""
    given = str(trace) if trace else os.environ.get(TRACE_ENV, "")
    if not given:
        raise WorkloadError(f"the openb trace is read from where it lies: give {option} DIR (the folder of "
                            f"{NODES_FILE} and {PODS_FILE}) or set {TRACE_ENV}")
    folder = Path(given).expanduser()
    for name in (NODES_FILE, PODS_FILE):
        if not (folder / name).is_file():
            raise WorkloadError(f"the openb trace folder {folder} has no {name}")
    return folder


def _rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[dict[str, str], str]]:
    for line, row in csv_rows(path, columns, "the openb trace's CSV", WorkloadError):
        yield row, f"{path}: line {line}"


def _number(row: dict[str, str], column: str, where: str) -> float:
    text = row[column]
    try:
        value = float(text)
    except ValueError:
        raise WorkloadError(f"{where}, {column}: {text[:40]!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise WorkloadError(f"{where}, {column}: {text[:40]!r} is not a finite number at least 0")
    return value


def _amount(row: dict[str, str], column: str, where: str, unit: float) -> float:
    """`column` in the workload's units (cores, GiB, GPUs: the trace's milli-cores are `unit` 1000),
    within the bounds of every workload (`schema.workload.check_amount`)."""
    scaled = f" / {unit:g}" if unit != 1 else ""
    return check_amount(_number(row, column, where) / unit, f"{where}, {column}{scaled}")


def _time(row: dict[str, str], column: str, where: str) -> float:
    """`column`, seconds, at most a workload's largest time (`schema.workload.LARGEST`)."""
    value = _number(row, column, where)
    if value > LARGEST:
        raise WorkloadError(f"{where}, {column}: {value:g} s is beyond {LARGEST:g} s")
    return value


def _pod_demand(row: dict[str, str], where: str) -> tuple[float, float, float]:
    gpus = _amount(row, "num_gpu", where, 1)
    gpu = _amount(row, "gpu_milli", where, 1000) if gpus == 1 else gpus
    return _amount(row, "cpu_milli", where, 1000), _amount(row, "memory_mib", where, 1024), gpu


def _fits_somewhere(demand: tuple[float, ...], capacities: np.ndarray) -> bool:
    return bool(np.all(capacities >= np.asarray(demand) - 1e-9, axis=1).any())


def _draw_servers(trace: OpenbTrace, machines: int | None, rng: np.random.Generator) -> tuple[Server, ...]:
    nodes = len(trace.servers)
    chosen: list[int]
    if machines is None:
        chosen = list(range(nodes))
    elif not 1 <= machines <= nodes:
        raise WorkloadError(f"the openb trace has {nodes:,} servers: draw between 1 and {nodes:,}, not {machines:,}")
    else:
        chosen = sorted(rng.choice(nodes, size=machines, replace=False).tolist())
    return tuple(Server(trace.servers[i][0], trace.servers[i][1]) for i in chosen)


def openb_case(trace: OpenbTrace, machines: int = 100, users: int = 20, seed: int = 1,
               gpu_users: float | None = None) -> Workload:
    """An endless case: `machines` of the trace's servers and `users` users with drawn pods'
    requests (see the module docstring)."""
    check_values(OpenbParams.PARAMS, {"machines": machines, "users": users, "case_seed": seed, "gpu_users": gpu_users})
    rng = RandomStreams(seed).numpy("workload/openb")
    servers = _draw_servers(trace, machines, rng)
    capacities = np.array([s.capacity for s in servers])
    gpu_pods = [p for p in trace.pods if p.demand[2] > 0]
    cpu_pods = [p for p in trace.pods if p.demand[2] == 0]
    people = []
    for i in range(users):
        pool: tuple[Pod, ...] | list[Pod] = trace.pods
        if gpu_users is not None:
            pool = gpu_pods if rng.random() < gpu_users else cpu_pods
            if not pool:
                raise WorkloadError(f"the openb trace has no {'GPU' if pool is gpu_pods else 'CPU-only'} pods to draw")
        for _ in range(REDRAWS):
            pod = pool[int(rng.integers(len(pool)))]
            if _fits_somewhere(pod.demand, capacities):
                break
        else:
            raise WorkloadError(f"user {i}: no pod drawn in {REDRAWS} tries fits on any of the {len(servers)} servers")
        people.append(User(f"u{i}", pod.demand))
    source = {"kind": "openb", "trace": str(trace.folder), "machines": len(servers), "users": users, "seed": seed,
              "gpu_users": gpu_users, "attribution": ATTRIBUTION}
    return Workload(RESOURCES, servers, tuple(people), source)


def _closed_gaps(pods: list[Pod], durations: list[float], idle_gap: float) -> tuple[list[float], float]:
    """Submit times, from 0, with every stretch longer than `idle_gap` in which none of the pods
    would run shortened to `idle_gap`; and the seconds taken out."""
    times, shift, busy_until = [], 0.0, 0.0
    first = pods[0].created
    for pod, duration in zip(pods, durations):
        at = pod.created - first
        if at - busy_until > idle_gap:
            shift += at - busy_until - idle_gap
        times.append(at - shift)
        busy_until = max(busy_until, at + duration)
    return times, shift


def openb_replay(trace: OpenbTrace, pods: int | None = None, minutes: float | None = None, start: float = 0.0,
                 machines: int | None = None, seed: int = 1, max_duration: float = 3600.0,
                 idle_gap: float = 600.0) -> Workload:
    """The pods of a window of the trace as tasks that end (see the module docstring)."""
    check_values(OpenbReplayParams.PARAMS, {"case_seed": seed, "machines": machines, "pods": pods, "minutes": minutes,
                                             "start": start, "max_duration": max_duration, "idle_gap": idle_gap})
    rng = RandomStreams(seed).numpy("workload/openb")
    servers = _draw_servers(trace, machines, rng)
    origin = trace.pods[0].created
    window = [p for p in trace.pods if p.created - origin >= start
              and (minutes is None or p.created - origin < start + 60 * minutes)]
    window = window[:pods] if pods is not None else window
    capacities = np.array([s.capacity for s in servers])
    placeable = [p for p in window if _fits_somewhere(p.demand, capacities)]
    if not placeable:
        raise WorkloadError(f"no pod of the window ({len(window)} created there) fits on the {len(servers)} servers")
    durations = [min(max(pod.deleted - pod.created, 1.0), max_duration) for pod in placeable]
    submits, closed = _closed_gaps(placeable, durations, idle_gap)
    shapes: dict[tuple[float, float, float], list[Task]] = {}
    for pod, submit, duration in zip(placeable, submits, durations):
        shapes.setdefault(pod.demand, []).append(Task(submit, duration, pod.demand))
    people = tuple(User(f"shape{k}", demand, tuple(tasks_of)) for k, (demand, tasks_of) in enumerate(shapes.items()))
    source = {"kind": "openb-replay", "trace": str(trace.folder), "machines": len(servers), "tasks": len(placeable),
              "left_out": len(window) - len(placeable), "start_s": start, "minutes": minutes, "seed": seed,
              "max_duration_s": max_duration, "idle_gap_s": idle_gap, "idle_removed_s": closed,
              "attribution": ATTRIBUTION}
    return Workload(RESOURCES, servers, people, source)


class OpenbTraceParam(Declared):
    openb_trace: str = param(default="", help="openb: the folder of the Alibaba GPU trace's CSV files (default: "
                             f"${TRACE_ENV}); read where it lies, never copied.")


class OpenbParams(OpenbTraceParam, GpuCaseParams):
    """An endless openb case's parameters: `--machines`, `--users`, `--case-seed`, `--gpu-users`, `--openb-trace`."""


class OpenbReplayParams(OpenbTraceParam, CaseSeed, TraceSpan, DrawnMachines):
    """A replay's parameters (`openb_replay`; `drfemu workload openb-replay`)."""

    DEFAULTS = {"machines": None}

    pods: int | None = param(default=None, help="At most this many pods of the window (default: all).", ge=1,
                             le=MAX_TASKS)
    start: Duration = param(default=0.0, help="The window's start into the trace (e.g. 116d, 10000000s).", ge=0,
                            le=LARGEST)
    max_duration: Duration = param(default=3600.0, help="A pod runs at most this long.", ge=1, le=LARGEST)
    idle_gap: Duration = param(default=600.0, help="A stretch longer than this with no pod running is shortened "
                               "to it.", ge=0, le=LARGEST)


@lru_cache(maxsize=4)
def _loaded(folder: Path, modified: tuple[int, int]) -> OpenbTrace:
    """The trace of `folder`, read once per process while its files stay as they were."""
    return OpenbTrace.load(folder)


def load_trace(trace: str | Path | None, option: str = "--openb-trace") -> OpenbTrace:
    """The trace at `trace` (else `$DRFEMU_OPENB_TRACE`), read once per process (`trace_folder`)."""
    folder = trace_folder(trace, option).resolve()
    return _loaded(folder, tuple((folder / name).stat().st_mtime_ns for name in (NODES_FILE, PODS_FILE)))


def _draw(machines: int, users: int, case_seed: int, openb_trace: str, gpu_users: float | None) -> Workload:
    return openb_case(load_trace(openb_trace), machines, users, case_seed, gpu_users)


def _draw_replay(openb_trace: str, case_seed: int, minutes: float | None, machines: int | None, pods: int | None,
                 start: float, max_duration: float, idle_gap: float) -> Workload:
    return openb_replay(load_trace(openb_trace), pods, minutes, start, machines, case_seed, max_duration, idle_gap)


def _replay_detail(case: Workload) -> str:
    left_out = case.source["left_out"]
    return (f"one user per request shape of the pods, {case.source['idle_removed_s']:,.0f} s of idle stretches removed"
            + (f"; {left_out} pods fit on no server and were left out" if left_out else ""))


SPEC = WorkloadSpec("openb", "a case drawn from the Alibaba GPU-sharing trace openb (read from --openb-trace): its "
                    "servers' capacities, its pods' requests", OpenbParams, _draw)

REPLAY_SPEC = WorkloadSpec("openb-replay", "the pods of a window of the openb trace as tasks that end, at their "
                           "creation times, on its servers (docs/workloads.md)", OpenbReplayParams, _draw_replay,
                           detail=_replay_detail)
