"""``pcs replay``: a trace through a multi-tier prefix cache -- the real hit rate, bytes and envelope."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

import click

from pcs._heldimport import held_import
from pcs import _native, units
from pcs.choices import BUILTIN_POLICIES, DEFAULT_POLICY, ON_ERROR, POLICY_ALIASES, TIMINGS
from pcs.choices import TRACE_FORMATS as FORMATS
from pcs.choices import WRITE_POLICIES
from pcs.cli.common import Progress, RegistryChoice, apply_options, command, emit, format_option, option_names, \
    quiet_option, with_skipped_lines
from pcs.cli.fleet import FLEET_NO_HTML, fleet_options, replay_fleet, wants_fleet
from pcs.cli.modelarg import is_config_path, model_callback
from pcs.cli.rerun import replay_command
from pcs.cli.params import CheckedPath, MAX_BLOCK_SIZE, MAX_COUNT, MAX_TOKENS, MAX_TP, Aliased, Choice, Duration, Float, Int, kv_reserve_option
from pcs.cli.report import check_outputs, html_options, write_replay_outputs
from pcs.engine import select
from pcs.engine.restores import RESTORE_POLICIES
from pcs.engine.schedconfig import CACHE_BLOCKS_AT, COMPUTE_MODES, DEFAULT_MAX_PREEMPTIONS
from pcs.cli.tiernames import known_tier_names
from pcs.errors import UserError, as_typed, shown_path, shown_repr
from pcs.model import KV_DTYPES

__all__ = ["replay", "replay_options", "replay_call_kwargs", "run_replay_kwargs", "write_requests",
           "open_trace_kwargs", "input_paths"]



#: ``--policy`` choices shown in ``--help``: the built-in names, then the aliases (a plug-in's name is accepted too:
#: the registry checks every value, :func:`_get_policy`).
_POLICY_CHOICES = BUILTIN_POLICIES + tuple(POLICY_ALIASES)


def _get_policy(name: str) -> Any:
    """:func:`pcs.cache.policies.get_policy`, imported when a value is checked (not for ``--help``)."""
    from pcs.cache.policies import get_policy

    return get_policy(name)


def _get_layout(name: str) -> Any:
    """:func:`pcs.model.get_layout`, imported when a value is checked (not for ``--help``)."""
    from pcs.model.layouts import get_layout

    return get_layout(name)


def _get_tier_policy(value: str) -> Any:
    """``--tier-policy NAME=POLICY``: the form, and POLICY (with its ``:opt=v`` options) checked by the policy
    registry (:func:`_get_policy`)."""
    from pcs.engine.api import parse_assignment

    return _get_policy(parse_assignment(value, "tier policy", "--tier-policy", known_tier_names())[1])


def _check_admit(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """``--admit TIER=KIND[:ARGS]``: the form and the kind (tier names are checked with the tiers); ``none`` alone
    or as a tier's kind (``cpu=none``) is no admission (:func:`pcs.cache.admission.parse_admit_option`).

    Raises:
        UserError: the item's refusal as the run words it (:func:`pcs.cache.admission.admit_refusal`:
            ``--admit cpu=reuse:n=1,n=2: ...``; a plan's ``admit = "..."`` at its line).
    """
    from pcs.cache.admission import admit_refusal, is_no_admission, parse_admission
    from pcs.engine.tiercheck import one_entry_each, run_on_entries

    named = {str(t).partition("=")[0].strip().lower() for t in ctx.params.get("tiers") or ()}
    tiers = [*known_tier_names(), *named]        # the run's own names are checked with the tiers (the API's own check)
    for value in values:
        for item in filter(None, (v.strip() for v in value.split("+"))):
            if is_no_admission(item):
                continue
            entries = run_on_entries(item, tiers)
            if entries:
                raise admit_refusal(item, one_entry_each("--admit", "admit", entries))
            tier, sep, spec = item.partition("=")
            if not sep or not tier.strip() or not spec.strip():
                raise admit_refusal(item, "expected TIER=KIND[:ARGS], e.g. cpu=reuse:2")
            try:
                if not is_no_admission(spec):
                    parse_admission(spec, tier.strip().lower())
            except ValueError as exc:
                raise admit_refusal(item, str(exc)) from None
    return values


def _hybrid_options() -> list:
    """Options of a hybrid model's replay, named as the engines name them (pcs.engine.hybrid, docs/hybrid.md)."""
    from pcs.engine.hybrid import MAMBA_CACHE_MODES, MANAGERS

    return [
        click.option("--hybrid-kv-cache-manager", type=Choice(MANAGERS), default=None,
                     help="A hybrid model (sliding window, chunked attention or SSM state beside full attention): "
                          "vllm = vLLM's hybrid KV cache manager, cache groups in one pool per tier with a uniform "
                          "page size (default); sglang = SGLang's separate pools; disabled = every layer as full "
                          "attention (vLLM --disable-hybrid-kv-cache-manager). No effect (a note) on a model "
                          "without hybrid groups."),
        click.option("--swa-full-tokens-ratio", type=Float(0, 1e6, min_open=True),
                     help="sglang: SWA pool tokens / full pool tokens (SGLang's swa_full_tokens_ratio, default 0.8)."),
        click.option("--mamba-full-memory-ratio", type=Float(0, 1e6, min_open=True),
                     help="sglang: state pool bytes / full pool bytes (SGLang's mamba_full_memory_ratio, "
                          "default 0.9)."),
        click.option("--mamba-cache-mode", type=Choice(MAMBA_CACHE_MODES), default=None,
                     help="SSM states cached at every checkpoint (all, default) or at a request's last (align); "
                          "vLLM's mamba_cache_mode."),
        click.option("--residency-step", type=Duration(0, 1e9, min_open=True),
                     help="Hybrid models: step of the replay-resident bytes series per component, simulated "
                          "time (e.g. 60s or 1min, a unit required; default 60s)."),
    ]


def replay_options(f: Callable, policy_multiple: bool = False) -> Callable:
    """The options ``pcs replay`` and ``pcs compare`` share (trace, model, hardware, tiers, rules), in help order."""
    return apply_options([*_trace_options(), *_deployment_options(), *_tier_options(policy_multiple),
                   *_scheduler_options(), *_engine_and_rule_options()], f)


def _trace_options() -> list:
    """The trace argument and how it is read."""
    return [
        click.argument("trace", required=False, type=CheckedPath(dir_okay=False)),
        click.option("--trace-format", type=Choice(list(FORMATS)), help="Trace format (default: detected)."),
        click.option("--sort", is_flag=True, help="Reorder the trace by arrival time instead of rejecting a "
                                                  "decreasing timestamp (holds the trace in memory)."),
        click.option("--on-error", type=Choice(ON_ERROR), default="raise", show_default=True,
                     help="raise: stop at the first bad trace line (exit 2); skip: skip bad lines (counted, the first 5 "
                          "named)."),
        click.option("--block-size", type=Int(1, MAX_BLOCK_SIZE), help="Tokens per block: re-blocks a token trace; for a block-hash trace (Mooncake 512, "
                                                     "Bailian 16 by default) it states the size it was recorded "
                                                     "at, unless the ids fit the format's default: then pcs replay "
                                                     "re-blocks them (exact at a multiple, a lower..upper interval "
                                                     "at a divisor; docs/traces-formats.md)."),
    ]


def _deployment_options() -> list:
    """Model, KV layout, GPU, TP and the deployment that sizes the GPU tier."""
    return [
        click.option("--model", "--model-config", "model", cls=Aliased, callback=model_callback, help="Model preset (pcs models) or an HF "
                     "config.json path (also spelled --model-config, as in pcs footprint); default llama-2-70b."),
        click.option("--dtype", type=RegistryChoice(KV_DTYPES, _get_layout),
                     help="KV cache layout, e.g. bf16, fp8 (vLLM's: per-tensor scales outside the pages), "
                          "fp8_per_token_head, nvfp4 (default: the model's)."),
        click.option("--gpu", help="GPU preset (pcs hardware); default h100-sxm."),
        click.option("--tp", type=Int(1, MAX_TP), help="Tensor-parallel size = GPUs per instance; default 8. Tiers are per "
                                            "TP group: bytes per block = per-rank bytes x the ranks, each holding its share."),
        click.option("--gpu-memory-utilization", type=Float(0, 1, min_open=True),
                     help="Share of HBM the engine may use when the GPU tier is sized from the deployment "
                          "(vLLM's gpu_memory_utilization; default 0.9)."),
        click.option("--kv-reserve", help="Activation/runtime memory per GPU besides weights and KV when the GPU "
                                          "tier is sized from the deployment (default 5GB; see pcs deploy)."),
        click.option("--hardware-file", type=CheckedPath(dir_okay=False),
                     help="TOML/JSON overrides of GPU and link presets."),
    ]


def _tier_options(policy_multiple: bool) -> list:
    """Tiers, eviction and admission policies, links and the write policy."""
    policy_help = (f"Eviction policy of every tier, NAME or NAME:OPTION=VALUE,... (e.g. slru:protected_share=0.5): "
                   f"a built-in above or an installed plug-in (pcs policies lists both and their options); "
                   f"{DEFAULT_POLICY} by default, protected = slru"
                   + (" (repeat to compare)." if policy_multiple else "."))
    return [
        click.option("--tier", "tiers", multiple=True,
                     help="A tier NAME=SIZE, GPU first, one per --tier (repeat it: --tier gpu=400GB --tier "
                          "cpu=2TB): gpu=400GB, cpu=2TB, ssd=30TB or gpu=5000blocks (or 5000blk; 0 allowed, but a GPU tier of 0 "
                          "runs only with --compute infinite or --timing sequential; a "
                          "plain number is refused: 400GB or 400blocks?; a hybrid model's block is the "
                          "one pcs deploy counts, its pages x page bytes, padding included). gpu=auto (GPU tier only) "
                          "sizes it from the deployment: GPUs x (HBM x 0.9 - weights per GPU - 5 GB reserve), as pcs "
                          "deploy prints. Default: gpu=auto and cpu=2TB. Names: the first tier is the GPU tier, "
                          "named gpu; a lower tier is cpu, host, dram, ssd, nvme, disk, remote or rdma (each with a "
                          "default --link), or a name of your own given its --link (a typo such as gpuu is "
                          "refused)."),
        click.option("--policy", "policy", multiple=policy_multiple, type=RegistryChoice(_POLICY_CHOICES, _get_policy),
                     help=policy_help),
        click.option("--tier-policy", "tier_policy", multiple=True,
                     type=RegistryChoice(_POLICY_CHOICES, _get_tier_policy),
                     metavar="TIER=[" + "|".join(_POLICY_CHOICES) + "]",
                     help="Per-tier policy TIER=POLICY[:OPTION=VALUE], e.g. cpu=slru (repeatable); POLICY as "
                          "--policy: a built-in or an installed plug-in (pcs policies)."),
        click.option("--admit", "admit", multiple=True, callback=_check_admit, metavar="TIER=KIND[:ARGS]",
                     help="Admission policy of a tier, repeatable (pcs policies lists them): cpu=reuse:2 (store "
                          "on the 2nd use), cpu=selective:2 (blocks hit twice), cpu=tinylfu, "
                          "gpu=retain:tokens=0-4096,duration=60s (keep a token range longer; duration takes "
                          "any duration unit, 1min, 500ms, and a plain number is seconds, as it always was), "
                          "cpu=none (no admission on that tier, the default); "
                          "single-instance "
                          "replays only (refused with --instances/--router)"
                          + ("; in pcs compare each value is one variant (join items with +; none = no "
                             "admission)." if policy_multiple else ".")),
        click.option("--gap-oracle", is_flag=True,
                     help="Also replay the same tiers with the Belady oracle and split the gap into capacity "
                          "(single-sequence - oracle) and policy (oracle - real); one more replay."),
        click.option("--protected-share", type=Float(0, 1),
                     help="Protected segment share of an slru tier (default 0.8, Caffeine's)."),
        click.option("--link", "link", multiple=True,
                     help="Restore link of a lower tier, NAME=PRESET or NAME=BANDWIDTH per GPU: "
                          "cpu=pcie-gen5-x16, cpu=25GB/s (default per tier name: pcs hardware)."),
        click.option("--write-policy", type=Choice(WRITE_POLICIES), default="back", show_default=True,
                     help="back: evicted blocks move down a tier; through: computed blocks are copied down at once."),
    ]


def _scheduler_options() -> list:
    """Timing, the compute model and the step scheduler (docs/scheduler.md)."""
    return [
        click.option("--timing", type=Choice(TIMINGS), default="modeled", show_default=True,
                     help="modeled: trace arrivals, FIFO admission, restore and prefill times; "
                          "sequential: one request at a time (the classic trace replay)."),
        click.option("--compute", "compute_mode", type=Choice(COMPUTE_MODES), default=COMPUTE_MODES[0],
                     show_default=True,
                     help="Modeled timing's compute: step = one instance runs continuous-batching steps (token "
                          "budget, chunked prefill, decode first, preemption; docs/scheduler.md); infinite = "
                          "every prefill and decode at full speed at once (the model before the scheduler)."),
        click.option("--max-num-batched-tokens", type=Int(1, MAX_TOKENS),
                     help="Token budget of one step (vLLM's); default 8192 on GPUs with >= 70 GiB other than "
                          "A100, else 2048."),
        click.option("--max-num-seqs", type=Int(1, MAX_COUNT),
                     help="Running requests at most (vLLM's); default 1024, or 256 where the budget is 2048."),
        click.option("--restore-policy", type=Choice(RESTORE_POLICIES), default=RESTORE_POLICIES[0],
                     show_default=True,
                     help="How restores overlap compute: layerwise (layer l loads while earlier layers compute), "
                          "wait (prefill after every block landed), best-effort (wait at most --restore-timeout "
                          "+ --restore-timeout-per-token x restored tokens, recompute the rest)."),
        click.option("--restore-timeout", type=Duration(0, 1e9), default="0s", show_default=True,
                     help="best-effort: fixed part of the wait for a restore, with a unit (e.g. 5ms)."),
        click.option("--restore-timeout-per-token", type=Duration(0, 1e9),
                     help="best-effort: wait per restored token, with a unit (e.g. 35us); default the step's matmul time per "
                          "token (about what recomputing it costs)."),
        click.option("--restore-fallback/--no-restore-fallback", default=True, show_default=True,
                     help="Recompute instead of a restore that, link queue included, would take longer than the "
                          "prefill it saves."),
        click.option("--cache-decode-blocks/--no-cache-decode-blocks", default=None,
                     help="Step scheduler only (--compute step; refused with --compute infinite or --timing "
                          "sequential): cache output blocks under the next turn's ids; default: on when the trace's "
                          "next turns contain the previous turns."),
        click.option("--cache-blocks-at", type=Choice(CACHE_BLOCKS_AT), default=CACHE_BLOCKS_AT[0],
                     show_default=True,
                     help="When a prefill's full blocks become hits for other requests: prefill-done (all at the "
                          "end of its last chunk, TensorRT-LLM's storeContextBlocks; pcs's rule, not vLLM's), "
                          "scheduled (each chunk's blocks when its step is composed, vLLM v1's allocate_slots), "
                          "chunk-done (after each chunk's step, SGLang's cache_unfinished_req)."),
        click.option("--max-preemptions", type=Int(0, MAX_COUNT), default=DEFAULT_MAX_PREEMPTIONS,
                     show_default=True,
                     help="A request preempted this often is re-admitted holding every block it needs (0: all "
                          "requests reserve their output at admission)."),
        click.option("--ttft-slo", type=Duration(0, 1e9, min_open=True),
                     help="TTFT target of the goodput figures, with a unit (e.g. 2s or 500ms)."),
    ]


def _engine_and_rule_options() -> list:
    """The engine choice, hybrid-model options, block rules and --quiet."""
    return [
        click.option("--engine", type=Choice(select.REQUESTS), default="auto", show_default=True,
                     help="Which engine runs the replay (all give the same numbers): auto = the first that "
                          "applies of " + "; ".join(f"{r.name}: {r.summary}" for r in select.ENGINES) +
                          ". Old names: " + ", ".join(f"{a} = {n}" for a, n in select.ALIASES.items()) + "."),
        click.option("--native", type=Choice(_native.MODES), default=None, help=_native.HELP),
        *_hybrid_options(),
        click.option("--cache-partial-blocks", is_flag=True, help="Cache every block hash, the partial last block too."),
        click.option("--no-recompute-last-token", is_flag=True,
                     help="Lift the cap of prompt_len - 1 hit tokens (vLLM, SGLang recompute the last token)."),
        quiet_option,
    ]


def _pairs(values, what: str, option: str) -> dict[str, str]:
    """``NAME=VALUE`` values of a per-tier ``option`` -> {name: value}.

    Raises:
        UserError: a malformed value (``what`` names it), or one tier named twice (as a repeated ``--tier`` is).
    """
    from pcs.engine.api import parse_assignment

    out: dict[str, str] = {}
    for v in values:
        try:
            k, val = parse_assignment(v, what, option, known_tier_names())
        except UserError as exc:        # led by the option and its value, as a checked option's refusal is
            raise UserError(f"{option} {as_typed(str(v), 200)}: {exc}") from None
        if k in out:
            raise UserError(f"{option} names tier {shown_repr(k)} twice ({k}={out[k]}, {k}={val}); give it once")
        out[k] = val
    return out


def _links(values) -> dict[str, str]:
    """``--link NAME=VALUE`` values -> {name: value}, a plain number refused as a bandwidth with no unit
    (``--link 'cpu=25' has no unit: give a unit: 25GB/s``, docs/semantics.md §16); presets pass unchanged.

    Raises:
        UserError: a malformed pair, a tier named twice, a plain non-zero number.
    """
    links = _pairs(values, "link", "--link")
    for name, value in links.items():
        units.require_unit(value, "--link", "bandwidth", shown=f"{name}={value}")
    return links


def _protected_share(kw: dict[str, Any], tier_policies: dict[str, str]) -> float | None:
    """``--protected-share`` as given, after checking that a policy named on the command line takes it (slru).

    In ``pcs compare`` the runs of other policies leave it out
    (:func:`pcs.engine.compare.compare`); it is an error only when no policy
    named on the command line takes it (the registry's rule,
    :func:`pcs.cache.policies.make_policies`).

    Raises:
        UserError: ``--protected-share`` given and no ``--policy`` or ``--tier-policy`` is slru.
    """
    from pcs.cache.policies import policy_options

    share = kw["protected_share"]
    if share is None:
        return None
    asked = kw["policy"] if isinstance(kw["policy"], tuple) else (kw["policy"],)
    named = [p or DEFAULT_POLICY for p in asked or (None,)] + list(tier_policies.values())
    if not any("protected_share" in policy_options(p) for p in named):
        err = UserError("--protected-share sizes the protected segment of slru tiers, and no tier uses slru "
                        f"(policies: {', '.join(dict.fromkeys(named))}); add --policy slru or "
                        "--tier-policy NAME=slru")
        err.refused_value = share       # a sweep plan names the line it is written on
        raise err
    return share


#: scheduler options -> their defaults (a value other than the default = the option was given)
_STEP_OPTIONS = {"max_num_batched_tokens": None, "max_num_seqs": None, "restore_policy": "layerwise",
                 "restore_timeout": 0.0, "restore_timeout_per_token": None, "restore_fallback": True,
                 "cache_decode_blocks": None, "max_preemptions": None, "ttft_slo": None,
                 "cache_blocks_at": "prefill-done"}


def _flag(name: str, value: Any) -> str:
    if value is False:
        return f"--no-{name.replace('_', '-')}"
    return f"--{name.replace('_', '-')}"


def refuse_inapplicable(kw: dict[str, Any]) -> None:
    """Options that cannot change the run are refused with one line, as ``--protected-share`` without an
    slru tier is (one rule for all; docs/cli.md):

    - the step scheduler's options with ``--timing sequential`` or ``--compute infinite`` (no scheduler runs);
    - ``--compute`` (``step`` or ``infinite``, given on the command line or by a config file) with ``--timing
      sequential`` (no compute queue either way; the default, not given, is accepted);
    - ``--restore-timeout`` / ``--restore-timeout-per-token`` without ``--restore-policy best-effort``;
    - ``--router-stale-s`` > 0 without a ``--router`` that reads the cache index (prefix, cache-aware);
    - ``--gpu-memory-utilization`` with a GPU tier of a given size (it sizes only a derived or ``auto`` one).

    Raises:
        UserError: one of the above, naming the option and what it needs.
    """
    from pcs.engine.schedconfig import DEFAULT_MAX_PREEMPTIONS

    defaults = dict(_STEP_OPTIONS, max_preemptions=DEFAULT_MAX_PREEMPTIONS)
    given = [_flag(k, kw[k]) for k, d in defaults.items() if k in kw and kw[k] != d]
    if given and (kw.get("timing") == "sequential" or kw.get("compute_mode") == "infinite"):
        why = "--timing sequential" if kw.get("timing") == "sequential" else "--compute infinite"
        raise UserError(f"{', '.join(given)}: step-scheduler options, and {why} runs no scheduler; drop them "
                         "or use --timing modeled --compute step")
    if kw.get("timing") == "sequential" and _compute_given(kw):
        raise UserError(f"--compute {kw['compute_mode']}: sequential timing runs one request at a time with no "
                        "compute queue, so the compute mode changes nothing; drop it or use --timing modeled")
    if kw.get("restore_policy") != "best-effort":
        timeouts = [_flag(k, v) for k in ("restore_timeout", "restore_timeout_per_token")
                    if (v := kw.get(k)) is not None and v != _STEP_OPTIONS[k]]
        if timeouts:
            raise UserError(f"{', '.join(timeouts)}: only --restore-policy best-effort waits with a timeout "
                             f"(the policy is {kw.get('restore_policy')})")
    _refuse_inapplicable_fleet(kw)
    if kw.get("gpu_memory_utilization") is not None:
        sized = [t for t in kw.get("tiers") or () if t.split("=", 1)[0].strip().lower() == "gpu"
                 and t.split("=", 1)[-1].strip().lower() != "auto"]
        if sized:
            raise UserError(f"--gpu-memory-utilization sizes a GPU tier derived from the deployment, and "
                             f"--tier {sized[0]} gives its size; drop one (or use --tier gpu=auto)")


#: a step budget below this many tokens makes a run of many steps (prompt tokens / budget): say so up front
SMALL_BUDGET_TOKENS = 256


def _small_budget_note(kw: dict[str, Any]) -> None:
    """A note on stderr, even with ``-q`` (it is about the run time, which ``-q`` hides the progress of), when
    ``--max-num-batched-tokens`` is below :data:`SMALL_BUDGET_TOKENS`: the step scheduler runs about prompt
    tokens / budget prefill steps (the 1,700-request sample: budget 1 ~ 14 million steps, minutes)."""
    budget = kw.get("max_num_batched_tokens")
    if budget is not None and budget < SMALL_BUDGET_TOKENS:
        click.echo(f"pcs: note: --max-num-batched-tokens {budget}: the step scheduler runs about prompt tokens / "
                   f"{budget} steps, so this run may take minutes (vLLM's defaults are 2048 or 8192)", err=True)


def _compute_given(kw: dict[str, Any]) -> bool:
    """Whether ``--compute`` was given (command line, config file or environment), not its default; outside a
    click command (no context naming it) whether it differs from the default, ``step``."""
    ctx = click.get_current_context(silent=True)
    src = None
    if ctx is not None and "compute_mode" in ctx.params:
        src = ctx.get_parameter_source("compute_mode")
    if src is None:
        return kw.get("compute_mode") not in (None, COMPUTE_MODES[0])
    return src is not click.core.ParameterSource.DEFAULT


def _refuse_inapplicable_fleet(kw: dict[str, Any]) -> None:
    """``--router-stale-s`` > 0 needs a router that reads the cache index: the API's rule
    (:func:`pcs.fleet.routers.stale_view_applies`), checked here before the trace is read."""
    if not kw.get("router_stale_s"):
        return
    from pcs.fleet.routers import parse_router, stale_view_applies

    routers = kw.get("router") or ("round-robin",)       # the fleet's default router
    routers = (routers,) if isinstance(routers, str) else routers
    stale_view_applies([parse_router(r, 1) for r in routers], kw["router_stale_s"])


def open_trace_kwargs(kw: dict[str, Any]):
    """The trace the shared options name (None = the bundled sample), opened with ``--sort`` when given."""
    from pcs.trace import open_trace

    return open_trace(kw["trace"], format=kw["trace_format"], block_size=kw["block_size"], sort=kw["sort"],
                      on_error=kw["on_error"])


def input_paths(kw: dict[str, Any]) -> dict[str, Any]:
    """The files the shared options read (an output may not be one of them: pcs.outfile.check_outputs)."""
    model = kw.get("model")
    return {"TRACE": kw.get("trace"), "--hardware-file": kw.get("hardware_file"),
            "--model": model if is_config_path(model) else None}


def replay_call_kwargs(kw: dict[str, Any], trace: Any = None) -> tuple[Any, dict[str, Any]]:
    """The parsed shared options -> ``(trace, keyword arguments of pcs.replay)``.

    The trace is opened here (:func:`open_trace_kwargs`) unless ``trace`` is
    an opened one (None = the bundled sample); ``tiers``, ``policy`` and
    ``progress`` are left to the caller. ``--protected-share`` is checked
    against every policy named on the command line and passed on as given
    (:func:`pcs.compare` gives it to the runs whose policies take it).
    """
    if trace is None and (kw["trace"] or kw["trace_format"] or kw["block_size"] or kw["sort"]
                          or kw["on_error"] != "raise"):
        trace = open_trace_kwargs(kw)
    model = kw["model"]
    if is_config_path(model):
        from pcs.model import load_hf_config

        model = load_hf_config(model)
    table = None
    if kw["hardware_file"]:
        from pcs.hardware import load_hardware_file

        table = load_hardware_file(kw["hardware_file"])
    tier_policies = _pairs(kw["tier_policy"], "tier policy", "--tier-policy")
    refuse_inapplicable(kw)
    from pcs.cli.tiernames import check_tier_names, refuse_tier_lists

    refuse_tier_lists(kw.get("tiers") or ())
    check_tier_names(kw.get("tiers") or (), kw["link"])
    from pcs.blocks import BlockRules

    kwargs = dict(model=model, hardware=kw["gpu"], tp=kw["tp"], dtype=kw["dtype"],
                       tier_policies=tier_policies, links=_links(kw["link"]),
                       protected_share=_protected_share(kw, tier_policies),
                       timing=kw["timing"], write_policy=kw["write_policy"], hardware_table=table,
                       engine=kw["engine"], native=kw["native"], gap_oracle=kw["gap_oracle"],
                       gpu_memory_utilization=kw["gpu_memory_utilization"],
                       kv_reserve=kv_reserve_option(kw["kv_reserve"]),
                       hybrid_kv_cache_manager=kw.get("hybrid_kv_cache_manager"),
                       swa_full_tokens_ratio=kw.get("swa_full_tokens_ratio"),
                       mamba_full_memory_ratio=kw.get("mamba_full_memory_ratio"),
                       mamba_cache_mode=kw.get("mamba_cache_mode"), residency_step_s=kw.get("residency_step"),
                       rules=BlockRules(cache_partial_blocks=kw["cache_partial_blocks"],
                                        recompute_last_token=not kw["no_recompute_last_token"]),
                       compute_mode=kw["compute_mode"], scheduler=_scheduler_config(kw))
    _small_budget_note(kw)                 # after the options are checked: no note before an error
    return trace, kwargs


def _scheduler_config(kw: dict[str, Any]):
    """The step scheduler's options as a :class:`pcs.engine.schedconfig.SchedulerConfig`; the duration options
    arrive in seconds, parsed and range-checked once by their :class:`pcs.cli.params.Duration` type."""
    from pcs.engine.schedconfig import SchedulerConfig

    return SchedulerConfig(max_num_batched_tokens=kw["max_num_batched_tokens"], max_num_seqs=kw["max_num_seqs"],
                           restore_policy=kw["restore_policy"], restore_timeout_s=kw["restore_timeout"],
                           restore_timeout_per_token_s=kw["restore_timeout_per_token"],
                           restore_fallback=kw["restore_fallback"], cache_decode_blocks=kw["cache_decode_blocks"],
                           max_preemptions=kw["max_preemptions"], ttft_slo_s=kw["ttft_slo"],
                           cache_blocks_at=kw["cache_blocks_at"])


def run_replay_kwargs(kw: dict[str, Any], policy: str | None, tiers: list[str] | None,
                      progress: Callable[[int], None] | None = None, trace: Any = None):
    """Run :func:`pcs.engine.api.replay` from the parsed shared options (``trace``: an opened one instead)."""
    from pcs.engine.api import replay as run

    trace, kwargs = replay_call_kwargs(kw, trace)
    return run(trace, tiers=tiers or None, policy=policy, progress=progress, admit=list(kw["admit"]) or None,
               **kwargs)


_REQUESTS_SUFFIXES = (".parquet", ".csv")
_SUFFIX_RULE = "the name must end in .parquet or .csv (the suffix picks the table's format)"


def _check_requests_out(path: str | None, kw: dict[str, Any]) -> None:
    """``--requests-out``, refused before the replay: another extension, a folder it cannot be written in, an input."""
    if path is None:
        return
    from pcs.outfile import check_outputs

    check_outputs({"--requests-out": path}, input_paths(kw), hint=" ending .parquet or .csv")
    if Path(path).suffix.lower() not in _REQUESTS_SUFFIXES:
        raise UserError(f"--requests-out {shown_path(path)}: {_SUFFIX_RULE}")


def write_requests(table: Any, path: str) -> None:
    """Write the per-request table to ``path`` (.parquet or .csv) via a temp file and a rename.

    Raises:
        UserError: another extension.
        OSError: the write failed (naming ``--requests-out`` and ``path``).
    """
    from pcs.outfile import arrow_file, atomic_output

    suffix = Path(path).suffix.lower()
    if suffix not in _REQUESTS_SUFFIXES:
        raise UserError(f"--requests-out {shown_path(path)}: {_SUFFIX_RULE}")
    try:
        with atomic_output(path) as tmp:
            if suffix == ".parquet":
                pq = held_import("pyarrow.parquet")

                with arrow_file(tmp, "w") as sink:
                    pq.write_table(table, sink)
            else:
                pcsv = held_import("pyarrow.csv")
                from pcs.csvcells import guard_table   # text cells as no formula (=, +, -, @ ...)

                with arrow_file(tmp, "w") as sink:
                    pcsv.write_csv(guard_table(table), sink)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), f"--requests-out {path}") from None


#: What a replay of the default kind imports once it runs (loaded before the command's collector is released).
_REPLAY_MODULES = ("pcs.engine.api", "pcs.engine.deployment", "pcs.engine.scheduler", "pcs.engine.stepnative",
                   "pcs.engine.turns", "pcs.engine.truncation", "pcs.engine.chunkattn", "pcs.cache.native",
                   "pcs.cache.admission_retention", "pcs.model.presets", "pcs.model.deploy", "pcs.model.footprint",
                   "pcs.model.parallel", "pcs.trace.jsonfast",
                   "pcs.trace.reblock", "pcs.trace.pathcheck", "pcs.trace.hashids", "pcs.extras", "pcs.report.replay",
                   "pcs.report.tiercheck", "pcs.cli.tiernames")


@command("replay", twins=True, preload=_REPLAY_MODULES)
@replay_options
@fleet_options(multiple=False)
@click.option("--requests-out", type=CheckedPath(dir_okay=False),
              help="Write one row per request to FILE.parquet or FILE.csv.")
@html_options
@format_option
def replay(fmt: str, requests_out: str | None, html_path: str | None, plot_dir: str | None, **kw: Any) -> None:
    """Replay TRACE through a multi-tier prefix cache: real vs single-sequence hit rate,
    bytes per tier and link, and the bandwidth envelope (restore vs recompute).

    \b
    Sizes are decimal (400GB = 4e11 B) or blocks (5000blocks); bandwidths per GPU.
    With no arguments: the bundled sample trace, llama-2-70b, 8x h100-sxm TP=8,
    the GPU tier sized from that deployment and --tier cpu=2TB (the reason
    and the derivation are printed).
    Example:
      pcs replay trace.jsonl --model llama-3.1-70b --tier gpu=390GB --tier cpu=2TB --policy slru
      pcs replay trace.jsonl --tier gpu=5000blocks --timing sequential --format json
      pcs replay trace.jsonl --html report.html --plot figures/
    JSON keys: docs/json.md (hit_ratio, hit_ratio_per_tier,
    single_sequence_hit_ratio, gap, tiers, bytes, envelope).
    """
    from pcs.report.replay import render_replay

    _check_requests_out(requests_out, kw)
    check_outputs(html_path, plot_dir, input_paths(kw), others={"--requests-out": requests_out})
    streams = _reblocked(kw)
    if wants_fleet(kw):
        _refuse_single_instance_options(kw, streams, html_path or plot_dir)
        return replay_fleet(fmt, requests_out, kw)
    if streams is not None and "exact" not in streams:
        if html_path or plot_dir or requests_out:
            raise UserError("--html/--plot/--requests-out: this --block-size gives an interval (two bound "
                             "replays), not one run; use a multiple of the trace's block size")
        return _replay_interval(kw, streams, fmt)
    trace = open_trace_kwargs(kw) if streams is None else streams["exact"]
    total = getattr(trace, "estimated_requests", None)
    with Progress(kw["quiet"], total=total) as progress:
        result = run_replay_kwargs(kw, kw["policy"], list(kw["tiers"]), progress, trace)
    s = _with_trace_notes(result.summary, trace, streams)
    if not kw["quiet"] and fmt != "table":
        for note in s.notes:
            click.echo(f"pcs: note: {note}", err=True)
    if requests_out:
        write_requests(result.requests, requests_out)
    payload = with_skipped_lines(s.to_dict(), trace)
    rerun = replay_command(click.get_current_context())
    if fmt == "json":             # what pcs report checks before it reads the trace again (pcs.trace.fingerprint)
        from pcs.trace.fingerprint import trace_file

        payload["trace_file"] = trace_file(kw["trace"] or s.trace)
        payload["replay_command"] = rerun
    if html_path or plot_dir:
        write_replay_outputs(html_path, plot_dir, result, kw, None if streams is None else streams["exact"], s,
                             command=rerun)
    if fmt == "csv":
        from pcs.report.replay import csv_row

        return emit({"rows": [csv_row(payload)]}, fmt, "", rows_key="rows")
    emit(payload, fmt, lambda: render_replay(payload), rows_key=None)


def _refuse_single_instance_options(kw: dict[str, Any], streams: dict | None, outputs: Any) -> None:
    """Raise UserError for options a fleet replay (--instances/--router) does not take: re-blocking, --admit,
    --gap-oracle, --html/--plot (``outputs``)."""
    if streams is not None:
        raise UserError("--instances replays the trace at its recorded block size; re-blocking a block-hash "
                         "trace (--block-size) is for single-instance replays")
    from pcs.fleet.fleet import refuse_single_instance_options

    refuse_single_instance_options(kw, ("--admit", "--gap-oracle"), "--instances/--router")
    if outputs:
        raise UserError(FLEET_NO_HTML)


def _with_trace_notes(s: Any, trace: Any, streams: dict | None) -> Any:
    """The replay summary ``s`` with the notes about the trace itself: an exact re-blocking, then
    :func:`pcs.trace.api.trace_notes` (synthetic reuse and the like), then the tiers that never received a block
    (:func:`pcs.report.tiercheck.with_replay_notes`, which a sweep's replay points use too)."""
    from pcs.report.tiercheck import with_replay_notes, without_trace_notes

    s = without_trace_notes(s, trace)     # pcs.replay's, in the API's words: given below in the command's
    if streams is not None:
        s = dataclasses.replace(s, notes=s.notes + (f"the trace's {streams['exact'].source.block_size}-token ids "
                                                     f"were re-blocked to {streams['exact'].block_size} tokens "
                                                     "(exact)",))
    return with_replay_notes(s, trace, option_names)


def _reblocked(kw: dict[str, Any]):
    """``--block-size b`` on a block-hash trace recorded at another B: the re-blocked streams, else None."""
    from pcs.trace.reblock import plan_engine_block_size

    native = plan_engine_block_size(kw["trace"], kw["trace_format"], kw["block_size"])
    if native is None:
        return None
    from pcs.trace import open_trace
    from pcs.trace.reblock import reblock

    return reblock(open_trace(kw["trace"], format=kw["trace_format"], block_size=native, sort=kw["sort"],
                              on_error=kw["on_error"]), kw["block_size"])


def _replay_interval(kw: dict[str, Any], streams: dict, fmt: str) -> None:
    """Replay the lower and upper streams and report the interval (docs/traces-formats.md)."""
    from pcs.report.traceshape import render_reblock
    from pcs.trace.reblock import interval_payload

    summaries = {}
    for bound, t in streams.items():
        with Progress(kw["quiet"], desc=f"replay ({bound})") as progress:
            summaries[bound] = run_replay_kwargs(kw, kw["policy"], list(kw["tiers"]), progress, t).summary.to_dict()
    p = interval_payload(streams, summaries)
    emit(p, fmt, lambda: render_reblock(p["rows"], p["title"], p["notes"]), rows_key="rows")
