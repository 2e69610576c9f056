"""The table itself: a row that lost an object or hid a node fails its test."""

from __future__ import annotations

import pytest
from fault_table import Row, table


def test_a_clean_row_passes_and_the_table_has_one_line_per_row():
    row = Row(fault="api 429", runs=2, survived=True)
    row.check()
    text = table([row, Row(fault="node stopped", runs=3, survived=True)])
    assert [c.strip() for c in text.splitlines()[0].split("|")][:3] == ["fault", "runs", "survived"]
    assert len(text.splitlines()) == 4
    assert "api 429" in text and "yes" in text


@pytest.mark.parametrize(
    "row",
    [
        Row(fault="x", runs=1, survived=False),
        Row(fault="x", runs=1, survived=True, objects_lost=["ConfigMap/a/b"]),
        Row(fault="x", runs=1, survived=True, unnamed_half_configured=["gpu-node-02"]),
    ],
)
def test_a_row_that_lost_or_hid_something_fails(row):
    with pytest.raises(AssertionError):
        row.check()
