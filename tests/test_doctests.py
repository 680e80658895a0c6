"""Every ``>>>`` example in the pcs package's docstrings, run (mend48b: no test ran them, and three had drifted).

One test per module (``pkgutil.walk_packages`` over ``pcs``; ``doctest.DocTestFinder`` finds the examples of the
objects each module defines). A module whose import needs an optional extra that is not installed (pyproject.toml
``[project.optional-dependencies]``, :data:`pcs.extras.EXTRAS`) is skipped, naming the missing package; any other
import error fails.
"""
from __future__ import annotations

import doctest
import importlib
import io
import pkgutil

import pytest

import pcs

#: the import names of the packages the optional extras bring (pcs.extras.EXTRAS, by distribution name)
EXTRA_IMPORTS = frozenset({"matplotlib", "vl_convert", "jinja2", "tokenizers", "msgpack", "ray", "libcachesim",
                           "simdjson", "pytest", "hypothesis"})

MODULES = sorted(m.name for m in pkgutil.walk_packages(pcs.__path__, "pcs."))


def imported(name: str):
    """The module ``name``; pytest.skip naming the package when its import needs a missing optional extra's.

    Raises:
        ModuleNotFoundError: a missing module that no extra brings (a real error)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").partition(".")[0]
        if top in EXTRA_IMPORTS:
            pytest.skip(f"{name} needs the optional package {top!r}, not installed")
        raise


def failures(module) -> tuple[int, list[str]]:
    """(examples run, the report of each docstring with a failing example) of ``module``'s doctests."""
    run, failed = 0, []
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, module.__name__):
        out = io.StringIO()
        result = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS).run(test, out=out.write)
        run += result.attempted
        if result.failed:
            failed.append(out.getvalue())
    return run, failed


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_every_module_hold(name):
    run, failed = failures(imported(name))
    assert not failed, "\n".join(failed)


def test_the_finder_reaches_the_examples():
    # pcs.units and pcs.trace.lengthonly hold examples (format_counted's, header_problem's): a finder that found
    # none would pass every module above
    assert failures(imported("pcs.trace.lengthonly"))[0] >= 2
    assert len(MODULES) > 100


def test_a_missing_extra_is_skipped_by_name_and_another_missing_module_fails(monkeypatch):
    def missing(name):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(importlib, "import_module", lambda n: missing("msgpack.ext" if n == "a" else "pcs_bogus"))
    with pytest.raises(pytest.skip.Exception, match="a needs the optional package 'msgpack'"):
        imported("a")
    with pytest.raises(ModuleNotFoundError):
        imported("b")


def test_a_drifted_example_fails():
    import types

    mod = types.ModuleType("drifted")
    exec('def f():\n    """\n    >>> 1 + 1\n    3\n    """\n', mod.__dict__)
    mod.f.__module__ = "drifted"
    run, failed = failures(mod)
    assert run == 1 and len(failed) == 1 and "Expected:\n    3\nGot:\n    2" in failed[0]
