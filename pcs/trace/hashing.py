"""Chained block hashes for token traces: deterministic, documented, fixed root.

Design after vLLM ``vllm/v1/core/kv_cache_utils.py`` (``hash_block_tokens``:
a block's hash covers its parent's hash, its token ids and its extra keys, so
equal tokens under a different prefix are a different block), with two
changes for reproducibility: the root is a fixed constant (vLLM's
``NONE_HASH`` is random per process unless ``PYTHONHASHSEED`` is set) and the
byte encoding is spelled out here rather than pickled.

Hash of block ``i`` of a request (blake2b, RFC 7693, 8-byte digest,
personalisation ``b"pcs-blk1"``) over the concatenation of:

1. the parent hash as 8 bytes little-endian (block 0: :data:`ROOT_HASH`);
2. the number of tokens in the block as 4 bytes little-endian;
3. the block's token ids, each 4 bytes little-endian unsigned (``<u4``);
4. the extra keys as compact UTF-8 JSON (``json.dumps(keys,
   separators=(",", ":"), ensure_ascii=False)``), or nothing when there are
   none, where ``keys`` is a list of ``[tag, value]`` pairs in this order
   (vLLM's ``generate_block_hash_extra_keys`` order: LoRA, multimodal, salt):
   ``["lora", lora_id]`` on every block when the request has a LoRA id;
   ``["mm", hash]`` for each multimodal input overlapping the block;
   ``["salt", cache_salt]`` on block 0 only (vLLM mixes the salt into the
   first block; chaining carries it to all later ones).

The hash is the digest read as a little-endian uint64. The trailing partial
block is hashed the same way (its token count is part of the encoding), so a
token trace and its Mooncake form carry the same block structure; caching
rules (full blocks only) are applied by consumers via :mod:`pcs.blocks`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["ROOT_HASH", "MMInput", "hash_block", "hash_request_blocks"]

_PERSON = b"pcs-blk1"

#: Parent hash of every request's first block: blake2b-64 of b"pcs block hash root v1".
ROOT_HASH: int = int.from_bytes(hashlib.blake2b(b"pcs block hash root v1", digest_size=8).digest(), "little")


@dataclass(frozen=True, slots=True)
class MMInput:
    """A multimodal input's hash and the token span it occupies.

    Attributes:
        hash: the input's content hash (any string).
        offset_tokens: first prompt position of its placeholder tokens.
        length_tokens: number of placeholder tokens (>= 1). A whole-prompt
            input (a bare string in ``mm_hashes``) has offset 0, length 1,
            i.e. it is mixed into block 0 only.
    """

    hash: str
    offset_tokens: int = 0
    length_tokens: int = 1


def hash_block(parent: int, tokens: bytes, extra: bytes = b"") -> int:
    """One chained block hash (see the module docstring for the encoding).

    Args:
        parent: the previous block's hash, or :data:`ROOT_HASH`.
        tokens: the block's token ids as ``<u4`` bytes (4 bytes per token).
        extra: canonical extra-key bytes (empty for none).
    Returns:
        the hash as an int in [0, 2**64).

    >>> hash_block(ROOT_HASH, b"") == hash_block(ROOT_HASH, b"")
    True
    >>> hash_block(ROOT_HASH, (7).to_bytes(4, "little")) != hash_block(1, (7).to_bytes(4, "little"))
    True
    """
    h = hashlib.blake2b(digest_size=8, person=_PERSON)
    h.update(parent.to_bytes(8, "little"))
    h.update((len(tokens) // 4).to_bytes(4, "little"))
    h.update(tokens)
    h.update(extra)
    return int.from_bytes(h.digest(), "little")


def _extra_bytes(keys: list) -> bytes:
    return json.dumps(keys, separators=(",", ":"), ensure_ascii=False).encode("utf-8") if keys else b""


def hash_request_blocks(token_ids: np.ndarray, block_size: int, *, cache_salt: str | None = None,
                        lora_id: int | str | None = None, mm_inputs: Sequence[MMInput] = (),
                        known: np.ndarray | None = None) -> np.ndarray:
    """Chained hashes of every block of one prompt, the partial last block included.

    Args:
        token_ids: ``np.ndarray[np.uint32]``, shape (prompt_tokens,).
        block_size: tokens per block (>= 1).
        cache_salt: per-tenant salt mixed into block 0 (vLLM ``cache_salt``).
        lora_id: LoRA adapter id mixed into every block.
        mm_inputs: multimodal inputs, mixed into the blocks they overlap.
        known: hashes already computed for this prompt's leading *full*
            blocks under the same keys (e.g. the previous turn of a chat);
            they are copied, not recomputed. Caller's promise, not checked.
    Returns:
        ``np.ndarray[np.uint64]``, shape ``(ceil(prompt_tokens / block_size),)``.

    Cost: one blake2b call per block over ``4 * block_size + 12`` bytes.

    >>> a = hash_request_blocks(np.arange(40, dtype=np.uint32), 16)
    >>> b = hash_request_blocks(np.arange(35, dtype=np.uint32), 16)
    >>> len(a), bool(a[0] == b[0]), bool(a[1] == b[1]), bool(a[2] == b[2])
    (3, True, True, False)
    """
    raw = np.ascontiguousarray(token_ids, dtype="<u4").tobytes()
    n = len(token_ids)
    step = 4 * block_size
    num_blocks = -(-n // block_size)
    out = np.empty(num_blocks, dtype=np.uint64)
    parent = ROOT_HASH
    start = 0
    if known is not None and len(known):
        start = min(len(known), n // block_size)
        out[:start] = known[:start]
        parent = int(out[start - 1]) if start else ROOT_HASH
    base = [["lora", lora_id]] if lora_id is not None else []
    for i in range(start, num_blocks):
        keys = base
        if mm_inputs or (cache_salt is not None and i == 0):
            lo, hi = i * block_size, min(n, (i + 1) * block_size)
            keys = base + [["mm", m.hash] for m in mm_inputs
                           if m.offset_tokens < hi and m.offset_tokens + m.length_tokens > lo]
            if cache_salt is not None and i == 0:
                keys = keys + [["salt", cache_salt]]
        parent = hash_block(parent, raw[i * step:(i + 1) * step], _extra_bytes(keys))
        out[i] = parent
    return out
