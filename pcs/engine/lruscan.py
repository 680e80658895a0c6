"""One-capacity sequential LRU, streamed batch by batch, with the infinite-cache walks beside it.

The sequential one-tier LRU replay of docs/semantics.md §6 is plain LRU of C unit slots on
the stream "per request: look up its first ``n`` ids head to tail, then stamp them tail
to head". :class:`SequentialLru` runs it in O(1) per access (no stack depths):
every stamp gets a logical time; the cache is the C most recent live times
(a time is live while it is its key's last stamp), i.e. the live times at or
after a pointer ``p``, so a key is resident iff its last stamp is >= ``p``;
a stamp that makes C + 1 live times advances ``p`` past the oldest one (the
LRU victim, Mattson et al. 1970: the same cache as the top C of the LRU
stack). Per request it returns three leading runs:

- ``lead``: ids (of the first ``n``) resident at capacity C at the request's
  start -- the fast path's lookup;
- ``seen``: ids (of the first ``n``) stamped by an earlier request -- the
  single-sequence walk of :func:`pcs.blocks.single_sequence_hits`;
- ``ideal``: ids (of all the request's ids) looked up by an earlier request
  -- the same walk with every id cacheable (``BlockRules(True, False)``);
- with decode ids (each request's cached output blocks, :mod:`pcs.engine.decodescan`), ``seen_decode``:
  ids (of the first ``n``) stamped, or given as a decode id, by an earlier request -- the
  decode-aware single-sequence walk (docs/semantics.md §12, §17); a decode id is marked after its
  request, never stamped or looked up (no LRU slot, no effect on ``ideal``).

Memory: 8 B per id up to the largest id while the ids are small and at least
half dense (the compiled kernel's direct mode: entry = id, no key stored, no
hashing), else 16 B slots of a hash table at load <= 0.5 -- plus one bit per
stamp above the LRU pointer; nothing per request. The compiled kernel is
``pcs.engine._lruscan.lru_feed`` (pcs/engine/_lruscan.c); :class:`_PythonLru` mirrors it line for line
(tests/engine/test_replay_scan.py checks both against stack depths and
:func:`pcs.blocks.single_sequence_hits`).
"""
from __future__ import annotations

import numpy as np

from pcs import _native
from pcs.errors import PickledAsIs, UserError

__all__ = ["NotChained", "SequentialLru", "REASONS"]

#: Kernel return codes when ``check`` is on -> why the fast path does not apply.
REASONS = {1: "a block hash repeats within a request (not chained hashes)",
           2: "block hashes are not chained (a cached block follows an uncached one)",
           3: "more than 2**31 - 1 block stamps or requests"}


class NotChained(PickledAsIs, ValueError):
    """The ids break the fast path's premise (the message says how)."""


class _PythonLru:
    """Pure-Python mirror of the compiled kernel (pcs/engine/_lruscan.c, ``lru_run``)."""

    def __init__(self, capacity_blocks: int) -> None:
        self.c = capacity_blocks
        self.table: dict[int, list[int]] = {}  # key -> [last stamp (-1 never, -2 a decode id), first request]
        self.live = bytearray()
        self.t = self.p = self.resident = self.req = 0

    def feed(self, block_hashes, offs, n, lead, seen, ideal, check: bool, dec=None) -> int:
        """``dec``: None, or (decode offsets (R + 1,), decode ids, seen_decode out (R,)) as ``lru_feed`` takes them."""
        keys, offs, n = block_hashes.tolist(), offs.tolist(), n.tolist()
        d_off, d_ids = (dec[0].tolist(), dec[1].tolist()) if dec is not None else (None, None)
        table, live = self.table, self.live
        for r in range(len(n)):
            a, b = offs[r], offs[r + 1]
            m, rq = a + n[r], self.req
            run_res = run_seen = run_ideal = run_dec = True
            k_res = k_seen = k_ideal = k_dec = 0
            visited: set[int] = set()
            for i in range(a, b):
                e = table.get(keys[i])
                if e is None:
                    e = table[keys[i]] = [-1, rq]
                elif e[1] is None:      # a decode id's first lookup
                    e[1] = rq
                run_ideal = run_ideal and e[1] < rq
                k_ideal += run_ideal
                if i >= m:
                    continue
                if keys[i] in visited and check:
                    return 1
                visited.add(keys[i])
                res = e[0] >= self.p
                if check and res and not run_res:
                    return 2
                run_res = run_res and res
                k_res += run_res
                run_seen = run_seen and e[0] >= 0
                k_seen += run_seen
                run_dec = run_dec and e[0] != -1
                k_dec += run_dec
            lead[r], seen[r], ideal[r] = k_res, k_seen, k_ideal
            for i in range(m - 1, a - 1, -1):
                e = table[keys[i]]
                if e[0] >= self.p:
                    live[e[0]] = 0
                else:
                    self.resident += 1
                live.append(1)
                e[0] = self.t
                self.t += 1
                while self.resident > self.c:
                    while not live[self.p]:
                        self.p += 1
                    live[self.p] = 0
                    self.p += 1
                    self.resident -= 1
            if dec is not None:
                dec[2][r] = k_dec
                self._mark(d_ids[d_off[r]:d_off[r + 1]])
            self.req += 1
        return 0

    def _mark(self, ids: list) -> None:
        """Mark decode ids (``lru_dmark``): a never-stamped id's last becomes -2; a new id is not looked up yet."""
        for k in ids:
            e = self.table.get(k)
            if e is None:
                self.table[k] = [-2, None]
            elif e[0] == -1:
                e[0] = -2


class SequentialLru:
    """Plain LRU of ``capacity_blocks`` unit slots fed request batches in order.

    Args:
        capacity_blocks: slots C (>= 0).
        kernel: ``"auto"`` (compiled when built), ``"c"`` or ``"python"``
            (:func:`pcs._native.resolve`).
        check: raise :class:`NotChained` when an id repeats among a request's
            first ``n`` ids or a resident id follows a non-resident one.
        expected_ids: a size hint (an upper bound on distinct ids, e.g. the
            trace's id count; 0 = none): the table starts large enough for
            it at load 0.75 instead of growing by doubling from 4,096 slots
            at load 0.5 (each doubling rehashes every key).
        lower_blocks: None, or the slots of a lower LRU tier below the C slots (write-back): :meth:`feed`
            then also returns the two-tier sequential baseline's hit blocks per request (compiled kernel
            only; pcs/engine/_lruscan_tiers.h states its rules, docs/semantics.md §3, §5-§7). Memory: 4 B more
            per table slot (the lower tier's time), 8 B per GPU stamp at or after the LRU pointer (the id of
            each, for the victims), a bit per lower-tier stamp.
    Raises:
        UserError: negative capacity, unknown kernel; ``lower_blocks`` without the compiled kernel.

    >>> lru = SequentialLru(2, "python")
    >>> [x.tolist() for x in lru.feed(np.array([1, 2, 1, 3, 1, 2], np.uint64), np.array([0, 2, 4, 6]),
    ...                               np.array([2, 2, 2]))]
    [[0, 1, 1], [0, 1, 2], [0, 1, 2]]
    """

    def __init__(self, capacity_blocks: int, kernel: str = "auto", check: bool = True,
                 expected_ids: int = 0, lower_blocks: int | None = None) -> None:
        c = int(capacity_blocks)
        if c < 0:
            raise UserError(f"capacity must be >= 0 blocks, got {c}")
        self.kernel = _native.resolve(kernel, "lruscan", "kernel")
        self.check = bool(check)
        self._ext = _native.module("lruscan")
        self._state = self._ext.lru_new(c, int(expected_ids)) if self.kernel == "c" else _PythonLru(c)
        self.tiers = lower_blocks is not None
        if self.tiers:
            if self.kernel != "c" or int(lower_blocks) < 0:
                raise UserError("a lower tier needs the compiled scan kernel and >= 0 blocks")
            self._ext.lru_tiers(self._state, int(lower_blocks))

    def tiers_hold(self) -> bool:
        """Whether the two-tier baseline's premise held on every request fed so far (chained ids: no id
        repeats among a request's cacheable ids, the GPU-resident ids lead); False without a lower tier."""
        return self.tiers and bool(self._ext.lru_tiers(self._state))

    def feed(self, block_hashes: np.ndarray, offsets: np.ndarray, n: np.ndarray,
             max_hit: np.ndarray | None = None, decode: tuple | None = None) -> tuple[np.ndarray, ...]:
        """Run one batch of requests; returns ``(lead, seen, ideal)``, int64 (R,) each, with a lower tier
        ``base`` too: the two-tier sequential baseline's hit blocks (-1 once :meth:`tiers_hold` is False), and
        with ``decode`` last ``seen_decode`` (the module docstring).

        Args:
            block_hashes: uint64 (M,): every block hash of the batch, request by request.
            offsets: int64 (R + 1,): request r owns ``block_hashes[offsets[r]:offsets[r + 1]]``.
            n: int64 (R,): cacheable ids per request (0 <= n <= its ids), the
                ids that are looked up in and stamped into the cache.
            max_hit: int64 (R,): ``max_hit_blocks`` per request (docs/semantics.md §4); a lower tier only.
            decode: None, or ``(offsets int64 (R + 1,) from 0, ids uint64)``: request r's decode ids
                ``ids[offsets[r]:offsets[r + 1]]`` (:meth:`pcs.engine.turns.DecodeBlocks.arrays`).
        Raises:
            NotChained: (``check``) see the class; the state is then undefined.
            UserError: inconsistent shapes or offsets.
        """
        hashes = np.ascontiguousarray(block_hashes, dtype=np.uint64)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        n = np.ascontiguousarray(n, dtype=np.int64)
        r = n.shape[0]
        out = tuple(np.empty(r, np.int64) for _ in range(3 + self.tiers + (decode is not None)))
        dec = () if decode is None else (np.ascontiguousarray(decode[0], dtype=np.int64),
                                         np.ascontiguousarray(decode[1], dtype=np.uint64), out[-1])
        if self.kernel == "c":
            extra = (np.ascontiguousarray(max_hit, dtype=np.int64), out[3]) if self.tiers else (b"", bytearray())
            rc = self._ext.lru_feed(self._state, hashes, offsets, n, *out[:3], self.check,
                                    *(extra + dec if dec else extra[:2 * self.tiers]))
        else:
            if offsets.shape != (r + 1,) or offsets[0] != 0 or offsets[-1] != hashes.shape[0] or \
                    np.any(n < 0) or np.any(n > np.diff(offsets)):
                raise UserError("offsets must be (R+1,) from 0 to len(block_hashes), 0 <= n <= block hashes per request")
            rc = self._state.feed(hashes, offsets, n, *out[:3], self.check, dec or None)
        if rc:
            raise NotChained(REASONS[rc])
        return out
