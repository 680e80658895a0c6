"""Option conflicts and messages (hostile input).

The rule: an option that conflicts with another, or cannot change the run, is refused with one line naming
it (exit 2), never silently dropped; an API error reaching the command line names the option typed.
"""
import pytest

import pcs
from helpers import SMALL_TRACE, assert_one_line_error, invoke, invoke_json
from pcs.errors import UserError

T = SMALL_TRACE
SEQ = ("--timing", "sequential", "--tier", "gpu=20blocks")


# --- F7: a protected share given twice --------------------------------------------------------------------------

@pytest.mark.parametrize("args, where", [
    (["--policy", "slru:protected_share=0.2", "--protected-share", "0.8"], "policy 'slru:protected_share=0.2'"),
    (["--tier-policy", "gpu=slru:protected_share=0.2", "--protected-share", "0.8"],
     "--tier-policy entry 'gpu': 'slru:protected_share=0.2'"),
])
def test_two_protected_shares_are_refused_naming_both(args, where):
    r = invoke("replay", T, *SEQ, *args, "-q")
    assert_one_line_error(r, "protected share given twice", "0.2 in " + where, "0.8 in --protected-share")


def test_one_share_given_twice_alike_runs_as_given_once():
    inline = invoke_json("replay", T, *SEQ, "--policy", "slru:protected_share=0.5")
    both = invoke_json("replay", T, *SEQ, "--policy", "slru:protected_share=0.5", "--protected-share", "0.5")
    flag = invoke_json("replay", T, *SEQ, "--policy", "slru", "--protected-share", "0.5")
    assert inline["hit_ratio"] == both["hit_ratio"] == flag["hit_ratio"]


def test_api_share_conflict_names_the_keyword():
    with pytest.raises(UserError, match="0.2 in policy 'slru:protected_share=0.2' and 0.8 in protected_share"):
        pcs.replay(T, policy="slru:protected_share=0.2", protected_share=0.8, timing="sequential")


def test_compare_runs_two_shares_with_labels_that_tell_them_apart():
    out = invoke_json("compare", T, *SEQ, "--policy", "slru:protected_share=0.2", "--policy",
                      "slru:protected_share=0.8")
    labels = [v["variant"] for v in out["variants"]]
    assert labels == ["slru:protected_share=0.2", "slru:protected_share=0.8"]
    for v, share in zip(out["variants"], ("0.2", "0.8")):   # each variant is its own replay
        alone = invoke_json("replay", T, *SEQ, "--policy", f"slru:protected_share={share}")
        assert v["hit_ratio"] == alone["hit_ratio"]


@pytest.mark.parametrize("second", ["protected", "slru:protected_share=0.8"])   # an alias; the default 0.8
def test_compare_refuses_one_configuration_twice(second):
    assert_one_line_error(invoke("compare", T, *SEQ, "--policy", "slru", "--policy", second, "-q"),
                          "same policy with the same options")


TWO = ("--timing", "sequential", "--tier", "gpu=20blocks", "--tier", "cpu=40blocks")


@pytest.mark.parametrize("first, second", [
    ("cpu=reuse:2", "cpu=reuse:2"),          # the same text twice
    ("cpu=reuse:2", "CPU=reuse:n=2"),        # tier names are case-folded; reuse's bare argument is n
    ("cpu=reuse", "cpu=reuse:2"),            # n defaults to 2 (vLLM's store threshold, docs/policies.md)
    ("none", "NONE"),
])
def test_compare_refuses_one_admission_twice_like_one_policy_twice(first, second):
    # the rule of --policy above, for --admit: two columns of one configuration are refused
    assert_one_line_error(invoke("compare", T, *TWO, "--admit", first, "--admit", second, "-q"),
                          f"--admit {first} and --admit {second} name the same admission with the same options")


def test_compare_runs_two_different_admissions():
    out = invoke_json("compare", T, *TWO, "--admit", "none", "--admit", "cpu=reuse:3")
    assert [v["admission"] for v in out["variants"]] == ["none", "cpu=reuse:3"]


@pytest.mark.parametrize("given", ["protected", "PROTECTED", "slru"])
def test_the_policy_alias_is_input_only(given):
    # one concept, one name: --policy protected runs slru and every output names it slru (the registry's name)
    out = invoke_json("replay", T, *SEQ, "--policy", given)
    assert out["policy"] == "slru" and [t["policy"] for t in out["tiers"]] == ["slru"]
    assert pcs.replay(T, policy=given, timing="sequential").summary.policy == "slru"


@pytest.mark.parametrize("args, needles", [
    # a message names the option given, not one that was not
    (["--instances", "2", "--gap-oracle"], ["--gap-oracle is for single-instance replays"]),
    (["--instances", "2", "--admit", "cpu=reuse:2"], ["--admit is for single-instance replays"]),
    # the shared tier takes --policy too: the refusal says so, per tier
    (["--instances", "2", "--policy", "gdsf", "--shared-tier", "remote=100blocks"],
     ["got gpu: gdsf, cpu: gdsf, remote: gdsf", "--policy sets every tier, the shared one too"]),
    # "reuse:" left its argument out: refused, not read as reuse's default n = 2
    (["--admit", "cpu=reuse:"], ["bad admission 'reuse:': nothing after ':'"]),
])
def test_messages_name_what_was_given(args, needles):
    assert_one_line_error(invoke("replay", T, *TWO, *args, "-q"), *needles)


# --- F8: hybrid options where they do not apply ------------------------------------------------------------------

@pytest.mark.parametrize("args, needles", [
    (["--mamba-cache-mode", "align"], ["--mamba-cache-mode applies to hybrid models", "llama-2-70b"]),
    (["--swa-full-tokens-ratio", "0.5"], ["--swa-full-tokens-ratio applies to hybrid models"]),
    (["--model", "gemma-3-27b", "--tp", "1", "--swa-full-tokens-ratio", "0.5"],
     ["--swa-full-tokens-ratio is an option of the sglang hybrid KV cache manager", "'vllm'"]),
    (["--model", "gpt-oss-120b", "--tp", "2", "--hybrid-kv-cache-manager", "sglang", "--mamba-full-memory-ratio",
      "0.5"], ["--mamba-full-memory-ratio sizes the state cache group", "gpt-oss-120b does not have"]),
    (["--model", "gemma-3-27b", "--tp", "1", "--hybrid-kv-cache-manager", "disabled", "--mamba-cache-mode",
      "align"], ["--mamba-cache-mode is an option of the vllm/sglang"]),
])
def test_inapplicable_hybrid_option_is_refused(args, needles):
    assert_one_line_error(invoke("replay", T, "--timing", "sequential", *args, "-q"), *needles)


def test_applicable_hybrid_option_runs_and_moves_the_pools():
    # gemma-3-27b under SGLang: the SWA pool is sized by swa_full_tokens_ratio, so another ratio is another run
    base = ["replay", T, "--timing", "sequential", "--model", "gemma-3-27b", "--tp", "1",
            "--hybrid-kv-cache-manager", "sglang", "--tier", "gpu=2GB"]
    a = invoke_json(*base, "--swa-full-tokens-ratio", "0.1")
    b = invoke_json(*base, "--swa-full-tokens-ratio", "2")
    assert a["hybrid"] != b["hybrid"]


# --- F11 ----------------------------------------------------------------------------------------------------------

def test_enumerated_options_ignore_case_and_spaces():        # item 1: as --policy LRU and PCS_NATIVE=C
    out = invoke_json("replay", T, *SEQ, "--engine", " REFERENCE", "--native", "Auto")
    assert out["engine"] == "reference"
    assert invoke_json("curve", T, "--native", "PYTHON", "--points", "2")["kernel"] == "python"


def test_engine_refusal_names_the_option_on_the_cli_and_the_keyword_in_the_api():   # item 2
    r = invoke("replay", T, "--engine", "lru-scan", "-q")      # modeled timing: lru-scan needs sequential
    assert "engine='auto'" not in assert_one_line_error(r, "use --engine auto")
    with pytest.raises(UserError, match="use engine='auto'"):
        pcs.replay(T, engine="lru-scan")


def test_envelope_non_finite_computed_time_names_its_source():    # item 6
    r = invoke("envelope", "--model", "llama-3.1-8b", "--restore-tokens", "8192", "--bandwidth", "10GB/s",
               "--bf16-flops", "1e-300", "-q")
    assert "RuntimeWarning" not in r.stderr
    # the rate itself is refused at its bound (pcs.hardware.MIN_FLOPS), before any time exists
    assert_one_line_error(r, "bf16_flops must be between 1e+09 and 1e+21 FLOP/s", "got 1e-300")


def test_empty_output_name():                                    # item 7
    assert_one_line_error(invoke("replay", T, "--requests-out", "", "-q"),
                          "--requests-out '': an empty path; give a file name")


@pytest.mark.parametrize("args, needle", [                        # item 8: the bound in the unit of the value
    (["replay", T, "--restore-policy", "best-effort", "--restore-timeout-per-token", "1e10s"],
     "more than 2^63 - 1 ns, about 292 years"),
    (["budget", "--capacity-need", "1GB", "--capacity-have", "2GB", "--bandwidth-need", "1e300GB/s",
      "--bandwidth-have", "1GB/s"], "more than 2^63 - 1 bytes/s"),
    (["replay", T, "--tier", "gpu=1e40blocks"], "more than 2^63 - 1 blocks"),
])
def test_too_large_names_the_unit(args, needle):
    assert_one_line_error(invoke(*args, "-q"), needle)


def test_budget_refuses_a_workload_name_twice():                   # item 10
    r = invoke("budget", "--capacity-have", "80GB", "--bandwidth-have", "2000GB/s", "--workload",
               "A:30GB:1GB/s", "--workload", "A:50GB:1GB/s", "-q")
    assert_one_line_error(r, "workload name 'A' given more than once")


@pytest.mark.parametrize("size", ["0.5B", "0.4 B", "1.5B"])    # F5 (CLI): were 0, 0 and 2 bytes
def test_fractional_plain_bytes_are_refused(size):
    r = invoke("budget", "--capacity-need", "30GB", "--capacity-have", size, "--bandwidth-need", "1GB/s",
               "--bandwidth-have", "2GB/s", "-q")
    assert r.exit_code == 2 and "a number of bytes must be whole" in r.stderr


def test_fractional_larger_units_still_round_to_the_byte():
    from pcs.units import parse_bytes

    assert parse_bytes("1.1KiB") == 1126          # 1.1 x 1024 = 1126.4 -> 1126
    assert parse_bytes("0.5KB") == 500


def test_top_level_help_says_which_commands_take_format():          # item 12
    text = " ".join(invoke("--help").stdout.split())
    assert "of the groups `pcs sweep` and `pcs trace`: their subcommands" in text
    assert invoke("sweep", "run", "--help").stdout.count("--format") >= 1
