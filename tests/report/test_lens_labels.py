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
    # the title names the two layouts only: with the why in it the line was 120 columns; the why is a note
    i = lines.index("Payload is not everything: KV fp8_per_token_head vs bf16")
    assert "note: bf16 = any 16-bit KV: fp16 stores the same 2 bytes a value" in lines[i + 11:]
    assert lines[i + 1].split() == ["same", "hits,", "other", "KV", "dtype", "fp8_per_token_head", "(this", "run)",
                                    "bf16", "bf16", "/", "this", "run"]
    # the ratio column's header names the run, not its layout again: the table fits 100 columns (it was 104)
    assert max(len(x) for x in lines[i:i + 11]) <= 100           # the title line and the table
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


def _lens_blocks(text: str) -> list[list[str]]:
    """Each lens table of ``text``: its title line and table lines, notes left out."""
    lines, out = text.splitlines(), []
    for i, line in enumerate(lines):
        if "Payload is not everything" in line:
            out.append([line] + [x for x in lines[i + 1:i + 11] if not x.startswith("note: ")])
    return out


def test_every_lens_title_fits_100_columns_with_its_label():
    # the longest layout name, int8_per_token_head (19 characters): a replay's title, a compare variant's
    # ("lru gpu=10GB cpu=1TB: ...") and a fleet instance's ("instance 0: ...") were 105-175 columns with the why
    # (bf16 = any 16-bit KV ...) and the fleet's "(bytes per block alike on every instance)" in them
    runs = [["replay", "--dtype", "int8_per_token_head"],
            ["replay", "--dtype", "int8_per_token_head", "--instances", "2"],
            ["compare", "--dtype", "int8_per_token_head", "--tiers", "gpu=10GB,cpu=1TB", "--tiers", "gpu=20GB,cpu=1TB"]]
    for args in runs:
        r = CliRunner().invoke(cli, [*args, "--quiet"])
        assert r.exit_code == 0, r.output
        blocks = _lens_blocks(r.stdout)
        assert blocks and all(max(map(len, b)) <= 100 for b in blocks), (args, blocks)
        assert all(b[0].endswith("Payload is not everything: KV int8_per_token_head vs bf16") for b in blocks)
