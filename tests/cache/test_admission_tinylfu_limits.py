"""tinylfu sizes its count-min sketch from the tier's capacity (4 rows of a byte per counter, the width a power
of two >= the capacity): a huge tier was an OverflowError traceback or gigabytes; a non-finite sample a traceback.
Both are one error now."""
import math

import pytest

from pcs.cache.admission_tinylfu import MAX_SAMPLE, MAX_SKETCH_BLOCKS, CountMinSketch, TinyLFUAdmission


def test_the_largest_tier_binds_and_one_more_block_is_refused():
    a = TinyLFUAdmission(sample=1)
    with pytest.raises(ValueError, match="at most 67,108,864 blocks"):
        a.bind(MAX_SKETCH_BLOCKS + 1)
    assert CountMinSketch(1000, 1).width == 1024                      # the power of two >= the capacity


@pytest.mark.parametrize("sample", [math.inf, math.nan, 1e308, MAX_SAMPLE * 2, 0, -1])
def test_sample_must_be_finite_and_bounded(sample):
    with pytest.raises(ValueError, match="sample must be > 0"):
        TinyLFUAdmission(sample=sample)
