"""What-if transforms of a trace that keep its prefix tree: speed, tenants, lengths, truncation, sampling.

Each transform maps a trace's requests to new ones whose block hashes are
derived from the old ids (:func:`pcs.trace.idmix.mix64`), so two requests
share a new block exactly when the rule below says their content is equal;
the tree's shape (where requests diverge) is kept. Applied in this order to
the whole trace in memory (docs/semantics.md §1 for why a chained id stands
for its whole prefix):

1. ``sample_conversations`` f: keep each conversation
   (:func:`pcs.trace.tree.conversation_ids`) with probability f (seeded),
   with all its turns: sampling requests would cut the turns that reuse.
2. ``prefix_scale`` a and ``prompt_scale`` m: every token of the leading
   *shared-prefix blocks* (blocks that requests of two or more
   conversations contain: system prompts, shared documents) becomes a*m
   tokens, every other prompt token m tokens (the prompt is the same text,
   stretched). New block j ends at scaled position E; it is identified by
   the original prefix [0, e) that E maps back to (e rounded up), i.e. by
   the original id of the block holding token e - 1 and e's offset in it,
   plus the new block's length. Equal original prefixes give equal new
   blocks; a new prompt is ``round(f(prompt_tokens))`` tokens.
3. ``max_input_tokens`` / ``max_output_tokens``: truncate; a prompt cut
   inside a block keeps that block's id only if the cut is at its end,
   otherwise the shortened block gets an id derived from (id, length).
4. ``tenants`` N: ``copy`` makes N independent copies of the whole trace
   (copy c's ids = mix(c, id): disjoint trees, same arrivals; each tenant's
   stream equals the original up to renaming), ``split`` deals the
   conversations to N tenants at random (seeded) and renames each tenant's
   ids, so prefixes shared across tenants (a system prompt) become one copy
   per tenant, as a per-tenant ``cache_salt`` makes them in vLLM.
5. ``speed`` s: arrival times divided by s (2: twice the rate).

Memory: the whole trace (16 bytes per block access, a few arrays per request).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pcs.choices import close_tail
from pcs.errors import UserError, shown_repr
from pcs.trace.idmix import mix64
from pcs.trace.request import RequestBatch
from pcs.trace.tree import block_tokens, conversation_ids
from pcs.units import format_counted

__all__ = ["TransformSpec", "Transformed", "transform", "TENANT_MODES"]

TENANT_MODES = ("copy", "split")
_TAG_SCALE, _TAG_TRUNC, _TAG_TENANT = 0x5CA1E, 0x7B0C, 0x7E4A47


@dataclass(frozen=True, slots=True)
class TransformSpec:
    """The transforms to apply (module docstring for the rules and the order).

    Attributes:
        speed: arrival-rate multiplier (> 0); arrival_s / speed.
        tenants: number of tenants (>= 1); 1 = unchanged.
        tenant_mode: ``copy`` or ``split``.
        prefix_scale: length multiplier of shared-prefix blocks (> 0).
        prompt_scale: length multiplier of every prompt (> 0).
        max_input_tokens, max_output_tokens: truncation (>= 1), or None.
        sample_conversations: fraction of conversations kept, in (0, 1].
        seed: RNG seed of sampling and of the split.
    """

    speed: float = 1.0
    tenants: int = 1
    tenant_mode: str = "copy"
    prefix_scale: float = 1.0
    prompt_scale: float = 1.0
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    sample_conversations: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        for k in ("speed", "prefix_scale", "prompt_scale"):
            v = getattr(self, k)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not (0 < v < float("inf")):
                raise UserError(f"{k} must be a positive finite number, got {shown_repr(v)}")
        if isinstance(self.tenants, bool) or not isinstance(self.tenants, int) or self.tenants < 1:
            raise UserError(f"tenants must be an integer >= 1, got {shown_repr(self.tenants)}")
        if self.tenant_mode not in TENANT_MODES:
            raise UserError(f"tenant_mode must be one of {', '.join(TENANT_MODES)}, got {shown_repr(self.tenant_mode)}"
                            f"{close_tail(self.tenant_mode, TENANT_MODES)}")
        for k in ("max_input_tokens", "max_output_tokens"):
            v = getattr(self, k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise UserError(f"{k} must be an integer >= 1 or None, got {shown_repr(v)}")
        f = self.sample_conversations
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1:
            raise UserError(f"sample_conversations must be in (0, 1], got {shown_repr(f)}")

    def applied(self) -> list[str]:
        """Human-readable list of the transforms that change something."""
        out = []
        if self.sample_conversations < 1:
            out.append(f"kept {self.sample_conversations:g} of the conversations (seed {self.seed})")
        if self.prefix_scale != 1:
            out.append(f"shared prefixes x{self.prefix_scale:g}")
        if self.prompt_scale != 1:
            out.append(f"prompts x{self.prompt_scale:g}")
        if self.max_input_tokens:
            out.append(f"prompts cut to {format_counted(self.max_input_tokens, 'token')}")
        if self.max_output_tokens:
            out.append(f"outputs cut to {format_counted(self.max_output_tokens, 'token')}")
        if self.tenants > 1:
            out.append(f"{self.tenants} tenants ({self.tenant_mode})")
        if self.speed > 1:
            out.append(f"arrivals x{self.speed:g} faster")
        elif self.speed < 1:  # 0.5 divides the rate by 2: time spans double
            out.append(f"arrivals x{1 / self.speed:g} slower (--speed {self.speed:g}: time spans x{1 / self.speed:g})")
        return out


@dataclass(frozen=True, slots=True)
class Transformed:
    """A transformed trace.

    Attributes:
        batch: the requests, in arrival order (ids are derived 64-bit ids).
        tenant: int64, shape (n,): each request's tenant (0 without tenants).
        conversation: int64, shape (n,): each request's conversation in the
            input trace (copies keep their original's number).
    """

    batch: RequestBatch
    tenant: np.ndarray
    conversation: np.ndarray = field(repr=False)


def _take(b: RequestBatch, rows: np.ndarray) -> RequestBatch:
    """Rows ``rows`` (int index array) of a batch, in that order."""
    lens = b.num_blocks[rows]
    offs = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(lens, out=offs[1:])
    gather = np.repeat(b.block_offsets[:-1][rows] - offs[:-1], lens) + np.arange(offs[-1])
    pick = (lambda a: None if a is None else a[rows])  # noqa: E731
    pick_t = (lambda t: None if t is None else tuple(t[i] for i in rows.tolist()))  # noqa: E731
    return RequestBatch(0, b.block_size, b.arrival_s[rows], b.prompt_tokens[rows], b.output_tokens[rows], offs,
                        b.block_hashes[gather], pick(b.session_id), pick(b.parent_id), pick(b.turn),
                        pick_t(b.type), pick_t(b.extra_keys))


def _shared_prefix_tokens(b: RequestBatch, conv: np.ndarray) -> np.ndarray:
    """int64 (n,): tokens of each request's leading run of blocks that two or more conversations contain."""
    h = b.block_hashes
    if h.size == 0:
        return np.zeros(len(b), dtype=np.int64)
    row = np.repeat(np.arange(len(b)), b.num_blocks)
    pairs = np.unique(np.stack([h, conv[row].astype(np.uint64)], axis=1), axis=0)
    ids, nconv = np.unique(pairs[:, 0], return_counts=True)
    shared = nconv[np.searchsorted(ids, h)] >= 2
    # leading run: a block counts when it and every earlier block of its request are shared
    c = np.concatenate(([0], np.cumsum(~shared)))
    lead = (c[1:] - np.repeat(c[b.block_offsets[:-1]], b.num_blocks)) == 0
    return np.bincount(row[lead], weights=block_tokens(b)[lead], minlength=len(b)).astype(np.int64)


def _scale(b: RequestBatch, s_tok: np.ndarray, a: float, m: float) -> RequestBatch:
    """Stretch prompts: shared-prefix tokens x a*m, the rest x m (rule 2); vectorised over all new blocks."""
    bs = b.block_size
    p = b.prompt_tokens.astype(np.float64)
    s = s_tok.astype(np.float64)
    new_p = np.rint(s * a * m + (p - s) * m).astype(np.int64)
    new_n = -(-new_p // bs)
    row = np.repeat(np.arange(len(b)), new_n)
    offs = np.zeros(len(b) + 1, dtype=np.int64)
    np.cumsum(new_n, out=offs[1:])
    j = np.arange(offs[-1]) - offs[:-1][row]
    length = np.minimum(bs, new_p[row] - j * bs)
    end = (j * bs + length).astype(np.float64)
    sa, rs = s[row] * a * m, s[row]
    # back to original positions, rounded up (a tiny epsilon keeps exact multiples exact)
    e = np.where(end <= sa + 1e-9, np.ceil(end / (a * m) - 1e-9), rs + np.ceil((end - sa) / m - 1e-9))
    e = np.clip(e.astype(np.int64), 1, b.prompt_tokens[row])
    k = (e - 1) // bs
    orig = b.block_hashes[b.block_offsets[:-1][row] + k]
    ids = mix64(_TAG_SCALE, orig, e - k * bs, length)
    return replace(b, prompt_tokens=new_p, block_offsets=offs, block_hashes=ids)


def _truncate(b: RequestBatch, max_in: int | None, max_out: int | None) -> RequestBatch:
    """Rule 3: cut prompts to ``max_in`` tokens and outputs to ``max_out``."""
    out_tok = b.output_tokens if max_out is None else np.minimum(b.output_tokens, max_out)
    if max_in is None:
        return replace(b, output_tokens=out_tok)
    bs = b.block_size
    new_p = np.minimum(b.prompt_tokens, max_in)
    new_n = -(-new_p // bs)
    row = np.repeat(np.arange(len(b)), new_n)
    offs = np.zeros(len(b) + 1, dtype=np.int64)
    np.cumsum(new_n, out=offs[1:])
    j = np.arange(offs[-1]) - offs[:-1][row]
    ids = b.block_hashes[b.block_offsets[:-1][row] + j].copy()
    length = np.minimum(bs, new_p[row] - j * bs)
    old_len = np.minimum(bs, b.prompt_tokens[row] - j * bs)
    cut = length < old_len
    ids[cut] = mix64(_TAG_TRUNC, ids[cut], length[cut])
    return replace(b, prompt_tokens=new_p, output_tokens=out_tok, block_offsets=offs, block_hashes=ids)


def _tenants(b: RequestBatch, conv: np.ndarray, spec: TransformSpec) -> tuple[RequestBatch, np.ndarray, np.ndarray]:
    """Rule 4; returns (batch sorted by arrival, tenant, conversation)."""
    n_t = spec.tenants
    if spec.tenant_mode == "split":
        deal = np.random.default_rng([spec.seed, 1]).integers(0, n_t, size=int(conv.max()) + 1 if conv.size else 0)
        tenant = deal[conv] if conv.size else np.zeros(0, dtype=np.int64)
        row = np.repeat(tenant, b.num_blocks)
        return replace(b, block_hashes=mix64(_TAG_TENANT, row, b.block_hashes)), tenant.astype(np.int64), conv
    parts = []
    for c in range(n_t):
        ids = mix64(_TAG_TENANT, c, b.block_hashes)
        sid = None if b.session_id is None else np.where(b.session_id >= 0, b.session_id * n_t + c, -1)
        par = None if b.parent_id is None else np.where(b.parent_id >= 0, b.parent_id * n_t + c, -1)
        parts.append(replace(b, block_hashes=ids, session_id=sid, parent_id=par))
    from pcs.trace.request import concat_batches

    whole = concat_batches(parts)
    tenant = np.repeat(np.arange(n_t, dtype=np.int64), len(b))
    order = np.argsort(whole.arrival_s, kind="stable")
    return _take(whole, order), tenant[order], np.tile(conv, n_t)[order]


def transform(b: RequestBatch, spec: TransformSpec) -> Transformed:
    """Apply ``spec`` to a whole trace (one :class:`RequestBatch`, arrival order).

    Args:
        b: the trace (:func:`pcs.trace.request.concat_batches` of a ``Trace``).
        spec: the transforms.
    Returns:
        :class:`Transformed`.

    Raises:
        UserError: from :class:`TransformSpec` (checked at its construction); the sample keeps no
            conversation (the trace would be empty, which every pcs reader refuses: never written).
    """
    conv = conversation_ids(b)
    if spec.sample_conversations < 1 and conv.size:
        keep_c = np.random.default_rng([spec.seed, 0]).random(int(conv.max()) + 1) < spec.sample_conversations
        rows = np.flatnonzero(keep_c[conv])
        if not rows.size:
            raise UserError(f"--sample-conversations {spec.sample_conversations:g} keeps none of the "
                            f"{np.unique(conv).size:,} conversations (seed {spec.seed}): the trace would be empty; "
                            "keep a larger fraction or try another --seed")
        b, conv = _take(b, rows), conv[rows]
    if spec.prefix_scale != 1 or spec.prompt_scale != 1:
        s_tok = _shared_prefix_tokens(b, conv) if spec.prefix_scale != 1 else np.zeros(len(b), dtype=np.int64)
        b = _scale(b, s_tok, spec.prefix_scale, spec.prompt_scale)
    if spec.max_input_tokens is not None or spec.max_output_tokens is not None:
        b = _truncate(b, spec.max_input_tokens, spec.max_output_tokens)
    tenant = np.zeros(len(b), dtype=np.int64)
    if spec.tenants > 1:
        b, tenant, conv = _tenants(b, conv, spec)
    if spec.speed != 1:
        b = replace(b, arrival_s=b.arrival_s / spec.speed)
    return Transformed(b, tenant, conv)


def summary(b: RequestBatch) -> dict[str, Any]:
    """The shape numbers ``pcs trace transform`` shows before and after (keys of ``trace_stats``)."""
    from pcs.trace.stats import trace_stats

    class _One:
        block_size = b.block_size

        def iter_batches(self):
            yield b

    st = trace_stats(_One())
    keep = ("requests", "conversations", "block_accesses", "distinct_blocks", "time_span_s",
            "single_sequence_hit_ratio", "shared_prefix_token_share", "prefix_tree_branching_nodes",
            "prompt_tokens_total")
    return {k: st[k] for k in keep}
