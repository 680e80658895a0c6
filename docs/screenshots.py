"""Regenerate the screenshots of the HTML report in docs/ (docs/report.md shows them).

    python docs/screenshots.py TRACE      # TRACE: the Mooncake FAST'25 conversation trace (JSONL)

Writes docs/report-replay.png (the page of the default ``pcs replay`` on TRACE)
and docs/report-compare.png (``pcs compare`` of lru, fifo and slru on TRACE,
with hit-ratio curve rows), each page drawn by headless Chromium
(:mod:`pcs.report.htmlbrowser`) at 1280 CSS pixels wide, whole page, reduced
to a 64-colour palette when Pillow is installed. The commands run in this
process from TRACE's directory, so the pages name the trace by its file name.
Needs the report extra and Debian's ``chromium``.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: screenshot file -> the pcs command line (after the trace) that writes its page
PAGES = {
    "report-replay.png": ["replay", "{trace}"],
    "report-compare.png": ["compare", "{trace}", "--policy", "lru", "--policy", "fifo", "--policy", "slru",
                           "--curve-capacities", "1000blocks,3000blocks,10000blocks,30000blocks"],
}


@contextlib.contextmanager
def _in_dir(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def write_page(args: list[str], page: Path) -> None:
    """Run ``pcs ARGS --html PAGE`` in this process (argv as a shell would give it, for the page's inputs)."""
    from pcs.cli.main import cli

    argv = [*args, "-q", "--html"]
    saved, sys.argv = sys.argv, ["pcs", *argv, page.name]  # the page shows the command without the temp dir
    try:
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            cli.main([*argv, str(page)], prog_name="pcs", standalone_mode=False)
    finally:
        sys.argv = saved


def shrink(png: bytes) -> bytes:
    """The PNG with a 64-colour palette (Pillow), or as it is."""
    try:
        import io

        from PIL import Image
    except ImportError:
        return png
    out = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=64).save(out, format="PNG", optimize=True)
    return out.getvalue()


def main(trace: str) -> None:
    from pcs.report.html import write_file
    from pcs.report.htmlbrowser import Browser, load_page

    trace_path = Path(trace).resolve()
    with tempfile.TemporaryDirectory(prefix="pcs-shots-") as tmp, Browser() as browser:
        for name, args in PAGES.items():
            page = Path(tmp) / name.replace(".png", ".html")
            with _in_dir(trace_path.parent):
                write_page([a.format(trace=trace_path.name) for a in args], page)
            run = load_page(page, "window.pcsRendered", browser=browser)
            if run.console_errors or run.failed_requests:
                raise SystemExit(f"{name}: the page failed: {run.console_errors + run.failed_requests}")
            write_file(ROOT / "docs" / name, shrink(run.screenshot_png))
            print(f"wrote docs/{name} ({run.width_px}x{run.height_px} px, {page.stat().st_size:,}-byte page)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
