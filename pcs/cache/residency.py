"""Replay-resident pages per cache group over simulated time: counters, peaks and a sampled series.

:class:`Residency` is the bookkeeping half of :class:`pcs.cache.grouphier.GroupHierarchy`
(``docs/semantics.md §11``, §13): it keeps, per tier level and cache group, the number
of resident pages, updated by the hierarchy as blocks are filled, inserted and evicted;
after each of the hierarchy's steps it notes each level's peak (the level's bytes and
every group's pages at that moment) and each group's own peak; :meth:`tick` samples
every level at a fixed simulated-time step. Bytes are pages x the pool's bytes per
page, so a level's per-group bytes always add up to its total.
"""
from __future__ import annotations

from array import array
from operator import add, mul, sub
from typing import Sequence
from pcs.errors import UserError

__all__ = ["Residency", "group_of", "group_counts", "KEY_SHIFT", "PAGE_BITS", "GROUP_SHIFT"]

#: Page keys of group g >= 1 (or page i >= 1) carry (g << PAGE_BITS | i) above bit 64 (block hashes are < 2**64).
KEY_SHIFT = 64
#: Bits of the page index in a page key: at most 2**16 - 1 pages per block.
PAGE_BITS = 16
#: A page key's group is ``key >> GROUP_SHIFT``.
GROUP_SHIFT = KEY_SHIFT + PAGE_BITS


def group_of(key: int) -> int:
    """The cache group a page key belongs to (``key >> 80``; plain block hashes are group 0)."""
    return key >> GROUP_SHIFT


def group_counts(keys: Sequence[int], groups: int) -> list[int]:
    """How many of ``keys`` belong to each of ``groups`` groups (C-speed passes: one per group boundary)."""
    if groups == 1:
        return [len(keys)]
    ge = [len(keys)] + [sum(map((g << GROUP_SHIFT).__le__, keys)) for g in range(1, groups)] + [0]
    return [ge[g] - ge[g + 1] for g in range(groups)]


class Residency:
    """Resident pages per level and group, their peaks, a time series and per-request samples.

    Args:
        levels: tier level names, GPU first.
        page_bytes: ``page_bytes[j][g]``: bytes of one page of group g at level j (its pool's page).
        step_s: sampling step of :meth:`tick`, simulated seconds (> 0).
        max_samples: most fixed-step samples kept (later ticks stop sampling).
    Raises:
        UserError: step_s <= 0.

    Attributes:
        pages: ``pages[j][g]``: resident pages now.
        peak_bytes: per level, most bytes resident at once; ``peak_pages[j]`` the pages per group
            then and ``peak_t[j]`` when (simulated seconds).
        group_peak_pages: ``[j][g]`` each group's own most pages at once.
        restored, written: ``[j][g]`` pages restored from / written into level j.
        dropped: pages per group pushed out of the last level.
        samples: fixed-step samples ``(t, ((pages per group) per level))``.
        request_pages: per group, GPU pages right after each admission (``array('q')``).
        request_lost: per admission, hit blocks the hybrid rules refused (``array('q')``).
        peak_held_bytes: most GPU bytes pinned or reserved by running requests at once.
    """

    def __init__(self, levels: Sequence[str], page_bytes: Sequence[Sequence[int]], step_s: float = 60.0,
                 max_samples: int = 10_000) -> None:
        if not step_s > 0:
            raise UserError(f"residency step must be > 0 s, got {step_s}")
        self.levels = list(levels)
        self.page_bytes = [list(p) for p in page_bytes]
        ng = len(self.page_bytes[0])
        zeros = lambda: [[0] * ng for _ in self.levels]  # noqa: E731
        self.pages, self.group_peak_pages = zeros(), zeros()
        self.restored, self.written = zeros(), zeros()
        self.dropped = [0] * ng
        self.peak_bytes = [0] * len(self.levels)
        self.peak_pages = [tuple([0] * ng) for _ in self.levels]
        self.peak_t = [0.0] * len(self.levels)
        self.step_s, self.max_samples = float(step_s), max_samples
        self.samples: list[tuple[float, tuple]] = []
        self.request_pages = [array("q") for _ in range(ng)]
        self.request_lost = array("q")
        self.peak_held_bytes = 0
        self.clock = 0.0
        self._next: float | None = None
        #: keep every admission's sample (False: only those :meth:`record_last` keeps, the step scheduler's)
        self.auto_record = True
        self._last: tuple[list[int], int] = ([0] * ng, 0)

    def level_bytes(self, j: int) -> int:
        """Bytes resident at level j now."""
        return sum(map(mul, self.pages[j], self.page_bytes[j]))

    def note(self) -> None:
        """After a hierarchy step (admission, end of prefill): raise each level's peak (bytes) and each
        group's own peak (pages). Within a step a level only shrinks before it grows (a reservation's
        evictions, then fills and inserts, which never shrink a tier), so a level's peak is exact."""
        for j, cnt in enumerate(self.pages):
            b = sum(map(mul, cnt, self.page_bytes[j]))
            if b > self.peak_bytes[j]:
                self.peak_bytes[j], self.peak_pages[j], self.peak_t[j] = b, tuple(cnt), self.clock
            gp = self.group_peak_pages[j]
            if gp != cnt:
                self.group_peak_pages[j] = list(map(max, gp, cnt))

    def tick(self, t: float) -> None:
        """Simulated time reaches ``t`` (before the steps at ``t``): take the samples due at or before it."""
        if self._next is None:
            self._next = t
        while self._next <= t and len(self.samples) < self.max_samples:
            self.samples.append((self._next, tuple(tuple(c) for c in self.pages)))
            self._next += self.step_s
        self.clock = t

    def cut_note(self) -> str | None:
        """A sentence for the run's notes when the fixed-step series stopped at ``max_samples`` before the
        clock's end (docs/semantics.md §13.1: the series would otherwise end silently); else None."""
        if len(self.samples) < self.max_samples or self._next is None or self._next > self.clock:
            return None
        first, last = self.samples[0][0], self.samples[-1][0]
        fit = (self.clock - first) / (self.max_samples - 1)
        return (f"hybrid.series: the residency series stops at its {self.max_samples:,}-sample limit at "
                f"t = {last:.6g} s (--residency-step {self.step_s:g} s), before the run's last step at "
                f"{self.clock:.6g} s; a step of at least {fit:.3g} s covers the whole run")

    def admitted(self, lost_blocks: int, held_bytes: int) -> None:
        """Record, right after a request's admission, the GPU pages per group and the blocks the hybrid
        rules refused it (``--requests-out``; with ``auto_record`` False only when :meth:`record_last` says
        so), and the GPU bytes running requests hold."""
        if self.auto_record:
            for col, c in zip(self.request_pages, self.pages[0]):
                col.append(c)
            self.request_lost.append(lost_blocks)
        else:
            self._last = (list(self.pages[0]), lost_blocks)
        if held_bytes > self.peak_held_bytes:
            self.peak_held_bytes = held_bytes

    def record_last(self) -> None:
        """Keep the sample of the last admission (a request's first admission under the step scheduler)."""
        pages, lost = self._last
        for col, c in zip(self.request_pages, pages):
            col.append(c)
        self.request_lost.append(lost)

    def removed(self, j: int, keys: Sequence[int]) -> None:
        """``keys`` left level j (evicted)."""
        if keys:
            self.pages[j] = list(map(sub, self.pages[j], group_counts(keys, len(self.pages[j]))))

    def added(self, j: int, keys: Sequence[int], written: bool = False) -> None:
        """``keys`` became resident at level j (``written``: from the level above, counted in ``written``)."""
        if keys:
            c = group_counts(keys, len(self.pages[j]))
            self.pages[j] = list(map(add, self.pages[j], c))
            if written:
                self.written[j] = list(map(add, self.written[j], c))
