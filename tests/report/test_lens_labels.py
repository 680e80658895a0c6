"""The lens names the run's layout as the user typed it and words its note for the
direction of the comparison (llama-2-70b, the bundled sample, 512-token blocks)."""
import json

from click.testing import CliRunner

from pcs.cli.main import cli


def _out(*args):
    r = CliRunner().invoke(cli, ["replay", "--quiet", *args])
    assert r.exit_code == 0, r.output
    return r.output


def test_narrow_layouts_are_named_and_the_note_says_grow():
    # fp8_per_token_head keeps an fp32 scale per token per KV head for K and V in the pages (semantics §13):
    # 80 x 8 x 128 x 2 x 1 B x 512 = 83,886,080 B payload + 80 x 8 x 2 x 4 B x 512 = 2,621,440 B scales
    # = 86,507,520 B stored; bf16 167,772,160 B, so its column is x1.939 (not plain fp8's x2.000)
    lines = _out("--dtype", "fp8_per_token_head").splitlines()
    i = lines.index("Payload is not everything: KV fp8_per_token_head vs bf16 (bf16 = any 16-bit KV: fp16 stores "
                    "the same 2 bytes a value)")
    assert lines[i + 1].split() == ["same", "hits,", "other", "KV", "dtype", "fp8_per_token_head", "(this", "run)",
                                    "bf16", "bf16", "/", "this", "run"]
    # the ratio column's header names the run, not its layout again: the table fits 100 columns (it was 104)
    assert max(len(x) for x in lines[i + 1:i + 11]) <= 100
    d = json.loads(_out("--dtype", "fp8_per_token_head", "--format", "json"))["payload_lens"]
    assert (d["dtype"], d["layout"]) == ("fp8", "fp8_per_token_head")
    assert d["gpu_bytes_per_block"] == [86_507_520, 167_772_160]
    note = next(x for x in lines if x.startswith("note: stored bytes"))
    assert note.startswith("note: stored bytes grow") and "a real --dtype bf16 replay fits x0.516" in note
    assert "Payload is not everything: KV nvfp4 vs bf16" in _out("--dtype", "nvfp4")


def test_default_run_keeps_its_label_and_shrink():
    out = _out()
    assert "Payload is not everything: KV fp16 vs fp8" in out.splitlines()
    note = next(x for x in out.splitlines() if x.startswith("note: stored bytes"))
    assert note.startswith("note: stored bytes shrink") and "a real --dtype fp8 replay also fits x2.000" in note
