"""Centre ties (`--centre-ties`): the id-ordered single centre and Algorithm 6's literal test."""

from __future__ import annotations

import random

import pytest

from drfemu.kernel.messages import Proposal
from drfemu.overlay.gradient import Gradient
from drfemu.overlay.kompics_gradient import KompicsGradient
from drfemu.protocols.dgdrf import DgdrfRule
from drfemu.protocols.pdgdrf import PdgdrfRule
from drfemu.schema.params import run_params
from tests.test_distributed_roles import node, request


@pytest.mark.parametrize("variant", [Gradient, KompicsGradient])
def test_only_the_higher_id_of_a_tie_is_the_centre_by_id_but_both_are_under_strict(variant: type) -> None:
    # Homes 3 and 8 both have utility -0.1 (their lowest users have equal shares); 5 is lower.
    views = {}
    for me, others in ((3, [(-0.1, 8, 1.0), (-0.3, 5, 1.0)]), (8, [(-0.1, 3, 1.0), (-0.3, 5, 1.0)])):
        g = variant(me, 2, random.Random(0), -0.1)
        g.offer(others)
        views[me] = g
    assert not views[3].believes_centre() and views[8].believes_centre()
    assert views[3].believes_centre(strict=True) and views[8].believes_centre(strict=True)


@pytest.mark.parametrize("variant", [Gradient, KompicsGradient])
def test_a_neighbour_strictly_above_denies_the_centre_under_both_rules(variant: type) -> None:
    g = variant(9, 2, random.Random(0), -0.2)
    g.offer([(-0.1, 1, 1.0), (-0.2, 4, 1.0)])
    assert not g.believes_centre() and not g.believes_centre(strict=True)


def test_pdgdrf_tied_homes_both_allocate_under_strict_and_one_under_id() -> None:
    allocated = {}
    for ties in ("strict", "id"):
        for sid, other in ((3, 8), (8, 3)):
            s = node(PdgdrfRule(ties), sid=sid, homed={100 + sid: 0.1}, view=2)  # each sees the top
            s.receive(request(100 + sid, 0, 0.2), 0.0)
            s.gradient.offer([(-0.2, other, 0.0)])
            s.take_outbox()
            s.on_tick(0.1)
            allocated[(ties, sid)] = any(isinstance(m, Proposal) for _, m in s.take_outbox())
    assert allocated == {("strict", 3): True, ("strict", 8): True, ("id", 3): False, ("id", 8): True}


def test_each_gradient_protocol_has_its_own_default_and_an_explicit_choice_wins() -> None:
    assert run_params(protocol="pdgdrf").value("centre_ties") == "strict"
    assert run_params(protocol="dgdrf").value("centre_ties") == "id"
    assert run_params(protocol="pdgdrf", centre_ties="id").value("centre_ties") == "id"
    assert DgdrfRule().ties == "id" and PdgdrfRule().ties == "strict"


def test_an_unknown_tie_rule_is_one_line_naming_the_choices() -> None:
    with pytest.raises(ValueError, match=r"^--centre-ties must be one of id, strict, literal, got 'both'$"):
        run_params(protocol="pdgdrf", centre_ties="both")


def test_a_home_whose_view_holds_only_ties_above_it_is_not_the_centre_unless_literal() -> None:
    """A group of more than P tied homes: all but its top P see nothing strictly above. Only
    under `literal` do they believe they are the centre (issue 38)."""
    for ties, expected in (("strict", False), ("literal", True), ("id", False)):
        s = node(PdgdrfRule(ties), sid=3, homed={103: 0.1}, view=2)
        s.receive(request(103, 0, 0.2), 0.0)
        s.gradient.offer([(-0.2, 5, 0.0), (-0.2, 8, 0.0), (-0.1, 9, 0.0)])  # 5 and 8 tie above 3; 9 is higher
        s.take_outbox()
        s.on_tick(0.1)
        assert any(isinstance(m, Proposal) for _, m in s.take_outbox()) is expected, ties
