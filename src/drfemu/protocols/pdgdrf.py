"""PDGDRF (thesis §4.5, Algorithm 6, eq. 4.7; SPEC §4 `pdgdrf`).

As DGDRF without the validation handshake: each tick a server whose lowest user has a task
waiting allocates for that user if it sees no neighbour above itself (eq. 3.11), or else if
doing so lowers the Gini coefficient of its own lowest share together with its neighbours'
finite `−U` values as its gradient view last heard them (eq. 4.7). The Gini is the population
Gini of `kernel.fairness.gini` (SPEC §4; all zeros count as 0), so at the start, with
every share at 0, only the centre allocates — or, with centre ties `strict` (Algorithm 6's
`ISCENTERNODE` for homes that see the top, this protocol's default; `protocols.centre`), every
home tied at the top. Gradient descriptors expire sooner than in other protocols
(`STALE_AFTER_PERIODS`).

The test is compiled (`src/native/_gini.c`) where the extension was built; `lowers_gini_python`
is its reference, and the two give the same answer on the same floats. `gini_test()` picks one
when the first rule is built (not on import, so the registry loads no C extension).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Iterable
from operator import itemgetter

from drfemu.kernel.compiled import compiled_module
from drfemu.kernel.fairness import gini_of_sorted
from drfemu.protocols.centre import CENTRE_TIES, CentreTies, is_centre
from drfemu.protocols.rule import Server, ServerRule
from drfemu.protocols.spec import Gateway, GradientUse, ProtocolSpec

__all__ = ["PDGDRF", "GiniTest", "PdgdrfRule", "gini_test", "gini_test_implementation", "lowers_gini_python"]

INF = float("inf")
UTILITY = itemgetter(0)

STALE_AFTER_PERIODS = 5
"""PDGDRF's default `--max-age` (gradient descriptors expire after 5 exchange periods, where the
other protocols keep max(20, 5·P)). Decision, measured (issue 38, Google 100 × 60 at P = 2,
seeds 1–5): a home hands the centre over only when its successor's view stops showing it
above, and a stale descriptor of a former centre, still showing its old, lower share, is
dropped only by a fresher copy or by expiry; with expiry after 5 periods the run-time over
DRF's fell from 1.96–2.44 to 1.64–2.08, and the minimum share stayed at 0.972–1.016 of DRF's."""


def lowers_gini_python(share: float, task_share: float, neighbour_utilities: Iterable[float]) -> bool:
    """Algorithm 6's test: does `share → share + task_share` lower the Gini of
    `[share] + [−u for every finite neighbour utility u]`?

    Both Gini values are `kernel.fairness.gini`'s, float for float: the neighbours' values
    are sorted and checked once and each of the two shares is inserted in order."""
    others = sorted([-u for u in neighbour_utilities if -INF < u < INF])
    before, after = float(share), float(share + task_share)
    if before != before or after != after or min(before, after) < 0 or (others and others[0] < 0):
        raise ValueError("fairness metrics need non-negative numbers")
    grown = others.copy()
    insort(others, before)
    insort(grown, after)
    return gini_of_sorted(grown) < gini_of_sorted(others)


GiniTest = Callable[[float, float, Iterable[float]], bool]
_chosen: list[GiniTest] = []


def gini_test() -> GiniTest:
    """The Gini test of this process: the C one where it was built, else `lowers_gini_python`."""
    if not _chosen:
        if compiled_module("drfemu.protocols._gini") is not None:  # it hands what it cannot decide to the reference
            from drfemu.protocols._gini import lowers_gini
            _chosen.append(lowers_gini)
        else:
            _chosen.append(lowers_gini_python)
    return _chosen[0]


def gini_test_implementation() -> str:
    """"C" or "Python": which Gini test `gini_test` gives."""
    return "Python" if gini_test() is lowers_gini_python else "C"


class PdgdrfRule(ServerRule):
    """A PDGDRF server's rule."""

    PARAMS = (CENTRE_TIES,)
    DEFAULTS = {"centre_ties": CentreTies.STRICT.value, "max_age": STALE_AFTER_PERIODS}

    __slots__ = ("by_centre", "by_gini", "lowers_gini", "ties")

    def __init__(self, centre_ties: str = CentreTies.STRICT) -> None:
        self.ties = CentreTies(centre_ties)
        self.lowers_gini = gini_test()
        self.by_centre = 0  # allocations decided as the centre
        self.by_gini = 0  # allocations decided by the Gini rule

    def counters(self) -> dict[str, int]:
        return {"allocations_as_centre": self.by_centre, "allocations_by_gini": self.by_gini}

    def on_tick(self, server: Server, now: float) -> None:
        lowest = server.homes.lowest()
        if lowest is None or not lowest[1].idle():
            return
        user, record = lowest
        gradient = server.gradient
        if is_centre(gradient, self.ties):
            self.by_centre += 1
        elif self.lowers_gini(record.share, record.task_share, map(UTILITY, gradient.view)):
            self.by_gini += 1
        else:
            return
        server.allocate(user, record)


PDGDRF = ProtocolSpec("pdgdrf", "the gradient centre, and any server whose allocation lowers the local Gini",
                      Gateway.HOME, server_rule=PdgdrfRule, gradient=GradientUse.LIVE)
