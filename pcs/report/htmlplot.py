"""``--plot DIR``: the report's figures as PNG and SVG files, for papers and slides.

The figures are the page's own Vega-Lite specs (:mod:`pcs.report.htmlcharts`),
converted without a browser by vl-convert (the Vega project's converter,
a compiled package on PyPI: ``pip install -e '.[plot]'``), so a file and the
page never disagree. One ``<chart id>.png`` (2x scale) and ``<chart id>.svg``
per figure; each written through a temporary file and a rename.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from pcs.errors import UnknownNameError, UserError
from pcs.extras import missing_extra

__all__ = ["PLOT_FORMATS", "require_vl_convert", "write_plots"]

#: File formats written per figure.
PLOT_FORMATS = ("png", "svg")

_MISSING = missing_extra("--plot", "vl-convert-python", "plot")


def require_vl_convert() -> Any:
    """The vl_convert module.

    Raises:
        UserError: not installed (one line: how to install the plot extra).
    """
    from pcs.report.html import require_extra

    return require_extra("vl_convert", _MISSING)


def write_plots(charts: Sequence, directory: str | Path, formats: Sequence[str] = PLOT_FORMATS) -> list[Path]:
    """Write every chart to ``directory`` (created when missing, its parent must exist) in ``formats``.

    Args:
        charts: :class:`pcs.report.htmlcharts.Chart` objects.
        directory: output directory.
        formats: subset of :data:`PLOT_FORMATS`.
    Returns:
        the files written, in chart order.
    Raises:
        UserError: vl-convert missing; an unknown format; ``directory`` is a file.
        OSError: the parent directory does not exist or is not writable.
    """
    from pcs.report.html import write_file

    vlc = require_vl_convert()
    bad = [f for f in formats if f not in PLOT_FORMATS]
    if bad:
        raise UnknownNameError("plot format", bad[0], PLOT_FORMATS)
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise UserError(f"--plot {directory}: not a directory")
    made = not out.exists()          # made here: removed again if no figure gets into it (an error, Ctrl-C)
    written: list[Path] = []
    try:
        for c in charts:
            for fmt in formats:
                data = vlc.vegalite_to_png(c.spec, scale=2) if fmt == "png" else vlc.vegalite_to_svg(c.spec).encode()
                out.mkdir(exist_ok=True)      # once a figure is drawn: an interrupted run leaves no empty folder
                target = out / f"{c.id}.{fmt}"
                write_file(target, data)
                written.append(target)
    except BaseException:
        if made and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise
    out.mkdir(exist_ok=True)          # no charts: the folder the user named exists, as before
    return written
