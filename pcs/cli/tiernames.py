"""The names a tier list may use on the command line (``--tier``, ``--tiers``, a sweep plan's ``tier``).

The rule, one for every tier: a tier is named with a name pcs knows, or a name of your own with its link.

- The first tier is the GPU tier (by position, as vLLM's GPU KV cache sits above its CPU offload): it is named
  ``gpu`` in any case. Its name labels the hits it serves; it takes no link.
- A lower tier is named ``cpu``, ``host``, ``dram``, ``ssd``, ``nvme``, ``disk``, ``remote`` or ``rdma`` (each has a
  default restore link, :data:`pcs.hardware.TIER_LINKS`), or any other name given its link with ``--link
  NAME=...`` (an LMCache-style backend of your own).

So a typo (``gpuu``, ``cpuu``) is refused with click's "did you mean" (:func:`pcs.choices.did_you_mean`, cutoff 0.6),
where it used to run as a GPU tier named ``gpuu`` or fail asking for a link.
"""
from __future__ import annotations

from typing import Sequence

from pcs.choices import did_you_mean
from pcs.errors import UserError, as_typed, shown_repr

#: The GPU tier's name (the first tier).
GPU_TIER = "gpu"


def known_tier_names() -> tuple[str, ...]:
    """The tier names pcs knows (:data:`GPU_TIER`, then :data:`pcs.hardware.TIER_LINKS`'s): the names an option read
    before the tiers are (``--admit``, ``--tier-policy``) takes as another entry run into its value
    (:func:`pcs.engine.tiercheck.run_on_entries`)."""
    from pcs.hardware import TIER_LINKS

    return (GPU_TIER, *TIER_LINKS)


def _meant(name: str, known: Sequence[str]) -> str:
    """The suggestion for a mistyped tier name (:func:`pcs.choices.did_you_mean`, click's rule), or ""."""
    return did_you_mean(name, known)


def check_tier_names(tiers: Sequence[str], links: Sequence[str] = (), option: str | None = None) -> None:
    """Refuse a tier name the rule above does not allow (a tier text without ``=`` is left to the tier parser).

    Args:
        tiers: ``NAME=SIZE`` texts, GPU first, as given.
        links: the ``--link NAME=VALUE`` texts given (a lower tier they name may have any name).
        option: the option that gave ``tiers`` as one comma list (``--tiers``); None names them the API's way
            (``tiers=[...]``), which the command line and a sweep plan each put in their own words
            (:func:`pcs.cli.common.option_names`).
    Raises:
        UserError: naming the tier, what it may be called and the closest known name.
    """
    from pcs.engine.api import name_refusal
    from pcs.engine.tiercheck import one_entry_each, run_on_entries
    from pcs.hardware import TIER_LINKS

    linked = {str(v).split("=", 1)[0].strip().lower() for v in links}
    for pos, text in enumerate(tiers):
        name, eq, size = str(text).partition("=")
        name = name.strip()
        shown = _shown_option(tiers, text, option)
        if not eq or not name:
            continue
        low = name.lower()
        entries = run_on_entries(str(text)) if option else None     # gpu=1GB+cpu=2GB in one --tiers list
        if entries:
            raise UserError(f"{shown}: {one_entry_each(option, 'tier', entries)}")
        refusal = name_refusal("tier", name, str(text))       # the one rule of tier names first
        if refusal:
            raise _entry(UserError(f"{shown}: {refusal}"), low, size)
        if pos == 0 and low != GPU_TIER and low not in TIER_LINKS:    # a lower tier first: the API says so
            raise _entry(UserError(f"{shown}: the first tier is the GPU tier, named {GPU_TIER}: write "
                                   f"{as_typed(f'{GPU_TIER}={size.strip()}', 200)} (a name of your own is for a lower tier, given its "
                                   "link)"), low, size)
        if pos > 0 and low != GPU_TIER and low not in TIER_LINKS and low not in linked:
            hint = _meant(name, TIER_LINKS)
            if hint:                  # no close name: the API's message asks for the link
                raise _entry(UserError(f"{shown}: unknown lower tier {shown_repr(name)}; {hint}(known: "
                                       f"{', '.join(TIER_LINKS)}; a tier of your own names its link: "
                                       f"links[{shown_repr(name)}] = '25GB/s')"), low, size)


def _shown_option(tiers: Sequence[str], text: str, option: str | None) -> str:
    """What a refusal of tier ``text`` leads with: ``option`` and its comma list, as typed (``--tiers gpu=1GB,cpu=2GB``,
    quoted and escaped when it must be: :func:`pcs.errors.as_typed`), or the API's ``tiers=['NAME=SIZE']`` (each
    road puts it in its own words: :func:`pcs.cli.common.option_names`), never a raw name's byte."""
    if option:
        return f"{option} {as_typed(','.join(map(str, tiers)), 200)}"
    return f"tiers=[{shown_repr(str(text))}]"


def _entry(exc: UserError, name: str, size: str) -> UserError:
    """``exc`` keeping the tier it refuses as its ``refused_value`` ``NAME=SIZE`` (the name case-folded, as a sweep
    plan keys a tier entry: :func:`pcs.sweep.plan._value_fields`), by which a plan names the line it is written on."""
    exc.refused_value = f"{name}={size.strip()}"
    return exc


def refuse_tier_lists(tiers: Sequence[str]) -> None:
    """Refuse a ``--tier`` value holding a list (``gpu=200GB,cpu=1TB``, :func:`pcs.engine.tiercheck.run_on_entries`):
    ``--tier`` takes one tier, worded as every repeating ``TIER=VALUE`` option's refusal
    (:func:`pcs.engine.tiercheck.one_entry_each`).

    Args:
        tiers: the ``--tier`` texts as given.
    Raises:
        UserError: naming the value, the repeated ``--tier`` that gives those tiers and compare's ``--tiers``,
            which takes the comma list (one tier list per ``--tiers``); without it the size parser refused
            ``200GB,cpu=1TB`` as a size.
    """
    from pcs.engine.tiercheck import one_entry_each, run_on_entries

    for text in tiers:
        entries = run_on_entries(str(text))
        if entries:
            raise UserError(f"--tier {as_typed(str(text), 200)}: {one_entry_each('--tier', 'tier', entries)} (a comma "
                            f"list of tiers is pcs compare's --tiers, one tier list to compare per --tiers)")
