"""A hand-built TierSpec is held to the rules of --tier NAME=SIZE text (docs/semantics.md §16;
pcs/engine/tiercheck.py)."""
from __future__ import annotations

import numpy as np
import pytest

import pcs
from pcs.engine.api import TierSpec
from pcs.errors import UserError


@pytest.mark.parametrize("spec, says", [
    (TierSpec("gpu", capacity_bytes=float("nan")), r"tier 'gpu': capacity_bytes must be an integer, got nan"),
    (TierSpec("gpu", capacity_bytes=10**30), r"tier 'gpu': capacity_bytes must be in \[0, 2\^63 - 1\], got 10{30}"),
    (TierSpec("gpu", capacity_blocks=10**30), r"tier 'gpu': capacity_blocks must be in \[0, 2\^63 - 1\]"),
    (TierSpec("gpu", capacity_bytes="10GB"), r"tier 'gpu': capacity_bytes must be an integer, got '10GB'"),
    (TierSpec("gpu", capacity_blocks=-5), r"tier 'gpu': capacity_blocks must be >= 0, got -5"),
    (TierSpec("gpu", capacity_bytes=-1), r"tier 'gpu': capacity_bytes must be >= 0, got -1"),
    (TierSpec("gpu", capacity_blocks=10.7), r"tier 'gpu': capacity_blocks must be an integer, got 10.7"),
    (TierSpec("gpu", capacity_blocks=True), r"tier 'gpu': capacity_blocks must be an integer, got True"),
    (TierSpec("gpu", capacity_bytes=10**12, capacity_blocks=10), r"tier 'gpu': give capacity_bytes or "
                                                                  r"capacity_blocks, not both"),
    (TierSpec("gpu", capacity_bytes=1000, capacity_blocks=1), r"not both \(1000 B and 1 block\)$"),
    (TierSpec(None, capacity_blocks=10), r"TierSpec name must be a non-empty str, got None"),
    (TierSpec(5, capacity_blocks=10), r"TierSpec name must be a non-empty str, got 5"),
    (TierSpec("", capacity_blocks=10), r"TierSpec name must be a non-empty str, got ''"),
    (TierSpec("gpu", capacity_blocks=10, policy=b"lru"), r"tier 'gpu': policy must be a policy name"),
])
def test_bad_tierspec_field_is_refused_naming_tier_and_field(spec, says):
    with pytest.raises(UserError, match=says):
        pcs.replay(None, tiers=[spec])


def test_a_link_on_the_tierspec_and_in_links_is_refused():
    cpu = TierSpec("cpu", capacity_blocks=100, link="1GB/s")
    with pytest.raises(UserError, match=r"tier 'cpu': a link is given twice \(TierSpec.link '1GB/s' and "
                                        r"links\['cpu'\] '100GB/s'\)"):
        pcs.replay(None, tiers=["gpu=10blocks", cpu], links={"cpu": "100GB/s"})


def test_a_good_tierspec_equals_its_string():
    # TierSpec("gpu", capacity_blocks=np.int64(10)) and "gpu=10blocks": the same tier, the same replay
    by_spec = pcs.replay(None, tiers=[TierSpec("gpu", capacity_blocks=np.int64(10))], timing="sequential")
    by_text = pcs.replay(None, tiers=["gpu=10blocks"], timing="sequential")
    assert by_spec.summary.hit_ratio == by_text.summary.hit_ratio
    assert [t.capacity_blocks for t in by_spec.summary.tiers] == [10]
