"""How to install an optional extra of pcs: the one wording every missing-package hint uses.

pcs is installed from its repository (README: ``pip install -e '.[test,plot]'``
in a clone); the package named ``pcs`` on PyPI is another project, so a hint
never says ``pip install 'pcs[...]'``. The extras are the
``[project.optional-dependencies]`` of pyproject.toml.
"""
from __future__ import annotations

__all__ = ["EXTRAS", "install_hint", "missing_extra"]

#: extra -> the packages it brings (pyproject.toml [project.optional-dependencies])
EXTRAS = {"plot": "matplotlib, vl-convert-python", "report": "jinja2", "chat": "tokenizers, jinja2", "events": "msgpack", "ray": "ray",
          "bench": "libcachesim", "fast": "pysimdjson", "test": "pytest, hypothesis"}


def install_hint(extra: str) -> str:
    """``pip install -e '.[EXTRA]'`` with where to run it.

    Raises:
        KeyError: ``extra`` is not one of :data:`EXTRAS`.
    """
    if extra not in EXTRAS:
        raise KeyError(extra)
    return f"pip install -e '.[{extra}]' in the pcs clone"


def missing_extra(what: str, package: str, extra: str) -> str:
    """The one-line message for an absent optional package: ``WHAT needs the 'PACKAGE' package: HINT``."""
    return f"{what} needs the '{package}' package: {install_hint(extra)}"
