"""A policy's options are read from its constructor once and kept (pcs.cache.policies._PARAMS); a replaced
``__init__`` is read again, so the options always follow the constructor the policy has now."""
from __future__ import annotations

import pcs.cache.policies as registry
from pcs.cache.policies import LRUPolicy, make_policies, policy_defaults, policy_options


class _Tmp(LRUPolicy):
    name = "tmp_options"

    def __init__(self, capacity_blocks: int, alpha: float = 0.5) -> None:
        super().__init__(capacity_blocks)
        self.alpha = alpha


def test_options_follow_the_constructor(monkeypatch):
    monkeypatch.setitem(registry._POLICIES, "tmp_options", _Tmp)
    assert policy_options("tmp_options") == ("alpha",) and policy_defaults("tmp_options") == {"alpha": 0.5}
    assert policy_options("tmp_options") == ("alpha",)                      # the kept answer: the same

    def init(self, capacity_blocks: int, beta: int = 3) -> None:
        LRUPolicy.__init__(self, capacity_blocks)
        self.beta = beta

    monkeypatch.setattr(_Tmp, "__init__", init)
    assert policy_options("tmp_options") == ("beta",) and policy_defaults("tmp_options") == {"beta": 3}
    # make_policies routes an option to the tiers whose policy takes it: beta=7 to the tmp tier, none to lru
    gpu, cpu = make_policies(["tmp_options", "lru"], [4, 8], beta=7)
    assert (gpu.beta, type(cpu)) == (7, LRUPolicy)
