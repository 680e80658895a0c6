"""The HTML report: one self-contained page from Jinja2 templates, charts drawn by inlined Vega-Lite.

``pcs report RUN.json ... -o report.html`` and ``--html FILE`` on ``replay``,
``compare``, ``curve`` and ``footprint`` end here: :func:`write_report`
builds the page model (:func:`pcs.report.htmlpage.build_page`), renders
pcs/report/templates/report.html.j2 with autoescape on, and writes the file
through a temporary file and a rename.

Self-contained: the styles, the drawing script and Vega / Vega-Lite
(pcs/report/static/, vendored from the npm registry, BSD-3-Clause; versions
in :data:`VEGA_VERSION`, :data:`VEGA_LITE_VERSION`) are inlined, fonts are
the system's; the page asks the network for nothing and opens from a file.
Deterministic: the same payloads and command line give the same bytes (no
dates, no random ids).

Jinja2 is an optional dependency (``pip install -e '.[report]'``); without it
every entry point raises ``UserError`` (a ValueError) with that one line.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

from pcs.errors import UserError
from pcs.extras import missing_extra

__all__ = ["VEGA_VERSION", "VEGA_LITE_VERSION", "STATIC_DIR", "TEMPLATE_DIR", "pcs_version", "require_extra", "require_jinja2", "charts_json",
           "render_html", "write_file", "write_report"]

#: The vendored Vega build (pcs/report/static/vega.min.js, npm ``vega``) -- the version vl-convert 1.9 embeds.
VEGA_VERSION = "6.2.0"
#: The vendored Vega-Lite build (pcs/report/static/vega-lite.min.js, npm ``vega-lite``).
VEGA_LITE_VERSION = "6.4.1"
STATIC_DIR = Path(__file__).with_name("static")
TEMPLATE_DIR = Path(__file__).with_name("templates")

_MISSING_JINJA = missing_extra("the HTML report", "jinja2", "report")


def pcs_version() -> str:
    """The installed pcs version (package metadata), or ``unknown``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pcs")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


def charts_json(charts: Sequence[Any]) -> str:
    """``{chart id: Vega-Lite spec}`` as JSON safe inside ``<script>``: ``<``, ``>``, ``&``, U+2028/9 escaped."""
    text = json.dumps({c.id: c.spec for c in charts}, separators=(",", ":"), allow_nan=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def require_extra(module: str, message: str) -> Any:
    """Import an optional dependency, or raise ``UserError(message)`` (one line naming the extra to install)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(message) from None


def require_jinja2() -> Any:
    """The jinja2 module.

    Raises:
        UserError: not installed (one line: how to install the report extra).
    """
    return require_extra("jinja2", _MISSING_JINJA)


def _environment():
    jinja2 = require_jinja2()
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def render_html(page: dict, version: str | None = None) -> str:
    """The page (a :func:`pcs.report.htmlpage.build_page` model) as one HTML string.

    Raises:
        UserError: Jinja2 is not installed.
    """
    headline = [{**h, "value_json": json.dumps(h["value"])} for h in page["headline"]]
    return _environment().get_template("report.html.j2").render(
        page={**page, "headline": headline}, version=version or pcs_version(),
        charts_json=charts_json(page["charts"]),
        vega_js=(STATIC_DIR / "vega.min.js").read_text(encoding="utf-8"),
        vega_lite_js=(STATIC_DIR / "vega-lite.min.js").read_text(encoding="utf-8"),
        vega_version=VEGA_VERSION, vega_lite_version=VEGA_LITE_VERSION)


def write_file(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file and a rename (:mod:`pcs.outfile`).

    A lone surrogate in the text -- a file name that is not UTF-8 (``tr\\xffce.jsonl`` reaches Python as
    ``tr\\udcffce.jsonl``) or a ``\\ud800`` escape in a JSON string -- has no UTF-8 form; it is written as its
    escape (``\\xff``, ``\\ud800``: :func:`pcs.errors.utf8_text`), as the text tables show it, not refused.

    Raises:
        OSError: the folder does not exist or is not writable (naming ``path``).
        PathError: an empty or blank ``path``, or one that is a folder (:func:`pcs.trace.pathcheck.check_output_file`).
    """
    from pcs.errors import utf8_text
    from pcs.outfile import atomic_output
    from pcs.trace.pathcheck import check_output_file

    check_output_file(path, "path")

    with atomic_output(path) as tmp, open(tmp, "wb") as f:
        f.write(utf8_text(data).encode("utf-8") if isinstance(data, str) else data)   # a lone surrogate as its escape


def write_report(path: str | Path, payloads: Sequence[dict], *, curve: dict | None = None,
                 oracle: dict | None = None, command: Sequence[str] | None = None) -> dict:
    """Build, render and write the page of ``payloads``; returns the page model (its charts feed ``--plot``).

    Args:
        path: the HTML file to write.
        payloads: JSON objects of pcs replay / compare / curve / footprint.
        curve, oracle, command: see :func:`pcs.report.htmlpage.build_page`.
    Raises:
        UserError: Jinja2 missing; a payload of an unknown kind.
        PathError: an empty or blank ``path``, or one that is a folder (:func:`pcs.trace.pathcheck.check_output_file`),
            before any work.
        OSError: the file cannot be written.
    """
    from pcs.report.htmlpage import build_page
    from pcs.trace.pathcheck import check_output_file

    check_output_file(path, "path")

    _environment()  # the one-line error before any work
    version = pcs_version()
    page = build_page(payloads, curve=curve, oracle=oracle, command=command, version=version)
    write_file(path, render_html(page, version))
    return page
