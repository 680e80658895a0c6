"""``EvictionPolicy.reuse_blind``: a policy that claims it must behave the same whatever ``reused`` says.

The tier merges runs of ``add`` calls with different flags into one call for
such policies (``Tier.insert``), which is only exact if the flag is ignored.
Reference: a twin of the policy fed the same operations with ``reused=False``
everywhere; the two must agree on ``order()`` and on every ``evict``.
"""
from __future__ import annotations

import itertools
import random

import pytest

from pcs.cache.policies import POLICY_NAMES, get_policy, make_policy

BLIND = [n for n in POLICY_NAMES if get_policy(n).reuse_blind]


def test_lru_and_fifo_claim_it_protected_does_not():
    assert {"lru", "fifo"} <= set(BLIND)
    assert "protected" not in BLIND     # reused=True promotes to the protected segment


def _same(a, b, method, *args):
    """One call on the policy (a) and its twin (b) with the same arguments; their answers must agree."""
    va, vb = getattr(a, method)(*args), getattr(b, method)(*args)
    assert va == vb
    return va


@pytest.mark.parametrize("name", BLIND)
@pytest.mark.parametrize("seed", range(5))
def test_flag_changes_nothing(name, seed):
    rng = random.Random(seed)
    a, b = make_policy(name, 40), make_policy(name, 40)
    held: list[int] = []
    fresh = itertools.count()
    for _ in range(300):
        op = rng.random()
        if op < 0.4:
            keys = [next(fresh) for _ in range(rng.randint(1, 5))]
            a.add(keys, rng.random() < 0.5)
            b.add(keys, False)
            held += keys
        elif op < 0.6 and held:
            keys = rng.sample(held, rng.randint(1, min(3, len(held))))
            _same(a, b, "remove", keys)
            held = [k for k in held if k not in keys]
            if rng.random() < 0.5:       # pinned keys come back, as reused hits
                a.add(keys, True)
                b.add(keys, False)
                held += keys
        elif op < 0.8 and held:
            _same(a, b, "touch", rng.sample(held, rng.randint(1, min(3, len(held)))))
        else:
            victims = _same(a, b, "evict", rng.randint(0, 4)) or ()
            held = [k for k in held if k not in victims]
        assert a.order() == b.order()
