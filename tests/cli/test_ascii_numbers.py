"""Numbers a user types are ASCII (docs/semantics.md §16, pcs.units.ascii_int / ascii_float, one rule): every
integer and float option of every command, --mix, policy / admission / router spec values, a hardware file's
plain numbers, budget's rates and sweep block counts refuse '1_000', full-width '１２', 'nan' and 'inf', which
Python's int() / float() read. Blanks around a number stay allowed (the rule: a CSV cell ' 5 ' is 5)."""
from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.cli.params import Float, Int
from pcs.errors import UserError

NOT_ASCII = ["1_000", "１２", "nan", "inf", "+inf", "1e999"]


def _number_options():
    def walk(group, path):
        ctx = click.Context(group, info_name=path)
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            yield from walk(cmd, f"{path} {name}") if isinstance(cmd, click.Group) else [(f"{path} {name}", cmd)]

    return [(path, cmd, p) for path, cmd in walk(cli, "pcs") for p in cmd.params if isinstance(p.type, (Int, Float))]


OPTIONS = _number_options()


def test_every_number_option_is_one_of_the_two_checked_types():
    # a plain click INT / FLOAT would read '１２' as 12: none is left
    def walk(group):
        for name in group.list_commands(click.Context(group)):
            cmd = group.get_command(click.Context(group), name)
            yield from walk(cmd) if isinstance(cmd, click.Group) else [cmd]

    plain = [(c.name, p.name) for c in walk(cli) for p in c.params
             if isinstance(p.type, (click.types.IntParamType, click.types.FloatParamType))
             and not isinstance(p.type, (Int, Float))]
    assert plain == []
    assert len(OPTIONS) >= 57        # the Int and Float options of the table in the session report (Durations apart)


@pytest.mark.parametrize("text", NOT_ASCII)
def test_every_number_option_refuses_non_ascii_numbers(text):
    for path, cmd, p in OPTIONS:
        ctx = click.Context(cmd, info_name=path)
        with pytest.raises(click.BadParameter) as err:
            p.type_cast_value(ctx, text)
        # the option is named by click from the parameter; the message says what is wrong
        assert err.value.param is p
        kind = "an integer" if isinstance(p.type, Int) else "a number"
        expect = (f"{text!r} is out of range: a float holds at most about 1.7977e308 either side" if text == "1e999" and isinstance(p.type, Float)
                  else f"{text!r} is not {kind} in ASCII digits 0-9")
        assert err.value.message == expect, (path, p.name)


def test_blanks_around_a_number_are_read_as_the_rule_says():
    tokens = next(p for path, _, p in OPTIONS if path == "pcs footprint" and p.name == "tokens")
    assert tokens.type_cast_value(click.Context(cli), " 5 ") == 5
    share = next(p for path, _, p in OPTIONS if path == "pcs replay" and p.name == "protected_share")
    assert share.type_cast_value(click.Context(cli), " 0.25 ") == 0.25


@pytest.mark.parametrize("text", ["1_000", "１２"])
def test_the_cli_line_names_the_option(text):
    r = CliRunner().invoke(cli, ["footprint", "--model", "llama-3.1-8b", "--tokens", text], prog_name="pcs")
    assert r.exit_code == 2
    assert r.output.strip() == (f"pcs: error: Invalid value for '--tokens': {text!r} is not an integer in ASCII "
                                "digits 0-9 (see 'pcs footprint --help')")


@pytest.mark.parametrize("mix", ["chat=１,agent=1", "chat=1_0,agent=1", "chat=nan,agent=1", "chat=inf"])
def test_mix_shares_are_ascii(tmp_path, mix):
    r = CliRunner().invoke(cli, ["trace", "synth", "--mix", mix, str(tmp_path / "t.jsonl")])
    share = mix.split(",")[0].split("=")[1]
    assert r.exit_code == 2 and "--mix" in r.output, r.output
    assert (f"the share of chat must be a finite number >= 0, got {share} (ASCII digits 0-9: no nan, inf, '_' or "
            "other scripts' digits)") in r.output, r.output


def test_mix_ascii_shares_still_read():
    from pcs.cli.trace import _parse_mix

    assert _parse_mix("chat=3, agent=1") == (0.75, 0.25, 0.0)     # 3/4, 1/4, oneoff absent


def test_spec_values_are_numbers_only_in_ascii():
    from pcs.cache.policies import spec_value

    assert spec_value("12") == 12 and spec_value(" 12") == 12 and spec_value("1.5") == 1.5
    assert spec_value("-2e3") == -2000.0
    for text in ("１２", "1_000", "nan", "inf", "lru"):
        assert spec_value(text) == text          # not a number by the rule: the text, refused where a number goes


def test_policy_option_full_width_is_refused():
    import pcs

    # led by the argument that gave it (mend45c: a policy's refusal names its option, as --policy on the command line)
    with pytest.raises(UserError, match=r"^policy='s3fifo:move_to_main_threshold=１': eviction policy 's3fifo' "
                                        r"option move_to_main_threshold=１: expected an "
                                        r"integer \(its default is 2\)$"):
        pcs.replay(policy="s3fifo:move_to_main_threshold=１", tiers=["gpu=1GB"])


def test_retain_token_range_is_ascii():
    from pcs.cache.admission_retention import _token_range

    assert _token_range("0-4096") == (0, 4096)
    for text in ("０-4096", "0-4_096"):
        with pytest.raises(UserError, match="tokens must be A-B"):
            _token_range(text)


def test_router_options_are_ascii():
    from pcs.fleet.routers import parse_router

    assert parse_router("cache-aware:overlap=2", 2).options["overlap"] == 2.0
    with pytest.raises(UserError, match=r"^router 'cache-aware': option overlap must be a finite number in "):
        parse_router("cache-aware:overlap=２", 2)


def test_hardware_plain_numbers_are_ascii():
    from pcs.hardware import get_gpu, override

    h100 = get_gpu("h100-sxm")
    assert override(h100, bf16_flops="989.4e12").bf16_flops == 989.4e12
    for text in ("９８９e12", "989_400e9", "nan"):
        with pytest.raises(UserError):
            override(h100, bf16_flops=text)


def test_budget_numbers_are_ascii():
    from pcs.cli.budget import _number

    assert _number("1_000_000", "IOPS") == 1e6 and _number("1,000,000", "IOPS") == 1e6   # documented separators
    with pytest.raises(UserError, match="IOPS"):
        _number("１２", "IOPS")


def test_sweep_block_counts_are_ascii():
    from pcs.sweep.axes import expand_axis

    assert expand_axis("capacity", {"from": "10blocks", "to": "30blocks", "step": "10blocks"}) == \
        ["10blocks", "20blocks", "30blocks"]
    with pytest.raises(UserError, match="ASCII"):
        expand_axis("capacity", {"from": "１０blocks", "to": "30blocks", "step": "10blocks"})
