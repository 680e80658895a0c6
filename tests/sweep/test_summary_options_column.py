"""The sweep summary's ``options`` column is prose (``policy=lru tier.gpu=50blocks``), left-aligned like the table's
other text, its '-' (no option varies) included: the table renderer right-aligns a '-' only in a column of numbers
(pcs.report.table.render_table, ``text_columns``)."""
from __future__ import annotations

import re

from helpers import SMALL_TRACE, invoke


def test_a_plan_with_no_varying_option_prints_its_dash_on_the_left(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text(f'kind = "replay"\n[fixed]\ntrace = "{SMALL_TRACE}"\ntier = {{gpu = "50blocks"}}\n'
                    '[axes]\npolicy = ["lru"]\n')
    r = invoke("sweep", plan, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    for header in ("metric     best       point         options",):
        assert header in lines, r.output
    rows = [ln for ln in lines if re.search(r"[0-9a-f]{12}\s+-$", ln)]
    assert len(rows) == 5, r.output      # four best-point rows and the one front row
    # the '-' sits right after the point id and the two spaces between columns, under the header's 'o'
    assert all(re.search(r"[0-9a-f]{12}  -$", ln) for ln in rows), r.output
