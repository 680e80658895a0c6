"""``pcs replay`` / ``pcs compare`` with the step scheduler's options, as a user meets them."""
from __future__ import annotations

import json

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke


def _json(*args):
    r = invoke("replay", SMALL_TRACE, "--quiet", "--format", "json", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_step_is_the_default_and_infinite_the_old_model():
    step, inf = _json(), _json("--compute", "infinite")
    assert step["compute"] == "step" and inf["compute"] == "infinite"
    assert "scheduler" in step and "scheduler" not in inf
    s = step["scheduler"]
    assert (s["max_num_batched_tokens"], s["max_num_seqs"], s["restore_policy"]) == (8192, 1024, "layerwise")
    assert 0 < s["with_cache"]["utilisation"] <= 1 and s["no_cache"]["ttft_s"]["p50"] is not None
    # sequential timing has no compute mode: the default (--compute not given) is accepted; an explicit
    # --compute, step or infinite (either would change nothing), is refused as the other no-op options are
    # (test_options_that_cannot_apply_are_refused)
    assert "scheduler" not in _json("--timing", "sequential")


def test_options_reach_the_summary():
    s = _json("--max-num-batched-tokens", "2048", "--max-num-seqs", "64", "--restore-policy", "best-effort",
              "--restore-timeout", "5ms", "--restore-timeout-per-token", "20us", "--no-restore-fallback",
              "--no-cache-decode-blocks", "--max-preemptions", "2", "--ttft-slo", "1.5s")["scheduler"]
    assert (s["max_num_batched_tokens"], s["max_num_seqs"], s["restore_policy"]) == (2048, 64, "best-effort")
    assert s["restore_timeout_s"] == pytest.approx(0.005) and s["restore_timeout_per_token_s"] == pytest.approx(2e-5)
    assert (s["restore_fallback"], s["cache_decode_blocks"], s["max_preemptions"]) == (False, False, 2)
    assert s["ttft_slo_s"] == 1.5 and "goodput_rps" in s["with_cache"] and "slo_met" in s["no_cache"]


@pytest.mark.parametrize("args, needles", [
    (["--ttft-slo", "fast"], ["--ttft-slo", "fast"]),
    (["--restore-timeout", "-1s"], ["--restore-timeout"]),
    # hostile F11: the options as typed, not the API's field names
    (["--max-num-batched-tokens", "16", "--max-num-seqs", "32"], ["--max-num-batched-tokens (16)", "--max-num-seqs (32)"]),
    # only --max-num-seqs: the default budget (8,192 tokens on an H100, vLLM) is below it
    (["--max-num-seqs", "1000000000"], ["--max-num-batched-tokens (8192) must be >= --max-num-seqs (1000000000)"]),
    # a TTFT target of 0 s is not > 0 (the duration type's range, semantics §16)
    (["--ttft-slo", "0"], ["--ttft-slo", "'0' is not in the range > 0 s"]),
    # 1e-300 s is 1e-291 ns: above 0 but 0 in whole ns, refused by the duration parser itself (semantics §16)
    (["--ttft-slo", "1e-300s"], ["--ttft-slo", "invalid duration '1e-300s': greater than 0 but rounds to 0"]),
    (["--compute", "warp"], ["--compute"]),
])
def test_bad_options(args, needles):
    assert_one_line_error(invoke("replay", SMALL_TRACE, "--quiet", *args), *needles)


def test_compare_takes_the_options():
    r = invoke("compare", SMALL_TRACE, "--quiet", "--format", "json", "--policy", "lru", "--policy", "fifo",
               "--compute", "infinite")
    assert r.exit_code == 0, r.output
    r = invoke("compare", SMALL_TRACE, "--quiet", "--format", "json", "--policy", "lru", "--restore-policy", "wait")
    assert r.exit_code == 0, r.output


def test_ttft_slo_goodput_in_the_table_and_csv(tmp_path):
    # hostile F10. Two 1,024-token requests (2 blocks of 512) 10 s apart on an idle instance: each TTFT is one
    # small prefill step (milliseconds), so both meet a 2 s SLO (share 100 %) and neither meets 1 ns (share 0 %); goodput = met /
    # makespan (first arrival -> last finish, just over 10 s).
    import csv
    import io

    f = tmp_path / "two.jsonl"
    f.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 2, "hash_ids": [1, 2]}\n'
                 '{"timestamp": 10000, "input_length": 1024, "output_length": 2, "hash_ids": [3, 4]}\n',
                 encoding="utf-8")
    for slo, met in (("2s", 2), ("1ns", 0)):
        r = invoke("replay", f, "--quiet", "--format", "csv", "--ttft-slo", slo)
        assert r.exit_code == 0, r.output
        (row,) = list(csv.DictReader(io.StringIO(r.stdout)))
        span = json.loads(invoke("replay", f, "-q", "--format", "json")
                          .stdout)["scheduler"]["with_cache"]["makespan_s"]
        assert 10.0 < span < 10.1
        assert int(row["slo_met"]) == met and float(row["slo_met_share"]) == met / 2
        assert float(row["goodput_rps"]) == pytest.approx(met / span)
        assert int(row["no_cache_slo_met"]) == met
        table = invoke("replay", f, "--ttft-slo", slo).stdout
        line = next(ln for ln in table.splitlines() if "met / goodput" in ln)
        assert ("100.0 %" if met else "0.0 %") in line, line
    # without --ttft-slo: no SLO columns
    r = invoke("replay", f, "--quiet", "--format", "csv")
    assert "goodput_rps" not in r.stdout.splitlines()[0]


@pytest.mark.parametrize("args, needles", [
    # hostile F9: one rule for options that cannot change the run: refused with one line (as --protected-share
    # without an slru tier is), naming the option and what it needs
    (["--compute", "infinite", "--max-num-batched-tokens", "16", "--restore-policy", "best-effort", "--ttft-slo", "2s"],
     ["--max-num-batched-tokens, --restore-policy, --ttft-slo", "--compute infinite runs no scheduler"]),
    (["--timing", "sequential", "--max-num-seqs", "3", "--ttft-slo", "2s"],
     ["--max-num-seqs, --ttft-slo", "--timing sequential runs no scheduler"]),
    (["--timing", "sequential", "--no-restore-fallback"], ["--no-restore-fallback"]),
    (["--restore-timeout", "5ms"], ["--restore-timeout:", "best-effort", "(the policy is layerwise)"]),
    (["--restore-policy", "wait", "--restore-timeout-per-token", "1us"], ["--restore-timeout-per-token:"]),
    (["--router-stale-s", "5"], ["--router-stale-s", "no router in use reads them"]),
    (["--instances", "2", "--router", "round-robin", "--router-stale-s", "5"], ["--router-stale-s"]),
    (["--tier", "gpu=400GB", "--gpu-memory-utilization", "0.5"], ["--gpu-memory-utilization", "--tier gpu=400GB"]),
    # sequential timing has no compute queue; the series step exists only for hybrid models
    (["--timing", "sequential", "--compute", "infinite"], ["--compute infinite", "no compute queue"]),
    (["--timing", "sequential", "--compute", "step"], ["--compute step", "no compute queue"]),
    (["--residency-step", "1e-9s"], ["--residency-step", "one full-attention cache group"]),
    # an option naming one tier twice is refused as a repeated --tier is (last-wins was silent)
    (["--tier", "gpu=1GB", "--tier", "cpu=2GB", "--tier-policy", "cpu=slru", "--tier-policy", "cpu=fifo"],
     ["--tier-policy names tier 'cpu' twice", "cpu=slru, cpu=fifo"]),
    (["--link", "cpu=25GB/s", "--link", "cpu=pcie-gen5-x16"], ["--link names tier 'cpu' twice"]),
    (["--tier", "gpu=1GB", "--tier", "cpu=2GB", "--admit", "cpu=reuse:2", "--admit", "cpu=reuse:3"],
     ["admission 'reuse' twice", "reuse:2, reuse:3"]),
    (["--admit", "gpu=retain:tokens=0-4096,tokens=5-6"], ["option 'tokens' given twice"]),
])
def test_options_that_cannot_apply_are_refused(args, needles):
    assert_one_line_error(invoke("replay", SMALL_TRACE, "--quiet", *args), *needles)


def test_options_that_apply_still_run():
    # the same options where they act: best-effort with its timeouts, a stale index for the prefix router,
    # utilisation with gpu=auto
    for args in (["--restore-policy", "best-effort", "--restore-timeout", "5ms"],
                 ["--instances", "2", "--router", "prefix", "--router-stale-s", "1", "--timing", "sequential"],
                 ["--tier", "gpu=auto", "--gpu-memory-utilization", "0.5", "--timing", "sequential"],
                 # two different admission kinds for one tier combine (a block must pass each)
                 ["--tier", "gpu=1GB", "--tier", "cpu=2GB", "--admit", "cpu=reuse:2", "--admit", "cpu=tinylfu"],
                 ["--timing", "modeled", "--compute", "step"], ["--timing", "sequential"]):
        r = invoke("replay", SMALL_TRACE, "--quiet", "--format", "json", *args)
        assert r.exit_code == 0, (args, r.output)


@pytest.mark.parametrize("gpu", ["gpu=0", "gpu=0blocks"])
def test_a_gpu_tier_of_no_block_cannot_run_the_step_scheduler(gpu):
    # hostile F15: a GPU tier of 0 bytes / 0 blocks (0 is documented as "none" for tiers; a size between 0 and one
    # block is refused by the tier parser already) holds no block: no request can hold KV, so the step scheduler
    # refuses to start, as vLLM does with no cache blocks
    assert_one_line_error(invoke("replay", SMALL_TRACE, "--quiet", "--tier", gpu, "--tier", "cpu=1TB"),
                          "holds 0 blocks", "--compute infinite")
    # hits alone (no scheduler): still counted, every request truncated
    r = invoke("replay", SMALL_TRACE, "--quiet", "--format", "json", "--tier", gpu, "--tier", "cpu=1TB",
               "--compute", "infinite")
    assert r.exit_code == 0, r.output


def test_small_step_budgets_say_the_run_may_take_minutes():
    # hostile F13: budget 1 on the sample = ~14 million one-token steps (minutes) and -q hid it. Below 256 tokens
    # a note says so up front, even with -q; at 256 (and the defaults) nothing
    r = invoke("replay", SMALL_TRACE, "--quiet", "--format", "json", "--max-num-batched-tokens", "255")
    assert r.exit_code == 0 and "--max-num-batched-tokens 255" in r.stderr and "minutes" in r.stderr
    r = invoke("replay", SMALL_TRACE, "--quiet", "--format", "json", "--max-num-batched-tokens", "256")
    assert r.exit_code == 0 and "minutes" not in r.stderr


def test_transform_into_many_requests_says_so(capsys):
    # hostile F14: --tenants 1000 on 1,700 requests writes 1,700,000 rows (> 1,000,000): a note up front;
    # 1,000 x 1,000 = 1,000,000 exactly: none; split mode deals the same requests: none
    from types import SimpleNamespace

    import pcs.cli.trace  # noqa: F401 - loads pcs.cli.tracetools (tracetools imports it back)
    from pcs.cli.tracetools import _large_output_note

    _large_output_note(1700, SimpleNamespace(tenants=1000, tenant_mode="copy"))
    assert "copies 1,700 requests into 1,700,000" in capsys.readouterr().err
    _large_output_note(1000, SimpleNamespace(tenants=1000, tenant_mode="copy"))
    _large_output_note(1700, SimpleNamespace(tenants=1000, tenant_mode="split"))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("native", ["c", "python"])
def test_a_sequence_that_outgrows_the_gpu_tier_counts_as_truncated(tmp_path, native):
    # docs/semantics.md §5, §9. Default model llama-2-70b fp16, TP 8: a block of 512 tokens is
    # 80 layers x 2 (K, V) x 8 KV heads x 128 dims x 2 B x 512 = 167,772,160 B, so gpu=10GB holds
    # floor(1e10 / 167,772,160) = 59 blocks = 30,208 tokens. The request (10-token prompt, 200,000 output tokens)
    # needs ceil((10 + 200,000 - 1) / 512) = 391 blocks. Its prompt fits (1 block): the first admission is whole.
    # It decodes until its KV holds 59 full blocks (30,208 tokens) and the next token needs a 60th slot: none is
    # left, it preempts itself (1 preemption) with 1 + (30,208 - 10) = 30,199 tokens out. Re-admitted with
    # prompt = 10 + 30,199 = 30,209 tokens = ceil(30,209 / 512) = 60 blocks > 59 (no hits: one request, no
    # block hash past its prompt's partial block), it is truncated there, recomputes all 30,209 tokens and
    # decodes to the end: requests_truncated 1 (0 before this rule), and the note says why.
    trace = tmp_path / "long.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 10, "output_length": 200000, "hash_ids": [1]}\n')
    r = invoke("replay", str(trace), "-q", "--format", "json", "--tier", "gpu=10GB", "--tier", "cpu=0GB",
               "--cache-decode-blocks", "--native", native)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["tiers"][0]["capacity_blocks"] == 59
    assert d["requests_truncated"] == 1
    s = d["scheduler"]
    assert s["with_cache"]["preemptions"] == 1 and s["preempted_recompute_tokens"] == 30_209
    assert ("1 of 1 request truncated: the GPU tier (59 blocks) could not hold all its KV: 1 at a re-admission "
            "after a preemption (prompt + output so far outgrew the tier) (docs/semantics.md §5)") in d["notes"]
