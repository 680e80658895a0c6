"""One number format in messages (mend46b item 5): a count in a message has the thousands separator quoted's
sizes have (``(1,203 characters)``); ``too_long_text`` said ``(5000 digits)``. Hand-worked: 5000 -> ``5,000``,
2**30 = 1,073,741,824."""
from __future__ import annotations

from pcs.jsondepth import too_long_text


def test_too_long_text_counts_with_a_separator():
    assert too_long_text(5000) == "number too long (5,000 digits)"
    assert too_long_text(999) == "number too long (999 digits)"


def test_a_big_integer_in_a_report_payload_counts_its_digits_with_a_separator():
    import pytest

    from pcs.errors import UserError
    from pcs.report.payloadcheck import check_range

    with pytest.raises(UserError) as err:
        check_range(-(10 ** 1200), "requests")
    assert str(err.value).endswith("field 'requests': must be a count >= 0 below 2^63, got an integer of 1,201 digits")
