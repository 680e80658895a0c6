"""``--model NAME`` / ``--model-config config.json``: the one loader ``pcs footprint``, ``deploy``, ``envelope``
and ``curve`` share; ``--model`` also takes a config.json path, as in ``pcs replay``."""
from __future__ import annotations

import click

from pcs.cli.common import PcsUsageError
from pcs.cli.params import CheckedPath
from pcs.errors import shown_repr

__all__ = ["load_model", "is_config_path", "config_file", "preset_clash_note", "model_callback", "model_options"]


def _preset_key(value: str) -> str | None:
    """The preset ``value`` names (case-insensitive, HF ids and suffixes as :func:`pcs.model.get_model` reads
    them), or None."""
    from pcs.model.presets import PRESETS, _canonical

    key = _canonical(value)
    return key if key in PRESETS else None


def _hf_id(value: str) -> bool:
    """Whether ``value`` is written as a Hugging Face model id, ``org/name``: one ``/``, neither part empty nor
    starting with ``.`` or ``~`` (``/models/x``, ``./x``, ``../x`` and ``a/b/c`` are paths)."""
    parts = value.split("/")
    return len(parts) == 2 and all(p and p[0] not in ".~" for p in parts)


def is_config_path(value: str | None) -> bool:
    """Whether a ``--model`` value names a config file (or a model folder) rather than a preset: it exists, has a
    folder part or ends in ``.json`` (so a missing ``configs/x.json`` says "no such file", not "unknown model").
    A folder named like a preset that holds no ``config.json`` is the preset (it is no model folder), and so is a
    name not on disk that names a preset by its Hugging Face id (``meta-llama/Llama-3.1-8B``)."""
    import os

    if not value:
        return False
    if os.path.isdir(value) and not os.path.isfile(os.path.join(value, "config.json")) and _preset_key(value):
        return False
    if _hf_id(value) and not os.path.exists(value) and _preset_key(value):
        return False                # an HF id of a preset (meta-llama/Llama-3.1-8B), as pcs.model.get_model reads it
    # os.path.exists, not Path.exists: a name too long for a path is no file (Path.exists raised ENAMETOOLONG)
    return os.sep in value or value.lower().endswith(".json") or os.path.exists(value)


def config_file(value: str | None) -> str | None:
    """The config file a ``--model`` value makes pcs read, or None for a preset: the value, or for a folder its
    ``config.json`` (a local Hugging Face model folder, as ``from_pretrained`` reads one)."""
    import os

    if not is_config_path(value):
        return None
    return os.path.join(value, "config.json") if os.path.isdir(value) else value


def preset_clash_note(value: str | None) -> str | None:
    """A note when a bare ``--model`` name is both a preset and a file here (the file is read: a path on disk comes
    first, as :func:`pcs.model.get_model` and ``from_pretrained`` take it), else None. (A model folder reaches
    this as its ``config.json``, :func:`model_callback`: reading it is what its name asks for.)"""
    import os

    if not value or os.sep in value or not os.path.isfile(value) or not _preset_key(value):
        return None
    return (f"--model {value}: read the file {value} in this folder, not the preset {_preset_key(value)} (a path "
            "on disk comes first); rename the file or run elsewhere for the preset")


#: The refusal of an empty ``--model`` (here, and :func:`pcs.cli.iofiles.refuse_empty_paths` for every command).
EMPTY_MODEL = "empty; give a preset name (`pcs models`) or a config.json path"


def model_callback(ctx, param, value):
    """click callback of ``--model``: a model folder is read as its ``config.json`` (:func:`config_file`).

    Raises:
        UserError: an empty value; an ``org/name`` id that is neither on disk nor a preset's Hugging Face id (a
            model with no preset: pcs reads no model from the network).
    """
    import os

    if isinstance(value, str) and os.path.isdir(value) and is_config_path(value):
        return config_file(value)
    from pcs.cli.iofiles import param_label      # --model-config when typed so (pcs replay's alias)
    from pcs.errors import UserError, quoted

    if isinstance(value, str) and not value.strip():
        raise UserError(f"{param_label(param, ctx)} {shown_repr(value)}: {EMPTY_MODEL}")
    if (isinstance(value, str) and _hf_id(value) and not value.lower().endswith(".json")
            and not os.path.exists(value) and _preset_key(value) is None):
        # an HF id pcs has no preset for (mistralai/Mistral-7B-v0.1)
        raise UserError(f"{param_label(param, ctx)} {quoted(value, 200, show=str)}: no such file or folder, and no "
                        "preset of that name (pcs reads no model "
                        "from the network: download its config.json and give its path; `pcs models` lists the "
                        "presets)")
    return value


def model_options(f):
    """``--model NAME`` and ``--model-config PATH`` (``pcs footprint``, ``pcs deploy``), one definition and one
    help text; :func:`load_model` reads them (``model_name``, ``model_config``)."""
    from pcs.model import MODEL_NAMES     # here, not at import: pcs replay imports this module for its --help

    f = click.option("--model-config", "model_config", type=CheckedPath(dir_okay=False), default=None,
                     help="A local Hugging Face config.json instead of a preset (no network).")(f)
    return click.option("--model", "model_name", default=None, metavar="NAME", callback=model_callback,
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
    if is_config_path(model_name):  # --model path/config.json (or a model folder), as pcs replay reads it
        model_name, model_config = None, config_file(model_name)
    spec = load_hf_config(model_config) if model_config else get_model(model_name)
    for assumption in () if quiet else spec.assumptions:
        click.echo(f"pcs: warning: {assumption}", err=True)
    return spec
