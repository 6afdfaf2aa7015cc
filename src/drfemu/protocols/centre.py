"""Who is the gradient's centre when utilities tie (`--centre-ties`; thesis eq. 3.11, Algorithm 6).

Users with identical task shares are common in the Google trace, and they rise in lockstep,
so homes with equal utility are the rule at the top of the gradient, not the exception.

- `id`: the gradient's total order breaks ties by node id (SPEC §4), so exactly one home at
  the top believes it is the centre. This is eq. 3.11 (the centre's utility is *strictly*
  above every neighbour's) made decidable: under eq. 3.11 taken literally no home of a tie
  would ever allocate. DGDRF's default: its point is that only the one correct user allocates
  (0 errors), which its validation handshake checks against a single centre.
- `strict`: Algorithm 6's `ISCENTERNODE` for homes that can know the answer — a home is the
  centre when no neighbour's utility is strictly above its own *and* its view reaches past
  the nodes above it (`sees_top`), so every home tied at the top allocates in the same tick.
  PDGDRF's default: Algorithm 6 is its definition, and the thesis drops DGDRF's validation
  there precisely "to see the potential difference in allowing a non-perfect gradient centre".
- `literal`: Algorithm 6's test with nothing added, as issues 14–37 ran it for `strict`. A
  view holds the `P` nodes just above its home, so in any group of more than `P` tied homes,
  *wherever it sits in the gradient*, all but the group's top `P` see only ties and allocate
  as centres. Issue 38 measured it on Google 100 × 60 and 100 × 120 at P = 2 (seeds 1–5): 23–52 %
  errors and 0.87–0.97 of DRF's minimum share; with `strict` as above 3–11 % and 0.97–1.02.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from drfemu.kernel.params import Kind, Param
from drfemu.protocols.rule import GradientView

__all__ = ["CENTRE_TIES", "CentreTies", "is_centre", "sees_top"]


class CentreTies(StrEnum):
    ID = "id"
    STRICT = "strict"
    LITERAL = "literal"


CENTRE_TIES = Param(
    "centre_ties", Kind.TEXT, CentreTies.ID.value,
    "Gradient centre among equal utilities: id (the higher id alone), strict (every tied home that sees the top) or "
    "literal (Algorithm 6 verbatim: every home that sees no neighbour strictly above).",
    choices=tuple(CentreTies), echo="centre_ties")


def sees_top(me: int, utility: float, view: Sequence[tuple[float, int, float]], size: int) -> bool:
    """Does a home with this gradient view know every node above it? Yes when the view is not
    full or holds a node below it: a view is filled with the nodes just above its home first."""
    return len(view) < size or any((u, n) < (utility, me) for u, n, _ in view)


def is_centre(gradient: GradientView, ties: CentreTies) -> bool:
    """Does this home believe it is the gradient's centre, under the tie rule `ties`?"""
    if ties is CentreTies.ID:
        return gradient.believes_centre()
    if not gradient.believes_centre(strict=True):
        return False
    return ties is CentreTies.LITERAL or sees_top(gradient.me, gradient.utility, gradient.view, gradient.size)
