"""Layer patterns of Hugging Face configs: which layers are full, sliding, chunked, recurrent or MLA.

The pattern comes from the config's own fields when it states it
(``layer_types``), else from the rule of its ``model_type`` -- the default the
transformers config class builds, which is what vLLM's model file reads
(each rule cites both). A config that states no pattern and whose
``model_type`` has no rule here is ambiguous: the generic rule is applied and
the assumption is returned, never silently taken (docs/models.md).

Layer kinds: ``full``, ``sliding``, ``chunked`` (chunked local attention),
``linear`` (Gated DeltaNet), ``mamba`` (Mamba1/Mamba2, see ``state_kind``),
``mla`` and ``mlp`` (a layer with no cache, Nemotron-H ``-``/``E``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from pcs.choices import did_you_mean
from pcs.errors import InputError, shown_repr
from pcs._dataclass import dataclass

if TYPE_CHECKING:  # pcs.model.configfields imports this module: the type only, no import cycle at run time
    from pcs.model.configfields import Fields

__all__ = ["Family", "FAMILIES", "Pattern", "layer_pattern", "family_of"]

#: ``layer_types`` names in configs -> layer kind.
LAYER_TYPE_NAMES = {
    "full_attention": "full", "attention": "full", "global": "full", "full": "full",
    "sliding_attention": "sliding", "sliding_window": "sliding", "local": "sliding", "sliding": "sliding",
    "chunked_attention": "chunked", "chunked": "chunked",
    "linear_attention": "linear", "linear": "linear", "mamba": "mamba",
}


@dataclass(frozen=True, slots=True)
class Pattern:
    """A model's layer pattern and how it was found.

    Attributes:
        kinds: one layer kind per decoder layer.
        rule: the rule that produced it, with its source.
        assumptions: sentences naming what was assumed (empty when nothing was).
    """

    kinds: tuple[str, ...]
    rule: str
    assumptions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Family:
    """A ``model_type``'s documented defaults and pattern rule.

    Attributes:
        model_types: the ``model_type`` values it covers.
        rule: ``generic`` (every layer full, or sliding where the config sets a
            model-level window), ``alternate`` (sliding when (i+1) % 2),
            ``every_nth`` (full when (i+1) % p == 0, else ``between``),
            ``llama4``, ``jamba``, ``nemotron_h``, ``mla``.
        source: the transformers config class and vLLM model file followed.
        defaults: config fields the config class fills when a file omits them.
        pattern_field: the field holding p for ``every_nth``.
        between: the kind of the layers between the full ones for ``every_nth``.
        qwen_window: Qwen rule: a window applies only with ``use_sliding_window``
            and only from layer ``max_window_layers`` on.
        state_kind: ``mamba1``/``mamba2`` for models with Mamba layers.
    """

    model_types: tuple[str, ...]
    rule: str
    source: str
    defaults: tuple[tuple[str, Any], ...] = ()
    pattern_field: str = ""
    between: str = "sliding"
    qwen_window: bool = False
    state_kind: str = ""


_T = "transformers models/{0}/configuration_{0}.py"
FAMILIES: tuple[Family, ...] = (
    Family(("llama", "mistral", "mixtral", "phi3", "starcoder2", "glm4", "glm4_moe", "granite", "olmo2",
            "minimax_m2", "ernie4_5", "ernie4_5_moe"), "generic",
           "vLLM applies a config's model-level sliding_window to every layer (Attention(cache_config."
           "sliding_window), vllm/model_executor/layers/attention/attention.py; MistralConfig)"),
    Family(("qwen2",), "generic",
           _T.format("qwen2") + " Qwen2Config: layer_types default "
           "sliding when use_sliding_window (default false) and i >= max_window_layers (default 28), the "
           "window sliding_window (default 4096); vllm/model_executor/models/qwen2.py",
           (("max_window_layers", 28), ("sliding_window", 4096)), qwen_window=True),
    Family(("qwen3",), "generic",
           _T.format("qwen3") + " Qwen3Config: Qwen2Config's window rule; head_dim default 128; "
           "vllm/model_executor/models/qwen3.py",
           (("max_window_layers", 28), ("sliding_window", 4096), ("head_dim", 128)), qwen_window=True),
    Family(("qwen2_moe", "qwen3_moe"), "generic",
           "Qwen2MoeConfig/Qwen3MoeConfig: the window applies only with use_sliding_window (default false), from "
           "layer max_window_layers on (0 when absent: Qwen3MoeConfig has no such field); "
           "vllm/model_executor/models/qwen2_moe.py", qwen_window=True),
    Family(("gemma2",), "alternate", _T.format("gemma2") + " Gemma2Config.layer_types default "
           "(sliding when (i+1) % 2); vllm/model_executor/models/gemma2.py",
           (("sliding_window", 4096), ("head_dim", 256), ("tie_word_embeddings", True))),
    Family(("gpt_oss",), "alternate", _T.format("gpt_oss") + " GptOssConfig.layer_types default "
           "(sliding when (i+1) % 2), head_dim default 64; vllm/model_executor/models/gpt_oss.py (sliding on "
           "even layers)", (("sliding_window", 128), ("head_dim", 64))),
    Family(("gemma3", "gemma3_text"), "every_nth", _T.format("gemma3") + " Gemma3TextConfig.layer_types "
           "default (sliding when (i+1) % sliding_window_pattern, pattern 6); vllm/model_executor/models/gemma3.py",
           (("sliding_window", 4096), ("head_dim", 256), ("sliding_window_pattern", 6), ("tie_word_embeddings", True)),
           "sliding_window_pattern"),
    Family(("cohere2",), "every_nth", _T.format("cohere2") + " Cohere2Config.layer_types default (sliding when "
           "(i+1) % sliding_window_pattern, pattern 4); vllm/model_executor/models/commandr.py",
           (("sliding_window", 4096), ("sliding_window_pattern", 4), ("tie_word_embeddings", True)),
           "sliding_window_pattern"),
    Family(("qwen3_next",), "every_nth", _T.format("qwen3_next") + " Qwen3NextConfig.layer_types default "
           "(linear_attention when (i+1) % full_attention_interval, interval 4); "
           "head_dim default 256; vllm/model_executor/models/qwen3_next.py",
           (("full_attention_interval", 4), ("head_dim", 256)),
           "full_attention_interval", "linear"),
    Family(("llama4", "llama4_text"), "llama4", _T.format("llama4") + " Llama4TextConfig: no_rope_layers "
           "default [(i+1) % 4 != 0] (an empty list means the default), layer_types chunked_attention where "
           "RoPE is used; vllm/model_executor/models/llama4.py (ChunkedLocalAttention on RoPE layers)",
           (("attention_chunk_size", 8192), ("no_rope_layer_interval", 4))),
    Family(("jamba",), "jamba", _T.format("jamba") + " JambaConfig.layers_block_type (attention when i % "
           "attn_layer_period == attn_layer_offset); vllm/model_executor/models/jamba.py (Mamba1 mixers)",
           (("attn_layer_period", 8), ("attn_layer_offset", 4), ("mamba_d_state", 16), ("mamba_d_conv", 4),
            ("mamba_expand", 2)), state_kind="mamba1"),
    Family(("nemotron_h",), "nemotron_h", _T.format("nemotron_h") + " NemotronHConfig.hybrid_override_pattern "
           "(M Mamba2, * attention, - MLP, E MoE); vllm/model_executor/models/nemotron_h.py (MambaMixer2, "
           "intermediate = mamba_num_heads x mamba_head_dim)", (("conv_kernel", 4), ("n_groups", 8)),
           state_kind="mamba2"),
    Family(("deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2"), "mla",
           "DeepSeek MLA on every layer (vllm/model_executor/models/deepseek_v2.py DeepseekV2MLAAttention; "
           "get_num_kv_heads returns 1 for MLA); V3.2 adds the indexer when index_topk is set"),
)
_BY_TYPE = {t: fam for fam in FAMILIES for t in fam.model_types}
_NEMOTRON = {"M": "mamba", "*": "full", "-": "mlp", "E": "mlp"}


def family_of(model_type: str) -> Family | None:
    """The family of ``model_type`` (None when pcs has no rule for it)."""
    return _BY_TYPE.get(str(model_type or "").lower())


def default(cfg: dict[str, Any], fam: Family | None, key: str) -> Any:
    """``cfg[key]``, else the family's documented default (None when neither).

    A key present with value null stays None (the config says "no such value").
    """
    if key in cfg:
        return cfg[key]
    return dict(fam.defaults).get(key) if fam is not None else None


#: model_types whose transformers config class derives an omitted head_dim as hidden_size // num_attention_heads
#: (LlamaConfig/MistralConfig/MixtralConfig ``head_dim if head_dim is not None else hidden_size //
#: num_attention_heads``; Qwen2Config, Qwen2MoeConfig, Cohere2Config, JambaConfig have no head_dim field and their
#: attention uses hidden_size // num_heads). Any other model_type without a head_dim default gets an assumption line.
HEAD_DIM_DERIVED = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "cohere2", "jamba"})

#: The bound of every integer field (= pcs.model.configfields.Fields.MAX_INT, 2^20; that module imports this one).
INT_BOUND = 1 << 20


def _flag(f: Fields, key: str, absent: bool) -> bool:
    """A boolean field (``use_sliding_window``: ``bool`` in Qwen2Config/MistralConfig); absent or null ->
    ``absent``. A string such as ``"false"`` is refused: its truthiness would turn the window on."""
    value = f.cfg.get(key)
    if value is None:
        return absent
    if not isinstance(value, bool):
        raise InputError(f.path, None, key, f"must be true or false, got {shown_repr(value)}")
    return value


def _from_layer_types(raw: Any, n: int, path: str) -> tuple[str, ...]:
    """Each entry a known layer-type string (transformers ``layer_type_validation`` checks the same)."""
    if not isinstance(raw, list) or len(raw) != n:
        raise InputError(path, None, "layer_types", f"must be a list of {n:,} entries (num_hidden_layers)")
    for t in raw:
        if not isinstance(t, str) or t not in LAYER_TYPE_NAMES:
            raise InputError(path, None, "layer_types",
                             f"unknown layer type {shown_repr(t)}; {did_you_mean(t, sorted(LAYER_TYPE_NAMES))}known: "
                             + ", ".join(sorted(LAYER_TYPE_NAMES)))
    return tuple(LAYER_TYPE_NAMES[t] for t in raw)


def _generic(f: Fields, n: int) -> tuple[str, ...]:
    if f.get("sliding_window") is None:
        return ("full",) * n
    if f.family is not None and f.family.qwen_window:
        if not _flag(f, "use_sliding_window", False):
            return ("full",) * n
        # Qwen2Config/Qwen3Config.layer_types: layer i slides when i >= max_window_layers (an int, default 28;
        # above n no layer slides, as the published Qwen2.5-14B/32B configs' 70 is read). A negative or
        # fractional value has no meaning. The MoE configs have no default here (0: every layer slides).
        first = f.int("max_window_layers", default=0, minimum=0)
        return tuple("full" if i < first else "sliding" for i in range(n))
    if not _flag(f, "use_sliding_window", True):
        return ("full",) * n
    return ("sliding",) * n


def _llama4(f: Fields, n: int) -> tuple[str, ...]:
    if f.get("attention_chunk_size") is None:
        return ("full",) * n
    rope = f.cfg.get("no_rope_layers")
    if rope is None or rope == []:  # Llama4TextConfig: an empty list (or none) means the interval default
        k = f.int("no_rope_layer_interval")
        rope = [int((i + 1) % k != 0) for i in range(n)]
    # Llama4TextConfig documents no_rope_layers as list[int], 1 = the layer uses RoPE (chunked), 0 = NoPE.
    if not isinstance(rope, list) or len(rope) != n or any(type(r) is not int or r not in (0, 1) for r in rope):
        raise InputError(f.path, None, "no_rope_layers", f"must be a list of {n} 0/1 integers (num_hidden_layers; "
                         f"1 = RoPE, chunked attention), got {_short(rope)}")
    return tuple("chunked" if r else "full" for r in rope)


def _short(value: Any) -> str:
    """``repr(value)`` cut to 60 characters for a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _jamba(f: Fields, n: int) -> tuple[str, ...]:
    """Attention where ``i % attn_layer_period == attn_layer_offset``; JambaConfig's
    ``_check_supported_offset`` raises unless offset < period, and an offset below 0 never matches."""
    period = f.int("attn_layer_period")
    offset = f.int("attn_layer_offset", minimum=0)
    if offset >= period:
        raise InputError(f.path, None, "attn_layer_offset", f"must be smaller than attn_layer_period ({period}), "
                         f"got {offset} (JambaConfig refuses it: no layer would be attention)")
    return tuple("full" if i % period == offset else "mamba" for i in range(n))


def _nemotron_h(f: Fields, n: int) -> tuple[str, ...]:
    pattern = f.cfg.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or len(pattern) != n or set(pattern) - set(_NEMOTRON):
        raise InputError(f.path, None, "hybrid_override_pattern",
                         f"must be a string of {n:,} characters from M * - E (num_hidden_layers)")
    return tuple(_NEMOTRON[ch] for ch in pattern)


def _rule_kinds(f: Fields, fam: Family, n: int) -> tuple[str, ...]:
    if fam.rule == "alternate":
        return tuple("sliding" if (i + 1) % 2 else "full" for i in range(n))
    if fam.rule == "every_nth":
        p = f.int(fam.pattern_field)
        return tuple(fam.between if (i + 1) % p else "full" for i in range(n))
    rules: dict[str, Callable] = {"llama4": _llama4, "nemotron_h": _nemotron_h, "generic": _generic, "jamba": _jamba}
    return rules[fam.rule](f, n)


def layer_pattern(f: Fields, n: int) -> Pattern:
    """The layer kinds of a merged config (:class:`pcs.model.configfields.Fields`) of ``n`` decoder layers.

    Raises:
        InputError: a pattern field that is malformed, naming the config's path and the field.
    """
    cfg, path, fam = f.cfg, f.path, f.family
    model_type = str(cfg.get("model_type") or "")
    if cfg.get("kv_lora_rank") is not None:
        return Pattern(("mla",) * n, _BY_TYPE["deepseek_v3"].source)
    if cfg.get("layer_types") is not None:
        return Pattern(_from_layer_types(cfg["layer_types"], n, path), "the config's layer_types")
    if fam is not None:
        return Pattern(_rule_kinds(f, fam, n), fam.source)
    what = f"model_type {shown_repr(model_type)} has no layer-pattern rule in pcs" if model_type else "no model_type"
    if isinstance(cfg.get("sliding_window_pattern"), int) and cfg.get("sliding_window") is not None:
        p = f.int("sliding_window_pattern")
        note = (f"{what}: assumed Gemma 3's rule for sliding_window_pattern {p} (layer i full when (i+1) % {p} == 0,"
                " else sliding); give layer_types to state it")
        return Pattern(tuple("sliding" if (i + 1) % p else "full" for i in range(n)), "every_nth (assumed)", (note,))
    kinds = _generic(f, n)
    if "sliding" in kinds:
        note = (f"{what} and no layer_types: assumed sliding_window {cfg['sliding_window']} on every layer "
                "(vLLM's model-level rule); give layer_types if only some layers slide")
        return Pattern(kinds, "generic (assumed)", (note,))
    if cfg.get("cache_implementation") == "hybrid":
        note = f"{what}; cache_implementation is 'hybrid' but no window is given: assumed full attention on every layer"
        return Pattern(kinds, "generic (assumed)", (note,))
    return Pattern(kinds, "generic: full attention on every layer")
