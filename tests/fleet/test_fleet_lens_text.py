"""The fleet's text report shows lesson 2 (payload vs reserved bytes) once, with each instance's ratios, as a single replay does.

Default model llama-2-70b fp16, TP 8, blocks of 512 tokens: a block's payload is 80 layers x 2 (K, V) x 8 KV
heads x 128 dims x 2 B x 512 tokens = 167,772,160 B ("167.77 MB"), in fp8 half that, 83,886,080 B ("83.89 MB");
vLLM's fp16 page holds no scales, so Reserved = Reference. The JSON had it per instance; the text did not.
"""
from __future__ import annotations

from pathlib import Path

from tests.helpers import invoke

CHAT = str(Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl")


def test_the_payload_lens_once_and_each_instance_on_a_line():
    # bytes per block are the same on every instance (one model, one layout): one table, the first instance's;
    # the other instances' restore and TTFT ratios on one note line (walkthrough: 8 instances printed 8 tables)
    r = invoke("replay", CHAT, "--instances", "2", "-q")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert out.count("Payload is not everything") == 1
    # the title "instance 0: Payload is not everything: KV fp16 vs fp8" (the label was "instance 0 (bytes per block
    # alike on every instance)": with a long layout name the line passed 100 columns; that is said in the note)
    table = out.split("instance 0: Payload is not everything: KV fp16 vs fp8\n")[1].split("\n\n")[0]
    assert "payload bytes/block (Reference)              167.77 MB   83.89 MB  x0.500" in table
    assert "GPU bytes/block (Reserved)                   167.77 MB   83.89 MB  x0.500" in table
    # fp8 restores move half the bytes of fp16 (the same blocks at half the bytes each): x0.500
    assert ("note: bytes per block are alike on every instance; the other instances, fp8/fp16: 1: restores x0.500, "
            "TTFT x") in table
    assert out.count("note: stored bytes shrink with the payload only where the scales sit outside") == 1
