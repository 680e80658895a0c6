"""``--model NAME`` / ``--model-config config.json``: the one loader ``pcs footprint``, ``deploy``, ``envelope``
and ``curve`` share; ``--model`` also takes a config.json path, as in ``pcs replay``."""
from __future__ import annotations

import click

from pcs.cli.common import PcsUsageError

__all__ = ["load_model", "is_config_path", "model_options"]


def is_config_path(value: str | None) -> bool:
    """Whether a ``--model`` value names a config file rather than a preset: it exists, has a folder
    part or ends in ``.json`` (so a missing ``configs/x.json`` says "no such file", not "unknown model")."""
    import os
    from pathlib import Path

    return bool(value) and (os.sep in value or value.lower().endswith(".json") or Path(value).exists())


def model_options(f):
    """``--model NAME`` and ``--model-config PATH`` (``pcs footprint``, ``pcs deploy``), one definition and one
    help text; :func:`load_model` reads them (``model_name``, ``model_config``)."""
    from pcs.model import MODEL_NAMES     # here, not at import: pcs replay imports this module for its --help

    f = click.option("--model-config", "model_config", type=click.Path(dir_okay=False), default=None,
                     help="A local Hugging Face config.json instead of a preset (no network).")(f)
    return click.option("--model", "model_name", default=None, metavar="NAME",
                        help=f"Model preset: {', '.join(MODEL_NAMES)} (see `pcs models`), or a config.json path.")(f)


def load_model(model_name: str | None, model_config: str | None, quiet: bool = False):
    """The preset or the config's spec; each assumption made reading a config is a warning on stderr
    (none with ``quiet``; the JSON lists them under ``assumptions`` either way).

    Raises:
        PcsUsageError: both or neither given.
        UserError: unknown preset (UnknownNameError), bad config (PathError, InputError) (one line, exit 2 via the CLI).
    """
    from pcs.model import MODEL_NAMES, get_model, load_hf_config

    if model_name and model_config:
        raise PcsUsageError("give --model or --model-config, not both")
    if not model_name and not model_config:
        raise PcsUsageError(f"give --model NAME or --model-config config.json; known models: {', '.join(MODEL_NAMES)}")
    if is_config_path(model_name):  # --model path/config.json, as pcs replay reads it
        model_name, model_config = None, model_name
    spec = load_hf_config(model_config) if model_config else get_model(model_name)
    for assumption in () if quiet else spec.assumptions:
        click.echo(f"pcs: warning: {assumption}", err=True)
    return spec
