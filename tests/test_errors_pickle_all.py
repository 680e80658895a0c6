"""Every exception class pcs defines crosses a process boundary as itself: pickle (protocols 0-5) and
``copy.deepcopy`` give back the same type, ``str``, ``args`` and attributes.

``pickle`` re-makes an exception by calling its class with ``args`` (Python docs, ``BaseException.__reduce__``),
which a class whose ``__init__`` takes other arguments refuses or misreads: the JSON reader's errors
(``pcs.jsondepth``: ``TooDeepError()`` takes none, ``NumberTooLongError`` four, ``DuplicateKeyError`` loses its
line and field), the CLI's ``PcsStopped`` (message and exit code) and ``PcsInternalError`` (the exception it
reports) -- raised in a ``ProcessPoolExecutor`` worker, such an error broke the pool (``BrokenProcessPool``).

The classes are found by walking every module of the ``pcs`` package (a new class is covered without a line here);
each is made by calling it with arguments chosen by its ``__init__``'s parameter names and annotations
(:func:`_made`), then its attributes set after ``__init__`` (``DuplicateKeyError.lineno``) are given values too.
"""
from __future__ import annotations

import copy
import importlib
import inspect
import pickle
import pkgutil

import pytest

import pcs

#: Modules not imported by the walk: running pcs/__main__.py would start the CLI.
SKIP_MODULES = {"pcs.__main__"}


def _classes() -> list[type]:
    found = {}
    for info in pkgutil.walk_packages(pcs.__path__, "pcs."):
        if info.name in SKIP_MODULES:
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == info.name):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[k] for k in sorted(found)]


CLASSES = _classes()


def _value(p: inspect.Parameter):
    """A value for parameter ``p`` of an error's ``__init__``, by its annotation (a string: postponed)."""
    ann = str(p.annotation)
    if "BaseException" in ann or "Exception" in ann or "Error" in ann:
        return ValueError("the cause")
    if ann.startswith("int") or p.name in ("line", "lineno", "digits", "index", "signum", "exit_code"):
        return 7
    if "Iterable" in ann or "list" in ann:
        return ["lru", "slru"]
    if "Mapping" in ann or "dict" in ann:
        return {"protected": "slru"}
    if ann.startswith("bool"):
        return True
    return f"<{p.name}>"


def _made(cls: type) -> BaseException:
    if not inspect.isfunction(cls.__init__):     # an exception base's own __init__: the message alone
        err = cls("a message")
    else:                                        # pcs's __init__ (or click's): a value per parameter, by its name
        params = [p for p in inspect.signature(cls.__init__).parameters.values()
                  if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and (p.default is p.empty or p.name == "index")]
        err = cls(*[_value(p) for p in params])
    for name, value in list(vars(err).items()):
        if value is None:                        # set after __init__ (DuplicateKeyError.lineno, .field)
            setattr(err, name, 11 if "line" in name else f"<{name}>")
    return err


def _same(a, b) -> bool:
    if isinstance(a, BaseException):
        return type(a) is type(b) and a.args == b.args
    return a == b


def test_the_walk_finds_the_classes_the_reviews_named():
    names = {c.__name__ for c in CLASSES}
    assert {"TooDeepError", "NumberTooLongError", "DuplicateKeyError", "PcsStopped", "PcsInternalError",
            "InputError", "Terminated"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
@pytest.mark.parametrize("how", ["deepcopy"] + [f"pickle{p}" for p in range(pickle.HIGHEST_PROTOCOL + 1)])
def test_every_error_class_round_trips(cls, how):
    err = _made(cls)
    back = copy.deepcopy(err) if how == "deepcopy" else pickle.loads(pickle.dumps(err, protocol=int(how[6:])))
    assert type(back) is cls
    assert str(back) == str(err) and back.args == err.args
    assert vars(back).keys() == vars(err).keys()
    for name, value in vars(err).items():
        assert _same(getattr(back, name), value), name


def _loads(text: str):
    from pcs.jsondepth import loads, no_duplicate_keys

    return loads(text, object_pairs_hook=no_duplicate_keys)


def test_the_json_readers_error_reaches_the_caller_from_a_worker():
    """A user calling the JSON reader in a worker process: the duplicate key's error arrives whole -- key, line 2
    (the second ``"a"``) and field None (the top level), as :func:`pcs.jsondepth.loads` documents it (with its
    ``no_duplicate_keys`` hook)."""
    import concurrent.futures

    from pcs.jsondepth import DuplicateKeyError

    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        with pytest.raises(DuplicateKeyError) as err:
            pool.submit(_loads, '{"a": 1,\n "a": 2}').result(timeout=120)
    assert (err.value.key, err.value.lineno, err.value.field) == ("a", 2, None)
    assert str(err.value) == "key 'a' appears twice in one object"
