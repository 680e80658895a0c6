"""A new user's findings (mend46d). Every expectation is worked out by hand: plan lines counted in the plan texts
below, message wording from docs/sweep.md ("the refused entry names its line"), docs/traces.md (an empty source is
an error) and the options' --help."""
from __future__ import annotations

import pytest

from helpers import PLAN_HEAD, SMALL_TRACE, plan_refusal
from pcs.errors import UserError

_HEAD, _prepare_error = PLAN_HEAD, plan_refusal    # a plan's lines 1-6; each test adds from line 7


# 1: an entry naming a tier that is not among the tiers, or an unknown key written as a table, names its line.

@pytest.mark.parametrize("lines, line, words", [
    ('link = {disk = "pcie-gen5-x16"}\n', 7, 'link = {disk = "pcie-gen5-x16"}: names tier \'disk\', which is not among the tiers: gpu, cpu'),
    ('link = ["disk=pcie-gen5-x16"]\n', 7, 'link = {disk = "pcie-gen5-x16"}: names tier \'disk\', which is not among the tiers: gpu, cpu'),
    ('"tier-policy" = {cpu = "lru", disk = "lfu"}\n', 7, 'tier-policy = {disk = "lfu"}: names tier \'disk\', which is not among'),
    ('"tier-policy" = ["cpu=lru", "disk=lfu"]\n', 7, 'tier-policy = {disk = "lfu"}: names tier \'disk\', which is not among'),
    ('\n[fixed.tier-policy]\ncpu = "lru"\ndisk = "lfu"\n', 10, 'tier-policy = {disk = "lfu"}: names tier \'disk\', which is not among'),
    ('teir = {gpu = "500blocks"}\n', 7, "unknown option 'teir' for pcs replay; did you mean 'tier'?"),
    ('admit = "cpux=reuse:2"\n', 7, 'admit = "cpux=reuse:2": names tier \'cpux\', which is not among the tiers: gpu, cpu'),
    ('\n[axes]\nadmit = [\n  "cpu=reuse:2",\n  "cpux=reuse:2",\n]\n', 11, 'admit = "cpux=reuse:2": names tier \'cpux\', which is not'),
])
def test_an_entry_not_among_the_tiers_names_its_line(tmp_path, lines, line, words):
    text = _prepare_error(tmp_path, _HEAD + lines)
    # an unknown key is the table's refusal (every key's name before any value or point); the rest a point's
    where = "[fixed]: " if "unknown option" in words else "point "
    assert text.startswith(f"{tmp_path / 'p.toml'}:{line}: {where}"), text
    assert words in text, text


def test_check_replay_keeps_the_entry_not_among_the_tiers():
    from pcs.engine.api import check_replay

    with pytest.raises(UserError) as err:
        check_replay(tiers=["gpu=500blocks", "cpu=10GB"], tier_policies={"cpu": "lru", "disk": "lfu"})
    assert err.value.refused_value == "disk=lfu"


# 2: an empty or blank path in a plan is refused at load as empty, in the plan's words (field and line), as
# trace = "." is refused as a directory -- not read as the plan's folder by the point's command.

@pytest.mark.parametrize("text, line, field, problem", [
    ('kind = "replay"\n\n[axes]\ntrace = [""]\n', 4, "axes.trace[0]", "an empty path; give a file name"),
    (_HEAD + '"hardware-file" = ""\n', 7, "fixed.hardware-file", "an empty path; give a file name"),
    (_HEAD + 'model-config = " "\n', 7, "fixed.model-config", "an empty path; give a file name"),
    (_HEAD + 'model = ""\n', 7, "fixed.model", "empty; give a preset name (`pcs models`) or a config.json path"),
])
def test_an_empty_plan_path_is_refused_as_empty(tmp_path, text, line, field, problem):
    text = _prepare_error(tmp_path, text)
    assert text == f"{tmp_path / 'p.toml'}:{line}: field '{field}': {problem}", text


def test_an_empty_plan_trace_exits_2_in_one_line(tmp_path):
    from helpers import assert_one_line_error, invoke

    plan = tmp_path / "emptytrace.toml"
    plan.write_text('kind = "replay"\n\n[fixed]\ntrace = ""\n')
    result = invoke("sweep", str(plan), "-o", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert_one_line_error(result, f"{plan}:4: field 'fixed.trace': an empty path; give a file name")


# 3: an empty KV-event source is refused alike, naming the input (docs/traces.md: "An empty source ... is an
# error"), as an empty FIFO already was; before, stdin, an empty file and a blank-lines file gave all-zero counts.

@pytest.mark.parametrize("content", ["", "\n\n  \n", "\r\n\t\r\n"])
def test_an_empty_event_file_is_refused(tmp_path, content):
    from helpers import assert_one_line_error, invoke

    capture = tmp_path / "kv.jsonl"
    capture.write_text(content)
    result = invoke("trace", "events", str(capture))
    assert_one_line_error(result, f"{capture}: empty capture (no events)")


def test_empty_event_stdin_is_refused():
    from helpers import assert_one_line_error, invoke

    result = invoke("trace", "events", "-", input="")
    assert_one_line_error(result, "-: empty capture (no events)")


def test_read_kv_events_refuses_an_empty_file(tmp_path):
    from pcs.errors import InputError
    from pcs.trace.kvevents import read_kv_events

    capture = tmp_path / "kv.jsonl"
    capture.write_text("\n")
    with pytest.raises(InputError) as err:
        list(read_kv_events(capture, "kv.jsonl"))
    assert str(err.value) == "kv.jsonl: empty capture (no events)"


# 4: a number too large for any option is refused by the option's type first: a value of the wrong type gets that
# type's message (the range message would imply a smaller float would do); a number option keeps the range words.

_TIERS = ("--tier", "gpu=500blocks", "--tier", "cpu=1GB")


@pytest.mark.parametrize("option, value, words", [
    ("--policy", "lfu:aging=1e999", "--policy lfu:aging=1e999: lfu aging must be one of dynamic, none, got '1e999'"),
    ("--admit", "cpu=reuse:1e999", "--admit cpu=reuse:1e999: admission reuse: N must be an int >= 1, got '1e999'"),
    ("--policy", "s3fifo:move_to_main_threshold=1e999",
     "option move_to_main_threshold=1e999: expected an integer (its default is 2)"),
    # a number of the option's type: the range words stay (pcs.errors.OUT_OF_FLOAT_RANGE for a float)
    ("--policy", "s3fifo:small_share=1e999",
     'option value "1e999" is out of range: a float holds at most about 1.7977e308 either side'),
    ("--admit", "cpu=retain:duration=1e999",
     'option value "1e999" is out of range: a float holds at most about 1.7977e308 either side'),
    ("--admit", "cpu=reuse:99999999999999999999",
     'option value "99999999999999999999" is out of range: an integer holds -2^63 to 2^63 - 1 (64 bits)'),
])
def test_the_type_check_comes_before_the_range(option, value, words):
    from helpers import assert_one_line_error, invoke

    line = assert_one_line_error(invoke("replay", SMALL_TRACE, *_TIERS, option, value), words)
    assert "Invalid value" not in line, line


@pytest.mark.parametrize("admit, words", [
    ("cpu=reuse:1e999", "admission reuse: N must be an int >= 1, got '1e999'"),
    ("cpu=reuse:n=1,n=2", "admission option 'n' given twice in 'reuse:n=1,n=2'; give it once"),
])
def test_a_plan_admit_refusal_is_in_the_plan_words(tmp_path, admit, words):
    text = _prepare_error(tmp_path, _HEAD + f'admit = "{admit}"\n')
    assert text.startswith(f"{tmp_path / 'p.toml'}:7: point "), text
    assert f'admit = "{admit}": {words}' in text, text
    assert "Invalid value" not in text, text


# 5: a size in bytes without --model: the message says what --model gives, not that the curve needs no model.

def test_curve_bytes_without_a_model_does_not_contradict_itself():
    from helpers import assert_one_line_error, invoke

    line = assert_one_line_error(invoke("curve", SMALL_TRACE, "--capacities", "100GB"),
                                 "--capacities '100GB': a size in bytes needs --model NAME",
                                 "or give blocks, e.g. 5000blocks")
    assert "needs no model" not in line, line


# 6: a policy that takes no options says so, not "its options: none" (which reads as a value).

@pytest.mark.parametrize("option, value, words", [
    ("--policy", "lru:foo=1", "--policy lru:foo=1: eviction policy 'lru' takes no options, got 'foo'"),   # said once (mend46e)
    ("--admit", "cpu=reuse:foo=1", "admission 'reuse' takes no option 'foo'; its options: n="),
])
def test_no_options_is_said_as_none_taken(option, value, words):
    from helpers import assert_one_line_error, invoke

    line = assert_one_line_error(invoke("replay", SMALL_TRACE, *_TIERS, option, value), words)
    assert "options: none" not in line, line
