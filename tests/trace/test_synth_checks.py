"""``pcs trace synth`` and :class:`SynthSpec` refuse every number outside its range, NaN included (``--mix
chat=nan`` wrote an empty trace with exit 0, because NaN fails every ``<`` test).
"""
from __future__ import annotations

import dataclasses
import math

import pytest

from pcs.trace.request import MAX_BLOCK_SIZE
from pcs.trace.synth import SynthSpec, synth_requests
from tests.helpers import assert_one_line_error, invoke

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("mix, says", [
    ("chat=nan", "the share of chat must be a finite number >= 0, got nan"),
    ("chat=nan,agent=1,oneoff=1", "the share of chat must be a finite number >= 0, got nan"),
    ("chat=1,agent=inf", "the share of agent must be a finite number >= 0, got inf"),
    ("chat=1,oneoff=-0.5", "the share of oneoff must be a finite number >= 0, got -0.5"),
    ("chat=1,chat=2", "chat is given twice"),
    ("chat=0,agent=0", "positive, finite sum"),
    ("chat=1e308,agent=1e308", "positive, finite sum"),   # each finite, the sum overflows to inf
])
def test_cli_mix_refused(tmp_path, mix, says):
    out = tmp_path / "s.jsonl"
    r = invoke("trace", "synth", out, "--requests", "50", "--mix", mix, "--seed", "3", "--quiet")
    assert_one_line_error(r, "--mix", says)
    assert not out.exists()


def test_cli_mix_normalised(tmp_path):
    # chat=1,agent=1 -> shares 0.5, 0.5, 0 (oneoff omitted = 0): every request chat or agent, none one-off
    out = tmp_path / "s.jsonl"
    assert invoke("trace", "synth", out, "--requests", "50", "--mix", "chat=1,agent=1", "--quiet").exit_code == 0
    assert len(out.read_text().splitlines()) == 50


@pytest.mark.parametrize("field, value", [
    ("mix", (NAN, 0.5, 0.5)), ("mix", (1.0, NAN, 0.0)), ("mix", (INF, 0.0, 0.0)), ("mix", (1.0, 0.0)),
    ("mix", ("1", 0.0, 0.0)), ("mix", (True, 0.0, 0.0)),
    ("sigma", NAN), ("first_sigma", INF), ("user_sigma", NAN), ("think_sigma", NAN),  # before: NaN passed min() < 0
    ("rate_rps", INF), ("rate_rps", "6"), ("chat_turns_mean", NAN), ("agent_step_s", INF),
    ("length_scale", NAN), ("length_scale", INF),
    ("block_size", 0), ("block_size", MAX_BLOCK_SIZE + 1), ("block_size", 16.0),
    ("vocab", 0), ("vocab", 2**32 + 1),                  # token ids are uint32: [0, vocab) with vocab <= 2^32
    ("num_system_prompts", 0), ("num_agent_prefixes", 0),   # a zipf pick from an empty pool
    ("num_requests", -1), ("num_requests", 2.5), ("num_requests", True), ("seed", -1),
    ("chat_first_median_tokens", 0), ("oneoff_median_tokens", 1.5), ("max_context_tokens", 0),
])
def test_spec_refuses_out_of_range_numbers(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(SynthSpec(), **{field: value})


def test_spec_boundaries_accepted():
    # the smallest valid values: a one-token vocabulary (every id 0), one prompt per pool, block size 1,
    # zero spread (every length is its median x scale), pure one-off mix
    spec = SynthSpec(num_requests=3, seed=1, mix=(0.0, 0.0, 1.0), vocab=1, num_system_prompts=1, block_size=1,
                     sigma=0.0, first_sigma=0.0, user_sigma=0.0, think_sigma=0.0, length_scale=0.01)
    reqs = list(synth_requests(spec))
    # one-off prompts: median 3000 x 0.01 = 30 tokens exactly (sigma 0), all ids 0; block size 1 -> 30 blocks
    assert [r.token_ids.size for r in reqs] == [30, 30, 30] and all(r.kind == "oneoff" for r in reqs)
    assert all(int(r.token_ids.max()) == 0 and r.block_hashes.size == 30 for r in reqs)
    assert math.isclose(sum(spec.mix), 1.0)
