"""The virtual-clock loop: time jumps, never drifts, and idleness is an error."""

from __future__ import annotations

import asyncio
import selectors

import pytest

from drfemu.nodes.clock import VirtualClockIdle, VirtualClockLoop, run_virtual


def test_sleep_jumps_virtual_time_without_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float | None] = []
    real_select = selectors.DefaultSelector.select

    def recording_select(self: selectors.BaseSelector, timeout: float | None = None) -> list[object]:
        waits.append(timeout)  # what the loop really waited on the operating system
        return real_select(self, timeout)  # type: ignore[arg-type]

    monkeypatch.setattr(selectors.DefaultSelector, "select", recording_select)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(3600)
        return loop.time()

    assert run_virtual(main()) == 3600
    assert waits and all(timeout == 0 for timeout in waits)  # the hour was a jump, never a real wait


def test_timers_fire_exactly_in_order() -> None:
    loop = VirtualClockLoop()
    fired: list[tuple[str, float]] = []
    try:
        for name, at in (("c", 0.3), ("a", 0.1), ("b", 0.2)):
            loop.call_at(at, lambda n=name: fired.append((n, loop.time())))
        done = loop.create_future()
        loop.call_at(0.4, done.set_result, None)
        loop.run_until_complete(done)
    finally:
        loop.close()
    assert fired == [("a", 0.1), ("b", 0.2), ("c", 0.3)]


def test_idle_loop_raises_instead_of_hanging() -> None:
    async def main() -> None:
        await asyncio.get_running_loop().create_future()  # nothing will ever resolve it

    with pytest.raises(VirtualClockIdle):
        run_virtual(main())
