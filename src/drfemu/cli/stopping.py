"""How a command stops on a signal.

SIGINT (Ctrl-C), SIGTERM (`kill`, `timeout`, batch schedulers) and SIGHUP (a closed terminal)
are handled alike: the first raises `KeyboardInterrupt` in the main thread, so every command's
interrupt path runs (pools killed, tables rewritten from the records on disk, one line on how to
resume); later ones are noted but let that cleanup finish. The exit status is 128 + the signal's
number: 130, 143 or 129.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import typer

from drfemu.tools.pools import end_processes, end_resource_tracker, resource_tracker_pid

STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_received: list[int] = []


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    if len(_received) == 1:
        raise KeyboardInterrupt


def stopped() -> bool:
    """Whether a stopping signal has arrived since `signals_stop_the_command` began."""
    return bool(_received)


def stop_status() -> int:
    """The exit status of a command stopped by a signal: 128 + its number (SIGINT if none was
    seen: typer's own answer to an interrupt)."""
    return 128 + (_received[0] if _received else signal.SIGINT)


def stop_reason() -> str:
    """`interrupted` for SIGINT, else `stopped by SIGTERM` (or SIGHUP)."""
    number = _received[0] if _received else signal.SIGINT
    return "interrupted" if number == signal.SIGINT else f"stopped by {signal.Signals(number).name}"


@contextmanager
def resumable(kept: str | Callable[[], str]) -> Iterator[None]:
    """Around a resumable command's work: a stop (signal or Ctrl-C) ends the command with one line
    — how it stopped, what was `kept` (text, or a function giving it then) and that the same
    command resumes — and the signal's exit status."""
    try:
        yield
    except KeyboardInterrupt:
        said = kept() if callable(kept) else kept
        print(f"drfemu: {stop_reason()}; {said}; run the same command to resume", file=sys.stderr)
        raise typer.Exit(stop_status()) from None


@contextmanager
def signals_stop_the_command() -> Iterator[None]:
    """Install the handlers for the block; when it ends after a signal, kill and reap every child
    process still running (pool workers included) before returning. However it ends, a resource
    tracker the block started (for a spawned pool) is stopped, so nothing of the command
    outlives it."""
    _received.clear()
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous: dict[int, Any] = {number: signal.signal(number, _on_signal) for number in STOPPING_SIGNALS}
    tracker = resource_tracker_pid()
    try:
        yield
    finally:
        if _received:
            end_processes(set(multiprocessing.active_children()))
        end_resource_tracker(tracker)
        for number, handler in previous.items():
            signal.signal(number, handler)
