"""Review 48k's findings on mend48c (the views and the hybrid replay JSON), each value worked by hand.

- K2: one meaning per key: ``dtype`` is the value type and ``layout`` the layout's one name in every command's
  JSON and CSV (a replay's ``payload_lens`` as before); a text column showing a layout is headed ``layout``.
- K3: the envelope's "net saved" never prints ``0.00 ns`` beside a verdict it hides or contradicts.
- K4: budget: one rule for every size and rate, operands included: the fewest decimals that give the value back
  to the byte.
- K5: deploy says only what it computes; footprint's fp8 Prefix store ratio of a state model says where it comes
  from; the by-layout table's title holds for DeepSeek-V3.2; fp8_ds_mla's note has its Prefix store ratio; the
  replay's "block by component" adds up to the block (page padding shown); ``--mamba-cache-mode align`` is said.
- K6: pcs report takes the replay JSON of ``--hybrid-kv-cache-manager sglang`` and of a re-blocked replay.
"""
from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

NEMOTRON = "tests/model/configs/nemotron_h.json"
TOKENS = "traces/sample_tokens.jsonl"


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def _run(*args: str) -> str:
    out = _invoke(*args)
    assert out.exit_code == 0, out.output
    return out.stdout


def _flat(text: str) -> str:
    return " ".join(text.split())


# -- K2 -------------------------------------------------------------------------------------------------------
def test_dtype_is_the_value_type_and_layout_the_name_in_every_command():
    # DeepSeek-V3.2: any fp8 runs as fp8_ds_mla (docs/models.md), its values fp8
    fp = json.loads(_run("footprint", "--model", "deepseek-v3.2", "--tokens", "1000", "--dtype", "fp8",
                         "--format", "json"))
    assert (fp["dtype"], fp["layout"]["name"]) == ("fp8", "fp8_ds_mla")
    assert [(c["dtype"], c["layout"]) for c in fp["components"]] == [("fp8", "fp8_ds_mla"), ("fp8", "fp8")]
    assert [(r["dtype"], r["layout"]) for r in fp["by_dtype"]] == [("bf16", "bf16"), ("fp8", "fp8_ds_mla")]
    # deploy's other KV dtype: fp8 beside a bf16 run, which runs as fp8_ds_mla here
    dep = json.loads(_run("deploy", "--model", "deepseek-v3.2", "--gpu", "b200", "--format", "json"))
    assert (dep["alt"]["dtype"], dep["alt"]["layout"]) == ("fp8", "fp8_ds_mla")
    # curve: --dtype int8 is int8 values in the int8_per_token_head layout
    cur = json.loads(_run("curve", TOKENS, "--model", "llama-3.1-8b", "--dtype", "int8", "--points", "2",
                          "--format", "json", "-q"))
    assert (cur["dtype"], cur["layout"]) == ("int8", "int8_per_token_head")
    # a replay's lens, unchanged: the same two keys, the same two meanings
    lens = json.loads(_run("replay", TOKENS, "--model", "llama-3.1-8b", "--dtype", "int8", "--tier", "gpu=20blocks",
                           "--timing", "sequential", "--format", "json", "-q"))["payload_lens"]
    assert (lens["dtype"], lens["layout"]) == ("int8", "int8_per_token_head")


def test_page_padding_row_keeps_mains_dtype_and_text_heads_layout_columns():
    args = ("footprint", "--model", "gemma-3-27b", "--tokens", "10000", "--block-size", "512", "--tp", "8")
    pad = [c for c in json.loads(_run(*args, "--format", "json"))["components"] if c["name"] == "page_padding"]
    assert [(c["dtype"], c["layout"]) for c in pad] == [("bf16", "-")]    # the value type of the pages it pads
    rows = list(csv.DictReader(io.StringIO(_run(*args, "--format", "csv"))))
    assert [r["dtype"] for r in rows] == ["bf16", "bf16", "bf16"] and "value_dtype" not in rows[0]
    heads = [ln.split()[:3] for ln in _run(*args, "--dtype", "fp8_per_token_head").splitlines()
             if ln.startswith(("component ", "layout ", "dtype "))]
    assert heads == [["component", "layers", "layout"], ["layout", "Reference", "vs"]]


# -- K3 -------------------------------------------------------------------------------------------------------
def test_net_saved_keeps_its_sign_below_the_last_digit():
    from pcs.report.envelope import net_saved_cell

    # 0.00 ns is |x| < 0.005 ns: 2.6e-17 s and -8.7e-18 s (break-even +-1 ulp), 4.9e-12 s = 0.0049 ns
    assert [net_saved_cell(x) for x in (2.6e-17, -8.7e-18, 4.9e-12, -4.9e-12)] == \
        ["+<0.01 ns", "-<0.01 ns", "+<0.01 ns", "-<0.01 ns"]
    assert [net_saved_cell(x) for x in (0.0, 5.1e-12, -0.0123)] == ["0 ms", "0.01 ns", "-12.30 ms"]


def test_envelope_table_at_break_even_shows_the_side_the_verdict_names(tmp_path):
    pf = tmp_path / "pf.csv"
    pf.write_text("tokens,seconds\n1000,0.0123456789123\n10000,0.3333333333333\n")
    args = ("envelope", "--prefill-csv", str(pf), "--tokens", "7777", "--restore-tokens", "5000", "--model",
            "llama-3.1-8b", "--tp", "1", "--overhead", "0.1ms", "--bandwidth", "4231696572.979329B/s",
            "--bandwidth", "4231696572.97933B/s")
    rows = json.loads(_run(*args, "--format", "json"))["rows"]
    assert [(r["verdict"], r["saved_s"] > 0) for r in rows] == [("slower", False), ("faster", True)]
    cells = [ln.split()[-3:] for ln in _run(*args).splitlines() if ln.startswith("4.23 GB/s")]
    assert cells == [["-<0.01", "ns", "slower"], ["+<0.01", "ns", "faster"]]


# -- K4 -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("iops,shown", [("1000000", "4.096 GB/s"),            # 4,096,000,000 B/s
                                        ("1000001", "4.096004096 GB/s"),      # 1,000,001 x 4,096 = 4,096,004,096
                                        ("999999", "4.095995904 GB/s")])      # 999,999 x 4,096 = 4,095,995,904
def test_budget_rates_are_told_from_their_neighbours(iops, shown):
    row = next(ln for ln in _run("budget", "--iops", iops, "--io-size", "4096B").splitlines()
               if ln.startswith("IOPS bandwidth"))
    assert row.endswith("  " + shown)


def test_budget_operands_follow_the_same_rule():
    # 1,000 restores/s x 4,096,001 B = 4,096,001,000 B/s; 80 GB and 2,000 GB/s need no more than 2 decimals
    out = _run("budget", "--restores-per-s", "1000", "--restore-size", "4096001B", "--capacity-need", "30GB",
               "--capacity-have", "80GB", "--bandwidth-need", "1000GB/s", "--bandwidth-have", "2000GB/s")
    row = next(ln for ln in out.splitlines() if ln.startswith("average bandwidth"))
    assert row.startswith("average bandwidth: 1,000/s x 4.096001 MB ") and row.endswith(" 4.096001 GB/s")
    assert out.splitlines()[0].startswith("device: 80.00 GB capacity, 2.00 TB/s bandwidth")


# -- K5 -------------------------------------------------------------------------------------------------------
def test_deploy_note_says_only_what_deploy_computes():
    out = _flat(_run("deploy", "--model", "llama-3.1-8b", "--tp", "1", "--dtype", "fp4"))
    assert "barely moves" not in out
    assert "deploy computes bytes and blocks only" in out


def test_footprint_fp8_prefix_store_of_a_state_model_says_the_checkpoints_thin():
    # qwen3-next-80b-a3b TP 8 (its config.json): a state layer 4,939,776 / 36 = 137,216 B a rank; attention
    # 12,288 B a token over 12 layers = 1,024 B a layer (bf16), 512 (fp8). vLLM's hybrid block
    # 16 x ceil(137,216 / (16 x 1,024)) = 16 x 9 = 144, fp8 16 x ceil(137,216 / 8,192) = 16 x 17 = 272; at B = 16
    # the replay checkpoints every N = 16 x ceil(b_h / 16) = 144 resp. 272 tokens (docs/semantics.md §13.1)
    args = ("footprint", "--model", "qwen3-next-80b-a3b", "--tokens", "10000", "--block-size", "16", "--tp", "8")
    out = _flat(_run(*args))
    assert ("Prefix store x0.500 (not the state shrinking: a state checkpoint every 272 tokens instead of 144"
            in out)
    assert "Prefix store x0.500 (exactly half)" not in out and "payload halves" not in out
    rows = json.loads(_run(*args, "--format", "json"))["by_dtype"]
    assert [r.get("checkpoint_tokens") for r in rows] == [144, 272, 272]


def test_fp8_ds_mla_note_has_its_prefix_store_ratio():
    # Serialized per token: latent 61 x 656 (512 fp8 + 64 bf16 rope + 4 fp32 scales) = 40,016 + indexer 61 x 132
    # (128 fp8 + a 4 B scale) = 8,052 -> 48,068; bf16 61 x 1,152 = 70,272 + 8,052 = 78,324; a Prefix store of
    # whole blocks of these: 48,068 / 78,324 = 0.6137 -> x0.614
    out = _flat(_run("footprint", "--model", "deepseek-v3.2", "--tokens", "10000", "--block-size", "64"))
    assert "fp8 runs as fp8_ds_mla" in out and "Reserved x0.614, Prefix store x0.614" in out


def _one_request(tmp_path, tokens: int) -> str:
    p = tmp_path / "one.jsonl"
    p.write_text(json.dumps({"timestamp": 0, "output_length": 1, "token_ids": list(range(1, tokens + 1))}) + "\n")
    return str(p)


@pytest.mark.parametrize("mode", ["all", "align"])
def test_block_by_component_adds_up_to_the_block(tmp_path, mode):
    # Nemotron-H (tests/model/configs/nemotron_h.json) TP 1, B 512: a page = 4 attention layers x (K, V) x 8 heads
    # x 128 x 2 B x 512 = 8,388,608 B. A mamba layer's state: 128 x 64 x 128 x 2 B + (8,192 + 2 x 8 x 128) x 3 x
    # 2 B = 2,158,592, 24 layers 51,806,208 B. vLLM's hybrid block 16 x ceil(2,158,592 / (16 x 4,096)) = 528, so
    # N = 1,024 tokens (2 blocks); 6 layer groups of 4, each 2 pages -> 12 pages a checkpoint, 6 a block of the
    # model: 1 + 6 = 7 pages = 58,720,256 B; ssm_state's share 51,806,208 / 2 = 25,903,104; padding
    # 58,720,256 - 8,388,608 - 25,903,104 = 24,428,544 B
    out = _flat(_run("replay", _one_request(tmp_path, 1024), "--model", NEMOTRON, "--tp", "1", "--block-size", "512",
                     "--mamba-cache-mode", mode))
    assert ("gpu block by component: full_attention 8.39 MB, ssm_state 25.90 MB, page padding 24.43 MB = 7 pages, "
            "58.72 MB") in out
    # align: one state a request, 12 pages x 8,388,608 = 100,663,296 B
    assert ("--mamba-cache-mode align: a request keeps one state, 100.66 MB of pages" in out) == (mode == "align")


# -- K6 -------------------------------------------------------------------------------------------------------
def test_report_takes_an_sglang_replay_and_checks_its_pools(tmp_path):
    src = tmp_path / "sg.json"
    src.write_text(_run("replay", _one_request(tmp_path, 64), "--model", "qwen3-next-80b-a3b", "--block-size", "16",
                        "--hybrid-kv-cache-manager", "sglang", "--format", "json", "-q"))
    r = _invoke("report", str(src), "-o", str(tmp_path / "sg.html"), "--no-curve")
    assert r.exit_code == 0, r.output
    d = json.loads(src.read_text())
    pools = d["hybrid"]["pools"]["gpu"]
    want = sum(p["capacity_pages"] * p["page_bytes"] for p in pools)     # each pool its own page size
    assert d["tiers"][0]["capacity_bytes"] == want != d["tiers"][0]["capacity_blocks"] * d["tiers"][0]["bytes_per_block"]
    d["tiers"][0]["capacity_bytes"] += 1
    src.write_text(json.dumps(d))
    r = _invoke("report", str(src), "-o", str(tmp_path / "sg.html"), "--no-curve")
    assert r.exit_code == 2
    assert f"field 'tiers[0].capacity_bytes': must be its pools' pages x page_bytes (hybrid.pools) = {want:,}" \
        in r.output


def test_report_takes_a_reblocked_replay_as_its_two_bounds(tmp_path):
    trace = tmp_path / "moon.jsonl"     # recorded at 512-token blocks (2 ids for 1,024 tokens), replayed at 256
    trace.write_text(json.dumps({"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]})
                     + "\n" + json.dumps({"timestamp": 1000, "input_length": 1024, "output_length": 1,
                                          "hash_ids": [1, 3]}) + "\n")
    src = tmp_path / "rb.json"
    src.write_text(_run("replay", str(trace), "--block-size", "256", "--format", "json", "-q"))
    assert set(json.loads(src.read_text())) >= {"lower", "upper", "hit_ratio_interval"}
    html = tmp_path / "rb.html"
    r = _invoke("report", str(src), "-o", str(html))
    assert r.exit_code == 0, r.output
    page = html.read_text()
    assert "run 1: lower bound" in page and "run 2: upper bound" in page
