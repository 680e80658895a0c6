"""Build hook for the optional compiled twins; all metadata is in pyproject.toml.

Each C file sits beside the Python module it mirrors (``pcs._native`` lists
them and owns the ``auto | c | python`` switch):

- ``pcs.curves._stackdist`` (pcs/curves/_stackdist.c): LRU stack depths for
  the one-pass curves, ~30x the pure-Python kernel;
- ``pcs.engine._lruscan`` (pcs/engine/_lruscan.c): the one-capacity
  sequential LRU scan of the replay fast path;
- ``pcs.cache._lruhier`` (pcs/cache/_lruhier.c + one pcs/cache/_pol_NAME.c
  per compiled eviction policy + pcs/cache/_admission.c and _retain.c, the
  admission policies): the tier hierarchy the replay event loop runs on when every
  tier's policy and admission have compiled twins;
- ``pcs.engine._stepsched`` (pcs/engine/_stepsched.c): the step scheduler's
  event loop (default ``pcs replay``) over that hierarchy;
- ``pcs.trace._statscan`` (pcs/trace/_statscan.c): the one-pass scan behind
  ``pcs trace stats`` (pcs/trace/statscan.py);
- ``pcs.engine._turns`` (pcs/engine/_turns.c): the next-turn search of the
  step scheduler (pcs/engine/turns.py);
- ``pcs.cache._grouphier`` (pcs/cache/_grouphier.c): the hybrid-model
  hierarchy (cache groups over one shared LRU pool per tier level);
- ``pcs.fleet._route`` (pcs/fleet/_route.c): the fleet's routing pass for the
  prefix, cache-aware and least-loaded routers (pcs/fleet/route.py).

All are ``optional``: when one fails to compile, installation still succeeds,
its Python twin is used, and the build ends with one note naming the twins
not built, what runs slower and how to get a compiler (the same advice every
``pcs`` run that needs them prints: ``pcs._native.missing_note``).
"""
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: What each twin speeds up (pcs._native.SLOWER says the same at run time).
_SLOWER = {"pcs.curves._stackdist": "curves", "pcs.engine._lruscan": "sequential one-tier replays",
           "pcs.cache._lruhier": "replays on lru, fifo, slru, sieve, 2q, s3fifo, arc or lfu tiers",
           "pcs.engine._stepsched": "default step-scheduler replays",
           "pcs.trace._statscan": "pcs trace stats",
           "pcs.engine._turns": "the next-turn search of step-scheduler replays",
           "pcs.cache._grouphier": "hybrid-model replays (sliding window, chunked, SSM-state cache groups)",
           "pcs.fleet._route": "fleet routing with the prefix, cache-aware and least-loaded routers"}


class BuildTwins(build_ext):
    """``build_ext`` that, after building, says once which optional twins failed and what to do."""

    def run(self):
        self.failed_twins = []
        super().run()
        if self.failed_twins:
            names = ", ".join(self.failed_twins)
            slower = ", ".join(_SLOWER.get(n, n) for n in self.failed_twins)
            print(f"pcs: note: the compiled twins {names} were not built (no working C compiler?): {slower} will "
                  "run on the Python twins, 1.5-5x slower. Install a C compiler and the Python headers "
                  "(Debian/Ubuntu: apt install build-essential python3-dev; macOS: xcode-select --install) and "
                  "reinstall: pip install -e .", file=sys.stderr)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception:  # setuptools reports and skips an optional extension's failure
            self.failed_twins.append(ext.name)
            raise


#: The compiled eviction policies of pcs.cache._lruhier, one file per policy (as pcs/cache/policies/*.py).
_POLICY_SOURCES = [f"pcs/cache/_pol_{name}.c" for name in ("fifo", "slru", "sieve", "2q", "s3fifo", "arc", "lfu",
                                                             "gdsf", "belady")]


def _ext(name: str, source: str, extra: tuple = (), args: tuple = ()) -> Extension:
    return Extension(name, sources=[source, *extra], depends=["pcs/_kernel_common.h", "pcs/cache/_lruhier.h", "pcs/cache/_grouphier.h"],
                     extra_compile_args=["-O3", *args], optional=True)


setup(
    cmdclass={"build_ext": BuildTwins},
    ext_modules=[
        _ext("pcs.curves._stackdist", "pcs/curves/_stackdist.c"),
        _ext("pcs.engine._lruscan", "pcs/engine/_lruscan.c"),
        _ext("pcs.cache._lruhier", "pcs/cache/_lruhier.c", (*_POLICY_SOURCES, "pcs/cache/_admission.c", "pcs/cache/_retain.c")),
        # bit-identical floats to the Python reference: no fused multiply-add contraction
        _ext("pcs.engine._stepsched", "pcs/engine/_stepsched.c", args=("-ffp-contract=off",)),
        _ext("pcs.trace._statscan", "pcs/trace/_statscan.c"),
        _ext("pcs.engine._turns", "pcs/engine/_turns.c"),
        _ext("pcs.cache._grouphier", "pcs/cache/_grouphier.c"),
        # the cache-aware score bit-identical to the Python router's: no fused multiply-add contraction
        _ext("pcs.fleet._route", "pcs/fleet/_route.c", args=("-ffp-contract=off",)),
    ]
)
