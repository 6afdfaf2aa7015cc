"""A fault campaign (issue 37, `drfemu faults-campaign`): random fault schedules × every protocol ×
endless and finite users, each run checked from inside and from its log alone.

`campaign_cases` draws the cases from one seed: case `k` takes the protocols in turn, endless
and finite rounds alternating (Google 2011 cases for endless users, synthetic ones with tasks
that end for finite users), a cluster size from `sizes`, and a schedule
(`workloads.fault_schedules`).
`run_case` runs it and judges it:
- **lost / duplicated / capacity**: the run's own ledger and harness raise on a task started
  twice or a server over its capacity; the ledger counts lost tasks and reruns;
- **log**: the run log (`observers.run_log`) must pass the checker that reads only the
  log (`tools.log_check`);
- **determinism**: the same case run again gives the same result document, event for event;
- **end**: an endless run ends saturated, or blocked where its rule holds allocations back by
  design (C-ADRF: status `blocked`), or stalled only where its rule strands tasks by design
  (`stalls_by_design`); any other stall — no allocation for `--stall-ticks` while some user's
  next task fits — is a failure, whether or not the fault-free twin stalls too (issue 52; it was
  excused before when the twin stalled). A finite run finishes. A run that reaches the time cap
  failed to end.
Schedules are transient (every fault heals) or, with `transient=False`, end with servers that
never recover (`workloads.fault_schedules`); the judgment is the same: saturation is judged on
the servers that are up.
Fault-free twins (same workload, protocol and seed, no scenario) are run once per distinct
case and give the ratios of the table: the minimum share at saturation (endless) and the
run's length (finite).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.observers.harness import BLOCKED, FINISHED, SATURATED, STALLED
from drfemu.protocols.registry import PROTOCOLS, GradientUse
from drfemu.schema.workload import MAX_NODES, Workload, WorkloadError
from drfemu.tools.log_check import check_log
from drfemu.tools.pools import worker_pool
from drfemu.workloads.fault_schedules import ScheduleBounds, random_schedule
from drfemu.workloads.google import google_case
from drfemu.workloads.synthetic import synthetic_case

__all__ = ["DEFAULT_SIZES", "CampaignCase", "RunWorkload", "campaign_cases", "ends_by_design", "parse_sizes",
           "run_campaign", "run_case", "stalls_by_design"]

RunWorkload = Callable[[Workload, Mapping[str, Any], Callable[[dict[str, Any]], None] | None], dict[str, Any]]
"""(workload, parameters by name, run-log listener) → the result document
(`assembly.run.run_workload`): given, not imported, so this stage loads no actor;
a module-level function, pickled by reference for the worker processes."""

DEFAULT_SIZES = ((6, 2), (10, 3), (20, 5), (30, 6), (50, 10), (100, 20))
FINITE_TASKS = 20  # tasks per user of a finite case
UNSTABLE = ("wall_time_s", "events_per_s")  # the wall clock's: every other field must repeat


@dataclass(frozen=True)
class CampaignCase:
    """One drawn case: `scenario` is the schedule's TOML text."""

    index: int
    protocol: str
    machines: int
    users: int
    finite: bool
    case_seed: int
    seed: int
    scenario: str
    transient: bool = True

    def twin_key(self) -> tuple[str, int, int, bool, int, int]:
        return (self.protocol, self.machines, self.users, self.finite, self.case_seed, self.seed)


def parse_sizes(text: str) -> tuple[tuple[int, int], ...]:
    """`"6x2,10x3"` → `((6, 2), (10, 3))`; one line naming a bad entry otherwise."""
    sizes = []
    for part in text.split(","):
        machines, _, users = part.strip().partition("x")
        if not (machines.isascii() and machines.isdigit() and users.isascii() and users.isdigit()
                and 2 <= int(machines) <= MAX_NODES and 1 <= int(users) <= MAX_NODES):
            raise InputError(f"--sizes: {part.strip()[:40]!r} is not SERVERSxUSERS (2 to {MAX_NODES:,} servers, 1 to "
                             f"{MAX_NODES:,} users)")
        sizes.append((int(machines), int(users)))
    return tuple(sizes)


MAX_SCHEDULES = 100_000
"""The most cases a campaign draws: they are all drawn, and their scenarios written, before the
first run starts (a typo of a few zeros should not fill the disk first)."""


def campaign_cases(schedules: int, seed: int, protocols: Sequence[str], sizes: Sequence[tuple[int, int]],
                   bounds: ScheduleBounds = ScheduleBounds(), transient: bool = True) -> list[CampaignCase]:
    """The campaign's `schedules` cases (at most `MAX_SCHEDULES`), drawn from `seed` alone (see
    the module); `transient`: schedules whose faults all heal."""
    if not 1 <= schedules <= MAX_SCHEDULES:
        raise InputError(f"--schedules must be in [1, {MAX_SCHEDULES:,}]")
    rng = random.Random(f"drfemu-campaign-{seed}")
    cases = []
    for k in range(schedules):
        protocol = protocols[k % len(protocols)]
        machines, users = sizes[rng.randrange(len(sizes))]
        spec = PROTOCOLS[protocol]
        scenario = random_schedule(rng, machines, central=spec.central_rule is not None,
                                   gradient=spec.gradient is not GradientUse.OFF, bounds=bounds,
                                   transient=transient)
        finite = (k // len(protocols)) % 2 == 1  # each protocol in turn, endless and finite rounds alternating
        cases.append(CampaignCase(k, protocol, machines, users, finite, case_seed=rng.randint(1, 5),
                                  seed=rng.randint(1, 1000), scenario=scenario, transient=transient))
    return cases


def _workload(case: CampaignCase) -> Workload:
    if not case.finite:
        return google_case(case.machines, case.users, case.case_seed)
    for draw in range(case.case_seed, case.case_seed + 50):  # a draw whose every user fits somewhere
        try:
            return synthetic_case(case.machines, case.users, seed=draw, tasks=FINITE_TASKS)
        except WorkloadError:
            continue
    raise WorkloadError(f"no synthetic {case.machines} × {case.users} case in 50 seeds has room for every user")


def stalls_by_design(case: CampaignCase) -> bool:
    """Whether the protocol's rule strands tasks by design (`ServerRule.STRANDS`: the thesis's
    probe, not the default one since issue 38), so an endless run of it may stall whatever the
    faults. C-ADRF, which holds allocations back by design, ends `blocked`, not stalled (issue 52)."""
    spec = PROTOCOLS[case.protocol]
    return spec.server_rule is not None and spec.server_rule.STRANDS


def ends_by_design(case: CampaignCase, status: str) -> bool:
    """Whether an endless run of `case` that ended with `status` left fitting tasks by its rule's
    design: blocked (a rule that declares `BLOCKING`), or stalled where the rule strands tasks."""
    if status == BLOCKED:
        return bool(getattr(PROTOCOLS[case.protocol].central_rule, "BLOCKING", False))
    return status == STALLED and stalls_by_design(case)


def _params(case: CampaignCase) -> dict[str, Any]:
    """The run parameters of a case: the defaults, with views no larger than the cluster allows."""
    return {"protocol": case.protocol, "seed": case.seed, "neighbors": min(10, case.machines - 1)}


def _digest(document: dict[str, Any]) -> str:
    stable = {k: v for k, v in document.items() if k not in UNSTABLE}
    return hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()


def run_twin(case: CampaignCase, run: RunWorkload) -> dict[str, Any]:
    """The fault-free twin of `case`: its status, minimum share and length."""
    r = run(_workload(case), _params(case), None)
    return {"status": r["status"], "min_share": r["min_dominant_share"], "virtual_time_s": r["virtual_time_s"]}


def run_case(case: CampaignCase, scenario_path: Path, twin: dict[str, Any], run: RunWorkload) -> dict[str, Any]:
    """Run `case` twice with its schedule (written at `scenario_path`) and judge it (see the module)."""
    started = time.perf_counter()
    record: dict[str, Any] = {**{k: v for k, v in asdict(case).items() if k != "scenario"},
                              "scenario": str(scenario_path), "twin_status": twin["status"],
                              "twin_min_share": twin["min_share"], "twin_virtual_time_s": twin["virtual_time_s"]}
    workload = _workload(case)
    log: list[dict[str, Any]] = []
    try:
        params = {**_params(case), "faults": str(scenario_path)}
        first = run(workload, params, log.append)
        again = run(workload, params, None)
    except Exception as error:  # a capacity violation or a task started twice raises inside the run
        record.update(error=f"{type(error).__name__}: {error}", wall_s=round(time.perf_counter() - started, 3))
        return record
    checked = check_log(log)
    status = first["status"]
    by_design = not case.finite and ends_by_design(case, status)
    ended = status == FINISHED if case.finite else status == SATURATED or by_design
    record.update(
        status=status, end_reason=first["end_reason"], ended=ended, by_design=by_design,
        min_share=first["min_dominant_share"],
        virtual_time_s=first["virtual_time_s"], lost=first["ledger"]["lost"], reruns=first["ledger"]["rerun"],
        resubmitted=first["ledger"]["resubmitted"], deterministic=_digest(first) == _digest(again),
        log_ok=checked.ok, log_violation=checked.violation, log_records=checked.records,
        wall_s=round(time.perf_counter() - started, 3))
    return record


def _twin_job(job: tuple[CampaignCase, RunWorkload]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    case, run = job
    return case.twin_key(), run_twin(case, run)


def _case_job(job: tuple[CampaignCase, str, dict[str, Any], RunWorkload]) -> dict[str, Any]:
    case, path, twin, run = job
    return run_case(case, Path(path), twin, run)


def _earlier_record(line: str) -> dict[str, Any] | None:
    """A line of an earlier campaign.jsonl as {index, text of its scenario, record}, or None when
    it cannot be one (a line cut short by a kill, a scenario file since removed): that case is
    run again."""
    try:
        record = json.loads(line)
        return {"index": int(record["index"]), "text": Path(record["scenario"]).read_text(encoding="utf-8"),
                "record": record}
    except (ValueError, KeyError, TypeError, OSError):
        return None


def run_campaign(cases: Sequence[CampaignCase], out: Path, run: RunWorkload, workers: int = 1,
                 on_record: Callable[[dict[str, Any], int, int], None] | None = None) -> list[dict[str, Any]]:
    """Run every case on `workers` processes; writes `out/scenarios/NNNN.toml`, the fault-free
    twins (`out/twins.json`) and one line per case as it finishes (`out/campaign.jsonl`); returns
    the records in case order. Resuming: twins already in `twins.json` and cases already in
    `campaign.jsonl` are not run again — remove the directory to judge changed code afresh (a
    change that leaves fault-free runs alone may keep `twins.json`)."""
    scenarios = out / "scenarios"
    scenarios.mkdir(parents=True, exist_ok=True)
    paths = []
    for case in cases:
        path = scenarios / f"{case.index:04d}.toml"
        path.write_text(case.scenario)
        paths.append(path)
    twins_path, records_path = out / "twins.json", out / "campaign.jsonl"
    twins: dict[tuple[Any, ...], dict[str, Any]] = {}
    if twins_path.is_file():
        twins = {tuple(t.pop("case")): t for t in json.loads(twins_path.read_text())}
    finished: dict[int, dict[str, Any]] = {}
    if records_path.is_file():
        for line in records_path.read_text(encoding="utf-8", errors="replace").splitlines():
            record = _earlier_record(line)
            if record is None or record["index"] >= len(cases):
                continue
            if cases[record["index"]].scenario == record["text"]:
                finished[record["index"]] = record["record"]
    missing = [c for c in {case.twin_key(): case for case in cases}.values() if c.twin_key() not in twins]
    done = len(finished)
    with worker_pool(workers) if workers > 1 else contextlib.nullcontext() as pool:
        mapped = pool.map if pool is not None else map  # one worker: in this process
        for key, twin in mapped(_twin_job, [(case, run) for case in missing]):
            twins[key] = twin
        twins_path.write_text(json.dumps([{"case": list(k), **v} for k, v in twins.items()], indent=1))
        jobs = [(case, str(path), twins[case.twin_key()], run) for case, path in zip(cases, paths)
                if case.index not in finished]
        with records_path.open("a") as lines:
            for record in mapped(_case_job, jobs):
                finished[record["index"]] = record
                lines.write(json.dumps(record) + "\n")
                lines.flush()
                done += 1
                if on_record is not None:
                    on_record(record, done, len(cases))
    return [finished[case.index] for case in cases]
