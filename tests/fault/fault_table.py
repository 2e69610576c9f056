"""One row per injected fault, and the table `make fault-test` prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

HEADERS = ("fault", "runs", "survived", "half-configured, not named", "objects lost")


@dataclass
class Row:
    fault: str
    runs: int = 0
    survived: bool = False
    # Nodes left part-way changed that neither the run's failure nor the report names.
    unnamed_half_configured: List[str] = field(default_factory=list)
    # Owned objects (or a neighbour's) that the fault made disappear.
    objects_lost: List[str] = field(default_factory=list)

    def check(self) -> None:
        """Fail the test on a row that did not survive or that lost or hid something."""
        hidden = self.unnamed_half_configured
        assert not hidden, f"{self.fault}: half-configured and not named: {hidden}"
        assert not self.objects_lost, f"{self.fault}: objects lost: {self.objects_lost}"
        assert self.survived, f"{self.fault}: did not survive the fault"

    def cells(self) -> List[str]:
        return [
            self.fault,
            str(self.runs),
            "yes" if self.survived else "NO",
            str(len(self.unnamed_half_configured)),
            str(len(self.objects_lost)),
        ]


def table(rows: List[Row]) -> str:
    lines = [list(HEADERS)] + [r.cells() for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADERS))]
    out = [" | ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in lines]
    out.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(out)
