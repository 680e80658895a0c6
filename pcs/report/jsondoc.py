"""Generate ``docs/json.md``, the JSON reference of ``pcs replay``, ``pcs compare``, ``pcs curve``, ``pcs envelope``
and ``pcs footprint``.

The reference is built from the result dataclasses themselves (field name,
JSON key, type, unit and meaning declared with :func:`pcs.schema.field`), so
it cannot drift from the code; ``tests/report/test_jsondoc.py`` fails when
the committed file differs from :func:`render`. Regenerate with::

    python -m pcs.report.jsondoc > docs/json.md
"""
from __future__ import annotations

import dataclasses
import re
import types
import typing
from typing import Any

from pcs.schema import UNITS, json_fields

__all__ = ["render", "COMMANDS", "CLI_KEYS", "CLI_OBJECTS"]

#: (command, result class path, one-line description); the order of docs/json.md.
COMMANDS = (
    ("pcs replay", "pcs.engine.result.ReplaySummary",
     "`pcs.replay(...).summary.to_dict()`; the object `pcs replay --format json` prints, plus the keys below."),
    ("pcs compare", "pcs.engine.compare.CompareResult",
     "`pcs.compare(...).to_dict()`; the object `pcs compare --format json` prints "
     "(`--format csv`: one line per variant)."),
    ("pcs replay --instances N", "pcs.fleet.summary.FleetSummary",
     "`pcs.fleet_replay(...).summary.to_dict()`; the object `pcs replay --instances N --format json` prints "
     "(`--format csv`: one line per instance)."),
    ("pcs compare --router", "pcs.fleet.compare.RouterCompare",
     "`pcs.fleet.compare.compare_routers(...).to_dict()`; the object `pcs compare --router a --router b "
     "--format json` prints (`--format csv`: one line per router)."),
    ("pcs curve", "pcs.curves.result.CurveResult",
     "`pcs.curve(...).to_dict()`; the object `pcs curve --format json` prints, plus the keys below. The one "
     "break of the contract (2026-12-04), so that one name means one count in every JSON: the curve's "
     "`block_accesses` counted the cacheable blocks, now every hash id as in `pcs replay` (the cacheable ones "
     "are `cacheable_blocks`), and `distinct_blocks` became `distinct_cacheable_blocks`; `pcs report` reads an "
     "older curve file under the new names, and names a field it refuses there as the file holds it "
     "(`distinct_blocks`). A null is refused where the file's other keys rule it out (`distinct_cacheable_blocks` "
     "beside `sample_rate` 1.0, a knee beside a ceiling above 0, `block_bytes` beside a model, `capacity_bytes` "
     "beside a number of `capacity_blocks` and `block_bytes`); so is a `knee` key pcs never writes (not p50, p90 "
     "or p99), and numbers that contradict each other: a `capacity_bytes` other than `capacity_blocks` x "
     "`block_bytes` (or one beside a null `block_bytes`), a `block_bytes` of 0, a `sample_rate` outside (0, 1], a "
     "`block_accesses` below `cacheable_blocks`, a knee `pN` whose `percent_of_ceiling` is not N, a row's "
     "`ceiling_hit_ratio` other than the file's, rows whose `capacity_blocks` do not ascend, a `knee` without "
     "each of p50, p90 and p99, a `block_bytes` beside a null `model`, an `lru_hit_ratio` (row or knee) or "
     "`belady_hit_ratio` above the ceiling, a row's `lru_hit_ratio` above its `belady_hit_ratio` in an exact "
     "curve (`sample_rate` 1.0), a Belady value (`belady_hit_ratio` or `belady_block_misses`, row or knee) in a "
     "sampled curve (`sample_rate` below 1: pcs computes Belady only for an exact curve), an `lru_block_misses` "
     "or `belady_block_misses` above `cacheable_blocks`, "
     "rows (capacities ascending) whose `lru_hit_ratio` falls or `lru_block_misses` rises, or, in an exact curve, "
     "whose `belady_hit_ratio` falls (`belady_block_misses` may rise: MIN keeps only blocks that earn hit tokens), "
     "knee capacities out of the order p50 <= p90 <= p99 (pcs/report/curvecheck.py)."),
)

_NOTES = ("notes", "[string]", "-", "omitted unless the trace needs them: its prefix reuse is synthetic (a lengths-only "
          "or generated trace), bad lines skipped (pcs.trace.api.trace_notes). Appended last")
#: Keys a command adds to its result's ``to_dict()``: command -> ((key, type, unit, meaning), ...).
_TRACE_FILE = ("trace_file", "object | null", "-",
               "`--format json` only: the trace file the run read, for `pcs report` to check before reading it "
               "again -- `path` (absolute), `bytes`, `head_tail_blake2b` (blake2b-128 of its first and last MiB), "
               "`mtime_ns` (recorded, not compared); null for stdin or a non-file (pcs.trace.fingerprint)")
_REPLAY_COMMAND = ("replay_command", "string", "-",
                   "`--format json` only: the `pcs replay` command line that reruns the run -- every option given "
                   "(flag, environment) but the output ones (`--format`, `-q`, `--html`, `--plot`, "
                   "`--requests-out`), paths absolute; the HTML page prints it (pcs.cli.rerun)")
_SKIPPED_LINES = ("skipped_lines", "array of object", "-",
                  "omitted unless `--on-error skip` skipped a bad trace line (Parquet: row): the first 5 skipped, "
                  "in file order, each as `--on-error raise` would refuse it -- `file` (the trace's name), `line` "
                  "(Parquet: `row`; 1-based), `field` (Parquet: the column; null: none), `problem`, `message` (the "
                  "one-line error, `FILE:LINE: field 'F': PROBLEM`); how many were skipped in all is `skipped` "
                  "(pcs.trace.api.skipped_lines_json, docs/traces.md)")
_SKIPPED = ("skipped", "int", "count",
            "how many bad trace lines (Parquet: rows) `--on-error skip` skipped, blank ones included; always "
            "present, 0 when none was (or under `--on-error raise`) -- the key and count of `pcs trace stats` "
            "and of each `pcs sweep` row (`Trace.skipped` in the Python API; pcs.cli.common.with_skipped_lines; "
            "the points a sweep finds already done are its run's `skipped_points`, docs/sweep.md)")
CLI_KEYS = {
    "pcs replay": (_TRACE_FILE, _REPLAY_COMMAND, _SKIPPED, _SKIPPED_LINES),
    "pcs replay --instances N": (_TRACE_FILE, _REPLAY_COMMAND, _SKIPPED, _SKIPPED_LINES),
    "pcs compare --router": (_SKIPPED, _SKIPPED_LINES),
    "pcs curve": (("dtype", "string | null", "-", "the `--dtype` option (KV dtype of `--model`'s bytes) as "
                                                  "its value type (`fp4`, `fp8`), as every command's `dtype`; "
                                                  "null without it. Appended after the result; `trace` is `-` "
                                                  "for stdin"),
                  ("layout", "string | null", "-", "the layout `--dtype` runs as, by its one name (`fp4` -> "
                                                   "`nvfp4`, `int8` -> `int8_per_token_head`; docs/models.md); "
                                                   "null without it"),
                  ("notes", "[string]", "-", "omitted unless the trace or the sample needs them: the trace's "
                   "notes (as the other commands': synthetic prefix reuse, bad lines skipped; "
                   "pcs.trace.api.trace_notes), then for a sampled curve (`sample_rate` below 1) that its LRU "
                   "values are estimates (`SHARDS sample rate R: LRU values are estimates ...`, as the table and "
                   "the HTML page say; pcs.report.curve.sampled_note; an exact curve has none), then a sampled "
                   "curve's warning when its sample is too small to "
                   "trust (fewer than 1,000 distinct sampled blocks beyond the exact heads: "
                   "pcs.curves.api.small_sample_note, docs/curves.md). Appended last"), _SKIPPED, _SKIPPED_LINES),
    "pcs compare": (("variants[].tier_capacities", "object of object of int", "blocks, bytes",
                     "`--format json` only: each variant's tiers by name, GPU first, as the text table's tiers row "
                     "(`199.98 GB = 1,192 blk`): `capacity_blocks` and `capacity_bytes` (blocks x the tier's bytes "
                     "per block; a hybrid model's pages), from its summary's tiers; absent for a variant without one"),
                    _NOTES, _SKIPPED, _SKIPPED_LINES),
}

#: Objects a command prints from keys of its own (no typed result of the Python API): command -> (description,
#: ((key, type, unit, meaning), ...)), after :data:`COMMANDS` in docs/json.md.
CLI_OBJECTS = {
    "pcs envelope": (
        "The object `pcs envelope --format json` prints: its scalar keys are listed in `pcs envelope --help` "
        "(docs/cli.md, docs/views.md); `rows` (also the lines of `--format csv`) holds one object per "
        "`--bandwidth` and `--link`, or without either the one row at the break-even bandwidth "
        "(pcs.analysis.envelope.EnvelopeRow, then the key the command adds):",
        (("bandwidth_bps", "number", "bytes/s", "B_eff, the bandwidth of the row"),
         ("read_s", "number \\| null", "s", "D / B_eff (null: infinite, B_eff 0 with D > 0)"),
         ("cached_s", "number \\| null", "s", "read_s + T_remaining + T_overhead"),
         ("saved_s", "number \\| null", "s", "T_full - cached_s, net, from the times in whole nanoseconds, exact, "
                                              "as the nearest float: its sign is the verdict's (negative: slower)"),
         ("verdict", "string", "-", "faster, slower or equal: the cached path against T_full, decided exactly"),
         ("exposed_wait_s", "number \\| null", "s", "max(0, read_s - W) with --overlap W, else null"),
         ("break_even", "bool", "-", "true for the row pcs adds at the break-even bandwidth when no --bandwidth "
                                    "or --link is given (the text's `(break-even)`), false for every given one")),
    ),
    "pcs footprint": (
        "The object `pcs footprint --format json` prints (pcs.model.footprint.FootprintResult.to_dict, then "
        "`notes`); its top-level keys are listed in docs/views.md -- `dtype` the value type (`fp4`) and "
        "`layout.name` the layout that runs (`nvfp4`), the `*_bytes_per_block` a block as the tiers hold it (a hybrid model's "
        "pages, docs/semantics.md §13.1), `outside_pages_bytes` the per-tensor scales no block carries. "
        "`components` (also the lines of `--format csv`) holds one object per KV component, and for a hybrid "
        "model whose pages pad a `page_padding` one:",
        (("name", "string", "-", "the component (`full_attention`, `sliding_window`, `mla_latent`, "
                                 "`indexer_keys`, `ssm_state`, `page_padding`)"),
         ("layers", "int", "count", "decoder layers of the component (0 for `page_padding`)"),
         ("dtype", "string", "-", "the type of the stored values (`fp4`, `fp8`, `bf16`), as `dtype` is in every "
                                  "command (a replay's `payload_lens.dtype`); `page_padding`: the value type of the "
                                  "pages it pads"),
         ("layout", "string", "-", "the KV layout by its one name (`nvfp4`, `fp8_per_token_head`, `fp8_ds_mla`; "
                                   "`-` for `page_padding`): the text's `layout` column"),
         ("describe", "string", "-", "the component's shape in words"),
         ("tokens_held", "int", "tokens", "tokens a sequence of T tokens keeps (a window: min(T, W); a state: 0)"),
         ("reference_bytes_per_token", "int", "bytes", "payload bytes a token adds (one rank)"),
         ("serialized_bytes_per_token", "int", "bytes", "payload + in-page scales a token adds (one rank)"),
         ("fixed_bytes_per_sequence", "int", "bytes", "bytes a sequence holds whatever T (a recurrent state)"),
         ("reference_bytes_per_block", "int", "bytes", "the component's payload in one block (a hybrid model: its "
                                                      "share of the block's pages, a state once a checkpoint)"),
         ("serialized_bytes_per_block", "int", "bytes", "the same with in-page scales (`page_padding`: the "
                                                       "padding a block's pages carry)"),
         ("reserved_blocks", "int", "blocks", "blocks a running sequence reserves (a state: 0, one slot)"),
         ("reference_bytes", "int", "bytes", "Reference total of all sequences"),
         ("serialized_bytes", "int", "bytes", "Serialized total of all sequences"),
         ("reserved_bytes", "int", "bytes", "Reserved total of all sequences (a state: one slot each)"),
         ("prefix_store_bytes", "int", "bytes", "floor(T/B) blocks x `serialized_bytes_per_block`, all sequences"),
         ("prefix_store_gpu_bytes", "int", "bytes", "the same blocks in the GPU (Reserved) layout")),
    ),
}

_SCALARS = {int: "int", float: "number", str: "string", bool: "bool", type(None): "null", Any: "any"}


def _load(path: str) -> type:
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _type(tp: Any) -> str:
    """A Python annotation as JSON reads it: ``tuple[X, ...]`` -> array of X, dataclasses by name."""
    if tp in _SCALARS:
        return _SCALARS[tp]
    if dataclasses.is_dataclass(tp):
        return f"[{tp.__name__}](#{tp.__name__.lower()})"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type(a) for a in args)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"array of {_type(args[0])}"
        return "[" + ", ".join(_type(a) for a in args) + "]"
    if origin is dict:
        return f"object of {_type(args[1])}"
    return str(tp)


def _nested(tp: Any) -> list[type]:
    if dataclasses.is_dataclass(tp):
        return [tp]
    return [c for a in typing.get_args(tp) for c in _nested(a)]


def _markdown(text: str) -> str:
    """Docstring markup as Markdown: roles and double backticks to code spans, ``<name>`` escaped."""
    text = re.sub(r":(?:mod|class|func|meth|attr|data):`~?([^`]+)`", r"`\1`", text).replace("``", "`")
    return re.sub(r"<(?=[a-z])", "&lt;", text)


def _summary(cls: type) -> str:
    doc = (cls.__doc__ or "").split("\nAttributes (unit", 1)[0].strip()
    paragraphs = [" ".join(line.strip() for line in p.splitlines()) for p in re.split(r"\n\s*\n", doc)]
    return _markdown("\n\n".join(paragraphs))


def _table(cls: type) -> tuple[list[str], list[type]]:
    hints = typing.get_type_hints(cls)
    lines = ["| key | type | unit | meaning |", "| --- | --- | --- | --- |"]
    nested: list[type] = []
    for f in json_fields(cls):
        tp = hints[f.name]
        nested += [c for c in _nested(tp) if c not in nested]
        if f.key.startswith("<"):  # a mapping flattened into one key per entry: the entry's type
            tp = typing.get_args(tp)[1]
        key = f"`{f.key}`" + ("" if f.key == f.name or f.key.startswith("<") else f" (attribute `{f.name}`)")
        meaning = f.doc + (f"; omitted {f.omit}" if f.omit else "")
        lines.append(f"| {key} | {_type(tp)} | {f.unit} | {_markdown(meaning).replace('|', '/')} |")
    return lines, nested


def _section(cls: type, level: int, done: set) -> list[str]:
    done.add(cls)
    lines, nested = _table(cls)
    out = [f"{'#' * level} {cls.__name__}", "", _summary(cls), "", *lines, ""]
    for child in nested:
        if child not in done:
            out += _section(child, 3, done)
    return out


def render() -> str:
    """The whole of ``docs/json.md`` (deterministic: same code, same text)."""
    out = ["# JSON reference", "",
           "<!-- generated by `python -m pcs.report.jsondoc > docs/json.md`; do not edit by hand "
           "(tests/report/test_jsondoc.py keeps it current) -->", "",
           "The JSON objects `pcs replay`, `pcs compare` and `pcs curve` print with `--format json`, and the "
           "`to_dict()` of the typed results the Python API returns. Keys appear in the order listed. The "
           "contract: keys may be added, none renamed or dropped. Non-finite numbers print as `null`. A file "
           "name that is not valid UTF-8 (a `trace`, `out` or `path` value: the byte 0xff of `in\\xff.jsonl`) "
           "prints as JSON's escape of the surrogate Python holds it as (`\\udcff`), which Python's JSON reader "
           "turns back into the name on disk (`pcs report` finds the trace); messages and tables show the byte "
           "as `\\xff`. The "
           "rules behind each quantity are in `docs/semantics.md`.", "",
           "Units:", ""]
    out += [f"- `{u}`: {meaning}" for u, meaning in UNITS.items()]
    out.append("")
    done: set = set()
    for command, path, desc in COMMANDS:
        cls = _load(path)
        out += [f"## {command}", "", desc, ""]
        out += _section(cls, 3, done)
        extra = CLI_KEYS.get(command, ())
        if extra:
            out += [f"Keys `{command}` adds:", "", "| key | type | unit | meaning |", "| --- | --- | --- | --- |"]
            out += [f"| `{k}` | {t.replace('|', chr(92) + '|')} | {u} | {m} |" for k, t, u, m in extra]
            out.append("")
    for command, (desc, keys) in CLI_OBJECTS.items():
        out += [f"## {command}", "", desc, "", "| key | type | unit | meaning |", "| --- | --- | --- | --- |"]
        out += [f"| `{k}` | {t} | {u} | {m} |" for k, t, u, m in keys]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
