"""benchmarks/floor_lru2.c (through bench_floor.py's build): the floor's two-tier LRU counts the hits a two-tier
exclusive LRU has -- worked by hand on a short stream, and against an independent Python model (two OrderedDicts)
on a longer drawn one, in its three variants. A floor that counted wrong would time the wrong work."""
from __future__ import annotations

import random
import shutil
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_floor  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return bench_floor.build(tmp_path_factory.mktemp("floor"))


def _hits(lib, stream: list[int], g: int, c: int) -> dict:
    keys = np.array(stream, dtype=np.uint64)
    uniq, inv = np.unique(keys, return_inverse=True)
    dense = np.ascontiguousarray(inv, dtype=np.int64)
    return {nm: bench_floor.runner(lib, nm, keys, dense, int(uniq.size), g, c, 4)()[2]
            for nm in ("hashed", "hashed_prefetch", "dense")}


def _model(stream: list[int], g: int, c: int) -> tuple[int, int]:
    """The rule in plain Python: GPU and CPU as OrderedDicts, least recent first."""
    gpu, cpu, hg, hc = OrderedDict(), OrderedDict(), 0, 0
    for k in stream:
        if k in gpu:
            hg += 1
            gpu.move_to_end(k)
            continue
        if k in cpu:
            hc += 1
            del cpu[k]
        if len(gpu) == g:
            v, _ = gpu.popitem(last=False)
            if len(cpu) == c:
                cpu.popitem(last=False)
            cpu[v] = True
        gpu[k] = True
    return hg, hc


def test_hits_worked_by_hand(lib):
    # GPU 2, CPU 2 blocks; GPU / CPU after each access, least recent first:
    # 1 miss [1] []; 2 miss [1,2]; 3 miss, 1 demoted [2,3] [1]; 1 CPU hit, 2 demoted [3,1] [2];
    # 4 miss, 3 demoted [1,4] [2,3]; 5 miss, 1 demoted, 2 dropped [4,5] [3,1]; 3 CPU hit, 4 demoted [5,3] [1,4];
    # 2 miss, 5 demoted, 1 dropped [3,2] [4,5]; 3 GPU hit [2,3]; 1 miss, 2 demoted, 4 dropped [3,1] [5,2];
    # 5 CPU hit, 3 demoted [1,5] [2,3]: 1 GPU hit, 3 CPU hits
    stream = [1, 2, 3, 1, 4, 5, 3, 2, 3, 1, 5]
    assert _hits(lib, stream, 2, 2) == {"hashed": (1, 3), "hashed_prefetch": (1, 3), "dense": (1, 3)}


def test_large_ids_hash_like_small_ones(lib):
    big = [2**64 - 1 - k for k in (1, 2, 3, 1, 4, 5, 3, 2, 3, 1, 5)]
    assert set(_hits(lib, big, 2, 2).values()) == {(1, 3)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_a_python_model_on_a_drawn_stream(lib, seed):
    # 300 ids over 16 + 48 blocks: a table of 128 slots, so probe runs, backward shifts and reused entries occur
    rng = random.Random(seed)
    stream = [rng.randrange(300) * 0x9E3779B1 for _ in range(20_000)]
    want = _model(stream, 16, 48)
    assert want[0] > 0 and want[1] > 0
    assert set(_hits(lib, stream, 16, 48).values()) == {want}
