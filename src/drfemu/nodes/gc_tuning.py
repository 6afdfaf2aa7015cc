"""Garbage-collector settings for emulation runs.

An emulation allocates millions of short-lived objects (messages, outbox tuples,
descriptors) and keeps a large, slowly changing heap of node state. CPython frees acyclic
garbage at once by reference counting; its cyclic collector only finds cycles, and at
this allocation rate it rescans the whole heap again and again (measured: about a quarter
of a DRF run's time, and 40 % of a 10,000-node overlay run).

Decision: `tuned_gc()` freezes everything allocated during set-up into the permanent
generation and switches the cyclic collector off for the body; the previous state is
restored on exit. This is safe because the runtime and the protocols create no reference
cycles per event — `tests/test_overlay_run.py` checks that the cyclic garbage left by a run
does not grow with its length — so no memory is held back during a run; the few cycles of
set-up (actors that refer to each other) are freed after it. It does not collect first (it
did until issue 57): set-up frees nothing, so that full pass over the set-up heap found no
garbage (0 objects at 10,000 servers) and cost 0.35 s there, growing with the cluster;
garbage the process held before stays frozen with the rest until the run ends.

Set-up itself builds a node, its views and its streams per server, millions of objects of
which none is garbage: with the collector on, each gen-2 pass walks all of them again (at
20,000 servers, 1.2 s of a 7.4 s set-up). `paused_gc()` switches it off while a run is
assembled; `tuned_gc()` then freezes it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc", "tuned_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the body with the cyclic collector off (it collects nothing there), then restore it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def tuned_gc() -> Iterator[None]:
    """Run the body with set-up objects frozen and the cyclic collector off (`paused_gc`)."""
    gc.freeze()
    try:
        with paused_gc():
            yield
    finally:
        gc.unfreeze()
