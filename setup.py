"""Build hook for the optional compiled kernel; all metadata is in pyproject.toml.

``pcs._stackdist`` (pcs/_stackdist.c, CPython API + buffer protocol, no numpy
headers) computes LRU stack depths ~30x faster than the pure-Python kernel.
It is ``optional``: when it fails to compile, installation still succeeds and
pcs.replay.stackdist falls back to Python with a warning.
"""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pcs._stackdist",
            sources=["pcs/_stackdist.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
