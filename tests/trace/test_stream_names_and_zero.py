"""stdin named ``-`` in every error, the first line's included; a stored arrival of -0.0 read as 0.0 in every
reader (docs/semantics.md: "a timestamp of -0 or -0.0 is the arrival 0.0 in every reader")."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.trace import open_trace

ROW = {"input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}


@pytest.mark.parametrize("data, why", [
    (b"\x1f\x8b", "truncated gzip stream"),                       # cut inside the header: fails on line 1
    (gzip.compress(b"x" * 4000, mtime=0)[:30], "truncated gzip stream"),   # cut inside the first line's data
], ids=["header", "first-line"])
@pytest.mark.parametrize("args", [["trace", "stats", "-"], ["replay", "-"], ["replay", "-", "--trace-format", "mooncake"]],
                         ids=["stats", "replay", "replay-format"])
def test_stdin_is_named_dash_when_its_first_line_fails(data, why, args):
    r = CliRunner().invoke(cli, [*args, "-q"], input=data)
    assert r.exit_code == 2 and f"-:1: {why}" in r.output and "pcs-stdin" not in r.output, r.output


def test_parquet_negative_zero_arrival_reads_as_zero(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps({"timestamp": t, **ROW}) + "\n" for t in (0, 1000)))
    pqt = tmp_path / "t.parquet"
    assert CliRunner().invoke(cli, ["trace", "convert", str(src), str(pqt)]).exit_code == 0
    table = pq.read_table(pqt)
    i = table.schema.get_field_index("arrival_s")
    neg = table.set_column(i, table.schema.field(i), pa.array([-0.0, 1.0], pa.float64()))
    pq.write_table(neg.replace_schema_metadata(table.schema.metadata), pqt)
    arrivals = np.concatenate([b.arrival_s for b in open_trace(pqt).iter_batches()])
    assert arrivals.tolist() == [0.0, 1.0] and not np.signbit(arrivals).any()
    out = tmp_path / "r.csv"
    r = CliRunner().invoke(cli, ["replay", str(pqt), "--tier", "gpu=100blocks", "-q", "--requests-out", str(out)])
    assert r.exit_code == 0, r.output
    assert ",-0," not in out.read_text() and ",-0.0," not in out.read_text()


def test_an_integer_timestamp_beyond_float64_says_so(tmp_path):
    # 1 followed by 400 zeros: 401 digits, finite as an integer, beyond float64's largest value (~1.8e308)
    p = tmp_path / "big.jsonl"
    p.write_text(json.dumps({"timestamp": 0, **ROW}) + "\n"
                 '{"timestamp": 1' + "0" * 400 + ', "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}\n')
    r = CliRunner().invoke(cli, ["trace", "stats", str(p), "-q"])
    assert r.exit_code == 2
    assert f"{p}:2: field 'timestamp': must be finite, got an integer of 401 digits" in r.output, r.output
