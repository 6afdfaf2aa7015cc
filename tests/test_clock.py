"""The runtime port and its two clocks (issue 56): virtual time owned by the runtime, any loop
hosts a run, a user's coroutines share the loop, and only public asyncio API is used."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import time
from pathlib import Path
from typing import Any

import pytest

from drfemu.assembly.run import Run
from drfemu.nodes.actor import Actor
from drfemu.nodes.network import Network
from drfemu.nodes.runtime import Runtime, RuntimeIdle
from drfemu.nodes.session import run_loop
from drfemu.nodes.trace import EventTrace
from drfemu.workloads.points import build_run_config, canonical_params

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "drfemu"
HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


class Ticker(Actor):
    __slots__ = ("ticks",)

    def __init__(self, actor_id: int) -> None:
        super().__init__(actor_id)
        self.ticks: list[float] = []

    def on_tick(self, now: float) -> None:
        self.ticks.append(now)


def test_an_hour_of_virtual_sleep_is_a_jump_not_a_wait() -> None:
    runtime = Runtime(Network(), [])
    woke: list[float] = []

    async def sleeper() -> None:
        await runtime.sleep(3600.0)
        woke.append(runtime.now)
        runtime.stop("done")

    async def main() -> Any:
        task = asyncio.ensure_future(sleeper())
        outcome = await runtime.run()
        await task
        return outcome

    started = time.monotonic()
    assert run_loop(main()) == "done"
    assert woke == [3600.0] and time.monotonic() - started < 5.0


def test_a_coroutine_that_sleeps_virtual_time_runs_at_that_time_before_any_later_instant() -> None:
    ticker = Ticker(0)
    runtime = Runtime(Network(), [ticker])
    runtime.start_ticks(0.1, [ticker])
    seen: list[tuple[float, int]] = []

    async def watcher() -> None:
        for _ in range(3):
            await runtime.sleep(0.25)
            seen.append((runtime.now, len(ticker.ticks)))
        runtime.stop()

    async def main() -> None:
        task = asyncio.ensure_future(watcher())
        await runtime.run()
        await task

    run_loop(main())
    assert seen == [(0.25, 2), (0.5, 5), (0.75, 7)]  # the tick at 0.5 fired before the sleep's timer


def test_a_virtual_runtime_with_nothing_scheduled_says_so_instead_of_hanging() -> None:
    with pytest.raises(RuntimeIdle):
        run_loop(Runtime(Network(), []).run())


def test_a_handlers_exception_is_raised_where_the_run_is_awaited() -> None:
    runtime = Runtime(Network(), [])

    def boom(now: float) -> None:
        raise ZeroDivisionError("in a handler")

    runtime.call_at(1.0, boom)
    with pytest.raises(ZeroDivisionError, match="in a handler"):
        run_loop(runtime.run())
    assert runtime.stopped


def _config() -> Any:
    return build_run_config(canonical_params({"protocol": "pdgdrf", "machines": 12, "users": 4, "neighbors": 2,
                                              "max_time": 30.0}))


def _comparable(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k not in ("wall_time_s", "events_per_s")}


def test_a_users_coroutine_and_a_run_share_one_loop_and_both_finish() -> None:
    """A run awaited beside a coroutine of the user's: the coroutine runs while the run does (the
    run yields between turns), both finish, and the result is the run's as it is alone."""
    alone = Run(_config()).execute().to_dict()
    turns: list[bool] = []

    async def main() -> tuple[Any, int]:
        running = asyncio.ensure_future(Run(_config()).execute_async())
        while not running.done():  # the user's own work, one step a turn of the loop
            turns.append(running.done())
            await asyncio.sleep(0)
        return running.result(), len(turns)

    result, steps = run_loop(main())
    assert steps >= 3 and not any(turns)  # it ran, turn after turn, while the run was still going
    assert _comparable(result.to_dict()) == _comparable(alone)


@pytest.mark.skipif(not HAS_UVLOOP, reason="uvloop is not installed (the live extra)")
def test_the_default_loop_and_uvloop_give_the_same_run_event_for_event() -> None:
    outcomes = []
    for loop in ("asyncio", "uvloop"):
        trace = EventTrace()
        result = Run(_config(), trace=trace).execute(loop)
        outcomes.append((trace.count, trace.digest(), _comparable(result.to_dict())))
    assert outcomes[0] == outcomes[1] and outcomes[0][0] > 10_000


# -- what the source holds ---------------------------------------------------------------------
def _modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text())) for path in sorted(PACKAGE.rglob("*.py"))]


def _asyncio_private_names() -> set[str]:
    """Private attribute names of asyncio's (and uvloop's) loops, futures, handles, transports,
    streams and queues."""
    import asyncio.base_events
    import asyncio.selector_events
    import asyncio.sslproto

    classes: list[type] = [asyncio.base_events.BaseEventLoop, asyncio.selector_events.BaseSelectorEventLoop,
                           asyncio.Future, asyncio.Task, asyncio.Handle, asyncio.TimerHandle, asyncio.StreamReader,
                           asyncio.StreamWriter, asyncio.Queue, asyncio.Event, asyncio.base_events.Server,
                           asyncio.selector_events._SelectorDatagramTransport,  # type: ignore[attr-defined]
                           asyncio.selector_events._SelectorSocketTransport]  # type: ignore[attr-defined]
    names: set[str] = set()
    for cls in classes:
        names |= {n for n in dir(cls) if n.startswith("_") and not n.startswith("__")}
        for klass in cls.__mro__:
            names |= {n for n in getattr(klass, "__slots__", ()) if n.startswith("_") and not n.startswith("__")}
    loop = asyncio.new_event_loop()
    try:
        names |= {n for n in vars(loop) if n.startswith("_") and not n.startswith("__")}
    finally:
        loop.close()
    return names


def test_no_module_touches_a_private_attribute_of_an_asyncio_object() -> None:
    """No `x._name` where `_name` is private to asyncio's loops, futures, handles, transports,
    streams or queues, on anything but the module's own `self` (the virtual clock used to read
    and write the loop's `_scheduled`, `_ready`, `_selector`, `_when`, `_clock_resolution`)."""
    private = _asyncio_private_names()
    assert {"_ready", "_scheduled", "_selector", "_when", "_clock_resolution", "_run_once"} <= private
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any("EventLoop" in ast.unparse(b) for b in node.bases):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.name} subclasses an event loop")
            if isinstance(node, ast.Attribute) and node.attr in private:
                owner = node.value
                if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                    continue
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: .{node.attr}")
    assert found == []


def test_the_loop_is_made_run_and_closed_in_one_place_and_runs_are_timed_in_one() -> None:
    """Loop set-up, GC tuning, timing and close are `nodes.session`'s alone (issue 56: they were
    written four times)."""
    owners = {PACKAGE / "nodes" / "session.py", PACKAGE / "nodes" / "gc_tuning.py"}
    loop_methods = {"run_until_complete", "run_forever", "new_event_loop", "shutdown_asyncgens",
                    "shutdown_default_executor"}
    found = []
    for path, tree in _modules():
        if path in owners:
            continue
        for node in ast.walk(tree):
            name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
            asyncio_runner = isinstance(node, ast.Attribute) and node.attr in ("run", "Runner") \
                and isinstance(node.value, ast.Name) and node.value.id == "asyncio"
            if name in loop_methods or name == "tuned_gc" or asyncio_runner:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {name}")
    assert found == []


def test_one_periodic_driver_one_event_bus_and_no_runtime_typed_any() -> None:
    """One periodic-driver class, one publish/subscribe (others delegate to an `EventBus`), and
    observers, the set-up and live code typed against the port, never `runtime: Any`."""
    drivers, buses, untyped = [], [], []
    for path, tree in _modules():
        where = path.relative_to(PACKAGE)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and "Protocol" not in [ast.unparse(b) for b in node.bases]:
                methods = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
                if {"arm", "fire"} <= set(methods) or "Periodic" in node.name:
                    drivers.append(f"{where}:{node.name}")
                if "publish" in methods:
                    calls = {c.func.attr for c in ast.walk(methods["publish"]) if isinstance(c, ast.Call)
                             and isinstance(c.func, ast.Attribute)}
                    if node.name != "EventBus" and "publish" not in calls:
                        buses.append(f"{where}:{node.name}")
            if isinstance(node, ast.arg) and node.arg == "runtime" and node.annotation is not None \
                    and "Any" in ast.unparse(node.annotation):
                untyped.append(f"{where}:{node.lineno}")
    assert drivers == ["nodes/runtime.py:Periodic"]
    assert buses == []
    assert untyped == []
