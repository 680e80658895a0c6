"""The environment variables a user can set are in `pcs --help` (so in docs/cli.md, "every option") with the
values and thresholds the code reads: the help's figures are checked against pcs.beside's
constants and accepted spellings, and each spelling the help names is one PCS_THREADS accepts."""
from __future__ import annotations

from pathlib import Path

import pytest

from pcs import beside
from tests.helpers import invoke

ROOT = Path(__file__).resolve().parents[2]


def _help() -> str:
    return " ".join(invoke("--help").output.split())


def test_pcs_help_names_both_variables_with_the_code_thresholds():
    text = _help()
    assert "PCS_NATIVE=auto|c|python" in text
    assert "PCS_THREADS=" + "|".join(beside.THREADS_MODES) in text
    assert f"{beside.INLINE_BELOW_BYTES:,} bytes or more" in text
    assert f"{beside.INLINE_BELOW_PARQUET_IDS:,} block hashes or more" in text
    for on, off in (("1", "0"), ("yes", "no"), ("true", "false")):
        assert f"{on}/{off}" in text
        assert beside.THREADS_ALIASES[on] == "on" and beside.THREADS_ALIASES[off] == "off"


def test_docs_cli_md_and_the_readme_carry_it():
    assert "PCS_THREADS=auto|on|off" in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`PCS_THREADS=auto|on|off`" in readme and "[every option and variable](docs/cli.md)" in readme


@pytest.mark.parametrize("value,mode", [("on", True), ("yes", True), ("off", False), ("false", False)])
def test_the_spellings_named_are_accepted(monkeypatch, value, mode):
    monkeypatch.setenv("PCS_THREADS", value)
    assert beside.threads_wanted() is mode
