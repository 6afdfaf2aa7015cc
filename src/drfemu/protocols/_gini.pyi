"""Types of `src/native/_gini.c`; the Python reference is `protocols.pdgdrf.lowers_gini_python`
(`fsum` is `math.fsum`'s)."""

from collections.abc import Iterable

def fsum(values: Iterable[float]) -> float: ...
def lowers_gini(share: float, task_share: float, neighbour_utilities: Iterable[float]) -> bool: ...
