"""The ``pcs`` command group (the console script, ``pcs.cli.main:main``, loads it once stop signals are held).

Subcommands are loaded lazily from ``COMMANDS`` so ``pcs budget`` does not
import pyarrow, and so each command lives in its own module; ``pcs --help``
lists every command with its one-line summary from ``SUMMARIES`` without
importing any. Every error that is the user's (``pcs.errors.UserError``, a missing
file, a bad option) becomes one line on stderr and exit code 2; anything else
is a bug in pcs and shows its traceback, exit code 1; Ctrl-C is one line and
exit 130, SIGTERM one line and exit 143, with temporary files removed (see
:func:`pcs.cli.common.user_errors`).
"""
from __future__ import annotations

import importlib

import pcs.cli.main  # noqa: F401  (OPENBLAS_NUM_THREADS before numpy loads; release_signals)
import click

from pcs.cli.common import PcsGroup, unwind_on_signals, user_errors
from pcs.cli.main import release_signals

#: command name -> "module:attribute" of its click command.
COMMANDS: dict[str, str] = {
    "budget": "pcs.cli.budget:budget",
    "footprint": "pcs.cli.footprint:footprint",
    "envelope": "pcs.cli.envelope:envelope",
    "models": "pcs.cli.presets:models",
    "hardware": "pcs.cli.presets:hardware",
    "trace": "pcs.cli.trace:trace",
    "replay": "pcs.cli.replay:replay",
    "compare": "pcs.cli.compare:compare",
    "curve": "pcs.cli.curve:curve",
    "deploy": "pcs.cli.deploy:deploy",
    "report": "pcs.cli.report:report",
    "sweep": "pcs.cli.sweep:sweep",
    "policies": "pcs.cli.policies:policies",
}

#: command name -> its one-line summary in ``pcs --help`` (whole on one line: under ~65 characters).
SUMMARIES: dict[str, str] = {
    "budget": "capacity and bandwidth budgets (u_C, u_B, R = C/B), transfers",
    "footprint": "KV bytes per component: Reference, Serialized, Reserved",
    "envelope": "restore or recompute? the cached path against the full prefill",
    "models": "list model presets and their config sources",
    "hardware": "list GPU and link presets and their datasheet sources",
    "trace": "inspect (stats), convert and synthesise request traces",
    "replay": "a trace through a multi-tier prefix cache: the real hit rate",
    "compare": "one trace under several policies, tiers, admissions or routers",
    "curve": "hit ratio at every capacity in one pass (LRU, Belady, ceiling)",
    "deploy": "a model on TP GPUs: weights, KV pool, GPU-tier blocks, concurrency",
    "report": "one self-contained HTML page (and figures) from pcs JSON",
    "sweep": "a grid of replays into one Parquet dataset; best points, Pareto",
    "policies": "eviction and admission policies, options and sources",
}


class LazyGroup(PcsGroup):
    """A click group that imports a subcommand's module only when it is used; its parse errors are one line
    (:class:`pcs.cli.common.PcsGroup`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The ``Commands:`` section from ``SUMMARIES`` (a command without one is loaded for its short help)."""
        rows = [(name, SUMMARIES.get(name) or self.get_command(ctx, name).get_short_help_str(80))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        from pcs.outfile import remove_temporary

        try:
            with user_errors(), unwind_on_signals():
                release_signals()   # a stop signal held since the console script started arrives here
                return super().invoke(ctx)
        finally:
            remove_temporary()   # a stdin spool goes when the command ends, not when the GC drops its trace


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pcs")
def cli() -> None:
    """pcs: how much KV cache to keep where, and what it really buys.

    Start with `pcs replay` (the real hit rate of a trace on a multi-tier
    cache) and `pcs curve` (the hit ratio at every capacity); every command
    takes --help; each that prints a result takes --format table|json|csv
    and -q/--quiet (of the groups `pcs sweep` and `pcs trace`: their
    subcommands).

    GB and GB/s are decimal (1 GB = 10^9 B); GiB only where written.

    Ctrl-C (exit 130) or SIGTERM stops a command leaving each output file whole
    or absent, never partial; the line it prints names the outputs already
    complete. More Ctrl-Cs while it stops change nothing.

    Environment (results are the same under every setting; only time moves):
    PCS_NATIVE=auto|c|python: the compiled twins or the Python references
    (--native overrides it). PCS_THREADS=auto|on|off (also 1/0, yes/no,
    true/false): worker threads beside a replay's step loop; auto (unset) =
    on when the process may use two CPUs or more and the trace is not small
    (a JSONL or CSV file of 2,000,000 bytes or more, a Parquet file of
    200,000 block hashes or more, a gzip file, a trace in memory), else off
    (docs/performance.md); with threads on, the next-turn search keeps one
    thread of its own (named pcs-turns) for the life of the process. Any
    other value of either is refused by every command (exit 2), whether or
    not the command reads it.
    """

