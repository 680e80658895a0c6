"""The ``pcs`` command group.

Subcommands are loaded lazily from ``COMMANDS`` so ``pcs budget`` does not
import pyarrow, and so each command lives in its own module. Every error that
is the user's (``ValueError``, a missing file) becomes one line on stderr and
exit code 2, never a traceback (see :func:`pcs.cli.common.user_errors`).
"""
from __future__ import annotations

import importlib

import click

from pcs.cli.common import user_errors

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
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when it is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)

    def invoke(self, ctx: click.Context):
        with user_errors():
            return super().invoke(ctx)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pcs")
def cli() -> None:
    """pcs: how much KV cache to keep where, and what it really buys.

    \b
    Views:
      budget     capacity and bandwidth utilisation (u_C, u_B, R = C/B)
      footprint  KV bytes per component: reference, serialized, reserved
      envelope   is restoring faster than recomputing the prefill?
      replay     a trace through a multi-tier prefix cache: the real hit rate
      curve      hit ratio at every capacity in one pass (LRU, Belady)

    GB and GB/s are decimal (1 GB = 10^9 B); GiB only where written.
    """


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="pcs")
