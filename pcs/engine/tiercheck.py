"""A hand-built :class:`pcs.engine.api.TierSpec`, checked as ``--tier NAME=SIZE`` text is (docs/semantics.md §16).

``pcs.replay(tiers=[...])`` takes strings or TierSpec objects. The string path parses a non-empty name and one
size, bytes or blocks, 0 .. 2^63 - 1 (:func:`pcs.units.parse_capacity`); :func:`check_tier_spec` holds a
TierSpec to the same rules, naming the tier and the field, and refuses a link given both on the TierSpec and in
``links=`` (one setting given twice, as the CLI refuses elsewhere). The rules of a tier entry's text live here
too, one place for the command line, a sweep plan and the API: which characters a tier name may hold
(:func:`tier_name_problem`) and a list written into one ``TIER=VALUE`` entry (:func:`run_on_entries`,
:func:`one_entry_each`).
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from pcs.argcheck import INT64_MAX, check_int
from pcs.errors import UserError, hidden, shown_repr
from pcs.units import plural

__all__ = ["check_tier_spec", "tier_name_problem", "TIER_NAME_SEPARATORS", "run_on_entries", "one_entry_each"]

#: The characters the command line reads between tier entries, which a tier name therefore cannot hold: ``=`` ends
#: the name (``--tier NAME=SIZE``, ``--tier-policy NAME=POLICY``, ``--link NAME=...``, ``--admit NAME=KIND``), ``,``
#: ends an entry of ``--tiers gpu=390GB,cpu=2TB``, ``+`` one of ``--admit cpu=reuse:2+gpu=retain``.
TIER_NAME_SEPARATORS = "=,+"


def tier_name_problem(name: str) -> str | None:
    r"""Why ``name`` cannot name a tier, or None: the one rule of tier names (docs/replay.md "Tiers"), for the
    command line, a sweep plan's ``tier`` table (a TOML or JSON key) and :class:`pcs.engine.api.TierSpec`. A tier
    name is shown as typed everywhere (tables, headers, messages), so it holds no character a message would show as
    its escape (:func:`pcs.errors.hidden`, the escaping rule: a tab, a newline, a right-to-left mark, a zero width
    space, a name's byte that is not UTF-8),
    none of :data:`TIER_NAME_SEPARATORS`, which the command line splits on, and no space (any: U+0020, a no-break
    space, an ideographic space U+3000), which separates tier entries in what pcs writes (``pcs compare``'s
    variant ``lru gpu=400GB cpu=2TB``; the command line strips spaces at either end); every other character is
    a name's text: letters of any script, an emoji joined by ZWJ, a Persian ZWNJ.

    >>> tier_name_problem("\u30ad\u30e3\u30c3\u30b7\u30e5"), tier_name_problem("\U0001f468\u200d\U0001f469"), tier_name_problem("a\tb")
    (None, None, "it holds '\\t', which a message shows as its escape")
    >>> tier_name_problem("gpu,cpu")
    "it holds ',', which the command line splits tier entries on"
    """
    for char in name:
        if hidden(char):
            return f"it holds {shown_repr(char)}, which a message shows as its escape"
        if char in TIER_NAME_SEPARATORS:
            return f"it holds {shown_repr(char)}, which the command line splits tier entries on"
        if char.isspace():
            return (f"it holds a space, {shown_repr(char)} (U+{ord(char):04X}), which separates tier entries in what "
                    "pcs writes (pcs compare's variant lru gpu=400GB cpu=2TB)")
    return None


#: Another ``TIER=`` run on in an entry's value after a ``,``, a ``+`` or a space (``lru,gpu=slru``, ``1GB cpu=2GB``:
#: a tier name holds none of them, :func:`tier_name_problem`): each repeating
#: ``TIER=VALUE`` option takes one entry (:func:`run_on_entries`).
_RUN_ON = re.compile(r"(?:[,+]|\s(?=\s*[^\s=,+:]+\s*=))\s*[^\s=,+:]+\s*=")

#: What one entry of each ``TIER=VALUE`` form holds, as a refusal names it.
_ENTRY_FORM = {"tier": "NAME=SIZE", "link": "TIER=LINK", "tier policy": "TIER=POLICY", "admit": "TIER=KIND[:ARGS]"}


def run_on_entries(text: str, tiers: Sequence[str] | None = None) -> list[str] | None:
    """The entries of ``text``, one ``TIER=VALUE`` entry (``--tier``, ``--tier-policy``, ``--link``, ``--admit``), when
    its value holds another ``TIER=`` after a ``,``, ``+`` or space (``cpu=lru,gpu=slru`` -> ``['cpu=lru', 'gpu=slru']``),
    else None: the one test of a list written into one entry. Any ``NAME=`` before the value's first ``:`` is
    another entry; past it a policy's or an admission's options follow (``slru:protected_share=0.5,x=1`` is one
    entry), so there only a ``TIER=`` naming one of ``tiers`` (the tier names known) is (``cpu=reuse:2,gpu=retain``).

    >>> run_on_entries("cpu=lru,gpu=slru"), run_on_entries("cpu=slru:protected_share=0.5,probation=1")
    (['cpu=lru', 'gpu=slru'], None)
    >>> run_on_entries("cpu=reuse:2,gpu=retain", ["gpu", "cpu"]), run_on_entries("cpu=lru,mine=fifo", ["gpu"])
    (['cpu=reuse:2', 'gpu=retain'], ['cpu=lru', 'mine=fifo'])
    """
    name, eq, value = text.partition("=")
    start, head = len(name) + len(eq), len(value.split(":", 1)[0])
    cuts = [m.start() for m in _RUN_ON.finditer(value)
            if m.start() < head or (tiers is not None and m.group()[1:].strip(" =").lower() in tiers)]
    if not eq or not cuts:
        return None
    edges = [0] + [start + c for c in cuts] + [len(text)]
    return [text[a + (a > 0):b].strip() for a, b in zip(edges, edges[1:])]


def one_entry_each(option: str, what: str, entries: Sequence[str], plan: bool = False, axis: bool = False) -> str:
    """The refusal of a list written into one entry of a repeating ``TIER=VALUE`` option (:func:`run_on_entries`),
    one wording for every such option: ``each --tier-policy takes one TIER=POLICY; the option repeats:
    --tier-policy cpu=lru --tier-policy gpu=slru``; ``option`` an API keyword says ``each item of tiers=`` and the
    list (``tiers=['gpu=1TB', 'cpu=2TB']``), or for a mapping (``links=``, ``tier_policies=``) one key per tier;
    an admission adds that ``+`` joins entries in one (``cpu=reuse:2+gpu=retain``); compare's ``--tiers`` (a plan's
    ``tiers``), one tier list each, that ``,`` joins its tiers (``--tiers gpu=1GB,cpu=2GB``); with ``plan``, in a
    sweep plan's words (``option`` its key: ``link``, ``tier-policy``, ``admit``; ``link = {cpu = "25GB/s", ...}``),
    with ``axis`` in the words of its ``[axes]`` table, where a table is a range (:func:`_plan_entry_each`)."""
    form = _ENTRY_FORM[what]
    if plan:                # a sweep plan's words: its NAME=VALUE table, one key each; admit's list, one item each
        return _plan_entry_each(option, what, entries, axis)
    if option in ("links=", "tier_policies="):      # a mapping of tier to value: one key each
        pairs = dict(e.split("=", 1) for e in entries)
        return f"each value of {option} is one tier's; give each tier its own key: {option}{shown_repr(pairs)}"
    if option in ("--tiers", "tiers"):          # compare's one tier list per option: its tiers joined by ','
        return f"a {option} list joins its tiers with ',', one {form} each: {option} {','.join(entries)}"
    joined = f" (or join them with '+': {'+'.join(entries)})" if what == "admit" else ""
    if option.endswith("="):
        return f"each item of {option} takes one {form}; give one item each: {option}{shown_repr(list(entries))}{joined}"
    return (f"each {option} takes one {form}; the option repeats: " + " ".join(f"{option} {e}" for e in entries)
            + joined)


def _plan_entry_each(option: str, what: str, entries: Sequence[str], axis: bool = False) -> str:
    """:func:`one_entry_each` in a sweep plan's words: a NAME=VALUE table's entry is one tier's (``link = {cpu =
    "25GB/s", ssd = "1GB/s"}``); an admission list's item is one ``TIER=KIND`` (``admit = ["cpu=reuse:2",
    "gpu=retain"]``). With ``axis`` (the value was written in ``[axes]``, where a table is a range and a list's
    items are points), the form that works there: one axis per tier key (``"link.cpu" = ["25GB/s", ...]``,
    ``"link.ssd" = ["1GB/s", ...]``); an admission point as one list item (``admit = [["cpu=reuse:2",
    "gpu=retain"], ...]``) or joined with ``+``."""
    import json

    def q(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)

    if what == "admit" and axis:
        return (f"each item of a point of {option} takes one {_ENTRY_FORM[what]}; give the point as a list, one item "
                f"each: {option} = [[{', '.join(q(e) for e in entries)}], ...] (or join them with '+': "
                f"{q('+'.join(entries))})")
    if axis:
        keys = " and ".join(f"{q(f'{option}.{n.strip()}')} = [{q(v.strip())}, ...]"
                            for n, v in (e.split("=", 1) for e in entries))
        return f"each entry of {option} is one tier's; in [axes] give each tier its own axis: {keys}"
    if what == "admit":
        return (f"each item of {option} takes one {_ENTRY_FORM[what]}; give one item each: {option} = "
                f"[{', '.join(q(e) for e in entries)}] (or join them with '+': {q('+'.join(entries))})")
    pairs = (e.split("=", 1) for e in entries)
    table = ", ".join(f"{n.strip()} = {q(v.strip())}" for n, v in pairs)
    return f"each entry of {option} is one tier's; give each tier its own key: {option} = {{{table}}}"


def check_tier_spec(spec: Any, links: Mapping[str, Any] | None) -> None:
    """Refuse a TierSpec whose fields the string path could not have produced.

    Raises:
        UserError: ``name`` not a non-empty str; ``capacity_bytes`` / ``capacity_blocks`` not an integer in
            0 .. 2^63 - 1, or both given; ``policy`` not a str or None; ``link`` set while ``links`` names the tier.
    """
    name = spec.name
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"TierSpec name must be a non-empty str, got {shown_repr(name)}")
    problem = tier_name_problem(name)
    if problem:
        raise UserError(f"TierSpec name {shown_repr(name)}: {problem}")
    for field in ("capacity_bytes", "capacity_blocks"):
        value = getattr(spec, field)
        if value is not None:
            check_int(value, f"tier {shown_repr(name)}: {field}", 0, INT64_MAX)
    if spec.capacity_bytes is not None and spec.capacity_blocks is not None:
        raise UserError(f"tier {shown_repr(name)}: give capacity_bytes or capacity_blocks, not both "
                        f"({spec.capacity_bytes} B and {spec.capacity_blocks} {plural(spec.capacity_blocks, 'block')})")
    if spec.policy is not None and not isinstance(spec.policy, str):
        raise UserError(f"tier {shown_repr(name)}: policy must be a policy name (str) or None, got {shown_repr(spec.policy)}")
    if spec.link is not None and links and name in links:
        raise UserError(f"tier {shown_repr(name)}: a link is given twice (TierSpec.link {shown_repr(spec.link)} and links[{shown_repr(name)}] "
                        f"{shown_repr(links[name])}); give one")
