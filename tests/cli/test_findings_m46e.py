"""A new user's findings (mend46e): one mistake, one wording, whichever command meets it. Every expected line is
worked out by hand from the rules the messages follow: a path refusal is ``PARAMETER PATH: REASON`` with the reason
in ``os.strerror``'s words (docs/semantics.md §16's one-line errors, as ``pcs trace stats`` words it); a count is
written with thousands separators (pcs.errors.quoted's style)."""
from __future__ import annotations

import click
import pytest

from helpers import SMALL_TRACE, all_commands, assert_one_line_error, invoke

# 1: a folder where a file is read (a file where a folder goes) is worded by every command as trace stats words it.

@pytest.mark.parametrize("args, line", [
    (("replay", "d"), "pcs: error: TRACE d: Is a directory"),
    (("trace", "stats", "d"), "pcs: error: TRACE d: Is a directory"),
    (("curve", "d"), "pcs: error: TRACE d: Is a directory"),
    (("sweep", "run", "d", "-o", "out"), "pcs: error: PLAN d: Is a directory"),
    (("sweep", "run", "gone.toml", "-o", "out"), "pcs: error: PLAN gone.toml: No such file or directory"),
    (("report", "d"), "pcs: error: FILES d: Is a directory"),
    (("sweep", "summarize", "f.txt"), "pcs: error: OUT f.txt: Not a directory"),
    (("replay", SMALL_TRACE, "--requests-out", "d"), "pcs: error: --requests-out d: Is a directory"),
    (("replay", SMALL_TRACE, "--hardware-file", "d"), "pcs: error: --hardware-file d: Is a directory"),
    (("budget", "--workloads", "d"), "pcs: error: --workloads d: Is a directory"),
    (("trace", "convert", SMALL_TRACE, "d"), "pcs: error: OUT d: Is a directory"),
])
def test_a_folder_where_a_file_goes_is_one_wording(args, line, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "f.txt").write_text("x")
    assert assert_one_line_error(invoke(*args)) == line


def test_every_path_parameter_is_checked_by_pcs():
    from pcs.cli.params import CheckedPath

    plain = [(" ".join(names), p.name) for names, cmd in all_commands() for p in cmd.params
             if isinstance(p.type, click.Path) and not isinstance(p.type, CheckedPath)]
    assert plain == []


# 2: `pcs sweep PLAN` (short for `pcs sweep run PLAN`) names the command as typed beside the one whose --help helps.

def _as_pcs(*args):
    """``pcs ARGS`` in this process under the console script's name (click's runner calls it ``cli``)."""
    from click.testing import CliRunner

    from pcs.cli.main import cli

    return CliRunner().invoke(cli, [str(a) for a in args], prog_name="pcs")


def test_the_sweep_shorthand_names_the_command_as_typed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.toml").write_text('kind = "replay"\n')
    short = "(see 'pcs sweep run --help'; 'pcs sweep PLAN' is short for 'pcs sweep run PLAN')"
    assert assert_one_line_error(_as_pcs("sweep", "p.toml")) == f"pcs: error: Missing option '-o' / '--out'. {short}"
    # typed in full: the hint as before
    assert assert_one_line_error(_as_pcs("sweep", "run", "p.toml")) == \
        "pcs: error: Missing option '-o' / '--out'. (see 'pcs sweep run --help')"


# 3: a number outside its range: the value through quoted (20 characters at most, then its length), the bounds
# with thousands separators, no trailing period; one refusal for every Int and Float option.

@pytest.mark.parametrize("args, words", [
    (("footprint", "--model", "llama-3.1-8b", "--tokens", "99999999999999999999999999"),
     "'--tokens': 99999999999999999999... (26 characters) is not in the range 0<=x<=1,000,000,000"),
    (("footprint", "--model", "llama-3.1-8b", "--tokens", "1000000001"),
     "'--tokens': 1000000001 is not in the range 0<=x<=1,000,000,000"),
    (("curve", SMALL_TRACE, "--seed", "-1"), "'--seed': -1 is not in the range 0<=x<=9,223,372,036,854,775,807"),
    (("replay", SMALL_TRACE, "--gpu-memory-utilization", "0"), "'--gpu-memory-utilization': 0.0 is not in the range 0<x<=1"),
    (("sweep", "run", "p.toml", "-o", "out", "--jobs", "5000"), "'--jobs': 5000 is not in the range 1<=x<=4,096"),
])
def test_a_number_outside_its_range_in_pcs_form(args, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.toml").write_text('kind = "replay"\n')
    line = assert_one_line_error(invoke(*args))
    assert line.startswith(f"pcs: error: Invalid value for {words} (see 'cli "), line   # no period before the hint


# 4: the 64-bit limit in one wording, 2^63 - 1 (pcs.errors.INT64_LIMIT), each message with its unit: a capacity in
# GB is a size (bytes), one in blocks a block count; a policy option's integer says the signed 64-bit range.

@pytest.mark.parametrize("args, tail", [
    (("--tier", "gpu=1e999GB"), "invalid capacity '1e999GB': too large (more than 2^63 - 1 bytes, about 9,223 PB)"),
    (("--tier", "gpu=100GB", "--tier", "cpu=99999999999TB"),
     "invalid size '99999999999TB': too large (more than 2^63 - 1 bytes, about 9,223 PB)"),
    (("--tier", "gpu=1e999blocks"), "invalid block count '1e999blocks': too large (more than 2^63 - 1 blocks)"),
    (("--tier", "gpu=100GB", "--tier", "cpu=1TB", "--admit", "cpu=reuse:99999999999999999999"),
     'option value "99999999999999999999" is out of range: an integer holds -2^63 to 2^63 - 1 (64 bits)'),
])
def test_the_64_bit_limit_is_one_wording(args, tail):
    line = assert_one_line_error(invoke("replay", SMALL_TRACE, *args))
    assert line.endswith(": " + tail), line


# 5: a plan's messages name its options as the plan writes them (docs/sweep.md "Options": `tier-policy`), the point
# descriptions too, and a list as TOML writes it.

def _plan_error(tmp_path, text: str) -> str:
    (tmp_path / "p.toml").write_text(text)
    return assert_one_line_error(invoke("sweep", "run", tmp_path / "p.toml", "-o", tmp_path / "out"))


_TIERS = f'[fixed]\ntrace = "{SMALL_TRACE}"\ntier = {{gpu = "500blocks", cpu = "10GB"}}\n'


def test_an_entry_given_twice_names_the_plans_key(tmp_path):
    line = _plan_error(tmp_path, f'kind = "replay"\n{_TIERS}"tier-policy" = ["cpu=lru", "CPU=fifo"]\n')
    assert line == f"pcs: error: {tmp_path / 'p.toml'}:5: [fixed]: tier-policy entry 'cpu' is given twice; give each entry once"


def test_a_point_is_described_in_the_plans_words(tmp_path):
    line = _plan_error(tmp_path, f'kind = "compare"\n{_TIERS}policy = ["lru", "fifo"]\n'
                                 '[axes]\n"tier-policy.cpu" = ["lru", "lfu:aging=x"]\n')
    described = (f'(trace={SMALL_TRACE} tier.gpu=500blocks tier.cpu=10GB policy=["lru", "fifo"] '
                 'tier-policy.cpu=lfu:aging=x): tier-policy = {cpu = "lfu:aging=x"}: ')
    assert f"{tmp_path / 'p.toml'}:7: point " in line and described in line, line


# 6: a mistyped long option gets pcs's "did you mean" (pcs.choices.did_you_mean: the closest first, compared without
# the dashes), as a plan's mistyped key does; click sorted its candidates ('--dtype', '--router', '--tier').
# difflib's ratio 2M/T, by hand: teir~tier 2*3/8 = 0.75, teir~router 2*3/10 = 0.6 (the cutoff), teir~dtype 2*2/9 < 0.6.

@pytest.mark.parametrize("args, line", [
    (("replay", "--teir", "gpu=1GB"), "No such option '--teir'; did you mean one of: '--tier', '--router'? "
                                      "(see 'cli replay --help')"),
    (("trace", "stats", "--fromat", "json"), "No such option '--fromat'; did you mean '--format'? "
                                             "(see 'cli trace stats --help')"),
    (("replay", "--xyzzy"), "No such option '--xyzzy'. (see 'cli replay --help')"),
])
def test_a_mistyped_option_gets_the_closest_first(args, line):
    assert assert_one_line_error(invoke(*args)) == f"pcs: error: {line}"


# 7: a policy, admission kind or router that takes no options says so once, naming the option refused.

@pytest.mark.parametrize("args, tail", [
    (("--policy", "lru:foo=1"), "--policy lru:foo=1: eviction policy 'lru' takes no options, got 'foo'"),
    (("--policy", "fifo:protected_share=0.2"), "--policy fifo:protected_share=0.2: eviction policy 'fifo' takes no "
                                               "options, got 'protected_share'; 'protected_share' is an option of slru, "
                                               "not of fifo"),
    (("--policy", "lfu:foo=1"), "--policy lfu:foo=1: eviction policy 'lfu' takes no option 'foo'; its options: aging="),
])
def test_no_options_is_said_once(args, tail):
    assert assert_one_line_error(invoke("replay", SMALL_TRACE, *args)) == f"pcs: error: {tail}"


def test_a_router_without_options_says_so_once():
    import importlib

    from pcs.fleet.routers import ROUTERS

    router = importlib.import_module(f"pcs.fleet.routers.{ROUTERS['round-robin']}").ROUTER
    assert router.OPTIONS == {}
    with pytest.raises(ValueError) as err:
        router(2, foo=1)
    assert str(err.value) == "router 'round-robin' takes no options, got 'foo'"
