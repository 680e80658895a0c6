"""KV cache layouts as engines name them: value dtype, where the scales live, their dtype, padding.

One :class:`KVLayout` per name an engine accepts for its KV cache dtype
(vLLM ``--kv-cache-dtype``; SGLang uses the same ``fp8_e4m3`` / ``fp8_e5m2``
names for the same per-tensor layout). ``--dtype`` takes these names and the
short names ``bf16 fp16 fp32 fp8 int8 int4 fp4``; each short name maps to
one engine layout (:data:`SHORT_NAMES`). Where the scales live decides what a
cached block holds (docs/semantics.md §13):

- ``per_tensor``: one scale per layer for K and one for V (vLLM
  ``Attention._k_scale`` / ``_v_scale``, fp32 scalars registered by
  ``set_default_quant_scales`` in
  ``vllm/model_executor/layers/attention/attention.py``), outside the pages:
  a block holds payload only, and the scales are a fixed 8 B per layer per rank;
- ``per_token_head``: one fp32 scale per token per KV head for K and for V,
  carved from the KV allocation (vLLM ``AttentionSpec.page_size_bytes`` adds
  ``2 * block_size * num_kv_heads * 4`` B per page, ``vllm/v1/kv_cache_interface.py``):
  inside every block;
- ``per_group``: one scale per G values of a row, packed with the row inside the
  page (vLLM NVFP4: ``nvfp4_kv_cache_full_dim(head_size) = head_size // 2 +
  head_size // 16``, ``vllm/utils/torch_utils.py``).

MLA latents have their own forms (:func:`mla_form`): per-tensor fp8 stores the
576-value latent + rope row in fp8; ``fp8_ds_mla`` (vLLM's DeepSeek-V3.2
format, ``MLAAttentionSpec.real_page_size_bytes`` = 656 B per token) keeps 512
fp8 values, four fp32 scales (one per 128) and the 64 rope values in bf16.
vLLM turns any ``fp8*`` cache dtype into ``fp8_ds_mla`` for DeepSeek-V3.2
(``DeepseekV32ForCausalLM.verify_and_update_config``,
``vllm/model_executor/models/config.py``), which is what a sparse (``topk``)
MLA latent does here.
"""
from __future__ import annotations


from pcs.errors import UnknownNameError, UserError, shown_repr
from pcs.model.quant import QuantScales
from pcs._dataclass import dataclass

__all__ = ["KVLayout", "LAYOUTS", "LAYOUT_NAMES", "SHORT_NAMES", "get_layout", "mla_form", "MLAForm"]

_VLLM_IFACE = "vllm/v1/kv_cache_interface.py"
_PER_TENSOR_SRC = ("vLLM KVQuantMode.FP8_PER_TENSOR (get_kv_quant_mode: any 'fp8*' name, "
                   f"{_VLLM_IFACE}); scales: Attention._k_scale/_v_scale fp32 scalars "
                   "(set_default_quant_scales, vllm/model_executor/layers/attention/attention.py); "
                   "SGLang names fp8_e4m3/fp8_e5m2 the same per-tensor layout")


@dataclass(frozen=True, slots=True)
class KVLayout:
    """One engine's stored form of KV values.

    Attributes:
        name: the engine's name (vLLM ``--kv-cache-dtype``).
        engine: whose name it is.
        value_dtype: dtype of the values (a key of :data:`pcs.model.quant.DTYPE_BITS`).
        scale_place: ``none``, ``per_tensor`` (outside the pages),
            ``per_token_head`` or ``per_group`` (inside the pages).
        scale_bits: bits per scale (0 without scales).
        group_size: values per scale for ``per_group``, else None.
        tensor_scales_per_layer: scalars per layer outside the pages (2: K and V).
        padding: what rounding the stored row has (documentation).
        source: the engine file and function the layout follows.
    """

    name: str
    engine: str
    value_dtype: str
    scale_place: str = "none"
    scale_bits: int = 0
    group_size: int | None = None
    tensor_scales_per_layer: int = 0
    padding: str = "none: rows are whole bytes"
    source: str = ""

    def inline_scales(self, row_values: int) -> QuantScales | None:
        """Scales stored inside the page for a row of ``row_values`` values (None: none inline)."""
        if self.scale_place == "per_token_head":
            return QuantScales(group_size=row_values, scale_bits=self.scale_bits)
        if self.scale_place == "per_group":
            return QuantScales(group_size=self.group_size, scale_bits=self.scale_bits)
        return None

    def outside_bytes_per_layer(self) -> int:
        """Bytes per layer and rank kept outside the pages (per-tensor scales), 0 otherwise."""
        return self.tensor_scales_per_layer * self.scale_bits // 8

    def describe(self) -> str:
        """One line: values, where the scales live, padding."""
        where = {"none": "no scales",
                 "per_tensor": f"{self.tensor_scales_per_layer} fp{self.scale_bits} scales per layer outside the pages",
                 "per_token_head": f"one fp{self.scale_bits} scale per token per KV head for K and V, in the pages",
                 "per_group": f"one {self.scale_bits}-bit scale per {self.group_size} values, in the pages"}
        return f"{self.name} ({self.engine}): {self.value_dtype} values, {where[self.scale_place]}"

    def to_dict(self) -> dict:
        """JSON form (``layout`` in ``pcs footprint``/``replay``/``deploy``)."""
        return {"name": self.name, "engine": self.engine, "value_dtype": self.value_dtype,
                "scale_place": self.scale_place, "scale_bits": self.scale_bits, "group_size": self.group_size,
                "tensor_scales_per_layer": self.tensor_scales_per_layer, "padding": self.padding,
                "source": self.source, "describe": self.describe()}


def _plain(name: str, dtype: str) -> KVLayout:
    return KVLayout(name, "vLLM", dtype, source=f"vLLM kv_cache_dtype 'auto'/{name}: FullAttentionSpec."
                                                f"real_page_size_bytes, values only ({_VLLM_IFACE})")


def _per_tensor(name: str) -> KVLayout:
    return KVLayout(name, "vLLM", "fp8", "per_tensor", 32, None, 2, source=_PER_TENSOR_SRC)


def _per_token_head(name: str, dtype: str) -> KVLayout:
    mode = name.upper()
    return KVLayout(name, "vLLM", dtype, "per_token_head", 32,
                    source=f"vLLM KVQuantMode.{mode}: AttentionSpec.page_size_bytes adds 2 x block_size x "
                           f"num_kv_heads x 4 B of fp32 scales carved from the KV allocation ({_VLLM_IFACE})")


#: Every layout by name.
LAYOUTS: dict[str, KVLayout] = {lay.name: lay for lay in (
    _plain("bf16", "bf16"), _plain("fp16", "fp16"), _plain("fp32", "fp32"),
    _per_tensor("fp8"), _per_tensor("fp8_e4m3"), _per_tensor("fp8_e5m2"),
    _per_token_head("fp8_per_token_head", "fp8"), _per_token_head("int8_per_token_head", "int8"),
    KVLayout("nvfp4", "vLLM", "fp4", "per_group", 8, 16,
             padding="values packed two per byte; head_size // 2 + head_size // 16 B per head row",
             source="vLLM KVQuantMode.NVFP4: FullAttentionSpec.real_page_size_bytes with "
                    f"nvfp4_kv_cache_full_dim ({_VLLM_IFACE}, vllm/utils/torch_utils.py)"),
    KVLayout("int4", "pcs", "int4", "per_group", 8, 16,
             padding="values packed two per byte",
             source="no engine layout of this name in the engines pcs follows; pcs assumes the NVFP4 "
                    "shape (int4 values, one fp8 scale per 16 values in the page)"),
    KVLayout("fp8_ds_mla", "vLLM", "fp8", "per_group", 32, 128,
             padding="MLA only: 512 fp8 + 4 fp32 scales + 64 bf16 rope = 656 B per token per layer",
             source="vLLM MLAAttentionSpec.real_page_size_bytes ('fp8_ds_mla': 656 B per token, "
                    f"{_VLLM_IFACE}; layout in vllm/v1/attention/backends/mla/flashmla_sparse.py)"),
)}

#: Short ``--dtype`` names -> the engine layout they mean.
SHORT_NAMES: dict[str, str] = {"bf16": "bf16", "fp16": "fp16", "fp32": "fp32", "fp8": "fp8",
                               "int8": "int8_per_token_head", "fp4": "nvfp4", "int4": "int4"}
_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
            "float8": "fp8", "fp8_e4m3fn": "fp8_e4m3"}
#: Names ``--dtype`` accepts, short names first.
LAYOUT_NAMES: tuple[str, ...] = tuple(SHORT_NAMES) + tuple(n for n in LAYOUTS if n not in SHORT_NAMES)


def get_layout(name: str) -> KVLayout:
    """The layout ``name`` means (case-insensitive; short names map per :data:`SHORT_NAMES`).

    Raises:
        UserError: unknown name; the message lists the valid ones.

    >>> get_layout("fp8_e4m3").scale_place, get_layout("int8").name
    ('per_tensor', 'int8_per_token_head')
    """
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    key = SHORT_NAMES.get(key, key)
    if key not in LAYOUTS:
        raise UnknownNameError("dtype", name, LAYOUT_NAMES)
    return LAYOUTS[key]


@dataclass(frozen=True, slots=True)
class MLAForm:
    """How an MLA latent row (kv_lora_rank values + rope values) is stored under a layout.

    Attributes:
        layout: the layout actually used (``fp8*`` on a sparse latent becomes ``fp8_ds_mla``).
        latent_dtype: dtype of the kv_lora_rank values.
        rope_dtype: dtype of the rope values.
        scales: inline scales of the latent part, or None.
    """

    layout: KVLayout
    latent_dtype: str
    rope_dtype: str
    scales: QuantScales | None


def mla_form(name: str, sparse: bool) -> MLAForm:
    """The MLA storage of layout ``name``; ``sparse``: the latent belongs to a DSA (V3.2) model.

    Raises:
        UserError: a layout that has no MLA form in vLLM (per-token-head, nvfp4, int4).
    """
    lay = get_layout(name)
    if lay.name in ("fp8", "fp8_e4m3", "fp8_e5m2") and sparse:
        lay = LAYOUTS["fp8_ds_mla"]
    if lay.scale_place == "none":
        return MLAForm(lay, lay.value_dtype, lay.value_dtype, None)
    if lay.scale_place == "per_tensor":
        return MLAForm(lay, "fp8", "fp8", None)
    if lay.name == "fp8_ds_mla":
        return MLAForm(lay, "fp8", "bf16", lay.inline_scales(128))
    raise UserError(f"KV dtype {shown_repr(lay.name)} has no MLA form in vLLM; MLA models take bf16, fp16, "
                     "fp8 / fp8_e4m3 / fp8_e5m2 (per tensor) or fp8_ds_mla")
