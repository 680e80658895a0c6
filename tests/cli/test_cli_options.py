"""Options every command shares: -q/--quiet everywhere, enumerated values as click choices, pcs --help."""
import click
import pytest
from click.testing import CliRunner

from pcs.cli.main import COMMANDS, SUMMARIES, cli

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]

# one cheap valid run per command (bundled sample trace where a trace is taken)
RUNS = {
    "budget": ["--capacity-need", "30GB", "--capacity-have", "80GB", "--bandwidth-need", "1000GB/s",
               "--bandwidth-have", "2000GB/s"],
    "footprint": ["--model", "llama-3.1-8b", "--tokens", "100"],
    "envelope": ["--restore-bytes", "1GB", "--full-prefill", "100ms", "--bandwidth", "10GB/s"],
    "models": [],
    "hardware": [],
    "trace stats": [],
    "trace convert": ["{sample}", "{tmp}/out.parquet"],
    "trace synth": ["{tmp}/synth.jsonl", "--requests", "20"],
    "trace events": ["{root}/traces/formats/vllm_kv_events_9.jsonl"],
    "trace from-chat": ["{root}/traces/formats/openai_chat_4.jsonl", "{tmp}/chat.jsonl", "--tokenizer",
                        "{root}/traces/formats/tiny_wordlevel_tokenizer.json"],
    "trace transform": ["{sample}", "{tmp}/t.jsonl", "--speed", "2"],
    "replay": ["--tier", "gpu=100blocks", "--timing", "sequential"],
    "compare": ["--policy", "lru", "--policy", "slru", "--tier", "gpu=100blocks", "--timing", "sequential"],
    "curve": ["--capacities", "10blocks,100blocks"],
    "deploy": ["--model", "llama-3.1-8b", "--tp", "1"],
    "report": ["{root}/tests/report/footprint_llama31_8b.json", "-o", "{tmp}/r.html"],
    "policies": [],
    "sweep run": ["{root}/traces/sweep_sample.toml", "-o", "{tmp}/sweep", "--jobs", "1"],
    "sweep summarize": ["{tmp}"],
}


def _leaf_commands() -> list[str]:
    out = []
    for name in COMMANDS:
        cmd = cli.get_command(None, name)
        out += [f"{name} {sub}" for sub in cmd.commands] if isinstance(cmd, click.Group) else [name]
    return out


def test_the_runs_cover_every_command():
    assert sorted(RUNS) == sorted(_leaf_commands())


@pytest.mark.parametrize("words", sorted(RUNS))
@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_every_command_takes_quiet(words, flag, tmp_path):
    from pcs.trace.api import DEFAULT_TRACE

    args = [a.format(tmp=tmp_path, sample=DEFAULT_TRACE, root=ROOT) for a in RUNS[words]]
    result = CliRunner().invoke(cli, [*words.split(), *args, flag, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""                  # no progress bar, no notes: replay prints its notes otherwise
    assert result.stdout.startswith("{")


def test_without_quiet_replay_notes_go_to_stderr():
    result = CliRunner().invoke(cli, ["replay", *RUNS["replay"], "--format", "json"])
    assert result.exit_code == 0 and "pcs: note: defaults:" in result.stderr


def test_help_lists_every_command_with_a_one_line_summary():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    lines = result.stdout.split("Commands:\n", 1)[1].splitlines()
    listed = {ln.split()[0]: ln.split(None, 1)[1] for ln in lines if ln.strip()}
    assert sorted(listed) == sorted(COMMANDS)
    assert sorted(SUMMARIES) == sorted(COMMANDS)
    for name, summary in SUMMARIES.items():
        assert listed[name] == summary            # whole, on one line: not wrapped, not cut with "..."


@pytest.mark.parametrize("args,option", [
    (["replay", "--timing", "fast"], "--timing"),
    (["replay", "--write-policy", "sideways"], "--write-policy"),
    (["replay", "--trace-format", "csv"], "--trace-format"),
    (["replay", "--policy", "mru"], "--policy"),
    (["replay", "--tier-policy", "cpu=mru"], "--tier-policy"),
    (["replay", "--dtype", "fp7"], "--dtype"),
    (["compare", "--policy", "lru", "--policy", "mru"], "--policy"),
    (["curve", "--kernel", "gpu"], "--kernel"),
    (["curve", "--model", "llama-3.1-8b", "--dtype", "fp7"], "--dtype"),
    (["footprint", "--model", "llama-3.1-8b", "--tokens", "5", "--dtype", "fp7"], "--dtype"),
    (["envelope", "--kv-dtype", "fp7"], "--kv-dtype"),
    (["trace", "stats", "--trace-format", "csv"], "--trace-format"),
    (["trace", "stats", "--on-error", "ignore"], "--on-error"),
    (["trace", "convert", "a.jsonl", "b.jsonl", "--to", "csv"], "--to"),
    (["trace", "synth", "s.jsonl", "--to", "csv"], "--to"),
    (["models", "--format", "xml"], "--format"),
])
def test_enumerated_options_are_checked_before_any_work(args, option):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    # a registry's value (a policy, a dtype) is refused as a policy, admission kind or router is: the option, the
    # value as typed, the registry's message; click's own choices keep its wording
    registry = option in ("--policy", "--tier-policy", "--dtype", "--kv-dtype")
    want = f"pcs: error: {option} {args[-1]}: " if registry else f"Invalid value for '{option}'"
    assert len(lines) == 1 and want in lines[0], lines


def test_help_shows_the_choices():
    out = CliRunner().invoke(cli, ["replay", "--help"]).stdout
    assert "[modeled|sequential]" in out and "[back|through]" in out
    assert "[lru|slru|fifo|arc|s3fifo|sieve|lfu|2q|gdsf|belady|protected]" in out


def test_dtype_aliases_still_accepted():
    # normalize_dtype's aliases (bfloat16 = bf16) pass the choice and reach the model unchanged
    a = CliRunner().invoke(cli, ["footprint", "--model", "llama-3.1-8b", "--tokens", "64", "--dtype", "bfloat16",
                                 "--format", "json"])
    b = CliRunner().invoke(cli, ["footprint", "--model", "llama-3.1-8b", "--tokens", "64", "--dtype", "bf16",
                                 "--format", "json"])
    assert a.exit_code == b.exit_code == 0 and a.stdout == b.stdout
