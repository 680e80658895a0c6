"""Hardware presets: GPUs (HBM, FLOP/s) and the links that restore KV blocks.

Every figure carries its source. GPU compute figures are DENSE tensor-core
peaks (NVIDIA datasheets print the 2:4-sparsity figure, twice as large, with an
asterisk; we halve it). Link figures are EFFECTIVE per-direction bandwidths
(what a large pinned-memory copy reaches), not the theoretical line rate; the
theoretical rate is named in each ``source`` so the choice is visible.
Setup latencies are documented defaults (assumptions to calibrate against a
real timeline, see docs/semantics.md §10), not datasheet figures.

Any figure can be overridden: in code with :func:`override`, from a TOML or
JSON file with :func:`load_hardware_file`, and from the CLI (``--gpu h100-sxm
--hbm-bandwidth 3TB/s``, see ``pcs.cli.presets``).

>>> get_gpu("h100-sxm").hbm_bps
3350000000000.0
>>> default_link_for_tier("cpu").name
'pcie-gen5-x16'
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import field
from pathlib import Path
from typing import Any, Callable

from pcs import units
from pcs.configfile import read_mapping_lines
from pcs.choices import did_you_mean
from pcs.errors import INT64_LIMIT, InputError, UnknownNameError, UserError, quoted, shown_repr
from pcs._dataclass import dataclass

__all__ = [
    "GPUSpec", "LinkSpec", "FigureError", "HardwareTable", "GPUS", "LINKS", "GPU_NAMES", "LINK_NAMES", "ALIASES", "aliases_of",
    "TIER_LINKS", "get_gpu", "get_link", "default_link_for_tier", "override", "load_hardware_file",
]


#: Bounds of a GPU's rates (FLOP/s, bytes/s). Below them one token's time on a real model grows past any
#: clock (``bf16_flops = 1e-300`` overflowed the time series to inf), so a file is refused at its field, not
#: later deep in a replay. 1 GFLOP/s is 10^5 below an A100's 312e12; 1e21 FLOP/s is 10^5 above a B200's
#: dense FP8 peak; 1 MB/s of HBM is 10^6 below any GPU here (presets in this module).
MIN_FLOPS, MAX_FLOPS, MIN_HBM_BPS = 1e9, 1e21, 1e6
#: a link's IOPS figure: at least 1 operation/s; its I/O size at least a 512 B sector (docs/semantics.md §16)
MIN_IOPS, MIN_IO_SIZE = 1.0, 512


class FigureError(UserError):
    """A figure of a :class:`GPUSpec` or :class:`LinkSpec` out of its range: a UserError that keeps the field,
    so a hardware file's error names the line that field is written on (:func:`_entry`).

    ``str(err)`` is ``"NAME: FIELD PROBLEM"`` (``"my-gpu: bf16_flops must be between ..."``).

    Attributes:
        field_name: the dataclass field (``"bandwidth_bps"``).
        problem: what is wrong, without the entry's name (``"must be a finite number > 0, got 0.0"``).
    """

    def __init__(self, name: str, field_name: str, problem: str):
        self.field_name, self.problem = field_name, problem
        super().__init__(f"{name}: {field_name} {problem}")


def _check_range(name: str, field_name: str, value: float | None, low: float, high: float, unit: str) -> None:
    """After :func:`_check_positive`: ``low <= value <= high`` (None passes); else :class:`FigureError`."""
    if value is not None and not low <= value <= high:
        need = f"between {low:g} and {high:g}" if math.isfinite(high) else f"at least {low:g}"
        raise FigureError(name, field_name, f"must be {need} {unit} (pcs's bounds: a rate outside them "
                          f"makes a token's time absurd or overflow), got {value:g}")


def _check_positive(name: str, field_name: str, value: float | None, allow_none: bool = False,
                    allow_zero: bool = False) -> None:
    """``value`` a finite number > 0 (>= 0 with ``allow_zero``; None passes with ``allow_none``); else
    :class:`FigureError`."""
    if value is None and allow_none:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        need = ">= 0" if allow_zero else "> 0"
        raise FigureError(name, field_name, f"must be a finite number {need}, got {shown_repr(value)}")


@dataclass(frozen=True, slots=True)
class GPUSpec:
    """One GPU: memory capacity and bandwidth, dense tensor-core peaks.

    Attributes:
        name: preset name, e.g. ``"h100-sxm"``.
        hbm_bytes: device memory capacity in bytes (datasheet figure, decimal GB).
        hbm_bps: device memory bandwidth in bytes/s.
        bf16_flops: dense BF16 tensor-core peak in FLOP/s.
        fp8_flops: dense FP8 tensor-core peak in FLOP/s, or None when the GPU
            has no FP8 tensor cores (A100).
        source: datasheet the figures come from.
    Raises:
        FigureError (a UserError, a ValueError): a non-positive or non-finite figure, or a rate outside
            [:data:`MIN_FLOPS`, :data:`MAX_FLOPS`] FLOP/s or below :data:`MIN_HBM_BPS`.
    """

    name: str
    hbm_bytes: int
    hbm_bps: float
    bf16_flops: float
    fp8_flops: float | None
    source: str

    def __post_init__(self) -> None:
        if not isinstance(self.hbm_bytes, int) or isinstance(self.hbm_bytes, bool) or self.hbm_bytes <= 0:
            raise FigureError(self.name, "hbm_bytes", f"must be an int > 0, got {shown_repr(self.hbm_bytes)}")
        _check_positive(self.name, "hbm_bps", self.hbm_bps)
        _check_positive(self.name, "bf16_flops", self.bf16_flops)
        _check_positive(self.name, "fp8_flops", self.fp8_flops, allow_none=True)
        _check_range(self.name, "hbm_bps", self.hbm_bps, MIN_HBM_BPS, math.inf, "bytes/s")
        for field_name in ("bf16_flops", "fp8_flops"):
            _check_range(self.name, field_name, getattr(self, field_name), MIN_FLOPS, MAX_FLOPS, "FLOP/s")

    def peak_flops(self, dtype: str = "bf16") -> float:
        """Dense tensor-core peak in FLOP/s for ``dtype`` (``"bf16"``/``"fp16"`` or ``"fp8"``).

        Raises:
            UserError: unknown dtype, or ``"fp8"`` on a GPU without FP8 tensor cores.
        """
        d = dtype.lower()
        if d in ("bf16", "fp16"):
            return self.bf16_flops
        if d == "fp8":
            if self.fp8_flops is None:
                raise UserError(f"GPU {shown_repr(self.name)} has no FP8 tensor cores; use the compute dtype bf16")
            return self.fp8_flops
        raise UserError(f"unknown compute dtype {shown_repr(dtype)}; {did_you_mean(dtype, ('bf16', 'fp16', 'fp8'))}"
                        "expected one of bf16, fp16, fp8")


@dataclass(frozen=True, slots=True)
class LinkSpec:
    """One path that moves KV blocks between tiers.

    Attributes:
        name: preset name, e.g. ``"pcie-gen5-x16"``.
        bandwidth_bps: effective bandwidth of one direction, bytes/s.
        setup_s: fixed cost per transfer (launch, DMA or request setup), seconds.
        iops: small random I/O operations per second, or None where not the
            limit (memory links, RDMA).
        io_size_bytes: the I/O size ``iops`` is quoted at (4 KiB for NVMe), or None.
        source: where the figures come from and what is assumed.
    Raises:
        FigureError (a UserError): a negative or non-finite figure, an IOPS or I/O size out of its range.
        UserError: iops without io_size_bytes, or their product over 2^63 - 1 bytes/s.
    """

    name: str
    bandwidth_bps: float
    setup_s: float
    iops: float | None
    io_size_bytes: int | None
    source: str

    def __post_init__(self) -> None:
        _check_positive(self.name, "bandwidth_bps", self.bandwidth_bps)
        _check_positive(self.name, "setup_s", self.setup_s, allow_zero=True)
        _check_positive(self.name, "iops", self.iops, allow_none=True)
        _check_positive(self.name, "io_size_bytes", self.io_size_bytes, allow_none=True)
        if (self.iops is None) != (self.io_size_bytes is None):
            raise UserError(f"{self.name}: iops and io_size_bytes must be given together")
        if self.iops is not None:
            _check_range(self.name, "iops", self.iops, MIN_IOPS, math.inf, "operations/s")
            _check_range(self.name, "io_size_bytes", self.io_size_bytes, MIN_IO_SIZE, math.inf, "bytes")
            if self.iops * self.io_size_bytes > 2**63 - 1:   # the bound of every bandwidth (pcs.units), as budget's
                raise UserError(f"{self.name}: iops {self.iops:g} x io_size_bytes {self.io_size_bytes:,} = "
                                f"{self.iops * self.io_size_bytes:.4g} bytes/s, more than {INT64_LIMIT} bytes/s: give a "
                                "smaller IOPS or I/O size")

    @property
    def iops_bps(self) -> float | None:
        """Bandwidth reachable with small random I/O: iops x io_size_bytes (docs/semantics.md §10), or None."""
        if self.iops is None or self.io_size_bytes is None:
            return None
        return self.iops * self.io_size_bytes

    def transfer_s(self, num_bytes: int, io_size_bytes: int | None = None) -> float:
        """Time of one transfer: setup_s + num_bytes / bandwidth_bps.

        With ``io_size_bytes`` on a link with an IOPS limit the data term is
        max(num_bytes / bandwidth_bps, ceil(num_bytes / io_size_bytes) / iops):
        small I/O is bound by operations per second, large I/O by bandwidth.

        >>> LINKS["pcie-gen5-x16"].transfer_s(0)
        1e-05
        """
        if num_bytes < 0:
            raise UserError(f"num_bytes must be >= 0, got {num_bytes}")
        data_s = num_bytes / self.bandwidth_bps
        if io_size_bytes is not None and self.iops is not None and num_bytes > 0:
            data_s = max(data_s, math.ceil(num_bytes / io_size_bytes) / self.iops)
        return self.setup_s + data_s


_TB = 1e12
_SPARSE_NOTE = "dense = half the datasheet's 2:4-sparsity figure"

#: GPU presets. Capacities are the datasheet's decimal GB (devices expose a
#: little more or less; override with a --hardware-file entry ``hbm_bytes`` for exact
#: planning; ``pcs hardware --hbm-capacity`` shows the effect).
GPUS: dict[str, GPUSpec] = {g.name: g for g in (
    GPUSpec("h100-sxm", 80 * 10**9, 3.35 * _TB, 989.4e12, 1978.9e12,
            "NVIDIA H100 Tensor Core GPU datasheet (SXM5): 80 GB HBM3, 3.35 TB/s, "
            f"BF16 1,979 / FP8 3,958 TFLOPS with sparsity; {_SPARSE_NOTE}"),
    GPUSpec("h200", 141 * 10**9, 4.8 * _TB, 989.4e12, 1978.9e12,
            "NVIDIA H200 Tensor Core GPU datasheet (SXM): 141 GB HBM3e, 4.8 TB/s, "
            f"BF16 1,979 / FP8 3,958 TFLOPS with sparsity; {_SPARSE_NOTE}"),
    GPUSpec("b200", 180 * 10**9, 7.7 * _TB, 2.25e15, 4.5e15,
            "NVIDIA Blackwell datasheet, HGX B200 per GPU (1,000 W): 180 GB HBM3e, 7.7 TB/s, "
            f"FP16/BF16 4.5 / FP8 9 PFLOPS with sparsity; {_SPARSE_NOTE}"),
    GPUSpec("a100-80gb", 80 * 10**9, 2.039 * _TB, 312e12, None,
            "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM): 80 GB HBM2e, 2,039 GB/s, "
            "BF16 312 TFLOPS dense (624 with sparsity); Ampere has no FP8 tensor cores: fp8_flops None"),
    GPUSpec("l40s", 48 * 10**9, 864e9, 362.05e12, 733e12,
            "NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s, BF16 362.05 / FP8 733 TFLOPS dense "
            "(733 / 1,466 with sparsity)"),
    GPUSpec("gh200", 96 * 10**9, 4.0 * _TB, 989.4e12, 1978.9e12,
            "NVIDIA GH200 Grace Hopper Superchip datasheet: 96 GB HBM3, 4 TB/s (the 144 GB HBM3e "
            f"variant has 4.9 TB/s: override); FP8 3,958 TFLOPS with sparsity; {_SPARSE_NOTE}"),
)}

_EFF = "effective default ~80% of the theoretical per-direction rate after PCIe protocol overhead"

#: Link and tier presets: effective one-direction bandwidth and a default setup latency.
LINKS: dict[str, LinkSpec] = {l.name: l for l in (
    LinkSpec("pcie-gen4-x16", 25e9, 10e-6, None, None,
             "host DRAM over PCIe Gen4 x16: theoretical 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s "
             f"per direction (PCI-SIG PCIe 4.0); {_EFF}; setup 10 us assumed per DMA copy launch"),
    LinkSpec("pcie-gen5-x16", 50e9, 10e-6, None, None,
             "host DRAM over PCIe Gen5 x16: theoretical 32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s "
             f"per direction (PCI-SIG PCIe 5.0); {_EFF}; setup 10 us assumed per DMA copy launch"),
    LinkSpec("nvlink-c2c", 360e9, 5e-6, None, None,
             "GH200 NVLink-C2C: 900 GB/s total = 450 GB/s per direction (NVIDIA GH200 datasheet); "
             "effective default 80% = 360 GB/s; setup 5 us assumed"),
    LinkSpec("nvme-gen4", 7e9, 100e-6, 1.5e6, 4096,
             "local NVMe SSD, PCIe Gen4 data-center drive (Samsung PM1733 datasheet): 7,000 MB/s "
             "sequential read, 1,500K IOPS 4 KiB random read at high queue depth; setup 100 us "
             "assumed (one 4 KiB read's latency order)"),
    LinkSpec("nvme-gen5", 13e9, 100e-6, 2.5e6, 4096,
             "local NVMe SSD, PCIe Gen5 data-center drive (Samsung PM1743 datasheet): 13,000 MB/s "
             "sequential read, 2,500K IOPS 4 KiB random read at high queue depth; setup 100 us assumed"),
    LinkSpec("rdma-200g", 22.5e9, 20e-6, None, None,
             "remote store over one 200 Gb/s RDMA NIC (e.g. ConnectX-6 HDR): line rate 25 GB/s; "
             "effective default 90% = 22.5 GB/s for large reads; setup 20 us assumed "
             "(RDMA round trip plus store metadata lookup)"),
    LinkSpec("rdma-400g", 45e9, 20e-6, None, None,
             "remote store over one 400 Gb/s RDMA NIC (e.g. ConnectX-7 NDR): line rate 50 GB/s; "
             "effective default 90% = 45 GB/s for large reads; setup 20 us assumed "
             "(RDMA round trip plus store metadata lookup)"),
)}

GPU_NAMES: tuple[str, ...] = tuple(GPUS)
LINK_NAMES: tuple[str, ...] = tuple(LINKS)

#: Tier name -> default link preset for restores from that tier.
TIER_LINKS: dict[str, str] = {
    "cpu": "pcie-gen5-x16", "host": "pcie-gen5-x16", "dram": "pcie-gen5-x16",
    "ssd": "nvme-gen4", "nvme": "nvme-gen4", "disk": "nvme-gen4",
    "remote": "rdma-400g", "rdma": "rdma-400g",
}


@dataclass(frozen=True, slots=True)
class HardwareTable:
    """Presets after overrides: ``gpus`` and ``links`` by name (see :func:`load_hardware_file`); ``notes``: what
    the file did that may not be what was meant (a new entry named close to a preset), each ``PATH:LINE: ...``."""

    gpus: dict[str, GPUSpec] = field(default_factory=lambda: dict(GPUS))
    links: dict[str, LinkSpec] = field(default_factory=lambda: dict(LINKS))
    notes: tuple[str, ...] = ()


#: Other names accepted wherever a preset name is; an alias names its preset, which is the one name printed
#: (reports, JSON). The SXM parts answer to the bare and the form-suffixed name alike (H100 SXM5 is
#: ``h100-sxm``, so ``h100``; H200 and HGX B200 are SXM only, so ``h200-sxm``, ``b200-sxm``); ``a100`` is
#: the 80 GB preset.
ALIASES: dict[str, str] = {"h100": "h100-sxm", "h200-sxm": "h200", "b200-sxm": "b200", "a100": "a100-80gb",
                           "nvme": "nvme-gen4"}


def _norm(name: str) -> str:
    key = str(name).strip().lower().replace("_", "-")
    return ALIASES.get(key, key)


def _tokens(name: str) -> list[str]:
    """The runs of letters and of digits of ``name``, lower case: case, ``_``, ``-``, spaces and other punctuation
    are ignored (``"H100 SXM"`` and ``"h100sxm"`` are ``['h', '100', 'sxm']``)."""
    return re.findall(r"[a-z]+|[0-9]+", str(name).lower())


def _one_edit(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are one Damerau-Levenshtein edit apart (one character inserted, dropped or
    replaced, or two neighbours swapped)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def likely_typo_of(name: str, presets: dict) -> str | None:
    """The preset a NEW hardware-file entry ``name`` is likely a mistyping of, or None (then no note is made):
    the rule of the note "is a new entry, not a change to a preset" (:func:`_table_from`).

    ``name`` and a preset are split into runs of letters and of digits (:func:`_tokens`). In this order, the
    first that holds over all the presets wins (so an exact match is never lost to a one-edit one: ``B 200`` is
    ``b200``, not ``h200``):

    1. the same letters and digits (only case, separators or punctuation differ, or a separator is dropped:
       ``H100 SXM``, ``h100.sxm``, ``nvlinkc2c``, ``pcie-gen5x16``, ``nvmegen4``; an alias counts here,
       ``H200 SXM`` -> ``h200``);
    2. a preset's full name (ending in letters) and one more digit, its generation (``h100-sxm5``, the
       H100 SXM5 that the preset ``h100-sxm`` is); an alias that names its preset in full and more counts alike
       (``h200-sxm5``: the alias ``h200-sxm`` of ``h200``), not one that drops part of it (``nvme5`` is not
       ``nvme-gen4``, which the alias ``nvme`` shortens: :func:`_full_aliases`);
    3. as many runs of the same kinds and exactly one differs by one edit (:func:`_one_edit`) in its letters,
       never in a number -- a digit added, dropped or changed is another number (``h20`` / ``h200``,
       ``pcie-gen5-x1`` / ``pcie-gen5-x16``, ``h10-sxm`` / ``h100-sxm``), and never in a part number's letter
       code (a run of 1 or 2 letters right before a digit run: ``h``, ``gb``): another code is another part
       (``gb200`` / ``b200``, ``gb200`` / ``gh200``, ``a100`` / ``h100``); longer words (``sxm``, ``gen``) take any one
       edit (``h100-sxn``, ``h100-smx``); a preset and its aliases alike (``h200-sxn`` -> ``h200``).

    A real part's name is not a typo: another number (``b100`` / ``b200``, ``a100-40gb`` / ``a100-80gb``,
    ``rdma-100g`` / ``rdma-200g``, ``h20`` / ``h200``, a lane width ``x1`` / ``x16``), a run more or fewer
    (``l40`` / ``l40s``, ``h100-custom`` / ``h100``).
    """
    mine = _tokens(name)
    names = (*presets, *aliases_of(presets))
    exact = next((p for p in names if "".join(_tokens(p)) == "".join(mine)), None)
    if exact is not None:
        return _norm(exact)
    full = {**{p: p for p in presets}, **_full_aliases(presets)}
    generation = next((p for a, p in full.items() if _generation_of(mine, _tokens(a))), None)
    if generation is not None:
        return generation
    every = {**{p: p for p in presets}, **aliases_of(presets)}
    return next((p for a, p in every.items() if _one_edit_of_part(mine, _tokens(a))), None)


def _full_aliases(presets: dict) -> dict[str, str]:
    """The aliases of ``presets`` that name their preset in full and more (alias -> preset: ``h200-sxm`` ->
    ``h200``, the form added), not those that drop part of its name (``h100`` of ``h100-sxm``, ``nvme`` of
    ``nvme-gen4``): a generation digit after a shortened name is not that preset's generation."""
    return {a: p for a, p in aliases_of(presets).items() if _tokens(a)[:len(_tokens(p))] == _tokens(p)}


def _generation_of(mine: list[str], theirs: list[str]) -> bool:
    """Rule 2 of :func:`likely_typo_of`: ``mine`` is ``theirs``, which ends in letters, and one digit more."""
    return (len(theirs) >= 1 and theirs[-1].isalpha() and mine[:-1] == theirs and len(mine[-1]) == 1
            and mine[-1].isdigit())


def _one_edit_of_part(mine: list[str], theirs: list[str]) -> bool:
    """Rule 3 of :func:`likely_typo_of`: runs of the same kinds, one letter run one edit apart (every number
    kept) and a part number's letter code (1 or 2 letters before a digit run) kept."""
    if len(theirs) != len(mine):
        return False
    diff = [i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b]
    if len(diff) != 1:
        return False
    i = diff[0]
    a, b = mine[i], theirs[i]
    if a.isdigit() != b.isdigit() or not _one_edit(a, b):
        return False
    if a.isdigit():
        return False        # another number is another part (h20 / h200, x1 / x16), never a typo
    code = i + 1 < len(mine) and mine[i + 1].isdigit() and min(len(a), len(b)) <= 2
    return not code


def aliases_of(presets: dict) -> dict[str, str]:
    """The aliases naming one of ``presets`` (alias -> preset name), in :data:`ALIASES` order."""
    return {a: n for a, n in ALIASES.items() if n in presets}


def _lookup(kind: str, presets: dict, name: str):
    """``presets[_norm(name)]``, else :class:`UnknownNameError` listing the presets and their aliases."""
    spec = presets.get(_norm(name))
    if spec is None:
        raise UnknownNameError(kind, name, presets, aliases_of(presets))
    return spec


def get_gpu(name: str, table: HardwareTable | None = None) -> GPUSpec:
    """The GPU preset ``name`` (case-insensitive; ``_`` and ``-`` alike).

    Raises:
        UnknownNameError: (a ValueError) unknown name; the message lists the known ones.
    """
    return _lookup("GPU", GPUS if table is None else table.gpus, name)


def get_link(name: str, table: HardwareTable | None = None) -> LinkSpec:
    """The link preset ``name`` (case-insensitive; ``_`` and ``-`` alike).

    Raises:
        UnknownNameError: (a ValueError) unknown name; the message lists the known ones.
    """
    return _lookup("link", LINKS if table is None else table.links, name)


def default_link_for_tier(tier_name: str, table: HardwareTable | None = None) -> LinkSpec:
    """Default restore link of a tier: cpu/host/dram -> PCIe Gen5 x16, ssd/nvme -> local NVMe,
    remote -> RDMA 400 Gb/s.

    Raises:
        UserError: unknown tier name; the message lists the known ones.
    """
    link = TIER_LINKS.get(str(tier_name).strip().lower())
    if link is None:
        raise UserError(f"no default link for tier {quoted(str(tier_name), show=repr)}; known tiers: {', '.join(TIER_LINKS)}")
    return get_link(link, table)


_PARSERS = {"_bytes": units.parse_bytes, "_bps": units.parse_bandwidth, "_s": units.parse_duration}


#: field -> (the plausible test for a plain number in the field's unit, what it is, the unit likely meant):
#: a plain number outside it is refused rather than read as bytes, bytes/s or seconds (docs/semantics.md §16).
_PLAUSIBLE = {
    "hbm_bytes": (lambda v: v >= 1e6, "a GPU HBM under 1 MB", "{v}GB"),
    "hbm_bps": (lambda v: v >= 1e6, "an HBM bandwidth under 1 MB/s", "{v}GB/s"),
    "bandwidth_bps": (lambda v: v >= 1e6, "a link under 1 MB/s", "{v}GB/s"),
    "setup_s": (lambda v: v <= 1, "a setup over 1 s per transfer", "{v}us or {v}ms"),
    "io_size_bytes": (lambda v: v >= MIN_IO_SIZE, "an I/O size under a 512 B sector", "{v}KiB"),
}


def _plain_plausible(name: str, value: Any, parsed: float) -> None:
    """Refuse a plain number (no unit) in ``name``'s unit that no device has, naming the unit likely meant.

    Raises:
        UserError: ``80 (no unit) reads as 80 B: a GPU HBM under 1 MB; write the unit, e.g. "80GB"``.
    """
    rule = _PLAUSIBLE.get(name)
    if rule is None or units.has_unit(value) or parsed == 0 or rule[0](parsed):
        return
    unit = {"_bytes": "B", "_bps": "B/s", "_s": "s"}[next(x for x in _PARSERS if name.endswith(x))]
    shown = str(value).strip()
    raise UserError(f"{shown} (no unit) reads as {shown} {unit}: {rule[1]}; write the unit, e.g. "
                    + " or ".join(f'"{x}"' for x in rule[2].format(v=shown).split(" or ")))


def _parse_field(name: str, value: Any) -> Any:
    """Parse one override value by the unit suffix of its field name; an implausible plain number is refused
    (:func:`_plain_plausible`)."""
    if name == "source":
        return str(value)
    if value is None and name in ("fp8_flops", "iops", "io_size_bytes"):
        return None
    for suffix, parse in _PARSERS.items():
        if name.endswith(suffix):
            parsed = parse(value)
            _plain_plausible(name, value, parsed)
            return parsed
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UserError(f"expected a number, got {shown_repr(value)}")
    try:    # *_flops and iops: plain numbers such as 989.4e12, in ASCII (docs/semantics.md §16)
        number = float(value) if not isinstance(value, str) else units.ascii_float(value)
    except ValueError:
        raise UserError(f"expected a plain number such as 989.4e12, got {shown_repr(value)}") from None
    if not math.isfinite(number):
        raise UserError(f"expected a finite number, got {shown_repr(value)}")
    return number


def override(spec: GPUSpec | LinkSpec, note: str = "overridden", **changes: Any) -> GPUSpec | LinkSpec:
    """A copy of ``spec`` with some figures replaced; unit strings are accepted.

    Field names are the dataclass fields (``hbm_bps="3TB/s"``, ``setup_s="15us"``);
    ``source`` records ``note`` and the changed fields. None values are ignored.

    >>> override(get_gpu("h100-sxm"), hbm_bps="3TB/s").hbm_bps
    3000000000000.0

    Raises:
        UserError: unknown field, unparsable or non-positive value.
    """
    names = {f.name for f in dataclasses.fields(spec)} - {"name"}
    parsed: dict[str, Any] = {}
    for key, value in changes.items():
        if value is None:
            continue
        if key not in names:
            raise UserError(unknown_field(type(spec), key, value))
        try:
            parsed[key] = _parse_field(key, value)
        except ValueError as exc:
            raise UserError(f"{spec.name}: field {shown_repr(key)}: {exc}") from None
    if not parsed:
        return spec
    if "source" not in parsed:
        parsed["source"] = f"{spec.source}; {note}: {', '.join(sorted(parsed))}"
    return dataclasses.replace(spec, **parsed)


def load_hardware_file(path: str | Path, base: HardwareTable | None = None) -> HardwareTable:
    """Presets with overrides and new entries from a TOML or JSON file.

    Format (TOML; JSON the same shape)::

        [gpu.h100-sxm]            # change figures of a preset
        hbm_bps = "3.0TB/s"
        [gpu.my-gpu]              # a new entry gives every field
        hbm_bytes = "96GB"
        hbm_bps = "4TB/s"
        bf16_flops = 989.4e12
        fp8_flops = 1978.9e12
        [link.pcie-gen5-x16]
        bandwidth_bps = "45GB/s"
        setup_s = "15us"

    Sections ``gpu``/``gpus`` and ``link``/``links``; field names are those of
    :class:`GPUSpec` / :class:`LinkSpec`; sizes, bandwidths and durations may
    carry units; FLOP/s and IOPS are plain numbers.

    Raises:
        InputError: bad content, naming the file and the field (e.g. ``gpu.my-gpu.hbm_bps``); one entry
            given twice (under ``gpu`` and ``gpus``, or by a name and its alias), as a JSON key given twice is
            (:mod:`pcs.configfile`).
        PathError: ``path`` is missing, a directory or not readable (naming ``path=``).
    """
    data, lines = read_mapping_lines(path)      # checks the path as given (Path('') is '.')
    path = Path(path)
    with lines.located():
        return _table_from(path, data, base, lines.at)


def _table_from(path: Path, data: dict[str, Any], base: HardwareTable | None,
                at: Any = None) -> HardwareTable:
    """:func:`load_hardware_file` of the parsed file ``data`` (errors without their lines; ``at``: field ->
    ``PATH:LINE`` for a note, :meth:`pcs.configfile.KeyLines.at`)."""
    table = base if base is not None else HardwareTable()
    gpus, links = dict(table.gpus), dict(table.links)
    notes: list[str] = list(table.notes)
    seen: dict[tuple[str, str], str] = {}  # (kind, name) -> the section.entry that set it
    for key, section in data.items():
        kind = {"gpu": "gpu", "gpus": "gpu", "link": "link", "links": "link"}.get(key)
        if kind is None:
            raise InputError(str(path), None, key, f"unknown section; {did_you_mean(key, ('gpu', 'link'))}"
                             "expected gpu or link")
        if not isinstance(section, dict):
            raise InputError(str(path), None, key, "must be a table of named entries")
        target, cls = (gpus, GPUSpec) if kind == "gpu" else (links, LinkSpec)
        for raw_name, fields_ in section.items():
            name = _norm(raw_name)
            where = f"{key}.{raw_name}"      # the key the user wrote (gpu or gpus), where its line is found
            if not isinstance(fields_, dict):
                raise InputError(str(path), None, where, "must be a table of fields")
            if (kind, name) in seen:  # gpu/gpus, or a name and its alias: the later would win silently
                raise InputError(str(path), None, f"{key}.{raw_name}", f"names the same {kind} as {seen[kind, name]} "
                                 f"({name}); give each entry once")
            seen[kind, name] = f"{key}.{raw_name}"
            presets = table.gpus if kind == "gpu" else table.links
            new = name not in target
            close = did_you_mean(raw_name, presets, aliases_of(presets)) if new else ""
            target[name] = _entry(path, where, cls, name, target.get(name), fields_, close)
            typo = likely_typo_of(raw_name, presets) if new else None
            if typo:    # a complete new entry: kept (a user's own part), said where a preset was likely meant
                notes.append(f"{at(where) if at else path}: {where} is a new {kind} entry, not a change "
                             f"to a preset (did you mean {shown_repr(typo)}? a preset's name changes that preset)")
    return HardwareTable(gpus=gpus, links=links, notes=tuple(notes))


#: the fields a hardware file may set, by entry class (``name`` is the entry's key)
_FIELD_NAMES = {cls: frozenset(f.name for f in dataclasses.fields(cls) if f.name != "name") for cls in (GPUSpec, LinkSpec)}


#: a field's name ending -> the parser of the values it takes (``hbm_bytes`` a size, ``hbm_bps`` a bandwidth)
_UNIT_ENDINGS = (("_bytes", units.parse_bytes), ("_bps", units.parse_bandwidth), ("_s", units.parse_duration))


def unknown_field(cls: type, key: str, value: Any) -> str:
    """The refusal of field ``key`` that ``cls`` (GPUSpec, LinkSpec) has not, for a file's entry and
    :func:`override` alike: the close names (:func:`pcs.choices.close_names`), those whose unit takes ``value``
    first -- a field named ``KEY_...`` among them (``hbm = "80GB"``: ``hbm_bytes``, a size, before ``hbm_bps``)
    --, then every field.

    >>> unknown_field(GPUSpec, "hbm", "80GB")
    "unknown GPUSpec field 'hbm'; did you mean one of: 'hbm_bytes', 'hbm_bps'? known: bf16_flops, fp8_flops, hbm_bps, hbm_bytes, source"
    """
    from pcs.choices import close_names, meant

    names = sorted(_FIELD_NAMES[cls])
    fits = [n for n in names for end, parse in _UNIT_ENDINGS if n.endswith(end) and _parses(parse, value)]
    close = close_names(key, names)
    first = [n for n in fits if n in close or n.startswith(f"{str(key).strip().lower()}_")]
    return (f"unknown {cls.__name__} field {quoted(key, show=repr)}; {meant(first + [n for n in close if n not in first])}"
            f"known: {', '.join(names)}")


def _parses(parse: Callable[[Any], Any], value: Any) -> bool:
    """Whether ``parse`` takes ``value`` (a string with a unit: a number alone fits no unit)."""
    if not isinstance(value, str):
        return False
    try:
        parse(value)
    except ValueError:
        return False
    return True


def _entry(path: Path, where: str, cls: type, name: str, preset: Any, fields_: dict[str, Any],
           close: str = "") -> Any:
    """Build one overridden or new entry, locating any error by file and field; ``close``: the "did you mean" of
    a new entry's name (:func:`pcs.choices.did_you_mean` over the presets), said when it lacks fields."""
    for key, value in fields_.items():     # each value alone first: an error names its own field (and line)
        if key not in _FIELD_NAMES[cls]:
            raise InputError(str(path), None, f"{where}.{key}", unknown_field(cls, key, value))
        if key != "source":
            try:
                _parse_field(key, value)
            except ValueError as exc:
                raise InputError(str(path), None, f"{where}.{key}", str(exc)) from None
    try:
        if preset is not None:
            return override(preset, note=f"overridden by {path.name}", **fields_)
        required = [f.name for f in dataclasses.fields(cls) if f.name not in ("name", "source")]
        missing = [f for f in required if f not in fields_ and f not in ("fp8_flops", "iops", "io_size_bytes")]
        if missing:
            raise UserError(f"new entry needs fields {', '.join(missing)}"
                            + (f" ({close}a preset's name changes only the fields given)" if close else ""))
        unknown = set(fields_) - set(required) - {"source"}
        if unknown:
            raise UserError(f"unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(required)}")
        values = {k: _parse_field(k, fields_.get(k)) for k in required}
        return cls(name=name, source=str(fields_.get("source", f"user entry from {path.name}")), **values)
    except InputError:
        raise
    except FigureError as exc:      # one figure out of range: at that field's own line when the file gives it
        if exc.field_name in fields_:   # the preset named when the key is another spelling of it (gpu.h100)
            of = f"preset {name}: " if preset is not None and where.split(".", 1)[1] != name else ""
            raise InputError(str(path), None, f"{where}.{exc.field_name}", of + exc.problem) from None
        raise InputError(str(path), None, where, str(exc)) from None
    except ValueError as exc:       # the entry as a whole (fields missing, iops without io_size_bytes ...)
        raise InputError(str(path), None, where, str(exc)) from None
