"""Types of `src/native/_rank.c`; the Python references are `overlay.gradient.rank_python` and
`freshest_python` (same contract, same results)."""

from drfemu.overlay.messages import Descriptor

def rank(me: int, my_utility: float, candidates: list[Descriptor], size: int,
         oldest: float = ...) -> list[Descriptor]: ...
def freshest(candidates: list[Descriptor]) -> list[Descriptor] | None: ...
