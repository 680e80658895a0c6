"""Value dtypes and quantisation scale groups: bits per value, scale bytes per row.

Kept apart from the component classes so every component shares one table of
dtypes; which scales an engine stores, and where, is :mod:`pcs.model.layouts`.
"""
from __future__ import annotations

from pcs.errors import UnknownNameError, UserError
from pcs._dataclass import dataclass

__all__ = ["DTYPE_BITS", "VALUE_DTYPES", "TORCH_DTYPES", "normalize_dtype", "row_bytes", "QuantScales"]

#: Bits per stored value. int4/fp4 pack two values per byte.
DTYPE_BITS: dict[str, int] = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4, "fp4": 4}
#: Value dtypes (a KV layout's values, a config's ``torch_dtype``, a state's dtype).
VALUE_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp32", "fp8", "int8", "int4", "fp4")
_ALIASES = {
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
    "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "float8": "fp8", "nvfp4": "fp4", "mxfp4": "fp4",
    # torch's fp8 dtype names, as HF configs write them (torch.float8_e4m3fn, ...)
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3fnuz": "fp8", "float8_e5m2fnuz": "fp8",
}

#: The torch dtypes a Hugging Face config's ``torch_dtype`` names that pcs reads (:func:`normalize_dtype` takes
#: the aliases above too): what a refusal of that field lists and suggests from.
TORCH_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int8")


def normalize_dtype(dtype: str) -> str:
    """Return the canonical dtype name (``"bfloat16"`` -> ``"bf16"``).

    Raises:
        UserError: unknown dtype; the message lists the valid ones.

    >>> normalize_dtype("BFloat16")
    'bf16'
    """
    key = str(dtype).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in DTYPE_BITS:
        raise UnknownNameError("dtype", dtype, VALUE_DTYPES)
    return key


def row_bytes(values: int, dtype: str) -> int:
    """Bytes of one row of ``values`` elements, rounded up to a whole byte."""
    return -(-values * DTYPE_BITS[dtype] // 8)


@dataclass(frozen=True, slots=True)
class QuantScales:
    """Quantisation scales: one scale of ``scale_bits`` per ``group_size`` values of a row.

    Groups never span rows (a row is one head vector of one token), so a row of
    v values carries ceil(v / group_size) scales.

    Attributes:
        group_size: values per scale (e.g. 128 for DeepSeek's FP8 blocks, 16 for NVFP4).
        scale_bits: bits per scale (32 for fp32, 8 for an fp8/ue8m0 scale).
    """

    group_size: int
    scale_bits: int

    def row_bytes(self, values: int) -> int:
        """Scale bytes for one row of ``values`` elements."""
        return -(-values // self.group_size) * self.scale_bits // 8

