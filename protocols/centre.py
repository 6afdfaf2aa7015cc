"""Who is the gradient's centre when utilities tie (`--centre-ties`; thesis eq. 3.11, Algorithm 6).

Users with identical task shares are common in the Google trace, and they rise in lockstep,
so homes with equal utility are the rule at the top of the gradient, not the exception.

- `id`: the gradient's total order breaks ties by node id (SPEC §4), so exactly one home at
  the top believes it is the centre. This is eq. 3.11 (the centre's utility is *strictly*
  above every neighbour's) made decidable: under eq. 3.11 taken literally no home of a tie
  would ever allocate. DGDRF's default: its point is that only the one correct user allocates
  (0 errors), which its validation handshake checks against a single centre.
- `strict`: Algorithm 6's `ISCENTERNODE`, literally — a home is the centre unless some
  neighbour's utility is strictly above its own, so every home tied at the top allocates in
  the same tick. PDGDRF's default: Algorithm 6 is its definition, and the thesis drops
  DGDRF's validation there precisely "to see the potential difference in allowing a
  non-perfect gradient center".
"""

from __future__ import annotations

from enum import StrEnum

from drfemu.protocols.params import Kind, Param

__all__ = ["CENTRE_TIES", "CentreTies"]


class CentreTies(StrEnum):
    ID = "id"
    STRICT = "strict"


CENTRE_TIES = Param(
    "centre_ties", Kind.TEXT, CentreTies.ID.value,
    "Gradient centre among equal utilities: id (the higher id alone) or strict (Algorithm 6: every tied home).",
    choices=tuple(CentreTies), echo="centre_ties")
