"""The coordinator's merge of the workers' event streams (`live.merge`)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from drfemu.live.merge import EventMerge


def test_an_event_waits_until_every_worker_is_heard_after_it() -> None:
    merge = EventMerge([0, 1])
    merge.push(1, 0.3, "allocated")  # worker 1's allocation of a task worker 0 submitted at 0.2
    assert merge.pop_ready() == []  # worker 0 not heard yet: its submission may be on its way
    merge.push(0, 0.2, "submitted")
    assert merge.pop_ready() == []  # horizon 0.2: nothing is before it yet
    merge.clock(0, 0.4)
    assert merge.pop_ready() == ["submitted"]  # horizon 0.3: an event at 0.3 may still come from 0
    merge.clock(1, 0.5)
    assert merge.pop_ready() == ["allocated"]
    assert merge.out_of_order == 1


def test_equal_times_keep_their_arrival_order() -> None:
    merge = EventMerge([0, 1])
    for name in "abc":
        merge.push(0, 1.0, name)
    merge.push(1, 1.0, "d")
    merge.clock(0, 2.0)
    merge.clock(1, 2.0)
    assert merge.pop_through(1.0) == ["a", "b", "c", "d"]
    assert merge.out_of_order == 0


@given(st.lists(st.lists(st.floats(0, 100, allow_nan=False), max_size=30), min_size=1, max_size=5),
       st.integers(0, 2**32 - 1))
def test_streams_interleaved_in_any_way_come_out_in_time_order(streams: list[list[float]], seed: int) -> None:
    """Each worker's stream is in time order; the frames of different workers interleave at
    random. Whatever has been released is sorted, and with every worker heard at the end, all
    is released."""
    streams = [sorted(times) for times in streams]
    merge = EventMerge(range(len(streams)))
    cursors = [0] * len(streams)
    released: list[tuple[float, int, int]] = []
    rng = random.Random(seed)
    while any(c < len(s) for c, s in zip(cursors, streams)):
        worker = rng.choice([w for w, s in enumerate(streams) if cursors[w] < len(s)])
        time = streams[worker][cursors[worker]]
        merge.push(worker, time, (time, worker, cursors[worker]))
        cursors[worker] += 1
        released += merge.pop_ready()
    for worker in range(len(streams)):
        merge.clock(worker, 1000.0)
    released += merge.pop_ready()
    assert [r[0] for r in released] == sorted(r[0] for r in released)
    assert sorted(released) == sorted((t, w, k) for w, s in enumerate(streams) for k, t in enumerate(s))
