"""compare --curve-capacities on a hybrid model: a size comes back as the bytes replay's GPU tier holds.

gemma-3-27b, TP 8, 512-token blocks (docs/semantics.md §13.1): whole-model block 62 layers x 524,288 B x 8
ranks = 260,046,848 B; a page 10 layers x 524,288 x 8 = 41,943,040 B. 40GB // 260,046,848 = 153 rows' blocks;
the row's replay holds 153 x 260,046,848 = 39,787,167,744 B = 948 pages, within one 7-page block of
``--tier gpu=40GB``'s 40e9 // 41,943,040 = 953 pages (the padded block 293,601,280 B would give 136 blocks,
replayed as 843 pages).
"""
import json

from click.testing import CliRunner

from pcs.cli.main import cli


def test_forty_gb_is_153_whole_model_blocks_replayed_as_948_pages(tmp_path):
    from pcs import replay

    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 1_024, "output_length": 1, "hash_ids": [1, 2]}) + "\n")
    out = CliRunner().invoke(cli, ["compare", str(path), "--model", "gemma-3-27b", "--curve-capacities", "40GB",
                                   "--format", "json", "-q"])
    assert out.exit_code == 0, out.output
    assert [r["capacity_blocks"] for r in json.loads(out.stdout)["curve"]] == [153]
    pages = [replay(str(path), model="gemma-3-27b", tp=8, tiers=[t]).summary.tiers[0].capacity_blocks
             for t in ("gpu=153blocks", "gpu=40GB")]
    assert pages == [948, 953]
