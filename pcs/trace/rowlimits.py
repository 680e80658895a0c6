"""Row limits a run hands the trace reader: values a reader takes in general but this run cannot model.

A reader's own checks hold for every use of a trace (a length >= 0, an arrival within +-2**32 s). Some values are
refused only by one way of running it: the step scheduler counts a decode's steps in 64-bit integers, so it takes
an output length below 2**62 tokens (:data:`STEP_OUTPUT_BELOW`), while ``--timing sequential`` or ``--compute
infinite`` never count steps and take any int64. A run that knows its timing before it reads (``pcs.replay``,
``pcs.compare``) hands the reader :data:`STEP_LIMITS` (:meth:`pcs.trace.api.Trace.limited`); the reader then
refuses such a row as it refuses any bad row -- ``FILE:LINE: field 'output_length': ...`` (Parquet: the row,
``output_tokens``), skipped and counted with ``on_error="skip"`` -- and the step scheduler keeps its own check
(:func:`pcs.engine.scheduler.check_output_tokens`) for sources read without limits (requests in memory).

docs/semantics.md §9 ("Bounds") states the limit.
"""
from __future__ import annotations

from pcs._dataclass import dataclass

__all__ = ["NO_LIMITS", "RowLimits", "STEP_LIMITS", "STEP_OUTPUT_BELOW"]

#: Output lengths the step scheduler models, exclusive bound (tokens): its step counts are 64-bit integers in the
#: compiled twin (pcs/engine/_stepsched.c), and a decode of 2**62 tokens runs far past its span limit (366 days)
#: at any step time (docs/semantics.md §9). ``pcs.engine.scheduler.MAX_OUTPUT_TOKENS`` is this value.
STEP_OUTPUT_BELOW = 2 ** 62


@dataclass(frozen=True, slots=True)
class RowLimits:
    """Per-row bounds beyond a reader's own (module docstring).

    Attributes:
        output_below: the output lengths taken are < this (tokens); 2**63 (the default) takes every int64 >= 0,
            so only the reader's own ``>= 0`` rule applies.
        output_why: what refuses a longer output, for the message (e.g. "the step scheduler models").
        output_fix: how to run such a trace instead (API words; the CLI prints its options).
    """

    output_below: int = 2 ** 63
    output_why: str = ""
    output_fix: str = ""

    def output_problem(self, tokens: int) -> str:
        """The problem of an output length of ``tokens`` >= :attr:`output_below` (InputError's ``problem``)."""
        return (f"{tokens:,} tokens is past what {self.output_why} (an output length below "
                f"2**{self.output_below.bit_length() - 1} = {self.output_below:,} tokens; docs/semantics.md §9): "
                f"{self.output_fix}")


#: No bound beyond the readers' own.
NO_LIMITS = RowLimits()
#: The step scheduler's (``timing="modeled"`` with ``compute_mode="step"``).
STEP_LIMITS = RowLimits(STEP_OUTPUT_BELOW, "the step scheduler models",
                        "use compute_mode='infinite' or timing='sequential' for such a trace")
