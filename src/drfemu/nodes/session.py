"""The one place a run meets an event loop: make the loop, run, close it; tune the collector and time.

Everything that runs a runtime uses these two and nothing else of asyncio's loop management:
a run (`assembly.run`), an overlay run (`assembly.overlay_run`), the engine benchmark
(`tools.bench`), a live worker and coordinator and the live benchmark (`live`).

- `run_loop(main, loop)`: a new event loop of the kind named (`asyncio`, `uvloop`, or `best`:
  uvloop where installed), `main` run on it to completion, then its async generators and
  default executor shut down and the loop closed. With `signals`, SIGINT, SIGTERM or SIGHUP
  cancels `main` (its clean-up runs) and then the process's own handler of that signal is
  called, else `KeyboardInterrupt` is raised (live runs: a worker's sockets close first).
- `timed(work)`: await `work` (a runtime's `run()`, or a benchmark's design) with the garbage
  collector tuned for a run (`nodes.gc_tuning`); its value and the wall seconds it took.

A virtual run needs nothing of its loop but to be awaited (`nodes.runtime`): any loop hosts it
with the same results, and a user's coroutines may share it (`await Run(config).execute_async()`).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Literal, TypeVar

from drfemu.nodes.gc_tuning import tuned_gc

__all__ = ["LoopName", "loop_name", "new_loop", "run_loop", "timed"]

T = TypeVar("T")

LoopName = Literal["asyncio", "uvloop", "best"]
"""The kinds of event loop a run may be hosted by; `best` is uvloop where it is installed."""

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def new_loop(kind: LoopName = "asyncio") -> asyncio.AbstractEventLoop:
    """A new event loop of `kind` (`uvloop` raises `ImportError` where it is not installed)."""
    if kind == "asyncio":
        return asyncio.new_event_loop()
    try:
        import uvloop
    except ImportError:
        if kind == "uvloop":
            raise
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """`uvloop` or `asyncio`: which kind of loop `loop` is."""
    return "uvloop" if type(loop).__module__.split(".")[0] == "uvloop" else "asyncio"


def run_loop(main: Coroutine[Any, Any, T], loop: LoopName = "asyncio", *, signals: bool = False) -> T:
    """Run `main` to completion on a new loop of kind `loop`, then close the loop (see the module)."""
    host = new_loop(loop)
    try:
        task = host.create_task(main)
        if not signals:
            return host.run_until_complete(task)
        return _until_signalled(host, task)
    finally:
        try:
            host.run_until_complete(host.shutdown_asyncgens())
            host.run_until_complete(host.shutdown_default_executor())
        finally:
            host.close()


def _until_signalled(loop: asyncio.AbstractEventLoop, task: asyncio.Task[T]) -> T:
    previous = {number: signal.getsignal(number) for number in SIGNALS}
    received: list[signal.Signals] = []

    def stop(number: signal.Signals) -> None:
        received.append(number)
        task.cancel()

    for number in SIGNALS:
        loop.add_signal_handler(number, stop, number)
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if not received:
            raise  # cancelled from within: not a signal
        handler: Callable[..., Any] | int | None = previous[received[0]]
        if callable(handler) and handler is not signal.default_int_handler:
            handler(received[0], None)
        raise KeyboardInterrupt from None
    finally:
        for number in SIGNALS:
            loop.remove_signal_handler(number)
            signal.signal(number, previous[number])


async def timed(work: Awaitable[T]) -> tuple[T, float]:
    """Await `work` (a runtime's `run()`) with the cyclic collector tuned (`nodes.gc_tuning`): its
    value (a run's: what `stop` was given) and the wall seconds it took."""
    with tuned_gc():
        started = time.perf_counter()
        value = await work
        return value, time.perf_counter() - started
