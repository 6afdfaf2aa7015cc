"""The gradient's preference as the thesis defines it (eq. 3.9), the oracle `rank` is checked against.

Not the package's code: `drfemu.overlay.gradient.rank_python` (and the compiled kernel that
must equal it) is the one implementation of the rank; this is its definition, written as
plainly as the equation, for the tests alone.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping


def select_best(me: int, my_utility: float, candidates: Mapping[int, float], size: int) -> list[int]:
    """The `size` candidates `me` prefers, most preferred first (eq. 3.9 over the total order
    `(utility, node)`; `me` excluded): any node above `me` beats any below; on one side the nearer
    in the order wins."""
    ordered = sorted((u, node) for node, u in candidates.items() if node != me)
    cut = bisect_right(ordered, (my_utility, me))
    above, below = ordered[cut:], ordered[:cut][::-1]
    return [node for _, node in (above + below)[:size]]
