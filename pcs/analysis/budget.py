"""Capacity and bandwidth budgets, and transfer arithmetic (docs/semantics.md §10).

A workload needs ``C_w`` bytes resident at once and ``B_w`` bytes/s moved; a
device offers ``C_d`` and ``B_d``. The two budgets are separate checks:
u_C = C_w / C_d and u_B = B_w / B_d. Capacity divided by bandwidth is a time
(R_w = C_w / B_w, R_d = C_d / B_d) and R_w / R_d = u_C / u_B, so the ratio only
says which budget is under more pressure; it is not a verdict: a workload can
keep R_w and still be over both budgets (always check u_C and u_B).

>>> r = budget(30 * 10**9, 80 * 10**9, 1000e9, 2000e9)
>>> (r.u_C, r.u_B, r.binding)
(0.375, 0.5, 'bandwidth')
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable

from pcs import units
from pcs.analysis.envelope import json_number
from pcs.argcheck import check_byte_count, check_real
from pcs.configfile import read_mapping_lines, refuse_unknown_keys
from pcs.errors import INT64_LIMIT, InputError, UserError, quoted, shown_repr, keyword_refusals

__all__ = [
    "BudgetResult", "Workload", "budget", "total", "parse_workload", "load_workloads",
    "average_bandwidth_bps", "transfer_time_s", "iops_bandwidth_bps", "RATIO_NOTE",
]

#: The note every budget report prints (docs/semantics.md §10).
RATIO_NOTE = ("R_w/R_d = u_C/u_B only says which budget is under more pressure; it is not a "
              "verdict: a workload scaled up keeps R_w yet can exceed both budgets, so always "
              "check the absolute needs (u_C and u_B <= 100 %)")


@dataclass(frozen=True, slots=True)
class Workload:
    """A named need: ``capacity_need_bytes`` resident and ``bandwidth_need_bps`` moved."""

    name: str
    capacity_need_bytes: int
    bandwidth_need_bps: float


@dataclass(frozen=True, slots=True)
class BudgetResult:
    """Both budgets for one workload on one device.

    Attributes:
        capacity_need_bytes, capacity_have_bytes: C_w and C_d in bytes.
        bandwidth_need_bps, bandwidth_have_bps: B_w and B_d in bytes/s.
        u_C: C_w / C_d.  u_B: B_w / B_d.
        R_w_s: C_w / B_w in seconds (None when B_w is 0: a pure capacity need).
        R_d_s: C_d / B_d in seconds.
        capacity_shortfall_bytes: max(0, C_w - C_d).
        bandwidth_shortfall_bps: max(0, B_w - B_d).
        binding: the budget reached first when both needs grow by the same
            factor: the one with the larger utilisation; "none" when both are 0.
            An exact tie (u_C == u_B, decided with exact fractions) reports
            "capacity", since missing space cannot be bought back with bandwidth.
        binding_tie: True when u_C == u_B > 0 exactly.
        growth_headroom: 1 / max(u_C, u_B), the factor the workload can grow by
            before the binding budget is full (None when both are 0).
        fits: u_C <= 1 and u_B <= 1.
    """

    capacity_need_bytes: int
    capacity_have_bytes: int
    bandwidth_need_bps: float
    bandwidth_have_bps: float
    u_C: float
    u_B: float
    R_w_s: float | None
    R_d_s: float
    capacity_shortfall_bytes: int
    bandwidth_shortfall_bps: float
    binding: str
    binding_tie: bool
    growth_headroom: float | None
    fits: bool

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this result (keys as the attribute names; inf/NaN as None, as the CLI prints null)."""
        return {f.name: json_number(getattr(self, f.name)) for f in fields(self)}

    as_dict = to_dict   # the former name, kept for callers


@keyword_refusals
def budget(capacity_need_bytes: int, capacity_have_bytes: int, bandwidth_need_bps: float,
           bandwidth_have_bps: float) -> BudgetResult:
    """Capacity and bandwidth utilisation of one workload on one device (docs/semantics.md §10).

    Args:
        capacity_need_bytes: C_w, bytes the workload needs resident at once (>= 0).
        capacity_have_bytes: C_d, bytes the device offers (> 0), e.g. HBM left for KV.
        bandwidth_need_bps: B_w, bytes/s the workload moves (>= 0).
        bandwidth_have_bps: B_d, bytes/s the device path offers (> 0).
    Returns:
        BudgetResult; see its attributes for every formula.
    Raises:
        UserError: (a ValueError, naming the parameter, :mod:`pcs.argcheck`) a byte count that is not an
            integer (``0.7`` bytes is refused, not truncated), a negative need, a non-positive offer, or a
            non-finite bandwidth.
    """
    c_w = check_byte_count(capacity_need_bytes, "capacity_need_bytes", lo=0)
    c_d = check_byte_count(capacity_have_bytes, "capacity_have_bytes", lo=1)
    b_w = check_real(bandwidth_need_bps, "bandwidth_need_bps", lo=0)
    b_d = check_real(bandwidth_have_bps, "bandwidth_have_bps", lo=0, lo_open=True)
    # Exact comparison of u_C = c_w/c_d and u_B = b_w/b_d: floats are exact fractions.
    exact_u_c, exact_u_b = Fraction(c_w, c_d), Fraction(b_w) / Fraction(b_d)
    if exact_u_c == 0 and exact_u_b == 0:
        binding = "none"
    else:
        binding = "capacity" if exact_u_c >= exact_u_b else "bandwidth"
    u_c, u_b = c_w / c_d, b_w / b_d
    worst = max(u_c, u_b)
    return BudgetResult(
        capacity_need_bytes=c_w, capacity_have_bytes=c_d,
        bandwidth_need_bps=b_w, bandwidth_have_bps=b_d,
        u_C=u_c, u_B=u_b,
        R_w_s=(c_w / b_w) if b_w > 0 else None, R_d_s=c_d / b_d,
        capacity_shortfall_bytes=max(0, c_w - c_d),
        bandwidth_shortfall_bps=max(0.0, b_w - b_d),
        binding=binding, binding_tie=binding != "none" and exact_u_c == exact_u_b,
        growth_headroom=(1.0 / worst) if worst > 0 else None,
        fits=exact_u_c <= 1 and exact_u_b <= 1,
    )


def total(workloads: Iterable[Workload], name: str = "all together") -> Workload:
    """All workloads running at once on one device: needs add up.

    >>> total([Workload("a", 1, 2.0), Workload("b", 3, 4.0)])
    Workload(name='all together', capacity_need_bytes=4, bandwidth_need_bps=6.0)

    Raises:
        UserError: a sum passes 2^63 - 1 (bytes, bytes/s), the bound every size and bandwidth has
            (:mod:`pcs.units`), naming the workloads rather than an internal key.
    """
    items = list(workloads)
    need = (sum(w.capacity_need_bytes for w in items), sum(w.bandwidth_need_bps for w in items))
    for value, what, unit in zip(need, ("capacity", "bandwidth"), ("bytes", "bytes/s")):
        if value > 2**63 - 1:
            raise UserError(f"the workloads {', '.join(w.name for w in items)} together need {value:.4g} {unit} of "
                            f"{what}, more than {INT64_LIMIT} {unit}: give smaller needs")
    return Workload(name, *need)


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a workload (its row is told apart by it), or None: it must be text, not blank,
    on one line (no newline or other control character), and valid Unicode, so UTF-8 output can hold it: bytes
    that are not UTF-8 (``--name $'\\xff\\xfe'`` reaches Python as the lone surrogates ``\\udcff\\udcfe``, which a
    table printed as 12 characters and JSON as ``"\\udcff"``, text no UTF-8 reader takes) are refused as a
    newline is.

    ``"A"`` -> None; ``""`` -> ``expected a non-empty text name, got ''``.
    """
    if not isinstance(name, str) or not name.strip():
        return f"expected a non-empty text name, got {shown_repr(name)}"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return f"expected a name on one line (no newline or control character), got {shown_repr(name)}"
    if any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        return f"expected a name of UTF-8 text, got {shown_repr(name)} (bytes that are not UTF-8)"
    return None


def parse_workload(text: str, option: str = "workload") -> Workload:
    """Parse ``NAME:CAPACITY:BANDWIDTH``, e.g. ``"A:30GB:1000GB/s"``.

    Args:
        text: the workload.
        option: what gave it, which every refusal names (``--workload`` on the command line).
    Raises:
        UserError: not three colon-separated parts, or a bad size/bandwidth: ``OPTION 'TEXT': ...`` (``text`` cut
            by :func:`pcs.errors.quoted`), the part refused named by the parser's own words.
    """
    where = f"{option} {quoted(str(text), show=repr)}"
    parts = str(text).rsplit(":", 2)
    if len(parts) != 3 or not parts[0].strip():
        raise UserError(f"{where}: expected NAME:CAPACITY:BANDWIDTH such as A:30GB:1000GB/s")
    name, cap, bw = (p.strip() for p in parts)
    if name_problem(name):
        raise UserError(f"{where}: {name_problem(name)}")
    try:
        return Workload(name, units.parse_bytes(units.require_unit(cap, "capacity", "size")),
                        units.parse_bandwidth(units.require_unit(bw, "bandwidth", "bandwidth")))
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None


def _unit_size(field: str, lo: int = 0) -> Any:
    """A parser for a file's size field: a unit required (the name carries none, docs/semantics.md §16), >= ``lo``."""
    def parse(value: Any) -> int:
        size = units.parse_bytes(units.require_unit(value, field, "size"))
        if size < lo:
            raise UserError(f"must be at least {units.format_bytes(lo)} (a device with no room holds nothing), "
                            f"got {shown_repr(value)}")
        return size
    return parse


def _unit_bandwidth(field: str, positive: bool = False) -> Any:
    """A parser for a file's bandwidth field: a unit required (docs/semantics.md §16); > 0 when ``positive``
    (a device's, refused here so the message names the file and the field, as ``capacity_have``'s does)."""
    def parse(value: Any) -> float:
        bw = units.parse_bandwidth(units.require_unit(value, field, "bandwidth"))
        if positive and not bw > 0:
            raise UserError(f"must be > 0 (a device that moves nothing serves no workload), got {shown_repr(value)}")
        return bw
    return parse


_NEED_KEYS = {"capacity_need": _unit_size("capacity_need"), "bandwidth_need": _unit_bandwidth("bandwidth_need")}
_DEVICE_KEYS = {"capacity_have": _unit_size("capacity_have", lo=1),
                "bandwidth_have": _unit_bandwidth("bandwidth_have", positive=True)}


def load_workloads(path: str | Path, auto: list[int] | None = None) -> tuple[dict[str, Any], list[Workload]]:
    """Read workloads (and optionally the device) from a TOML or JSON file.

    Format (TOML; JSON the same shape, ``workloads`` a list of objects)::

        [device]                      # optional; the CLI flags override it
        capacity_have = "80GB"
        bandwidth_have = "2000GB/s"
        [[workload]]
        name = "A"
        capacity_need = "30GB"
        bandwidth_need = "1000GB/s"

    Values are sizes/bandwidths with units (``0`` needs none): the field names carry no unit, so a plain
    ``30`` is refused rather than read as 30 bytes (docs/semantics.md §16). Give ``workload`` or
    ``workloads``, not both; a ``name`` is non-empty text on one line (:func:`name_problem`); an entry without
    one is named ``w<N>`` (N from 1) and its index appended to ``auto`` when given.

    Returns:
        (device, workloads): device maps ``capacity_have_bytes`` /
        ``bandwidth_have_bps`` to parsed values for the keys present.
    Raises:
        InputError: bad content, naming the file, the line, the entry and the field
            (:meth:`pcs.configfile.KeyLines.located`); a key the format does not have (a typo is not silently
            ignored).
    """
    data, lines = read_mapping_lines(path)      # checks the path as given (Path('') is '.')
    path = Path(path)
    with lines.located():
        return _workloads_from(path, data, auto)


def _workloads_from(path: Path, data: dict[str, Any], auto: list[int] | None) -> tuple[dict[str, Any], list[Workload]]:
    """:func:`load_workloads` of the parsed file ``data`` (errors without their lines)."""
    refuse_unknown_keys(path, None, data, ("device", "workload", "workloads"))
    device = _load_device(path, data.get("device", {}))
    if "workload" in data and "workloads" in data:  # one list would be dropped silently, its verdict with it
        raise InputError(str(path), None, "workloads", "give workload or workloads, not both "
                         "([[workload]] in TOML, \"workloads\": [...] in JSON)")
    key = "workloads" if "workloads" in data else "workload"     # the messages name the key the user wrote
    raw = data.get(key)
    if not isinstance(raw, list) or not raw:
        raise InputError(str(path), None, key, "expected a non-empty list of workloads "
                         "([[workload]] in TOML, \"workloads\": [...] in JSON)")
    workloads = [_load_entry(path, f"{key}[{i}]", i, entry, auto) for i, entry in enumerate(raw)]
    return device, workloads


def _load_device(path: Path, raw_device: Any) -> dict[str, Any]:
    """A workloads file's ``device`` table as ``capacity_have_bytes`` / ``bandwidth_have_bps`` (those present).

    Raises:
        InputError: not a table, an unknown key or a bad value, naming the file and field.
    """
    if not isinstance(raw_device, dict):
        raise InputError(str(path), None, "device", "must be a table/object")
    refuse_unknown_keys(path, "device", raw_device, _DEVICE_KEYS)
    device: dict[str, Any] = {}
    for key, parse in _DEVICE_KEYS.items():
        if key in raw_device:
            out_key = "capacity_have_bytes" if key == "capacity_have" else "bandwidth_have_bps"
            device[out_key] = _field(path, f"device.{key}", parse, raw_device[key])
    return device


def _load_entry(path: Path, where: str, i: int, entry: Any, auto: list[int] | None) -> Workload:
    """Entry ``i`` of a workloads file (``where`` names it: ``workload[0]``); an unnamed entry is ``w<i+1>``
    and ``i`` is appended to ``auto`` when given.

    Raises:
        InputError: not a table, an unknown or missing key, a bad name or value, naming the file and field.
    """
    if not isinstance(entry, dict):
        raise InputError(str(path), None, where, "must be a table/object")
    refuse_unknown_keys(path, where, entry, ("name", *_NEED_KEYS))
    missing = [k for k in _NEED_KEYS if k not in entry]
    if missing:
        raise InputError(str(path), None, where, f"missing {', '.join(missing)}")
    name = entry.get("name", f"w{i + 1}")
    if "name" not in entry and auto is not None:
        auto.append(i)
    if name_problem(name):
        raise InputError(str(path), None, f"{where}.name", name_problem(name))
    cap = _field(path, f"{where}.capacity_need", _NEED_KEYS["capacity_need"], entry["capacity_need"])
    bw = _field(path, f"{where}.bandwidth_need", _NEED_KEYS["bandwidth_need"], entry["bandwidth_need"])
    return Workload(name, cap, bw)


def _field(path: Path, where: str, parse: Any, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputError(str(path), None, where, f"expected a value with units, got {shown_repr(value)}")
    try:
        return parse(value)
    except ValueError as exc:
        raise InputError(str(path), None, where, str(exc)) from None


def average_bandwidth_bps(rate_per_s: float, size_bytes: int) -> float:
    """Average bandwidth of ``rate_per_s`` transfers per second of ``size_bytes`` each.

    >>> average_bandwidth_bps(10, 100 * 10**6)   # 10/s x 100 MB = 1 GB/s
    1000000000.0

    Raises:
        UserError: a negative or non-finite argument.
    """
    return _rate_bps(rate_per_s, size_bytes, "rate", "size")


def _rate_bps(rate_per_s: float, size_bytes: int, rate_name: str, size_name: str) -> float:
    """rate_per_s x size_bytes, bytes/s: the one rule of :func:`average_bandwidth_bps` and
    :func:`iops_bandwidth_bps`; each argument checked under its name (UserError: negative or non-finite;
    a product above 2^63 - 1 bytes/s, the bound of every bandwidth in :mod:`pcs.units`)."""
    bps = check_real(rate_per_s, rate_name, lo=0) * check_real(size_bytes, size_name, lo=0)
    if bps > 2**63 - 1:
        raise UserError(f"{rate_name} {rate_per_s:g} x {size_name} {size_bytes:,} bytes = {bps:.4g} bytes/s, more "
                        f"than {INT64_LIMIT} bytes/s: give a smaller rate or size")
    return bps


def transfer_time_s(size_bytes: int, bandwidth_bps: float, setup_s: float = 0.0) -> float:
    """Time of one transfer: setup_s + size_bytes / bandwidth_bps (docs/semantics.md §10).

    >>> transfer_time_s(100 * 10**6, 20e9)       # 100 MB over 20 GB/s = 5 ms
    0.005

    Raises:
        UserError: non-positive bandwidth, negative size or setup.
    """
    size = check_real(size_bytes, "transfer size", lo=0)
    bandwidth = check_real(bandwidth_bps, "link bandwidth", lo=0, lo_open=True)
    return check_real(setup_s, "setup time", lo=0) + size / bandwidth


def iops_bandwidth_bps(iops: float, io_size_bytes: int) -> float:
    """Bandwidth of small random I/O: iops x io_size_bytes (docs/semantics.md §10).

    Reachable only if queue depth and concurrency allow it.

    >>> iops_bandwidth_bps(1_000_000, 4096)      # 1M IOPS x 4 KiB = 4.096 GB/s
    4096000000.0

    Raises:
        UserError: a negative or non-finite argument.
    """
    return _rate_bps(iops, io_size_bytes, "IOPS", "I/O size")

