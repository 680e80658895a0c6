"""``EvictionPolicy.reuse_blind``: a policy that claims it must behave the same whatever ``reused`` says.

The tier merges runs of ``add`` calls with different flags into one call for
such policies (``Tier.insert``), which is only exact if the flag is ignored.
Reference: a twin of the policy fed the same operations with ``reused=False``
everywhere; the two must agree on ``order()`` and on every ``evict``.
"""
from __future__ import annotations

import random

import pytest

from pcs.cache.policies import POLICY_NAMES, get_policy, make_policy

BLIND = [n for n in POLICY_NAMES if get_policy(n).reuse_blind]


def test_lru_and_fifo_claim_it_protected_does_not():
    assert {"lru", "fifo"} <= set(BLIND)
    assert "protected" not in BLIND     # reused=True promotes to the protected segment


@pytest.mark.parametrize("name", BLIND)
@pytest.mark.parametrize("seed", range(5))
def test_flag_changes_nothing(name, seed):
    rng = random.Random(seed)
    a, b = make_policy(name, 40), make_policy(name, 40)
    held: list[int] = []
    nxt = 0
    for _ in range(300):
        op = rng.random()
        if op < 0.4:
            keys = list(range(nxt, nxt + rng.randint(1, 5)))
            nxt += len(keys)
            flag = rng.random() < 0.5
            a.add(keys, flag)
            b.add(keys, False)
            held += keys
        elif op < 0.6 and held:
            keys = rng.sample(held, rng.randint(1, min(3, len(held))))
            a.remove(keys)
            b.remove(keys)
            held = [k for k in held if k not in keys]
            back = rng.random() < 0.5       # pinned keys come back, as reused hits
            if back:
                a.add(keys, True)
                b.add(keys, False)
                held += keys
        elif op < 0.8 and held:
            keys = rng.sample(held, rng.randint(1, min(3, len(held))))
            a.touch(keys)
            b.touch(keys)
        else:
            n = rng.randint(0, 4)
            va, vb = a.evict(n), b.evict(n)
            assert va == vb
            if va:
                held = [k for k in held if k not in va]
        assert a.order() == b.order()
