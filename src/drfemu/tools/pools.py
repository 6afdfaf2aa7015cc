"""Process pools that end at once when their caller stops.

`concurrent.futures.ProcessPoolExecutor` leaves a pool's workers running their jobs when the
block that owns it ends by an exception, and its `with` waits for them: an interrupted sweep
would keep computing (or, killed by SIGTERM, leave its workers behind for good). `worker_pool`
kills the workers instead whenever its block ends by an exception, an interrupt included; a
block that ends normally waits for the pool as usual.

Every pool is bounded: `checked_pool_size` refuses more than `WORKERS_PER_CORE` processes per
core this process may run on (a typo such as `--workers 100000` would otherwise fork thousands
of interpreters), and callers never start more workers than they have jobs.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from drfemu.kernel.errors import InputError

JOIN_TIMEOUT_S = 5.0

WORKERS_PER_CORE = 4


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def max_workers() -> int:
    """The largest pool any command or API call starts: `WORKERS_PER_CORE` per available core."""
    return WORKERS_PER_CORE * available_cores()


def checked_pool_size(requested: int, name: str = "workers") -> int:
    """`requested` if it is a pool size this machine allows, else `InputError` naming `name`."""
    if requested < 1:
        raise InputError(f"{name} must be at least 1")
    if requested > max_workers():
        raise InputError(f"{name} {requested}: at most {max_workers()} on this machine "
                         f"({WORKERS_PER_CORE} per core, {available_cores()} cores)")
    return requested


@contextmanager
def worker_pool(size: int, **options: Any) -> Iterator[ProcessPoolExecutor]:
    """A `ProcessPoolExecutor` of `size` workers (`options` passed on) whose workers are killed
    (SIGKILL: a job in flight is lost, and its caller reruns it) if the block raises anything."""
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(max_workers=size, **options)
    try:
        yield pool
    except BaseException:
        end_processes(set(multiprocessing.active_children()) - before)
        # With its workers dead the pool's manager thread ends at once; waiting for it means no
        # thread of the pool is left reaping a worker (the process objects' state then agrees).
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def resource_tracker_pid() -> int | None:
    """The process id of this process's `multiprocessing` resource tracker, None if none runs."""
    from multiprocessing import resource_tracker

    return getattr(getattr(resource_tracker, "_resource_tracker", None), "_pid", None)


def end_resource_tracker(running_before: int | None) -> None:
    """Stop and reap the `multiprocessing` resource tracker if it was started since
    `running_before` (`resource_tracker_pid()` then) and no child process is left that could
    still use it. Decision: a command that spawned workers ends with no process of its own left;
    the tracker would otherwise outlive the command until it noticed its parent had gone. One
    that was running before (a caller's own pool, in-process use of the CLI) is left alone:
    stopping it waits for every process that shares it."""
    from multiprocessing import resource_tracker

    tracker = getattr(resource_tracker, "_resource_tracker", None)
    stop = getattr(tracker, "_stop", None)  # private to CPython: without it, nothing is stopped
    started = getattr(tracker, "_pid", None)
    if callable(stop) and started is not None and started != running_before \
            and not multiprocessing.active_children():
        stop()


def end_processes(children: set[Any]) -> None:
    """Kill `children` (multiprocessing processes) and reap them."""
    for child in children:
        child.kill()
    for child in children:
        child.join(JOIN_TIMEOUT_S)
