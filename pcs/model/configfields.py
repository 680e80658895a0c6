"""Typed access to a Hugging Face config's fields, with the model_type's documented defaults.

Errors name the file and the field (:class:`pcs.errors.InputError`). A field a
config omits takes the default its transformers config class fills
(:data:`pcs.model.families.FAMILIES`); a multimodal wrapper's ``text_config``
fields override the top level.
"""
from __future__ import annotations

from typing import Any

from pcs.choices import did_you_mean
from pcs.errors import InputError, quoted, shown_repr
from pcs.model.families import HEAD_DIM_DERIVED, INT_BOUND, Family, default, family_of
from pcs.model.quant import TORCH_DTYPES, normalize_dtype

__all__ = ["Fields"]

#: Canonical dtypes no torch dtype maps to (torch has int8 and the float8 types, no 4-bit dtype).
_NOT_TORCH = frozenset({"int4", "fp4"})


class Fields:
    """One merged config: ``cfg`` (dict), ``path`` (for errors), ``family`` (or None)."""

    def __init__(self, cfg: dict[str, Any], path: str):
        self.cfg = cfg
        self.path = path
        self.family: Family | None = family_of(str(cfg.get("model_type") or ""))

    @classmethod
    def of(cls, cfg: Any, path: str) -> "Fields":
        """Merge ``text_config`` over the top level.

        Raises:
            InputError: the top level, or a ``text_config`` given, is not a JSON object.
        """
        if not isinstance(cfg, dict):
            raise InputError(path, None, None, "top level must be a JSON object")
        text = cfg.get("text_config")
        if text is not None and not isinstance(text, dict):
            raise InputError(path, None, "text_config", f"must be a JSON object (a multimodal wrapper's text model "
                             f"fields), got {type(text).__name__} {quoted(text, show=repr)}")
        return cls({**cfg, **text} if isinstance(text, dict) else dict(cfg), path)

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    #: Largest value of any integer field (2^20: above every real layer count, width, head count or
    #: expert count by far; a bound so a config with 10^30 layers is refused, not built).
    MAX_INT = INT_BOUND

    def int(self, key: str, default: int | None = None, minimum: int = 1, maximum: int | None = None) -> int:
        """``cfg[key]`` as an int in [``minimum``, ``maximum``] (default :attr:`MAX_INT`); missing: ``default``, else
        the family's default.

        Raises:
            InputError: missing with no default, or not an integer in range.
        """
        value = self.cfg.get(key)
        if value is None and key not in self.cfg and self.family is not None:
            value = dict(self.family.defaults).get(key)
        if value is None:
            if default is None:
                raise InputError(self.path, None, key, "missing (required to size the KV cache)")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InputError(self.path, None, key, f"must be an integer >= {minimum}, got {shown_repr(value)}")
        top = self.MAX_INT if maximum is None else maximum
        if value > top:
            raise InputError(self.path, None, key, f"must be <= {top:,} (pcs's bound), got {value:,}")
        return value

    def get(self, key: str) -> Any:
        """The field or the family's default (None when neither; null stays None)."""
        return default(self.cfg, self.family, key)

    def head_dim(self) -> int:
        """``head_dim`` (>= 1), else the family's default (Gemma 256, Qwen3 128, Qwen3-Next 256, gpt-oss 64:
        the transformers config classes, docs/models.md), else hidden_size // num_attention_heads (LlamaConfig).

        Raises:
            InputError: ``head_dim`` 0 or not an integer; hidden_size // heads is 0 (hidden_size < heads).
        """
        if self.cfg.get("head_dim") is not None or (self.family is not None and self.get("head_dim") is not None):
            return self.int("head_dim")
        hidden, heads = self.int("hidden_size"), self.int("num_attention_heads")
        if hidden < heads:
            raise InputError(self.path, None, "hidden_size", f"{hidden} // {heads} attention heads gives head_dim 0; "
                             "give head_dim (the config omits it)")
        return hidden // heads

    def head_dim_assumed(self) -> bool:
        """True when :meth:`head_dim` falls back to hidden_size // heads with no documented rule for the model_type
        (no head_dim given, no family default, model_type not in :data:`pcs.model.families.HEAD_DIM_DERIVED`)."""
        if self.get("head_dim") is not None:
            return False
        return str(self.cfg.get("model_type") or "").lower() not in HEAD_DIM_DERIVED

    def dtype(self) -> str:
        """The checkpoint dtype (``torch_dtype`` or ``dtype``), bf16 when neither is given.

        Raises:
            InputError: a value that is no string, an unknown dtype (naming the field it came from and the close
                torch dtype names, :func:`pcs.choices.did_you_mean`), or a 4-bit name (no torch dtype).
        """
        field = "torch_dtype" if self.cfg.get("torch_dtype") else "dtype"
        raw = self.cfg.get(field) or "bfloat16"
        if not isinstance(raw, str):    # a list or a number: no name to look up or to suggest one near
            raise InputError(self.path, None, field, f"must be a string, a torch dtype name such as 'bfloat16', got "
                             f"{quoted(raw, show=repr)} ({type(raw).__name__})")
        try:
            name = normalize_dtype(raw)
        except ValueError:
            raise InputError(self.path, None, field, f"unknown dtype {quoted(raw, show=repr)}; "
                             f"{did_you_mean(raw, TORCH_DTYPES)}valid: {', '.join(TORCH_DTYPES)}") from None
        if name in _NOT_TORCH:   # int4/fp4 are no torch dtype: a quantised KV cache is asked with --dtype
            raise InputError(self.path, None, field, f"{shown_repr(raw)} is not a torch dtype (float32, float16, "
                             "bfloat16, float8_e4m3fn ...); give the KV cache dtype with dtype=")
        return name
