"""The Kompics Toolbox gradient (`--gradient kompics`), checked against what its code does."""

from __future__ import annotations

import random
from collections import Counter

from drfemu.overlay.kompics_gradient import KompicsGradient, preference_key, softmax_index
from drfemu.overlay.messages import GradientReply, GradientShuffle


def test_preference_puts_equals_first_then_the_closest_above_then_the_closest_below() -> None:
    candidates = [(-0.5, 1, 0.0), (-0.1, 2, 0.0), (-0.3, 3, 0.0), (-0.2, 4, 0.0), (-0.4, 5, 0.0), (-0.3, 6, 0.0)]
    ranked = [d[1] for d in sorted(candidates, key=lambda d: preference_key(-0.3, d))]
    assert ranked == [3, 6, 4, 2, 5, 1]


def test_softmax_at_a_low_temperature_picks_the_first_and_at_a_high_one_is_almost_uniform() -> None:
    rng = random.Random(3)
    assert {softmax_index(5, rng, 0.01) for _ in range(200)} == {0}
    counts = Counter(softmax_index(5, rng, 500.0) for _ in range(5000))
    assert set(counts) == set(range(5)) and max(counts.values()) / min(counts.values()) < 1.2


def test_the_view_keeps_the_p_most_preferred_and_the_younger_copy() -> None:
    g = KompicsGradient(0, 2, random.Random(0), -0.3)
    g.offer([(-0.1, 1, 5.0), (-0.2, 2, 5.0), (-0.5, 3, 5.0)])
    assert [d[1] for d in g.view] == [2, 1]
    g.offer([(-0.25, 2, 4.0)])  # older: ignored
    assert g.view[0] == (-0.2, 2, 5.0)


def test_a_merge_drops_only_the_single_oldest_entry_past_the_threshold() -> None:
    g = KompicsGradient(0, 4, random.Random(0), -0.3, max_age=10.0)
    g.answer(GradientShuffle(((-0.4, 9, 20.0), (-0.1, 1, 1.0), (-0.2, 2, 2.0))), now=20.0)
    assert g.members() == {9, 2}  # 1 (age 19) dropped; 2 (age 18) survives this merge
    g.offer([])
    assert g.members() == {9}


def test_an_exchange_sends_what_the_partner_prefers_and_a_silent_partner_is_dropped() -> None:
    g = KompicsGradient(0, 4, random.Random(0), -0.3, temperature=0.01, shuffle_size=2)
    g.offer([(-0.2, 1, 0.0), (-0.6, 2, 0.0), (-0.5, 3, 0.0), (-0.1, 4, 0.0)])
    partner, shuffle = g.initiate(1.0)
    assert partner == 1  # the most preferred: the closest above
    assert shuffle.descriptors[0] == (-0.3, 0, 1.0)
    assert [d[1] for d in shuffle.descriptors[1:]] == [4, 3]  # for a node at -0.2: above it, then closest below
    g.initiate(2.0)  # 1 never answered
    assert 1 not in g.members() and g.timeouts == 1
    g.complete(GradientReply(((-0.2, 1, 2.5),)))  # its late answer is ignored
    assert 1 not in g.members()
