"""Defaults of ``cosmo`` (seed document 002) that only a behaviour at the default reveals.

Each test leaves the field it pins at its default, so moving that default
(``scripts/mutation.py --behavioural``) fails it."""

from __future__ import annotations

import numpy as np

from tests.policies.test_cosmo import ep, make, node


def test_storyline_promotion_takes_at_most_100_anchors_a_night():
    """002 §Nightly Storyline Promotion: "ORDER BY source_count DESC LIMIT 100". 101 anchors
    pass every gate (five sources on three days, active, first mentioned four days before);
    the one with six sources comes first, and one of the rest waits for another night."""
    pol = make()
    keys = [f"topic{i}.fact" for i in range(101)]
    for j, day in enumerate([0.0, 0.5, 1.0, 2.0, 2.5]):
        pol.ingest([ep(j * 1000 + i, day, k) for i, k in enumerate(keys)], day)
    pol.ingest([ep(9999, 2.6, keys[0])], 2.6)  # one more source: the most
    anchors = [node(pol, k) for k in keys]
    pol.access(np.array(anchors), 3.0)
    got = pol.storyline_candidates(4.0).tolist()
    assert len(got) == 100 and got[0] == anchors[0]
    assert sorted(set(anchors) - set(got)) == [anchors[-1]]  # equal counts: by node order
