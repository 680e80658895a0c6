"""An empty or blank path is refused as one rule everywhere (mend46b items 3 and 4).

On the command line a path argument or option that click checks as it parses (``exists=True``: report's FILES,
``sweep run PLAN``, ``sweep summarize OUT``, ``trace synth --azure-csv``) said click's ``File '' does not exist``;
it now says what every other path parameter says (pcs.cli.iofiles.refuse_empty_paths): the parameter as typed,
the value, ``an empty path; give a file name`` (a folder name for a folder). In the API a path function read
``''`` as ``Path('')``, the current folder (``path='.': Is a directory``; read_results and summarize read the
current folder's points); it now refuses it naming the parameter (pcs.trace.pathcheck.refuse_empty_path)."""
from __future__ import annotations

import click
import pytest

from helpers import ROOT, all_commands, assert_one_line_error, invoke

FILE = "an empty path; give a file name"
FOLDER = "an empty path; give a folder name (. for the current folder)"


@pytest.mark.parametrize("args,line", [
    (("report", ""), f"pcs: error: FILES '': {FILE}"),
    (("report", "  "), f"pcs: error: FILES '  ': {FILE}"),
    (("sweep", "run", ""), f"pcs: error: PLAN '': {FILE}"),
    (("sweep", "summarize", " "), f"pcs: error: OUT ' ': {FOLDER}"),
    (("trace", "synth", "o.jsonl", "--azure-csv", ""), f"pcs: error: --azure-csv '': {FILE}"),
])
def test_an_empty_checked_path_is_refused_as_every_path_is(args, line, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert assert_one_line_error(invoke(*args)) == line
    assert list(tmp_path.iterdir()) == []          # nothing written (synth's o.jsonl neither)


def test_every_path_click_checks_refuses_an_empty_value_first():
    from pcs.cli.params import CheckedPath

    unchecked = [(" ".join(names), p.name) for names, cmd in all_commands() for p in cmd.params
               if isinstance(p.type, click.Path) and p.type.exists and not isinstance(p.type, CheckedPath)]
    assert unchecked == []


def _api_calls():
    import pcs
    import pcs.sweep as sweep
    from pcs.analysis.budget import load_workloads
    from pcs.hardware import load_hardware_file
    from pcs.model import load_hf_config

    plan = str(ROOT / "traces" / "sweep_sample.toml")
    return [
        (lambda p: load_hardware_file(p), f"path=PATH: {FILE}"),
        (lambda p: load_hf_config(p), f"path=PATH: {FILE}"),
        (lambda p: load_workloads(p), f"path=PATH: {FILE}"),
        (lambda p: sweep.load_plan(p), f"path=PATH: {FILE}"),
        (lambda p: sweep.read_results(p), f"out=PATH: {FOLDER}"),
        (lambda p: sweep.summarize(p), f"out=PATH: {FOLDER}"),
        (lambda p: sweep.run_sweep(plan, p, jobs=1), f"out=PATH: {FOLDER}"),
        (lambda p: sweep.run_sweep(p, "out", jobs=1), f"plan=PATH: {FILE}"),
        (lambda p: pcs.open_trace(p), f"path=PATH: {FILE}"),
        (lambda p: pcs.replay(p), f"trace=PATH: {FILE}"),
    ]


@pytest.mark.parametrize("blank", ["", "   "])
@pytest.mark.parametrize("index", range(10))
def test_an_api_path_that_is_empty_is_refused_naming_the_parameter(index, blank, tmp_path, monkeypatch):
    from pcs.errors import PathError

    # the current folder holds a plan, a hardware file and a finished sweep: '' must read none of them
    monkeypatch.chdir(tmp_path)
    call, message = _api_calls()[index]
    with pytest.raises(PathError) as err:
        call(blank)
    assert isinstance(err.value, ValueError)
    assert str(err.value) == message.replace("PATH", repr(blank))
    assert list(tmp_path.iterdir()) == []


def test_only_the_empty_text_is_refused_as_empty(tmp_path, monkeypatch):
    """``''`` is refused as empty; ``Path('.')`` (or ``Path('')``, which is it) is a folder the caller named, and
    ``'.'`` too: each is refused as the folder it is."""
    from pathlib import Path

    from pcs.errors import PathError
    from pcs.hardware import load_hardware_file

    monkeypatch.chdir(tmp_path)
    with pytest.raises(PathError) as err:
        load_hardware_file("")
    assert err.value.problem == FILE
    for folder in (Path("."), "."):
        with pytest.raises(PathError) as err:
            load_hardware_file(folder)
        assert str(err.value) == "path='.': Is a directory"
