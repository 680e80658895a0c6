"""Build hook for the optional compiled twins; all metadata is in pyproject.toml.

Each C file sits beside the Python module it mirrors (``pcs._native`` lists
them and owns the ``auto | c | python`` switch):

- ``pcs.curves._stackdist`` (pcs/curves/_stackdist.c): LRU stack depths for
  the one-pass curves, ~30x the pure-Python kernel;
- ``pcs.engine._lruscan`` (pcs/engine/_lruscan.c): the one-capacity
  sequential LRU scan of the replay fast path;
- ``pcs.cache._lruhier`` (pcs/cache/_lruhier.c): the all-LRU tier hierarchy
  the replay event loop runs on.

All are ``optional``: when one fails to compile, installation still succeeds
and its Python twin is used.
"""
from setuptools import Extension, setup


def _ext(name: str, source: str) -> Extension:
    return Extension(name, sources=[source], depends=["pcs/_kernel_common.h"], extra_compile_args=["-O3"],
                     optional=True)


setup(
    ext_modules=[
        _ext("pcs.curves._stackdist", "pcs/curves/_stackdist.c"),
        _ext("pcs.engine._lruscan", "pcs/engine/_lruscan.c"),
        _ext("pcs.cache._lruhier", "pcs/cache/_lruhier.c"),
    ]
)
