"""Seeded synthetic workloads with real prefix reuse: chat, agent loops, one-off requests.

Three request kinds, each a stream of *sessions* whose prompts grow turn by
turn, so later turns share every earlier block (the structure the Mooncake
and Qwen-Bailian traces show: multi-turn reuse dominates, docs/semantics.md §1):

- ``chat``: a shared system prompt (one by default, as in the Mooncake
  conversation trace where every request starts with the same block; with
  several, Zipf-popular) + a first message (often a pasted document, long
  and widely spread); each later turn appends the previous answer and a
  new message; the user thinks for a lognormal time between turns.
- ``agent``: a long shared prefix (tool definitions, one of a few) + task;
  each step appends the model's tool call and the tool's result, seconds
  apart.
- ``oneoff``: unique tokens, one request, no reuse.

Arrivals: sessions start as Poisson processes (rate per kind = ``rate_rps``
x kind share / mean requests per session), later turns follow think times;
or, with an Azure-style CSV (:mod:`pcs.trace.azure`), each CSV row is one
request with that arrival time and those exact token counts, assigned to
a continuing session when the row's context can hold the session's history,
else to a new session or a one-off.

Tokens are drawn uniformly from ``[0, vocab)`` and hashed with
:mod:`pcs.trace.hashing`, so the token form and the Mooncake form of one
synthetic trace have the same blocks. Lengths are lognormal (median and
sigma per field). All randomness comes from one
``numpy.random.default_rng(seed)``: same spec and seed, same bytes.

Source of the defaults: the Mooncake FAST'25 ``conversation_trace.jsonl``
(Qin et al., FAST'25), measured with ``pcs trace stats`` and by following
each request's longest cached prefix back to the request that last used it:
every request starts with the same block (one system prompt of 512-1,023
tokens); first turns are lognormal, median ~4,800 tokens, log-sd 1.26; a
later turn adds the previous answer plus a message of median ~25 tokens
but heavy-tailed (p75 ~490, p90 ~4,400); the time since the previous turn
is lognormal, median ~130 s, log-sd ~1.0; answers average 343 tokens;
3.4 requests/s. Fitted from those: ``chat_first_median_tokens`` 5,500 and
``chat_user_median_tokens`` 150 (``user_sigma`` 2) make the whole 1,700-request
default stream match the real prompt mean and p50 (its windows hold more
first turns than the full trace); ``rate_rps`` 6 gives the real 3.4 req/s
over that window. The agent and one-off kinds (small shares) are
illustrative. traces/README.md compares the bundled sample with the real trace.
"""
from __future__ import annotations

import dataclasses
import heapq
import math
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from pcs.argcheck import check_int, check_real
from pcs.errors import UserError
from pcs.trace.hashing import hash_request_blocks
from pcs.trace.lengthonly import MAX_LENGTH_TOKENS
from pcs.trace.request import MAX_BLOCK_SIZE, RequestBatch

__all__ = ["KINDS", "SynthSpec", "SynthRequest", "synth_requests", "synth_batches"]

KINDS = ("chat", "agent", "oneoff")


@dataclass(frozen=True, slots=True)
class SynthSpec:
    """Parameters of a synthetic workload (tokens, seconds).

    Attributes:
        num_requests: requests to emit (CSV mode: at most the CSV's rows).
        seed: RNG seed.
        rate_rps: steady-state arrival rate, requests/s (Poisson mode). A
            trace starts with no session under way, so the rate measured over
            a short trace is lower (defaults: ~3.4 req/s over 1,700 requests).
        mix: shares of requests per kind (chat, agent, oneoff), summing to 1.
        block_size: tokens per block of the ids.
        vocab: token ids are uniform in [0, vocab).
        num_system_prompts / system_median_tokens: chat system prompts.
        chat_turns_mean: requests per chat session, geometric with this mean (>= 1).
        chat_first_median_tokens: first message of a chat session (``first_sigma``).
        chat_user_median_tokens: a later chat message, or an agent's task (``user_sigma``).
        chat_output_median_tokens / chat_think_s: answers; median seconds
            between two turns (lognormal, ``think_sigma``).
        num_agent_prefixes / agent_prefix_median_tokens / agent_steps_mean /
            agent_tool_median_tokens / agent_output_median_tokens /
            agent_step_s: agent loops (median seconds between steps, ``think_sigma``).
        oneoff_median_tokens / oneoff_output_median_tokens: one-off requests (``first_sigma``).
        sigma: lognormal shape of the other lengths (answers, prefixes, tool results).
        first_sigma / user_sigma / think_sigma: lognormal shapes named above.
        length_scale: multiplies every median length (small samples).
        max_context_tokens: a session ends when its next prompt would exceed this.
    """

    num_requests: int = 1700
    seed: int = 0
    rate_rps: float = 6.0
    mix: tuple[float, float, float] = (0.92, 0.03, 0.05)
    block_size: int = 512
    vocab: int = 100_000
    num_system_prompts: int = 1
    system_median_tokens: int = 700
    chat_turns_mean: float = 3.0
    chat_first_median_tokens: int = 5500
    chat_user_median_tokens: int = 150
    chat_output_median_tokens: int = 280
    chat_think_s: float = 150.0
    num_agent_prefixes: int = 3
    agent_prefix_median_tokens: int = 6000
    agent_steps_mean: float = 6.0
    agent_tool_median_tokens: int = 600
    agent_output_median_tokens: int = 150
    agent_step_s: float = 6.0
    oneoff_median_tokens: int = 3000
    oneoff_output_median_tokens: int = 280
    sigma: float = 0.7
    first_sigma: float = 1.3
    user_sigma: float = 2.0
    think_sigma: float = 1.0
    max_context_tokens: int = 128_000
    length_scale: float = 1.0

    def __post_init__(self) -> None:
        """Check every field (the API's rules; ``pcs trace synth`` checks its options' ranges first).

        Raises:
            UserError: naming the field: a non-finite or out-of-range number (a NaN passes every ``<``
                test, so each rule is written as the range the value must lie in), a bool or float count.
        """
        self._check_ranges()
        self._check_mix()
        self._check_lengths()

    def _check_ranges(self) -> None:
        """Each number in its range; the ranges a generator needs (a pool of prompts is never empty,
        token ids fit uint32, a lognormal sigma is finite)."""
        rules = [("num_requests", 0, None), ("seed", 0, None), ("block_size", 1, MAX_BLOCK_SIZE), ("vocab", 1, 2**32),
                 ("num_system_prompts", 1, None), ("num_agent_prefixes", 1, None), ("max_context_tokens", 1, None)]
        rules += [(f.name, 1, None) for f in dataclasses.fields(self) if f.name.endswith("_median_tokens")]
        for name, lo, hi in rules:
            check_int(getattr(self, name), name, lo, hi)
        for name in ("rate_rps", "chat_think_s", "agent_step_s", "length_scale"):
            check_real(getattr(self, name), name, 0, lo_open=True)
        for name in ("chat_turns_mean", "agent_steps_mean"):
            check_real(getattr(self, name), name, 1)
        for name in ("sigma", "first_sigma", "user_sigma", "think_sigma"):
            check_real(getattr(self, name), name, 0)

    def _check_mix(self) -> None:
        """3 finite shares >= 0 summing to 1 (a NaN share would make every kind's rate NaN: no request)."""
        mix = self.mix
        ok = isinstance(mix, (tuple, list)) and len(mix) == 3 and all(
            not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in mix)
        if not ok or abs(sum(mix) - 1.0) > 1e-9:
            raise UserError(f"mix must be 3 finite shares (chat, agent, oneoff) >= 0 summing to 1, got {mix}")

    def _check_lengths(self) -> None:
        """Every scaled median within one request's bound (MAX_LENGTH_TOKENS, docs/traces-formats.md)."""
        for f in dataclasses.fields(self):
            if f.name.endswith("_median_tokens") and getattr(self, f.name) * self.length_scale > MAX_LENGTH_TOKENS:
                raise UserError(f"{f.name} x length_scale = {getattr(self, f.name) * self.length_scale:.3g} tokens "
                                 f"is past one request's bound of {MAX_LENGTH_TOKENS:,} = 2**24 tokens "
                                 "(docs/traces-formats.md): lower the length scale (--length-scale)")


@dataclass(frozen=True, slots=True)
class SynthRequest:
    """One synthetic request: its tokens and where it came from.

    Attributes:
        arrival_s: seconds from trace start, a whole number of milliseconds
            (the resolution of Mooncake timestamps).
        token_ids: ``np.ndarray[np.uint32]``, shape (prompt_tokens,).
        block_hashes: ``np.ndarray[np.uint64]``, shape (ceil(prompt_tokens / block_size),).
        output_tokens: generated tokens.
        chat_id: unique per request; parent_chat_id: the session's previous request, -1 for none.
        turn: 1-based turn in the session; kind: one of :data:`KINDS`.
    """

    arrival_s: float
    token_ids: np.ndarray
    block_hashes: np.ndarray
    output_tokens: int
    chat_id: int
    parent_chat_id: int
    turn: int
    kind: str


@dataclass(slots=True, eq=False)
class _Session:
    kind: str
    tokens: np.ndarray
    hashes: np.ndarray
    turns_left: int
    turn: int = 0
    last_chat_id: int = -1
    pending: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))


class _Gen:
    """Random draws and session mechanics shared by both arrival modes."""

    def __init__(self, spec: SynthSpec):
        self.s = spec
        self.rng = np.random.default_rng(spec.seed)
        self.system = [self.tokens(self.length(spec.system_median_tokens)) for _ in range(spec.num_system_prompts)]
        self.agent = [self.tokens(self.length(spec.agent_prefix_median_tokens)) for _ in range(spec.num_agent_prefixes)]
        full = lambda p: self.hash(p)[: p.size // spec.block_size]  # noqa: E731 - full blocks only
        self.prefix_hashes = {("chat", i): full(p) for i, p in enumerate(self.system)}
        self.prefix_hashes.update({("agent", i): full(p) for i, p in enumerate(self.agent)})
        self.next_chat_id = 0

    def length(self, median: int, sigma: float | None = None) -> int:
        sigma = self.s.sigma if sigma is None else sigma
        draw = self.rng.lognormal(math.log(median * self.s.length_scale), sigma)
        return max(1, int(min(draw, MAX_LENGTH_TOKENS)))  # a tail draw stops at one request's bound

    def gap_s(self, kind: str) -> float:
        """Seconds until the session's next request: lognormal around the kind's median."""
        median = self.s.chat_think_s if kind == "chat" else self.s.agent_step_s
        return float(self.rng.lognormal(math.log(median), self.s.think_sigma))

    def tokens(self, n: int) -> np.ndarray:
        return self.rng.integers(0, self.s.vocab, size=n, dtype=np.uint32)

    def hash(self, toks: np.ndarray, known: np.ndarray | None = None) -> np.ndarray:
        return hash_request_blocks(toks, self.s.block_size, known=known)

    def zipf_pick(self, n: int) -> int:
        w = 1.0 / np.arange(1, n + 1)
        return int(self.rng.choice(n, p=w / w.sum()))

    def new_session(self, kind: str) -> _Session:
        s = self.s
        if kind == "oneoff":
            return _Session(kind, np.zeros(0, np.uint32), np.zeros(0, np.uint64), 1)
        mean = s.chat_turns_mean if kind == "chat" else s.agent_steps_mean
        pool = self.system if kind == "chat" else self.agent
        i = self.zipf_pick(len(pool))
        return _Session(kind, pool[i], self.prefix_hashes[(kind, i)], int(self.rng.geometric(1.0 / mean)))

    def new_tokens(self, sess: _Session) -> int:
        s = self.s
        if sess.kind == "oneoff":
            return self.length(s.oneoff_median_tokens, s.first_sigma)
        if sess.turn == 0:
            if sess.kind == "chat":
                return self.length(s.chat_first_median_tokens, s.first_sigma)
            return self.length(s.chat_user_median_tokens, s.user_sigma)
        if sess.kind == "chat":
            return self.length(s.chat_user_median_tokens, s.user_sigma)
        return self.length(s.agent_tool_median_tokens)

    def output(self, kind: str) -> int:
        s = self.s
        return self.length({"chat": s.chat_output_median_tokens, "agent": s.agent_output_median_tokens,
                            "oneoff": s.oneoff_output_median_tokens}[kind])

    def emit(self, sess: _Session, t: float, prompt_tokens: int, out: int) -> SynthRequest:
        """Grow the session to ``prompt_tokens`` (history + last answer + new text)."""
        hist = np.concatenate((sess.tokens, sess.pending))[:prompt_tokens]
        prompt = np.concatenate((hist, self.tokens(prompt_tokens - hist.size)))
        hashes = self.hash(prompt, known=sess.hashes if prompt.size >= sess.tokens.size else None)
        sess.tokens, sess.hashes = prompt, hashes[: prompt.size // self.s.block_size]
        sess.pending = self.tokens(out)
        sess.turn += 1
        sess.turns_left -= 1
        req = SynthRequest(round(t * 1000.0) / 1000.0, prompt, hashes, out, self.next_chat_id, sess.last_chat_id, sess.turn, sess.kind)
        sess.last_chat_id = self.next_chat_id
        self.next_chat_id += 1
        return req


def _poisson(g: _Gen) -> Iterator[SynthRequest]:
    s, rng = g.s, g.rng
    means = {"chat": s.chat_turns_mean, "agent": s.agent_steps_mean, "oneoff": 1.0}
    heap: list = []
    seq = 0
    for k, share in zip(KINDS, s.mix):
        if share > 0:
            rate = s.rate_rps * share / means[k]
            heap.append((rng.exponential(1.0 / rate), seq, k, None, rate))
            seq += 1
    heapq.heapify(heap)
    emitted = 0
    while heap and emitted < s.num_requests:
        t, _, kind, sess, rate = heapq.heappop(heap)
        if sess is None:  # a session starts; schedule the next start of this kind
            heapq.heappush(heap, (t + rng.exponential(1.0 / rate), seq, kind, None, rate))
            seq += 1
            sess = g.new_session(kind)
        n = sess.tokens.size + sess.pending.size + g.new_tokens(sess)
        if n > s.max_context_tokens:
            continue
        yield g.emit(sess, t, n, g.output(kind))
        emitted += 1
        if sess.turns_left > 0:
            heapq.heappush(heap, (t + g.gap_s(kind), seq, kind, sess, rate))
            seq += 1


def _from_csv(g: _Gen, rows: Iterator[tuple[float, int, int]]) -> Iterator[SynthRequest]:
    s, rng = g.s, g.rng
    open_: dict[str, list[_Session]] = {"chat": [], "agent": []}
    p_new = {"chat": 1.0 / s.chat_turns_mean, "agent": 1.0 / s.agent_steps_mean}
    for i, (t, ctx, out) in enumerate(rows):
        if i >= s.num_requests:
            return
        kind = KINDS[int(rng.choice(3, p=np.array(s.mix)))]
        sess = None
        if kind != "oneoff":
            fits = [x for x in open_[kind] if x.tokens.size < ctx]
            if fits and rng.random() >= p_new[kind]:
                sess = fits[int(rng.integers(len(fits)))]
            else:
                sess = g.new_session(kind)
                if sess.tokens.size >= ctx:
                    sess = None
                else:
                    open_[kind].append(sess)
        if sess is None:
            sess = g.new_session("oneoff")
        yield g.emit(sess, t, ctx, out)
        if sess.kind != "oneoff" and sess.turns_left <= 0:
            open_[sess.kind] = [x for x in open_[sess.kind] if x is not sess]


def synth_requests(spec: SynthSpec, azure_csv=None) -> Iterator[SynthRequest]:
    """Generate the workload: Poisson arrivals, or the rows of an Azure-style CSV.

    Args:
        spec: parameters (see :class:`SynthSpec`).
        azure_csv: path of a ``TIMESTAMP,ContextTokens,GeneratedTokens`` CSV, or None.
    Yields:
        :class:`SynthRequest` in non-decreasing arrival order.
    Raises:
        PathError: ``azure_csv`` is missing, a directory or not readable.
        InputError: a bad CSV row.

    >>> reqs = list(synth_requests(SynthSpec(num_requests=50, seed=1, block_size=16)))
    >>> len(reqs), all(a.arrival_s <= b.arrival_s for a, b in zip(reqs, reqs[1:]))
    (50, True)
    """
    g = _Gen(spec)
    if azure_csv is None:
        yield from _poisson(g)
    else:
        from pcs.trace.azure import read_azure_csv
        from pcs.trace.pathcheck import check_input_file

        check_input_file(azure_csv, "azure_csv")
        yield from _from_csv(g, read_azure_csv(azure_csv))


def synth_batches(requests: Iterator[SynthRequest], block_size: int, rows: int = 4096) -> Iterator[RequestBatch]:
    """Pack synthetic requests into :class:`RequestBatch` es (with Bailian-style session columns)."""
    buf: list[SynthRequest] = []

    def pack() -> RequestBatch:
        offs = np.zeros(len(buf) + 1, dtype=np.int64)
        np.cumsum([r.block_hashes.size for r in buf], out=offs[1:])
        col = lambda f, dt: np.array([getattr(r, f) for r in buf], dtype=dt)  # noqa: E731
        return RequestBatch(0, block_size, col("arrival_s", np.float64),
                            np.array([r.token_ids.size for r in buf], dtype=np.int64),
                            col("output_tokens", np.int64), offs,
                            np.concatenate([r.block_hashes for r in buf]).astype(np.uint64),
                            col("chat_id", np.int64), col("parent_chat_id", np.int64), col("turn", np.int64),
                            tuple(r.kind for r in buf))

    for r in requests:
        buf.append(r)
        if len(buf) >= rows:
            yield pack()
            buf = []
    if buf:
        yield pack()
