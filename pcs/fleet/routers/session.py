"""``session``: sticky by the trace's session (conversation) id.

A session's requests all go to ``splitmix64(session_id) mod N`` (a stable
hash: the same session, the same instance, whatever came before). Source:
vLLM production-stack ``--routing-logic session`` (sticky by a session
header), SGLang router's consistent hashing by routing key.

The session id is the conversation's identity as the trace layer defines it
(:func:`pcs.trace.tree.session_keys`): on a Bailian trace, whose
``chat_id`` is one per turn, the root chat reached through
``parent_chat_id``, so every turn of a chat lands on one instance.

A request without a session (id -1, e.g. BurstGPT's API-log rows) goes to
the least-loaded instance (fewest requests in flight, the lowest index on a
tie), as vLLM production-stack's session router falls back to load-based
routing when a request carries no session header.

A trace without session ids (Mooncake's FAST'25 release has none, or every
row is -1) is an error: stickiness by an id that does not exist would be a different router
(use ``consistent-hash``, which keys on the first blocks).
"""
from __future__ import annotations

from pcs.errors import UserError
from pcs.fleet.routers import Router

__all__ = ["ROUTER", "splitmix64"]

_MASK = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """SplitMix64's finaliser (Steele et al., OOPSLA'14) of a 64-bit int: a stable, well-mixed hash."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def splitmix64_array(x):
    """:func:`splitmix64` of every element of a uint64 array (numpy's uint64 arithmetic wraps mod 2**64)."""
    import numpy as np

    x = np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


class Session(Router):
    """``splitmix64(session_id) mod instances``; session id -1: the least-loaded instance; UserError when the
    trace has no session ids."""

    name = "session"
    source = "vLLM production-stack session routing; SGLang router routing key"

    def choose(self, req, index, load) -> int:
        if req.session_id is None:
            raise UserError("router 'session' needs session ids, and this trace has none; use router='consistent-hash' (keyed on the first blocks) instead")
        if req.session_id < 0:                    # no session: least-loaded by requests in flight
            reqs = load.requests
            return min(range(self.instances), key=lambda i: (reqs[i], i))
        return splitmix64(int(req.session_id) & _MASK) % self.instances


ROUTER = Session
