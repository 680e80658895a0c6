"""pcs's errors cross process boundaries as themselves (pickle round trip), so a worker's error reaches its caller.

``pickle`` re-makes an exception by calling its class with ``args`` (Python docs, ``BaseException.__reduce__``):
the message alone, which a class whose ``__init__`` takes its own arguments (InputError's path, line, field,
problem) refuses -- ``pcs.replay`` raising an InputError in a ``concurrent.futures.ProcessPoolExecutor`` worker then
broke the pool (BrokenProcessPool: "A process in the process pool was terminated abruptly"), and a Trace that had
skipped a line could not be unpickled (its ``first_skipped``). Every error below is made by hand with the message
its docstring states, then compared field by field after the round trip.
"""
from __future__ import annotations

import concurrent.futures
import copy
import pickle

import pytest

from pcs.errors import InputError, PathError, UnknownNameError, UserError
from pcs.trace import open_trace
from pcs.trace.hashids import BlankLine

CASES = [
    (InputError("t.jsonl", 3, "input_length", "must be >= 0, got -3"), "t.jsonl:3: field 'input_length': must be >= 0, got -3"),
    (InputError("t.parquet", None, None, "not a pcs trace"), "t.parquet: not a pcs trace"),
    (PathError("runs/t.jsonl", "trace", "No such file or directory"),
     "trace='runs/t.jsonl': No such file or directory"),
    (UnknownNameError("eviction policy", "arcc", ["lru", "slru"], {"protected": "slru"}),
     "unknown eviction policy 'arcc'; valid: lru, slru (alias protected = slru)"),
    (BlankLine("t.jsonl", 7), "t.jsonl:7: blank line (use on_error='skip' to skip blank lines)"),
    (UserError("a plain one"), "a plain one"),
]


class _OneArgument(InputError):
    """A user's own subclass with another ``__init__`` (a review: re-making it with InputError's four arguments
    raised TypeError)."""

    def __init__(self, problem):
        super().__init__("my.file", None, None, problem)


class _ExtraArgument(InputError):
    """Another order of arguments (a review: re-made with InputError's, its message came back 't:3: None')."""

    def __init__(self, path, line, problem, extra=None):
        super().__init__(path, line, None, problem)
        self.extra = extra


CASES += [(_OneArgument("oops"), "my.file: oops"), (_ExtraArgument("t", 3, "bad", extra=7), "t:3: bad")]


@pytest.mark.parametrize("error, message", CASES, ids=[type(e).__name__ + str(i) for i, (e, _) in enumerate(CASES)])
@pytest.mark.parametrize("how", ["pickle", "copy"])
def test_each_error_survives_a_round_trip(error, message, how):
    back = pickle.loads(pickle.dumps(error)) if how == "pickle" else copy.deepcopy(error)
    assert type(back) is type(error) and str(back) == message and back.args == (message,)
    assert vars(back) == vars(error)


def test_args_changed_after_the_error_was_made_are_kept():
    e = InputError("t.jsonl", 3, "f", "p")
    e.args = ("new message",)
    assert pickle.loads(pickle.dumps(e)).args == ("new message",)


def _replay(path: str):
    import pcs

    return pcs.replay(path)


def test_a_workers_input_error_reaches_the_caller(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": "x", "output_length": 1, "hash_ids": [1]}\n')
    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        with pytest.raises(InputError) as err:
            pool.submit(_replay, str(bad)).result(timeout=120)
    assert (err.value.line, err.value.field) == (1, "input_length")
    assert str(err.value) == f"{bad}:1: field 'input_length': must be an integer, got \"x\""


def test_a_trace_that_skipped_lines_pickles(tmp_path):
    p = tmp_path / "s.jsonl"      # line 2 blank, line 3 a negative length
    p.write_text('{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [1]}\n\n'
                 '{"timestamp": 1, "input_length": -1, "output_length": 1, "hash_ids": [2]}\n')
    t = open_trace(p, on_error="skip")
    assert sum(len(b) for b in t.iter_batches()) == 1
    back = pickle.loads(pickle.dumps(t))
    assert back.skipped == 2 and [s.line for s in back.skipped_lines] == [2, 3]
    assert str(back.first_skipped) == f"{p}:3: field 'input_length': must be >= 0, got -1"
