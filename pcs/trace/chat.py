"""OpenAI-style chat logs -> token-id rows: real multi-turn reuse from the model's chat template and tokenizer.

Input: JSON Lines, one chat-completions request per line (the body of
``POST /v1/chat/completions``, OpenAI API reference), or a logged pair
``{"request": {...}, "response": {...}}``:

- ``messages`` (required): ``[{"role": str, "content": str | [{"type":
  "text", "text": str}, ...]}, ...]`` (non-text parts are skipped);
- ``timestamp`` (milliseconds, as the token JSONL) or ``created`` (Unix
  seconds, the response's field); absent: the previous request's time;
- output tokens: ``response.usage.completion_tokens`` / ``usage.completion_tokens``,
  else ``output_length``, else ``max_completion_tokens`` / ``max_tokens``, else 0;
- tenant: ``user`` (OpenAI's end-user id) or ``tenant``.

Each request is rendered with a chat template (``add_generation_prompt``:
the prompt ends where the assistant's answer starts, as serving engines
render it) and tokenized with a local ``tokenizer.json`` through the
``tokenizers`` library (``pip install -e '.[chat]'`` in the pcs clone; nothing is fetched from
the network), without adding special tokens again (the template has them, as
Hugging Face ``apply_chat_template`` does). A later turn resends the earlier
messages, so its tokens start with the earlier turn's: the reuse is real.
With ``salt_per_tenant`` each tenant's rows carry ``cache_salt`` = the
tenant id (vLLM's per-request ``cache_salt``: tenants share no blocks).

Templates: ``chatml`` (Qwen, ``<|im_start|>role\\ncontent<|im_end|>\\n``),
``llama3`` (Llama 3 header/eot tokens), or a Jinja template file, or a
``tokenizer_config.json`` holding ``chat_template`` (needs ``jinja2``, part
of the ``chat`` extra; rendered in a sandbox with ``messages``,
``add_generation_prompt``, ``bos_token``, ``eos_token``).
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from pcs.choices import close_tail
from pcs.errors import InputError, UserError, quoted, shown_path, shown_repr
from pcs.extras import missing_extra
from pcs.trace.batches import arrival_error
from pcs.trace.hashids import get_int, get_time, strict_loads
from pcs.trace.jsonfast import lone_surrogate
from pcs.trace.source import display_name, iter_chunks, iter_lines

__all__ = ["BUILTIN_TEMPLATES", "ChatRequest", "read_chat_jsonl", "load_template", "load_tokenizer",
           "chat_to_token_rows", "write_token_rows"]


def _chatml(messages: list[dict], add_generation_prompt: bool = True) -> str:
    out = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return out + ("<|im_start|>assistant\n" if add_generation_prompt else "")


def _llama3(messages: list[dict], add_generation_prompt: bool = True) -> str:
    out = "<|begin_of_text|>" + "".join(
        f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content'].strip()}<|eot_id|>" for m in messages)
    return out + ("<|start_header_id|>assistant<|end_header_id|>\n\n" if add_generation_prompt else "")


#: Built-in templates (Qwen2 ``tokenizer_config.json`` ChatML; Meta Llama 3 model card prompt format).
BUILTIN_TEMPLATES: dict[str, Callable[..., str]] = {"chatml": _chatml, "llama3": _llama3}


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One parsed chat request.

    Attributes:
        timestamp_ms: arrival in milliseconds.
        messages: ``[{"role", "content"}]`` with text content.
        output_tokens: generated tokens (>= 0).
        tenant: tenant id, or None.
    """

    timestamp_ms: float
    messages: tuple
    output_tokens: int
    tenant: str | None


def _text(content: Any, name: str, ln: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    if content is None:
        return ""
    raise InputError(name, ln, "messages", f"content must be a string or a list of parts, got {quoted(content)}")


def _unicode(text: str, name: str, ln: int, field: str, what: str) -> str:
    """``text``, or InputError when it holds a lone surrogate (a JSON escape ``\\ud800`` json.loads accepts,
    which neither the tokenizer nor a UTF-8 output can take: :func:`pcs.trace.jsonfast.lone_surrogate`)."""
    bad = lone_surrogate(text)
    if bad:
        raise InputError(name, ln, field, f"{what} is not valid Unicode (lone surrogate {bad})")
    return text


def _messages(req: dict, name: str, ln: int) -> tuple:
    msgs = req.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise InputError(name, ln, "messages", "missing or not a non-empty list")
    out = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise InputError(name, ln, "messages", f"element {i} must be an object with a string 'role'")
        out.append({"role": _unicode(m["role"], name, ln, "messages", f"element {i}'s role"),
                    "content": _unicode(_text(m.get("content"), name, ln), name, ln, "messages",
                                        f"element {i}'s content")})
    return tuple(out)


def _output_tokens(obj: dict, req: dict, name: str, ln: int) -> int:
    for usage in ((obj.get("response") or {}).get("usage"), obj.get("usage")):
        if isinstance(usage, dict) and "completion_tokens" in usage:
            return get_int(usage, "completion_tokens", name, ln)
    for k in ("output_length", "max_completion_tokens", "max_tokens"):
        if req.get(k) is not None:
            return get_int(req, k, name, ln)
    return 0


def parse_chat_line(obj: dict, name: str, ln: int, prev_ms: float) -> ChatRequest:
    """One line -> :class:`ChatRequest`.

    Raises:
        InputError: naming the field; an arrival beyond the trace readers' bound
            (:func:`pcs.trace.batches.arrival_error`: the token JSONL written would be refused).
    """
    req = obj["request"] if isinstance(obj.get("request"), dict) else obj
    field = "timestamp"
    if "timestamp" in obj or "timestamp" in req:
        ts = get_time(obj if "timestamp" in obj else req, "timestamp", name, ln)
    elif "created" in obj or "created" in (obj.get("response") or {}):
        field, ts = "created", 1000.0 * get_time(obj if "created" in obj else obj["response"], "created", name, ln)
    else:
        ts = max(prev_ms, 0.0)
    if arrival_error(ts / 1000.0):
        raise InputError(name, ln, field, arrival_error(ts / 1000.0))
    tenant = req.get("user", req.get("tenant", obj.get("tenant")))
    if tenant is not None and not isinstance(tenant, str):
        raise InputError(name, ln, "user", f"must be a string, got {quoted(tenant)}")
    if tenant is not None:
        _unicode(tenant, name, ln, "user", "the tenant id")
    return ChatRequest(ts, _messages(req, name, ln), _output_tokens(obj, req, name, ln), tenant)


def read_chat_jsonl(path) -> Iterator[ChatRequest]:
    """Stream a chat JSONL file as :class:`ChatRequest` s.

    Raises:
        InputError: bad line (file, line, field), a decreasing timestamp, or no request at all (the token
            trace written would be empty, which its reader refuses: "empty trace (no requests)").
    """
    name = display_name(path)
    prev = -float("inf")
    for first, chunk in iter_chunks(path, name=name):
        for ln, line in iter_lines(first, chunk):
            r = parse_chat_line(strict_loads(name, ln, line), name, ln, prev)
            if r.timestamp_ms < prev:
                raise InputError(name, ln, "timestamp", f"decreases ({r.timestamp_ms:g} ms after {prev:g} ms)")
            prev = r.timestamp_ms
            yield r
    if prev == -float("inf"):
        raise InputError(name, None, None, "empty chat log (no requests): pcs writes no empty trace")


def load_tokenizer(path):
    """A ``tokenizers.Tokenizer`` from a local ``tokenizer.json`` (no network).

    Raises:
        UserError: the ``tokenizers`` package is missing, or the file is not a tokenizer.
        PathError: ``path`` is missing, a directory or not readable.
    """
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UserError(missing_extra("turning chat logs into tokens", "tokenizers", "chat")) from None
    from pcs.trace.pathcheck import check_input_file, check_regular_file
    from pcs.trace.source import check_source

    check_input_file(path, "path")
    check_source(path)
    check_regular_file(path)
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises its own Exception subclass
        raise UserError(f"{shown_path(path)}: not a tokenizer.json ({str(exc).splitlines()[0][:100]})") from None


def load_template(spec: str) -> Callable[..., str]:
    """A template callable ``(messages, add_generation_prompt) -> str``: a built-in name or a file.

    A file is a Jinja template, or a JSON ``tokenizer_config.json`` whose
    ``chat_template`` (string, or the ``default`` entry of a list) is one.

    Raises:
        UserError: unknown name, no ``chat_template`` in the JSON, or ``jinja2`` missing.
        PathError: a directory or an unreadable file (a missing one is no file: the UserError above).
    """
    if spec in BUILTIN_TEMPLATES:
        return BUILTIN_TEMPLATES[spec]
    p = Path(spec)
    if not p.exists():
        raise UserError(f"chat template {shown_repr(spec)} is neither a built-in ({', '.join(BUILTIN_TEMPLATES)}) nor a file"
                        f"{close_tail(spec, BUILTIN_TEMPLATES)}")
    from pcs.configfile import read_json_object, read_text

    bos = eos = ""
    if p.suffix == ".json":
        cfg = read_json_object(p, "spec")
        tpl = cfg.get("chat_template")
        if isinstance(tpl, list):
            tpl = next((t.get("template") for t in tpl if t.get("name") == "default"), None)
        if not isinstance(tpl, str):
            raise UserError(f"{spec}: no 'chat_template' string in this JSON")
        text = tpl
        bos, eos = (cfg.get(k) if isinstance(cfg.get(k), str) else "" for k in ("bos_token", "eos_token"))
    else:
        text = read_text(p, "spec")
    try:
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise UserError(missing_extra("a Jinja chat template", "jinja2", "chat")) from None
    try:
        tmpl = _bounded_environment(ImmutableSandboxedEnvironment)(trim_blocks=True, lstrip_blocks=True).from_string(text)
    except (TemplateError, RecursionError, MemoryError) as exc:
        raise UserError(f"{spec}: not a valid Jinja chat template ({_why(exc)})") from None

    def render(messages, add_generation_prompt=True) -> str:
        try:
            out = tmpl.render(messages=list(messages), add_generation_prompt=add_generation_prompt,
                              bos_token=bos, eos_token=eos)
        except Exception as exc:   # the template is the user's code: whatever it raises is its failure
            raise UserError(f"{spec}: the chat template failed ({_why(exc)})") from None
        if len(out) > MAX_RENDERED_CHARS:
            raise UserError(f"{spec}: the chat template failed (it rendered {len(out):,} characters, more than "
                            f"pcs's bound of {MAX_RENDERED_CHARS:,})")
        return out

    return render


MAX_RENDERED_CHARS = 100_000_000
"""The longest text a chat template may render or build with ``*`` / ``**`` / ``+`` (characters, items, digits):
ten times the longest context of any served model, so only a runaway template reaches it."""


def _why(exc: BaseException) -> str:
    """The first line of an exception's text (100 characters at most), or its type's name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0][:100] if text else type(exc).__name__


def _bounded_environment(base):
    """``base`` (a Jinja sandbox) whose ``*``, ``**`` and ``+`` refuse results past :data:`MAX_RENDERED_CHARS`
    (``'a' * 10**9`` would otherwise build a gigabyte, ``10 ** 10 ** 9`` compute for hours) with a
    ``SecurityError`` before computing them. jinja2's sandbox bounds ``range`` alone."""
    from jinja2.exceptions import SecurityError

    def size(x) -> int:
        return len(x) if isinstance(x, (str, bytes, list, tuple)) else 0

    def big(args, kwargs) -> int | None:
        return next((v for v in (*args, *kwargs.values())
                     if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_RENDERED_CHARS), None)

    def checked(f):
        @functools.wraps(f)     # keeps jinja's pass_context / pass_eval_context marks
        def call(*args, **kwargs):
            v = big(args, kwargs)
            if v is not None:
                raise SecurityError(f"a filter given {v:,} (more than {MAX_RENDERED_CHARS:,})")
            return f(*args, **kwargs)
        return call

    class Bounded(base):
        intercepted_binops = frozenset(["*", "**", "+", "%"])

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.filters = {k: checked(f) for k, f in self.filters.items()}   # 'a'|center(10**9), indent ...

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - jinja's signature
            v = big(args, kwargs)                                  # 'a'.ljust(10**9), zfill, range is bounded
            if v is not None:
                raise SecurityError(f"a call given {v:,} (more than {MAX_RENDERED_CHARS:,})")
            return super().call(__context, __obj, *args, **kwargs)

        def call_binop(self, context, operator, left, right):
            cap = MAX_RENDERED_CHARS
            if operator == "*" and isinstance(left, int) != isinstance(right, int):
                count, seq = (left, right) if isinstance(left, int) else (right, left)
                if isinstance(count, int) and size(seq) * max(count, 0) > cap:
                    raise SecurityError(f"'*' would build {size(seq) * count:,} characters/items")
            elif operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
                if abs(left) > 1 and right * max(abs(left).bit_length(), 1) > cap:
                    raise SecurityError(f"'**' would compute a number of about {right * abs(left).bit_length():,} bits")
            elif operator == "+" and size(left) + size(right) > cap:
                raise SecurityError(f"'+' would build {size(left) + size(right):,} characters/items")
            elif operator == "%" and isinstance(left, str) and re.search(r"%[-+ 0\x23]*(\d{9,}|\d*\.\d{9,})", left):
                raise SecurityError("'%' with a width or precision of 9 digits or more")
            return super().call_binop(context, operator, left, right)

    return Bounded


def chat_to_token_rows(requests, tokenizer, template: Callable[..., str],
                       salt_per_tenant: bool = True) -> Iterator[dict]:
    """Render and tokenize each request into one token-JSONL row.

    Yields:
        ``{"timestamp": ms, "output_length": n, "token_ids": [...]}`` plus
        ``"cache_salt": tenant`` with ``salt_per_tenant`` and a tenant
        (the token JSONL schema of :mod:`pcs.trace.tokens`).
    """
    for r in requests:
        ids = tokenizer.encode(template(r.messages, add_generation_prompt=True), add_special_tokens=False).ids
        ts = round(r.timestamp_ms)
        row: dict[str, Any] = {"timestamp": ts if ts == r.timestamp_ms else r.timestamp_ms,
                               "output_length": r.output_tokens, "token_ids": ids}
        if salt_per_tenant and r.tenant is not None:
            row["cache_salt"] = r.tenant
        yield row


def write_token_rows(rows, out_path) -> dict:
    """Write token rows as JSON Lines atomically (temp file + rename), gzipped for a ``.gz`` name; returns counts.

    Raises:
        UserError: ``out_path`` named as CSV or Parquet (:func:`pcs.trace.convert.refuse_token_output_name`).
        PathError: an empty or blank ``out_path``, or one that is a folder (:func:`pcs.trace.pathcheck.check_output_file`).
    """
    from pcs.outfile import atomic_output
    from pcs.trace.convert import open_jsonl_text, refuse_token_output_name
    from pcs.trace.pathcheck import check_output_file

    check_output_file(out_path, "out_path")
    refuse_token_output_name(out_path, "OUT")
    n = tokens = 0
    with atomic_output(out_path) as tmp, open_jsonl_text(tmp, out_path) as f:
        for row in rows:
            f.write(json.dumps(row, separators=(", ", ": "), ensure_ascii=False) + "\n")
            n, tokens = n + 1, tokens + len(row["token_ids"])
    return {"requests": n, "prompt_tokens": tokens, "path": str(out_path)}
