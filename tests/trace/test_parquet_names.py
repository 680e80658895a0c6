"""Parquet by its name when writing (*.parquet, *.pq, *.parq in any case) and by its magic when reading: a Parquet
file given another --trace-format is named as Parquet, not read as text ("invalid UTF-8 at byte 7")."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pcs.choices import TRACE_FORMATS
from pcs.cli.main import cli

ROW = {"input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}


@pytest.fixture
def src(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"timestamp": t, **ROW}) + "\n" for t in (0, 1000)))
    return p


@pytest.mark.parametrize("name, magic", [("o.parquet", b"PAR1"), ("o.PARQUET", b"PAR1"), ("o.Parq", b"PAR1"),
                                         ("o.pq", b"PAR1"), ("o.txt", b'{"ti'), ("o.parquet.txt", b'{"ti')])
def test_convert_picks_parquet_by_name_in_any_case(tmp_path, src, name, magic):
    out = tmp_path / name
    r = CliRunner().invoke(cli, ["trace", "convert", str(src), str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes()[:4] == magic


@pytest.mark.parametrize("fmt", [f for f in TRACE_FORMATS if f != "parquet"])
def test_a_parquet_file_given_another_format_is_named_as_parquet(tmp_path, src, fmt):
    pq = tmp_path / "t.parquet"
    assert CliRunner().invoke(cli, ["trace", "convert", str(src), str(pq)]).exit_code == 0
    r = CliRunner().invoke(cli, ["replay", str(pq), "--trace-format", fmt, "-q"])
    assert r.exit_code == 2
    assert r.output.strip() == (f"pcs: error: {pq}: a Parquet file (it starts with PAR1) given as --trace-format {fmt}: drop "
                                "--trace-format (pcs detects Parquet) or give --trace-format parquet"), r.output


def test_the_api_names_its_keyword_not_the_flag(tmp_path, src):
    from pcs.errors import InputError
    from pcs.trace import open_trace

    pq = tmp_path / "t.parquet"
    assert CliRunner().invoke(cli, ["trace", "convert", str(src), str(pq)]).exit_code == 0
    with pytest.raises(InputError) as e:
        open_trace(pq, format="bailian")
    assert str(e.value) == (f"{pq}: a Parquet file (it starts with PAR1) given as format='bailian': drop format= "
                            "(pcs detects Parquet) or give format='parquet'")
