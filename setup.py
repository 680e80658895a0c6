"""Build hook for the optional compiled kernel; all metadata is in pyproject.toml.

``pcs._stackdist`` (pcs/_stackdist.c, CPython API + buffer protocol, no numpy
headers) computes LRU stack depths ~30x faster than the pure-Python kernel.
``pcs._lruhier`` (pcs/_lruhier.c, CPython API) is the all-LRU tier hierarchy
used by the replay event loop (pcs.replay.native). Both are ``optional``: when
one fails to compile, installation still succeeds and its Python counterpart
is used (pcs.replay.stackdist warns; pcs.cache.Hierarchy is the fallback).
"""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pcs._stackdist",
            sources=["pcs/_stackdist.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
        Extension(
            "pcs._lruhier",
            sources=["pcs/_lruhier.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
    ]
)
