"""Same input, same output, whatever PYTHONHASHSEED: no printed number depends on Python's str hashing.

Python salts ``hash()`` of str and bytes per process (PYTHONHASHSEED, Python docs "object.__hash__"), so
iterating a set of strings, or a table keyed by such a hash, could order a result differently per run. pcs hashes
block ids itself: chained blake2b for token traces (pcs/trace/hashing.py, a fixed root), and the compiled tables'
``key_hash`` (pcs/_kernel_common.h: (k ^ k >> 32) x a fixed odd multiplier, no per-process seed), so their
slot order -- and any tie an eviction breaks by it -- is the same in every process. This runs the commands
that read those paths under two seeds in fresh processes and compares every byte of their JSON.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
T = ROOT / "traces"
COMMANDS = [
    ["replay", T / "sample_chat.jsonl", "--tier", "gpu=300blocks", "--tier", "cpu=1000blocks"],   # compiled (key_hash)
    ["replay", T / "sample_tokens.jsonl", "--engine", "general", "--policy", "slru",
     "--tier", "gpu=20blocks", "--tier", "cpu=60blocks"],                 # the Python tiers (dicts)
    ["replay", T / "formats" / "bailian_6.jsonl", "--instances", "3", "--router", "session"],   # parent chats
    ["compare", T / "sample_chat.jsonl", "--tier", "gpu=300blocks", *[w for p in ("lru", "protected", "s3fifo", "arc",
                                                                              "sieve", "lfu", "2q", "gdsf")
                                                                     for w in ("--policy", p)]],
    ["curve", T / "sample_chat.jsonl"],
    ["trace", "stats", T / "formats" / "bailian_6.jsonl"],
]
#: One process per seed runs every command in turn (click's runner) and prints one JSON list of their outputs.
DRIVER = """
import json, sys
from click.testing import CliRunner
from pcs.cli.main import cli
out = []
for args in json.loads(sys.argv[1]):
    r = CliRunner().invoke(cli, args + ["--format", "json"])
    out.append([r.exit_code, r.output])
print(json.dumps(out))
"""


def _outputs(seed: str) -> list:
    args = json.dumps([[str(a) for a in c] for c in COMMANDS])
    env = dict(os.environ, PYTHONHASHSEED=seed)
    done = subprocess.run([sys.executable, "-c", DRIVER, args], capture_output=True, text=True, env=env,
                          cwd=ROOT, check=True)
    return json.loads(done.stdout)


def test_output_does_not_depend_on_pythonhashseed():
    a, b = _outputs("1"), _outputs("4242")
    assert [code for code, _ in a] == [0] * len(COMMANDS), [out[-300:] for _, out in a]
    assert all('{\n  "' in out for _, out in a)                      # each printed its JSON (notes beside it)
    for cmd, (_, x), (_, y) in zip(COMMANDS, a, b):
        assert x == y, cmd
