"""Review 47 (mend47b): the command line, paths and inputs. Every expectation is worked out by hand from the rules
the messages follow: pcs.errors (``quoted``, ``shown_path``: a character that is not printable shown as Python's
escape), pcs.cli.common (``pcs: error: ...``, one line, exit 2, the group's ``--help`` named), pcs.choices
(``close_names``: difflib's ratio 2*M/T >= 0.6, at most 3, the closest first), docs/sweep.md and
docs/traces-formats.md."""
from __future__ import annotations

import json
import os

import pytest

from helpers import PLAN_HEAD, SMALL_TRACE, assert_one_line_error, invoke, plan_refusal
from pcs.errors import InputError, PathError, UserError

RLO = "\u202e"              # RIGHT-TO-LEFT OVERRIDE: reverses the text after it on a terminal
RLO_SHOWN = "\\u202e"       # its Python escape, six printable characters


# 1: a mistyped top-level option or command is the project's one line with its suggestion, as a subcommand's is.

@pytest.mark.parametrize("args, line", [
    # '--verison' / '--version': 'version' and 'verison' share 'ver', 'i'/'s' ... M=6 of 14 -> 0.86
    (["--verison"], "No such option '--verison'; did you mean '--version'? (see 'pcs --help')"),
    (["-x"], "No such option '-x'. (see 'pcs --help')"),
    # 'replya': 'replay' (M=5 of 12, 0.83) and 'deploy' ('epl' + 'y', M=4 of 12, 0.67), the closest first (a
    # command none is close to, 'xyzzy', was and is "No such command 'xyzzy'.")
    (["replya"], "No such command 'replya'; did you mean one of: 'replay', 'deploy'? (see 'pcs --help')"),
    # a group's subcommand: the same wording (it was click's "No such command 'statz'. Did you mean 'stats'?")
    (["trace", "statz"], "No such command 'statz'; did you mean 'stats'? (see 'pcs trace --help')"),
])
def test_a_mistyped_option_or_command_is_one_line(args, line):
    from click.testing import CliRunner

    from pcs.cli.main import cli

    r = CliRunner().invoke(cli, args, prog_name="pcs")      # the top group names itself as the console script does
    assert assert_one_line_error(r) == f"pcs: error: {line}"


@pytest.mark.parametrize("group", ["trace", "sweep"])
def test_a_group_alone_prints_its_help_not_an_error(group):
    from click.testing import CliRunner

    from pcs.cli.main import cli

    r = CliRunner().invoke(cli, [group], prog_name="pcs")
    assert r.output.startswith(f"Usage: pcs {group} [OPTIONS] COMMAND [ARGS]..."), r.output[:200]
    assert "pcs: error:" not in r.output


# 2: a word close to a sweep subcommand, naming no file, is that subcommand mistyped; a file of that name a plan.

@pytest.mark.parametrize("word, meant", [("runn", "run"), ("summarise", "summarize")])
def test_a_mistyped_sweep_subcommand(tmp_path, monkeypatch, word, meant):
    from click.testing import CliRunner

    from pcs.cli.main import cli

    monkeypatch.chdir(tmp_path)
    line = assert_one_line_error(CliRunner().invoke(cli, ["sweep", word, "plan.toml"], prog_name="pcs"))
    assert line == f"pcs: error: No such command {word!r}; did you mean {meant!r}? (see 'pcs sweep --help')"
    # a word far from both subcommands is still the shorthand's missing plan
    assert assert_one_line_error(invoke("sweep", "plan.toml", "-o", "out")) == \
        "pcs: error: PLAN plan.toml: No such file or directory"
    # and a file of that name is the plan: refused by the plan reader for its missing suffix (pcs.configfile)
    (tmp_path / word).write_text(PLAN_HEAD)
    line = assert_one_line_error(invoke("sweep", word, "-o", "out"))
    assert line.startswith(f"pcs: error: {word}: no suffix; "), line


# 3: a file name or a value shown in a message escapes a right-to-left mark (and any character not printable).

def test_quoted_as_text_escapes_what_is_not_printable():
    from pcs.errors import quoted, shown_path

    assert quoted(f"a{RLO}b", show=str) == f"a{RLO_SHOWN}b"
    assert quoted("tab\there", show=str) == "tab\\there"
    assert shown_path(f"t{RLO}.jsonl") == f"t{RLO_SHOWN}.jsonl"


def test_input_error_escapes_its_path_and_field():
    err = InputError(f"a{RLO}b.jsonl", 3, f"k{RLO}", "bad")
    assert str(err) == f"a{RLO_SHOWN}b.jsonl:3: field 'k{RLO_SHOWN}': bad"
    assert err.path == f"a{RLO}b.jsonl"        # the attribute as given


def test_a_missing_trace_named_with_a_bidi_mark(tmp_path):
    path = tmp_path / f"x{RLO}q.jsonl"
    line = assert_one_line_error(invoke("replay", path))
    assert line == f"pcs: error: TRACE {tmp_path}/x{RLO_SHOWN}q.jsonl: No such file or directory"


def test_an_empty_trace_named_with_a_bidi_mark(tmp_path):
    path = tmp_path / f"a{RLO}txt.jsonl"
    path.write_text("")
    line = assert_one_line_error(invoke("trace", "stats", path))
    assert line == f"pcs: error: {tmp_path}/a{RLO_SHOWN}txt.jsonl: empty trace (no requests)"


def test_an_output_in_a_missing_folder_named_with_a_bidi_mark(tmp_path):
    out = tmp_path / f"d{RLO}" / "x.html"
    line = assert_one_line_error(invoke("replay", SMALL_TRACE, "--html", out, "-q"))
    assert line == (f"pcs: error: --html {tmp_path}/d{RLO_SHOWN}/x.html: the folder '{tmp_path}/d{RLO_SHOWN}' "
                    "does not exist")


def test_a_settings_file_suffix_named_with_a_bidi_mark(tmp_path):
    from pcs.sweep import load_plan

    path = tmp_path / f"p{RLO}"
    path.write_text(PLAN_HEAD)
    with pytest.raises(UserError) as err:
        load_plan(path)
    assert str(err.value).startswith(f"{tmp_path}/p{RLO_SHOWN}: no suffix; "), str(err.value)


def test_a_changed_trace_named_with_a_bidi_mark(tmp_path):
    from pcs.trace.fingerprint import trace_file_change

    path = tmp_path / f"t{RLO}.jsonl"
    path.write_text("12345")
    why, _ = trace_file_change({"path": str(path), "bytes": 4, "head_tail_blake2b": "", "mtime_ns": 0})
    assert why == f"trace {tmp_path}/t{RLO_SHOWN}.jsonl has 5 bytes, the run read 4"


def test_the_error_line_escapes_what_a_message_left_raw(capsys):
    from pcs.cli.common import PcsUsageError

    PcsUsageError(f"x{RLO}y").show()
    assert capsys.readouterr().err == f"pcs: error: x{RLO_SHOWN}y\n"


# 4: a KV-event capture with no event at all is refused as empty, as an empty file is.

@pytest.mark.parametrize("batches, why", [
    (2, "its 2 batches have empty events lists"),
    (1, "its batch has an empty events list"),
])
def test_a_capture_of_empty_batches_is_empty(tmp_path, batches, why):
    from pcs.trace.kvevents import read_kv_events, residency_summary

    path = tmp_path / "kv.jsonl"
    path.write_text("".join(json.dumps({"ts": 1.0 + i, "events": [], "data_parallel_rank": 0}) + "\n"
                            for i in range(batches)))
    with pytest.raises(InputError) as err:
        residency_summary(read_kv_events(path))
    assert str(err.value) == f"{path}: empty capture (no events): {why}"
    line = assert_one_line_error(invoke("trace", "events", path))
    assert line == f"pcs: error: {path}: empty capture (no events): {why}"


def test_a_msgpack_capture_of_empty_batches_is_empty(tmp_path):
    msgpack = pytest.importorskip("msgpack")
    from pcs.trace.kvevents import read_kv_events

    path = tmp_path / "kv.msgpack"
    path.write_bytes(msgpack.packb([1.0, [], 0]) + msgpack.packb([2.0, [], 0]))
    with pytest.raises(InputError) as err:
        list(read_kv_events(path))
    assert str(err.value) == f"{path}: empty capture (no events): its 2 batches have empty events lists"


# 5: '-' (stdin) in a sweep plan is refused at load, naming the plan's line and key (docs/sweep.md).

@pytest.mark.parametrize("text, line, field", [
    ('kind = "replay"\n\n[fixed]\ntrace = "-"\ntiming = "sequential"\n', 4, "fixed.trace"),
    (f'kind = "replay"\n\n[fixed]\ntiming = "sequential"\n\n[axes]\ntrace = ["{SMALL_TRACE}", "-"]\n', 7,
     "axes.trace[1]"),
    (PLAN_HEAD + 'hardware-file = "-"\n', 7, "fixed.hardware-file"),
])
def test_stdin_in_a_plan_is_refused_at_its_line(tmp_path, text, line, field):
    message = plan_refusal(tmp_path, text)
    assert message == (f"{tmp_path / 'p.toml'}:{line}: field '{field}': '-' (stdin): a plan cannot read stdin: its "
                       "points each read their files, and stdin can be read once; name a file")


# 6: an existing output need not be readable (it is replaced by a rename); an output folder must be writable.

def _denied(monkeypatch, path, mode):
    """os.access says no to ``mode`` on ``path`` (chmod does not stop root, which the tests may run as)."""
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, m, **kw: False if os.fspath(p) == str(path) and m & mode
                        else real(p, m, **kw))


def test_a_write_only_output_file_is_written(tmp_path, monkeypatch):
    out = tmp_path / "requests.csv"
    out.write_text("old\n")
    _denied(monkeypatch, out, os.R_OK)             # chmod 200
    r = invoke("replay", SMALL_TRACE, "--requests-out", out, "-q", "--format", "json")
    assert r.exit_code == 0, r.output
    assert out.read_text() != "old\n"           # replaced by the run's table


def test_an_output_folder_that_is_not_writable_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "figs"
    folder.mkdir()
    _denied(monkeypatch, folder, os.W_OK)          # chmod 555
    line = assert_one_line_error(invoke("replay", SMALL_TRACE, "--plot", folder, "-q"))
    assert line == f"pcs: error: --plot {folder}: Permission denied"


# 7: a dangling symbolic link as an output folder says what it is, naming the option.

@pytest.mark.parametrize("args, option", [
    (["replay", SMALL_TRACE, "-q", "--plot"], "--plot"),
    (["curve", SMALL_TRACE, "-q", "--plot"], "--plot"),          # a file or a folder: checked as a folder here
    (["sweep", "run", "PLAN", "-q", "-o"], "-o"),
])
def test_a_dangling_link_as_an_output_folder(tmp_path, args, option):
    (tmp_path / "p.toml").write_text(PLAN_HEAD)
    link = tmp_path / "figs"
    link.symlink_to(tmp_path / "nowhere")
    args = [str(tmp_path / "p.toml") if a == "PLAN" else a for a in args]
    line = assert_one_line_error(invoke(*args, link))
    assert line == (f"pcs: error: {option} {link}: a symbolic link to '{tmp_path}/nowhere', which does not exist; "
                    "give a folder name")
    assert not (tmp_path / "nowhere").exists()


# 8: every public function taking a path refuses an empty one as the others do (path='': an empty path ...).

def test_detect_format_refuses_a_path_it_cannot_read(tmp_path):
    from pcs.trace import detect_format

    for path, problem in (("", "an empty path; give a file name"), (str(tmp_path / "gone.jsonl"),
                          "No such file or directory"), (str(tmp_path), "Is a directory")):
        with pytest.raises(PathError) as err:
            detect_format(path)
        assert str(err.value) == f"path={path!r}: {problem}"


def test_an_empty_output_path_is_refused(tmp_path):
    from pcs.trace import open_trace
    from pcs.trace.convert import convert, write_trace

    with pytest.raises(PathError) as err:
        convert(str(SMALL_TRACE), "")
    assert str(err.value) == "out_path='': an empty path; give a file name"
    with pytest.raises(PathError) as err:
        write_trace(open_trace(SMALL_TRACE).iter_batches(), " ", "mooncake", block_size=512)
    assert str(err.value) == "out_path=' ': an empty path; give a file name"
