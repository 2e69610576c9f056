"""The fault-injection suite (`make fault-test`): each test injects one fault into a real run (the
lab's nodes, or a private control plane) and checks the end state of every node and every owned
object, not only the exit status. Each records one row of the table printed at the end:

    fault | runs | survived | nodes half-configured and not named | objects lost

A case "survived" when the run converged after the fault, or failed naming what the fault hit and
a rerun then converged. The last two columns must be 0; a test fails when they are not.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# role_runner.py is one level up; the control-plane helpers live in tests/controlplane.
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))
sys.path.insert(2, str(HERE.parent / "controlplane"))
from fault_table import Row, table

ROWS: list = []


@pytest.fixture
def fault_row(request) -> Row:
    """The table row of this test: fill it in; it is asserted and recorded at the test's end."""
    row = Row(fault=request.node.name)
    yield row
    ROWS.append(row)


def pytest_terminal_summary(terminalreporter) -> None:
    if ROWS:
        terminalreporter.write_sep("=", "fault-injection table")
        terminalreporter.write_line(table(ROWS))
