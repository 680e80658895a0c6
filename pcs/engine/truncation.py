"""The replay note that counts every truncated request by cause (docs/semantics.md §5).

A request is truncated when the GPU tier cannot give it every slot it needs: at its first admission (its
prompt, and in modeled timing the running blocks it reserves, do not fit) or, under the step scheduler, at a
re-admission after a preemption (its prompt + output so far outgrew the tier; ``requests_outgrown``). Every
timing gives the same note, naming the total (``requests_truncated``) and each cause's count.
"""
from __future__ import annotations

from pcs import units

__all__ = ["truncation_note", "truncated_timing_note"]


def truncation_note(truncated: int, requests: int, outgrown: int, capacity: int, unit: str) -> str | None:
    """The note, or None when no request was truncated.

    Args:
        truncated: ``requests_truncated`` (count; each request once, whatever the cause).
        requests: the requests replayed (count).
        outgrown: ``scheduler.requests_outgrown`` (count; 0 outside the step scheduler): requests whose first
            admission was whole and a re-admission truncated; the others were truncated at first admission.
        capacity: the GPU tier's slots, in ``unit``.
        unit: ``"blocks"``, or ``"pages"`` for a hybrid model's tiers (docs/semantics.md §3.1).
    """
    if not truncated:
        return None
    causes = []
    if truncated - outgrown:
        first = truncated - outgrown
        causes.append(f"{units.format_count(first)} at {'its' if first == 1 else 'their'} first admission (the slots "
                      "reserved then did not fit)")
    if outgrown:
        causes.append(f"{units.format_count(outgrown)} at a re-admission after a preemption (prompt + output so far "
                      "outgrew the tier)")
    return (f"{units.format_count(truncated)} of {units.format_counted(requests, 'request')} truncated: the GPU tier "
            f"({units.format_count(capacity)} {unit.removesuffix('s') if capacity == 1 else unit}) could not hold "
            f"all {'its' if truncated == 1 else 'their'} KV: " + "; ".join(causes)
            + " (docs/semantics.md §5)")


def truncated_timing_note(truncated: int, requests: int, capacity: int, unit: str) -> str | None:
    """The step scheduler's note when more than half the requests were truncated, else None.

    A truncated request still runs, as if its KV fit (docs/semantics.md §5), so with most requests truncated the
    with-cache vs without-cache timing (TTFT, prefill, load) compares a cache that could not hold a request with no
    cache at all: no deployment serves that way. The note says so and what to change; it changes no number.

    Args:
        truncated: ``requests_truncated`` (count).
        requests: the requests replayed (count).
        capacity: the GPU tier's slots, in ``unit``.
        unit: ``"blocks"``, or ``"pages"`` for a hybrid model's tiers.
    """
    if 2 * truncated <= requests:
        return None
    slots = f"{units.format_count(capacity)} {unit.removesuffix('s') if capacity == 1 else unit}"
    return (f"{units.format_count(truncated)} of {units.format_counted(requests, 'request')} truncated, more than "
            "half: they ran anyway, as if their KV fit, so the timing with the cache vs without it (TTFT, prefill, "
            f"load) does not describe a deployment, whose GPU tier must hold a running request's KV (this one: "
            f"{slots}); for timings give a GPU tier that holds the longest prompt + output (--tier gpu=auto sizes "
            "it from the deployment, pcs deploy shows it)")
