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
- ``pcs.engine._seqpol`` (pcs/engine/_seqpol.c): the sequential baseline of
  two fifo / slru tiers in one lean walk (pcs/engine/seqbase.py; without it
  the compiled hierarchy's ``run_sequential`` runs it);
- ``pcs.engine._prefill`` (pcs/engine/_prefill.c): the replay's prefill
  tables in one pass (pcs/engine/timing.py);
- ``pcs.cache._grouphier`` (pcs/cache/_grouphier.c): the hybrid-model
  hierarchy (cache groups over one shared LRU pool per tier level);
- ``pcs.trace._jsonrows`` (pcs/trace/_jsonrows.cpp, C++17): block-id JSONL
  chunks decoded with simdjson (pcs/trace/jsonfast.py), built only when the
  simdjson sources pysimdjson ships (``simdjson.h``, ``simdjson.cpp`` in its
  package directory) are found at build time: pyproject's build-system
  requires pysimdjson where it has wheels, so pip's isolated build has them;
- ``pcs.fleet._route`` (pcs/fleet/_route.c): the fleet's routing pass for the
  prefix, cache-aware and least-loaded routers (pcs/fleet/route.py).

All are ``optional``: when one fails to compile, installation still succeeds,
its Python twin is used, and the build ends with one note naming the twins
not built, what runs slower and how to get a compiler (the same advice every
``pcs`` run that needs them prints: ``pcs._native.missing_note``).
"""
import importlib.util
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: What each twin speeds up (pcs._native.SLOWER says the same at run time).
_SLOWER = {"pcs.curves._stackdist": "curves", "pcs.engine._lruscan": "sequential one-tier replays",
           "pcs.cache._lruhier": "replays on lru, fifo, slru, sieve, 2q, s3fifo, arc or lfu tiers",
           "pcs.engine._stepsched": "default step-scheduler replays",
           "pcs.trace._statscan": "pcs trace stats",
           "pcs.engine._turns": "the next-turn search of step-scheduler replays",
           "pcs.engine._seqpol": "the sequential baseline of two fifo / slru tiers",
           "pcs.engine._prefill": "the prefill tables of modeled replays",
           "pcs.cache._grouphier": "hybrid-model replays (sliding window, chunked, SSM-state cache groups)",
           "pcs.trace._jsonrows": "reading Mooncake and Bailian JSONL",
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
                                                             "gdsf", "belady", "py", "pyarr")]


def _ext(name: str, source: str, extra: tuple = (), args: tuple = ()) -> Extension:
    return Extension(name, sources=[source, *extra], depends=["pcs/_kernel_common.h", "pcs/_buf8.h", "pcs/cache/_lruhier.h", "pcs/cache/_lruhier_api.h",
                                                    "pcs/cache/_lruhier_polshare.h", "pcs/cache/_dmap.h",
                                                    "pcs/cache/_grouphier.h", "pcs/cache/_grouphier_capi.h",
                                                    "pcs/cache/_oatable.h", "pcs/cache/_lruq.h", "pcs/cache/_iheap.h", "pcs/engine/_lruscan_tiers.h",
                                                    "pcs/engine/_stepheap.h", "pcs/engine/_stepsample.h", "pcs/engine/_stepcols.h", "pcs/_kept.h",
                                                    "pcs/_nogil.h"],
                     extra_compile_args=["-O3", *args], optional=True)


def _simdjson_dir() -> str | None:
    """The directory of pysimdjson's bundled simdjson.h + simdjson.cpp (simdjson 3.x), or None when absent.

    Found without importing pysimdjson (``find_spec`` of the package only)."""
    try:
        spec = importlib.util.find_spec("simdjson")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    where = os.path.dirname(spec.origin)
    return where if all(os.path.isfile(os.path.join(where, f)) for f in ("simdjson.h", "simdjson.cpp")) else None


def _jsonrows() -> list[Extension]:
    """The simdjson JSONL decoder, or nothing when simdjson's sources are not here (pcs.trace.jsonfast's Python
    shortcuts then read JSONL; pcs._native.missing_note names the twin)."""
    where = _simdjson_dir()
    if where is None:
        print("pcs: note: simdjson sources not found (pip install pysimdjson before building): "
              "pcs.trace._jsonrows not built; JSONL reads use the Python shortcut parsers", file=sys.stderr)
        return []
    return [Extension("pcs.trace._jsonrows", sources=["pcs/trace/_jsonrows.cpp", os.path.join(where, "simdjson.cpp")],
                      include_dirs=[where], language="c++", optional=True,
                      define_macros=[("SIMDJSON_EXCEPTIONS", "0")],
                      extra_compile_args=["-O3", "-std=c++17", "-fvisibility=hidden"])]


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
        _ext("pcs.engine._seqpol", "pcs/engine/_seqpol.c"),
        # the prefill tables bit-identical to the numpy reference: no fused multiply-add contraction
        _ext("pcs.engine._prefill", "pcs/engine/_prefill.c", args=("-ffp-contract=off",)),
        _ext("pcs.cache._grouphier", "pcs/cache/_grouphier.c"),
        *_jsonrows(),
        # the cache-aware score bit-identical to the Python router's: no fused multiply-add contraction
        _ext("pcs.fleet._route", "pcs/fleet/_route.c", args=("-ffp-contract=off",)),
    ]
)
