"""``pcs budget``: capacity and bandwidth budgets plus transfer arithmetic."""
from __future__ import annotations

from typing import Any

import click

from pcs import units
from pcs.analysis.budget import (RATIO_NOTE, BudgetResult, Workload, average_bandwidth_bps, iops_bandwidth_bps,
                        load_workloads, name_problem, parse_workload, total, transfer_time_s)
from pcs.analysis.budget import budget as budget_of  # not `from pcs.analysis import budget`: pcs may re-export the function
from pcs.cli.common import PcsUsageError, command, emit, format_option, quiet_option
from pcs.cli.params import CheckedPath, option_bandwidth, option_size
from pcs.cli.presets import hardware_file_option, hardware_table, link_options, refuse_unused, resolve_link
from pcs.errors import UserError, shown_repr
from pcs.report.budget import budget_csv_rows, budget_notes, render_budget

__all__ = ["budget_command", "budget"]


def _number(text: str, what: str) -> float:
    """A plain non-negative number in ASCII digits (:func:`pcs.units.ascii_float`); ``1_000_000`` and
    ``1,000,000`` are accepted (the separators dropped first)."""
    try:
        value = units.ascii_float(str(text).replace(",", "").replace("_", ""), what)
    except ValueError:
        raise UserError(f"invalid {what} {shown_repr(text)}: expected a finite number >= 0 in ASCII digits, such as 1000000 or 1e6") from None
    if not value >= 0 or value == float("inf"):
        raise UserError(f"invalid {what} {shown_repr(text)}: must be a finite number >= 0")
    return value


def _pair(a: Any, b: Any, names: str) -> bool:
    if (a is None) != (b is None):
        raise UserError(f"{names} go together: give both or neither")
    return a is not None


def _transfers(kw: dict[str, Any]) -> dict[str, Any]:
    """The transfer-arithmetic block of the payload (empty when no transfer option is given)."""
    out: dict[str, Any] = {}
    if _pair(kw["restores_per_s"], kw["restore_size"], "--restores-per-s and --restore-size"):
        rate, size = _number(kw["restores_per_s"], "restores per second"), option_size(kw["restore_size"], "--restore-size")
        out.update(restores_per_s=rate, restore_size_bytes=size, restore_avg_bps=average_bandwidth_bps(rate, size))
    refuse_unused("budget", kw, ["link_iops", "link_io_size"], "its IOPS arithmetic is --iops with --io-size "
                  "(the link's transfer time uses its bandwidth and setup only)")
    link = resolve_link(kw, hardware_table(kw["hardware_file"]))
    if _pair(kw["transfer_size"], link, "--transfer-size and --link-bandwidth (or --link)"):
        size = option_size(kw["transfer_size"], "--transfer-size")
        setup_s = link.setup_s
        out.update(transfer_size_bytes=size, link=link.name, link_bandwidth_bps=link.bandwidth_bps,
                   setup_s=setup_s, transfer_data_s=transfer_time_s(size, link.bandwidth_bps),
                   transfer_s=transfer_time_s(size, link.bandwidth_bps, setup_s))
    if _pair(kw["iops"], kw["io_size"], "--iops and --io-size"):
        iops, io_size = _number(kw["iops"], "IOPS"), option_size(kw["io_size"], "--io-size", kind="io size")
        out.update(iops=iops, io_size_bytes=io_size, iops_bps=iops_bandwidth_bps(iops, io_size))
    return out


def _need_bandwidth(text: str) -> float:
    """``--bandwidth-need``: bytes/s the workload moves, 0 allowed (a workload that only stays resident)."""
    try:
        return units.parse_bandwidth(units.require_unit(text, "--bandwidth-need", "bandwidth"))
    except UserError as exc:
        raise UserError(exc if str(exc).startswith("--bandwidth-need") else f"--bandwidth-need {shown_repr(text)}: {exc}") from None


def _workloads(kw: dict[str, Any]) -> tuple[dict[str, Any], list[Workload]]:
    device: dict[str, Any] = {}
    workloads: list[Workload] = []
    auto: list[int] = []
    if kw["workloads_file"]:
        device, workloads = load_workloads(kw["workloads_file"], auto)
    auto_names = {workloads[i].name for i in auto}
    if _pair(kw["capacity_need"], kw["bandwidth_need"], "--capacity-need and --bandwidth-need"):
        if name_problem(kw["name"]):
            raise UserError(f"--name: {name_problem(kw['name'])}")
        workloads.insert(0, Workload(kw["name"], option_size(kw["capacity_need"], "--capacity-need"),
                                     _need_bandwidth(kw["bandwidth_need"])))
    workloads.extend(parse_workload(w, "--workload") for w in kw["workload"])
    names = [w.name for w in workloads]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        why = (f" (the name {twice[0]} was given by default to the --workloads file's unnamed workload)"
               if twice[0] in auto_names else "")
        raise UserError(f"workload name {shown_repr(twice[0])} given more than once (--name, --workload, --workloads){why}; "
                        "give each workload its own name: the rows are told apart by it")
    if kw["capacity_have"] is not None:
        device["capacity_have_bytes"] = option_size(kw["capacity_have"], "--capacity-have", lo=1)
    if kw["bandwidth_have"] is not None:
        device["bandwidth_have_bps"] = option_bandwidth(kw["bandwidth_have"], "--bandwidth-have")
    if workloads and len(device) < 2:
        raise UserError("a budget needs the device: --capacity-have and --bandwidth-have "
                         "(or a [device] table in the --workloads file)")
    return device, workloads


def _row(name: str, r: BudgetResult) -> dict[str, Any]:
    return {"name": name, **r.to_dict()}


@command("budget")
@click.option("--capacity-need", help="C_w: bytes the workload keeps resident, e.g. 30GB (GB decimal, GiB binary).")
@click.option("--bandwidth-need", help="B_w: bytes/s the workload moves, e.g. 1000GB/s.")
@click.option("--name", default="workload", show_default=True, help="Name of the --capacity-need/--bandwidth-need workload.")
@click.option("--workload", multiple=True, metavar="NAME:CAP:BW",
              help="A workload as NAME:CAPACITY:BANDWIDTH, e.g. A:30GB:1000GB/s. Repeatable.")
@click.option("--workloads", "workloads_file", type=CheckedPath(dir_okay=False),
              help="TOML or JSON file of workloads (and optionally the device); see docs/views.md.")
@click.option("--capacity-have", help="C_d: bytes the device offers for this data, e.g. 80GB.")
@click.option("--bandwidth-have", help="B_d: bytes/s the device path offers, e.g. 2000GB/s.")
@click.option("--restores-per-s", help="Transfer arithmetic: restores per second (plain number).")
@click.option("--restore-size", help="Transfer arithmetic: bytes per restore, e.g. 100MB.")
@click.option("--transfer-size", help="Transfer arithmetic: bytes of one transfer, e.g. 100MB.")
@link_options
@click.option("--iops", help="Transfer arithmetic: I/O operations per second (plain number), e.g. 1000000.")
@click.option("--io-size", help="Transfer arithmetic: bytes per I/O, e.g. 4KiB.")
@hardware_file_option
@format_option
@quiet_option
def budget_command(fmt: str, quiet: bool, **kw: Any) -> None:
    """Capacity and bandwidth budgets: u_C = C_w/C_d, u_B = B_w/B_d, R = C/B.

    Sizes take units (80GB decimal, 10GiB binary), bandwidths bytes/s (2000GB/s);
    a plain number other than 0 is refused for them (80 could mean GB or bytes). For several workloads each row is one workload alone on the
    device; the top-level JSON keys are all workloads together (with one
    workload: that workload). The ratio R_w/R_d = u_C/u_B is not a verdict:
    check the absolute needs.

    \b
    Examples:
      pcs budget --capacity-need 30GB --capacity-have 80GB \\
                 --bandwidth-need 1000GB/s --bandwidth-have 2000GB/s
      pcs budget --capacity-have 80GB --bandwidth-have 2000GB/s \\
                 --workload A:30GB:1000GB/s --workload B:200GB:1000GB/s
      pcs budget --restores-per-s 10 --restore-size 100MB \\
                 --transfer-size 100MB --link-bandwidth 20GB/s --iops 1000000 --io-size 4KiB

    JSON keys: name, capacity_need_bytes, capacity_have_bytes, bandwidth_need_bps,
    bandwidth_have_bps, u_C, u_B, R_w_s, R_d_s, capacity_shortfall_bytes,
    bandwidth_shortfall_bps, binding (capacity|bandwidth|none), binding_tie,
    growth_headroom, fits, rows (one object per workload, same keys), note;
    transfers (restore_avg_bps, transfer_s, transfer_data_s, setup_s, iops_bps, ...).
    """
    device, workloads = _workloads(kw)
    transfers = _transfers(kw)
    if not workloads and not transfers:
        raise PcsUsageError("nothing to compute: give a workload (--capacity-need/--bandwidth-need, "
                            "--workload or --workloads) or transfer options (see pcs budget --help)")
    payload: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    overall: dict[str, Any] | None = None
    if workloads:
        have = (device["capacity_have_bytes"], device["bandwidth_have_bps"])
        rows = [_row(w.name, budget_of(w.capacity_need_bytes, have[0], w.bandwidth_need_bps, have[1]))
                for w in workloads]
        together = total(workloads) if len(workloads) > 1 else workloads[0]
        overall = _row(together.name, budget_of(together.capacity_need_bytes, have[0],
                                             together.bandwidth_need_bps, have[1]))
        payload.update(overall, rows=rows, note=RATIO_NOTE)
    if transfers:
        payload["transfers"] = transfers
    payload["notes"] = budget_notes(rows, transfers)    # every note the text prints (``note``: the ratio's, kept)
    if fmt == "csv":
        emit({"rows": budget_csv_rows(rows, overall, transfers)}, fmt, "")
        return
    emit(payload, fmt, lambda: render_budget(rows, overall, transfers))


for _p in budget_command.params:    # shared link options budget refuses (_transfers): not listed in its --help
    if _p.name in ("link_iops", "link_io_size"):
        _p.hidden = True
budget = budget_command  # the attribute pcs.cli.main loads
