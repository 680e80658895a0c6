"""Report of the bandwidth envelope (``pcs envelope``): restore or recompute?

The cached path D/B + T_remaining + T_overhead against T_full, per
bandwidth, with the break-even bandwidth D / (T_full - T_remaining -
T_overhead) (``docs/semantics.md`` §10; :mod:`pcs.analysis.envelope`).
"""
from __future__ import annotations

from typing import Any

from pcs import units
from pcs.analysis.envelope import EnvelopeResult
from pcs.report.table import render_table

__all__ = ["render_envelope", "envelope_notes", "net_saved_cell"]


def net_saved_cell(saved_s: float) -> str:
    """The "net saved" cell (seconds -> text): :func:`pcs.units.format_duration`, but a value other than 0 that
    prints as ``0.00 ns`` keeps its sign and says it is below the last digit -- ``+<0.01 ns`` (faster),
    ``-<0.01 ns`` (slower) -- so the number never hides or contradicts the verdict beside it (at break-even
    +-1 ulp both printed ``0.00 ns``). Exactly 0 prints ``0 ms``, as every zero duration does.

    >>> net_saved_cell(2.6e-17), net_saved_cell(-8.7e-18), net_saved_cell(0.0), net_saved_cell(-0.0123)
    ('+<0.01 ns', '-<0.01 ns', '0 ms', '-12.30 ms')
    """
    cell = units.format_duration(saved_s)
    if saved_s and cell == "0.00 ns":
        return ("+" if saved_s > 0 else "-") + "<0.01 ns"
    return cell

def _bandwidth(bps: float | None) -> str:
    """:func:`pcs.units.format_bandwidth`, with 3 significant digits below 1 B/s: a break-even of 1 B over
    10^9 s is 1e-9 B/s, which the 2 decimals print as ``0.00 B/s`` (``0.00000000100 B/s`` here).

    >>> _bandwidth(1e-9), _bandwidth(0.5), _bandwidth(2e10)
    ('0.00000000100 B/s', '0.500 B/s', '20.00 GB/s')
    """
    if bps is None or not 0 < bps < 1:
        return units.format_bandwidth(bps)
    exponent = int(f"{bps:.2e}".split("e")[1])       # 1e-09 -> -9: the first significant digit's place
    return units.format_bandwidth(bps, digits=2 - exponent)


def _computed(n: int) -> str:
    """``N are computed`` (tokens), ``1 is computed``: the verb agrees with the count (:func:`pcs.units.plural`'s
    rule for the noun)."""
    return f"{units.format_count(n)} {'is' if n == 1 else 'are'} computed"


def _scope_text(r: EnvelopeResult, extra: dict[str, Any]) -> str:
    """`` per GPU (TP 8: 7.05 GB for the TP group; bandwidths per GPU link ...)`` when D is one GPU's share (one TP
    rank's: JSON ``restore_bytes_scope`` ``per_rank``); "per GPU" as docs/semantics.md names one GPU's link (§9) and
    break-even (§10)."""
    if extra.get("restore_bytes_scope") != "per_rank":
        return ""
    tp, asked, kept = extra["tp"], extra.get("restore_tokens"), extra.get("restored_tokens")
    cap, prompt, every = extra.get("hit_cap_tokens"), extra.get("prompt_tokens"), extra.get("checkpoint_tokens")
    state = f"a hit ends at a state checkpoint, every {units.format_counted(every, 'token')}" if every else ""
    if kept is None or kept == (asked if asked is not None else prompt):
        whole = ""
    elif asked is None:      # the default restore: the whole prompt, as a full hit
        best = f" at the state checkpoints, every {units.format_counted(every, 'token')}" if every else ""
        whole = (f" = {units.format_counted(kept, 'token')}, the best-case hit of the {units.format_count(prompt)}-token "
                 f"prompt{best} (the other {_computed(prompt - kept)})")
    else:
        why = state or ("the last-token cap" if cap is not None and asked > cap
                        else "whole blocks: only full blocks are cached")
        whole = (f" = {units.format_count(kept)} of the {units.format_counted(asked, 'token')} ({why}, the other "
                 f"{_computed(asked - kept)})")
    kv = f" of {extra['layout']} KV" if extra.get("layout") else ""    # the layout that runs (fp8_ds_mla, not fp8)
    kv += f" in {extra['block_size']}-token blocks" if extra.get("block_size") else ""     # the deployment assumed
    return (f"{whole}{kv} per GPU (TP {tp}: {units.format_bytes(r.restore_bytes * tp)} for the TP group; bandwidths per "
            f"GPU link, pcs replay's are the TP group's, {tp}x)")


def render_envelope(r: EnvelopeResult, extra: dict[str, Any]) -> str:
    """The ``pcs envelope`` table: one row per bandwidth, the break-even bandwidth in the notes.

    Args:
        r: the result of :func:`pcs.analysis.envelope.envelope` (bytes,
            seconds, bytes/s).
        extra: where T_full and T_remaining came from: ``full_prefill_from``,
            ``remaining_from`` (text); optionally what D covers: ``restore_bytes_scope`` (``per_rank``:
            one GPU's share, read over its own link; ``given``), ``tp``; ``link``, the ``--link`` preset whose
            bandwidth is the last row (marked ``(--link NAME)``, so a ``--bandwidth`` of the same figure is told
            apart), and ``overhead_from`` when the overhead is its setup; ``break_even_row``: true when no
            bandwidth was given and the one row is the break-even bandwidth (marked ``(break-even)``).
    Returns:
        The table with its title and notes, no trailing newline.
    """
    # the four inputs in the title (it fits 100 columns: it was 146-354 with their sources in it); where each came
    # from and the margin in the first note (envelope_notes)
    per = " per GPU" if extra.get("restore_bytes_scope") == "per_rank" else ""
    title = (f"restore {units.format_bytes(r.restore_bytes)}{per}; full prefill {units.format_duration(r.full_prefill_s)}"
             f"; remaining {units.format_duration(r.remaining_s)}; overhead {units.format_duration(r.overhead_s)}")
    headers = ["bandwidth", "read D/B", "cached path", "net saved", "verdict"]   # net saved: net_saved_cell
    if r.overlap_s is not None:
        headers.append(f"exposed wait (W = {units.format_duration(r.overlap_s)})")
    body = []
    for i, row in enumerate(r.rows):
        mark = f" (--link {extra['link']})" if extra.get("link") and i == len(r.rows) - 1 else ""
        mark = " (break-even)" if extra.get("break_even_row") else mark
        cells = [_bandwidth(row.bandwidth_bps) + mark, units.format_duration(row.read_s),
                 units.format_duration(row.cached_s), net_saved_cell(row.saved_s), row.verdict]
        if r.overlap_s is not None:
            cells.append(units.format_duration(row.exposed_wait_s))
        body.append(cells)
    return render_table(headers, body, title=title, notes=envelope_notes(r, extra))


def envelope_notes(r: EnvelopeResult, extra: dict[str, Any]) -> list[str]:
    """Every note of the ``pcs envelope`` table, in its order (the JSON's ``notes``); ``extra`` as
    :func:`render_envelope` takes it, with ``past_context``: the note of a prompt past the model's context
    (:func:`pcs.model.footprint.past_context`, as pcs footprint and pcs deploy say it) or None."""
    if r.break_even_bps is None:
        verdict = ("no break-even: T_full - T_remaining - T_overhead <= 0, so no bandwidth makes "
                   "the cached path faster")
    else:
        verdict = (f"break-even bandwidth {_bandwidth(r.break_even_bps)} = D / (T_full - "
                   "T_remaining - T_overhead); the cached path is faster above it")
        if extra.get("restore_bytes_scope") == "per_rank":
            verdict += (f" (per GPU; {_bandwidth(r.break_even_bps * extra['tp'])} for the TP "
                        "group's links together, as pcs replay gives link figures)")
    if extra.get("break_even_row"):
        verdict += ("; no --bandwidth or --link given, so the one row is that bandwidth: the cached path takes "
                    "T_full exactly there")
    return [
        _inputs_note(r, extra), verdict, *_cap_note(extra), *([extra["past_context"]] if extra.get("past_context") else []),
        *_compute_model_note(extra),
        "net saved = T_full - cached path, the restore time taken off (pcs replay's \"prefill saved\" is "
        "gross: the prefill time the hits avoid, before it)",
        "serial model: cached = D/B + T_remaining + T_overhead against T_full; a higher hit ratio "
        "can save compute yet add restore bytes, so it does not guarantee lower latency",
        "halving D (e.g. FP8 KV) halves only the read term (and D halves only when the scales sit outside the "
        "pages): T_remaining and T_overhead stay; and the"
        " D a finite cache really restores comes from a replay (pcs replay), not from a single-sequence ratio"]


def _compute_model_note(extra: dict[str, Any]) -> list[str]:
    """The compute model's bias, said where T_full or T_remaining comes from it (``extra``'s ``full_prefill_from`` /
    ``remaining_from`` start ``compute model:``, :func:`pcs.cli.envelope`): its prefill is an upper bound by the
    embedding and LM-head share, worked by hand in docs/semantics.md §10; [] otherwise."""
    if not any(str(extra.get(k) or "").startswith("compute model:") for k in ("full_prefill_from", "remaining_from")):
        return []
    return ["the compute model's prefill is an upper bound: 2 FLOPs per active parameter per token counts the input "
            "embedding and the LM head on every prompt token, where vLLM computes logits at the sampled position "
            "only (llama-3.1-8b, 8,192 tokens: 301.5 ms against 266.7 ms without them; up to x1.29 where few "
            "parameters are active; docs/semantics.md §10); --prefill-csv takes measured points instead"]


def _inputs_note(r: EnvelopeResult, extra: dict[str, Any]) -> str:
    """The first note: the four inputs again with what D covers (:func:`_scope_text`) and where T_full, T_remaining
    and T_overhead came from, and the margin T_full - T_remaining - T_overhead (the title gives the figures alone)."""
    d = units.format_duration
    return (f"restore {units.format_bytes(r.restore_bytes)}{_scope_text(r, extra)}; full prefill {d(r.full_prefill_s)} "
            f"({extra['full_prefill_from']}); remaining {d(r.remaining_s)} ({extra['remaining_from']}); overhead "
            f"{d(r.overhead_s)}" + (f" ({extra['overhead_from']})" if extra.get("overhead_from") else "")
            + f"; margin T_full - T_remaining - T_overhead = {d(r.margin_s)}")


def _cap_note(extra: dict[str, Any]) -> list[str]:
    """The note of the last-token cap (docs/semantics.md §4, :meth:`pcs.blocks.BlockRules.best_hit_tokens`) when it
    set D's tokens: the default restore (the whole prompt, as a full hit) or an explicit ``--restore-tokens`` above
    the cap; none otherwise. ``extra``: ``prompt_tokens``, ``restore_tokens``, ``hit_cap_tokens``,
    ``restored_tokens``, ``block_size``, ``checkpoint_tokens`` (a hybrid model's state checkpoint interval when it
    ended the hit below the cap, else None)."""
    asked, cap, prompt, bs = (extra.get(k) for k in ("restore_tokens", "hit_cap_tokens", "prompt_tokens",
                                                     "block_size"))
    if cap is None or extra.get("restored_tokens") is None or (asked if asked is not None else prompt) <= cap:
        return []
    n = units.format_count

    def t(count: int) -> str:
        return units.format_counted(count, "token")

    what = (f"restore: a full hit of the {n(prompt)}-token prompt, capped" if asked is None else
            f"--restore-tokens {n(asked)} capped at the {n(prompt)}-token prompt's hit cap")
    kept, every = extra["restored_tokens"], extra.get("checkpoint_tokens")
    if every and kept < cap:   # a hybrid model's state group: the hit rounds down to its last checkpoint (§3.1)
        return [f"{what}: ((T - 1) // B) x B = (({n(prompt)} - 1) // {n(bs)}) x {n(bs)} = {t(cap)}, and the "
                f"state checkpoint every {t(every)} ends the hit at {t(kept)} restored: the other "
                f"{_computed(prompt - kept)}, as pcs replay counts a hit (docs/semantics.md §3.1, §4)"]
    rest = prompt - cap
    return [f"{what}: ((T - 1) // B) x B = (({n(prompt)} - 1) // {n(bs)}) x {n(bs)} = {t(cap)} restored; the "
            f"last prompt token is recomputed for the first output's logits, so {t(rest)} (from the "
            f"last whole block on) {'is' if rest == 1 else 'are'} computed, as pcs replay counts a hit "
            "(docs/semantics.md §4)"]
