"""A running request's space in a hybrid hierarchy: what the step scheduler needs beyond start / finish.

:class:`GroupStepMixin` gives :class:`pcs.cache.grouphier.GroupHierarchy` the
calls :class:`pcs.engine.scheduler.StepEngine` makes of
:class:`pcs.cache.Hierarchy` (``docs/semantics.md §9``, §3.1), per cache group:

- :meth:`~GroupStepMixin.grow`: a decode step at a block boundary needs one
  more block. A full-attention group takes ``pages`` more pages of its pool; a
  window or chunk group holds at most ``hold_blocks`` blocks while running (the
  block sliding out gives its slot to the new one: vLLM frees the skipped
  blocks, ``remove_skipped_blocks``), so it takes pages only while below that;
  a state group holds its one running state (reserved at admission). All
  pools or none: False changes nothing (the scheduler preempts).
- :meth:`~GroupStepMixin.abort`: a request preempted during prefill: its
  read pages unpinned tail first, its reserved slots given back, nothing cached.
- :meth:`~GroupStepMixin.extend`: full output blocks cached while decoding
  (``cache_decode_blocks``): a full-attention group's pages fill reserved slots
  and stay pinned to ``finish`` (as the reference); the other groups' pages are
  stored unpinned at once (cached, evictable: a window's or chunk's blocks
  slide out as decoding goes on, a state is a checkpoint, not the running
  state), checkpoints only where the state rule writes them.
- :meth:`~GroupStepMixin.held_blocks`: GPU pages pinned or reserved (all pools).
- :meth:`~GroupStepMixin.follow`: the scheduler's clock, read before each
  call, so the residency series (:class:`pcs.cache.residency.Residency`)
  samples simulated time; with it, per-request samples are kept only for a
  request's first admission (:meth:`first_admission`), as the columns are per request.
"""
from __future__ import annotations

from typing import Callable, Sequence

__all__ = ["GroupStepMixin"]


class GroupStepMixin:
    """The step scheduler's calls on a :class:`pcs.cache.grouphier.GroupHierarchy` (module docstring)."""

    _clock: Callable[[], float] | None = None

    def follow(self, clock: Callable[[], float]) -> None:
        """Read simulated time (seconds) from ``clock()`` before each call; keep per-request residency
        samples only when :meth:`first_admission` says so."""
        self._clock = clock
        self.residency.auto_record = False

    def _now(self) -> None:
        """Tick the residency series to the followed clock (no-op when not following)."""
        if self._clock is not None:
            self.residency.tick(self._clock())

    def first_admission(self) -> None:
        """The admission just made was a request's first: keep its residency sample (``--requests-out``)."""
        self.residency.record_last()

    def restore_skipped(self, adm) -> None:
        """The scheduler recomputes instead of moving ``adm``'s restores (restore fallback, §9): they are not
        counted as restored pages per group (the links moved no bytes)."""
        restored = self.residency.restored
        for t, _, g, _ in adm.restores:
            restored[t][g] -= 1

    def held_blocks(self) -> int:
        """GPU pages held by running requests: pinned plus reserved, over all pools of the GPU level."""
        return sum(t.num_pinned + t.reserved_blocks for t in self.levels[0])

    def grow(self, adm, n: int) -> bool:
        """Reserve the pages of ``n`` more blocks for a running request (module docstring).

        Args:
            adm: its :class:`pcs.cache.grouphier.GroupAdmission`; n: blocks, >= 1.
        Returns:
            False, changing nothing, when a pool cannot give its pages (victims are demoted or dropped, §7).
        """
        self._now()
        add = []
        need = [0] * self.pools
        for g, grp in enumerate(self.groups):
            hold = grp.hold_blocks
            a = n if hold is None else max(0, min(n, hold - adm.live[g]))
            add.append(a)
            need[grp.pool] += a * grp.pages
        gpu = self.levels[0]
        if any(k > gpu[p].available_blocks for p, k in enumerate(need)):
            return False
        for p, k in enumerate(need):
            if k:
                victims = self._reserve(p, k)
                adm.reserved[p] += k
                self._evicted(victims, 0, p)
        for g, a in enumerate(add):
            adm.live[g] += a
        self._note_held()
        self.residency.note()
        return True

    def abort(self, adm) -> None:
        """Release a request preempted before ``prefill_done``: pins dropped tail first, slots given back,
        nothing cached."""
        self._unpin_and_release(adm, ((adm.hold, True), (adm.release, True)))
        empty = lambda: [[] for _ in self.groups]  # noqa: E731
        adm.hold, adm.release, adm.computed, adm.transient = empty(), empty(), empty(), empty()

    def extend(self, adm, block_hashes: Sequence[int]) -> None:
        """Cache blocks a running request filled while decoding (after ``prefill_done``; module docstring)."""
        if not block_hashes:
            return
        self._now()
        first = adm.blocks
        adm.blocks += len(block_hashes)
        for g, grp in enumerate(self.groups):
            tags, p = self.tags_of(g), grp.pool
            if grp.rule == "full":
                keys = [h | t for h in block_hashes for t in tags]
                adm.reserved[p] -= len(keys) - len(self._fill(p, keys, g))
                adm.computed[g] = adm.computed[g] + keys
            else:
                keys = [block_hashes[i - first] | t for i in grp.writes(first, adm.blocks) for t in tags]
                if keys:
                    pushed, _ = self._insert(0, p, keys[::-1], g)
                    self._evicted(pushed, 0, p)
            if self.write_through and keys:
                self._write_pages_down(p, keys)
        self.residency.note()

    def _write_pages_down(self, p: int, keys: list[int]) -> None:
        """Write-through: pages copied to pool p of every lower level (§7)."""
        down = keys[::-1]
        for j in range(1, len(self.levels)):
            pushed, written = self._insert(j, p, down)
            self.written_blocks[j] += written
            if j == len(self.levels) - 1:
                self._dropped(pushed)

    def _note_held(self) -> None:
        """Raise the peak of GPU bytes running requests pin or reserve."""
        held = sum((len(t.resident) - len(t.policy) + t.reserved_blocks) * b
                   for t, b in zip(self.levels[0], self.page_bytes[0]))
        if held > self.residency.peak_held_bytes:
            self.residency.peak_held_bytes = held
