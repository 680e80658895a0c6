"""Hostile input: a compiled twin that was not built is said once -- at install time and once per run
(one line, not with -q), naming what is slower and how to get a compiler -- never as a Python warning.

Members: the commands that run twins (replay, compare, curve) print the note
once however many twins they touch; the others say nothing; -q silences it;
``auto`` falls back without a RuntimeWarning; setup.py's build ends with the
same advice when the compiler fails.
"""
import os
import subprocess
import sys
import warnings

import pytest

from helpers import ROOT, SMALL_TRACE, invoke
from pcs import _native

T = SMALL_TRACE


@pytest.fixture
def unbuilt(monkeypatch):
    for twin in _native.TWINS:
        monkeypatch.setitem(_native._loaded, twin, None)


@pytest.mark.parametrize("args", [["replay", T, "--tier", "gpu=5blocks", "--timing", "sequential"],
                                  ["compare", T, "--policy", "lru", "--policy", "fifo", "--tier", "gpu=5blocks"],
                                  ["curve", T, "--points", "2"]], ids=lambda a: a[0])
def test_one_note_per_run_when_twins_are_missing(unbuilt, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")                        # never a raw Python warning
        r = invoke(*args)
    assert r.exit_code == 0, r.output
    notes = [ln for ln in r.stderr.splitlines() if "compiled twins not built" in ln]
    assert len(notes) == 1, r.stderr
    assert notes[0].startswith("pcs: note:") and "slower" in notes[0] and "build-essential" in notes[0]
    assert "pip install -e ." in notes[0]
    assert "compiled twins" not in invoke(*args, "-q").stderr


def test_no_note_where_no_twin_runs_or_all_are_built(unbuilt, monkeypatch):
    assert "compiled twins" not in invoke("footprint", "--model", "llama-3.1-8b", "--tokens", "10").stderr
    monkeypatch.undo()
    if _native.missing():
        pytest.skip(f"compiled twins not built here: {_native.missing()}")
    assert _native.missing_note() is None
    assert "compiled twins" not in invoke("curve", T, "--points", "2").stderr


def test_missing_note_names_the_twins_and_what_they_speed_up(unbuilt):
    note = _native.missing_note()
    for twin, module in _native.TWINS.items():
        assert module in note and _native.SLOWER[twin] in note


@pytest.mark.slow
def test_setup_py_says_once_when_the_compiler_fails(tmp_path):
    env = dict(os.environ, CC="false", LDSHARED="false")
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
                        "--build-temp", str(tmp_path / "tmp")], cwd=ROOT, env=env, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr                        # optional twins: the install goes on
    notes = [ln for ln in r.stderr.decode().splitlines() if ln.startswith("pcs: note:")]
    assert len(notes) == 1 and "were not built" in notes[0] and "pip install -e ." in notes[0]
    for module in _native.TWINS.values():
        assert module in notes[0]
