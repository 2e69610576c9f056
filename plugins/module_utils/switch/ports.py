# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Switch port ranges as the inventory writes them, per operating system.

A range is PREFIX FIRST[-LAST[:STEP]], several joined by commas: ``swp1-32`` (NVUE: swp1 ... swp32),
``Ethernet0-124:4`` (SONiC: Ethernet0, Ethernet4, ... Ethernet124, one port per 4 lanes). Ports
are numbered, so two ranges overlap when they share a port name; the order of a range is the
order of the nodes it faces (gpufabric_switches: the n-th port faces the n-th node).
"""

from __future__ import annotations

import re
from typing import Iterable, List, Tuple

# The front-panel port names of each operating system the collection plans.
PORT_PREFIX = {"nvue": "swp", "sonic": "Ethernet"}
OSES = tuple(PORT_PREFIX)
MAX_PORT = 4096  # more than any leaf's front panel; keeps a typo from expanding to millions of names
_PART = re.compile(r"^(?P<prefix>[A-Za-z]+)(?P<first>[0-9]{1,4})(?:-(?P<last>[0-9]{1,4})(?::(?P<step>[0-9]{1,3}))?)?$")


class PortRangeError(ValueError):
    """A range the grammar refuses; the message says what is allowed."""


def expand(text: str, os_name: str) -> List[str]:
    """The port names of a range, in order; PortRangeError names what is wrong."""
    prefix = PORT_PREFIX[os_name]
    if not isinstance(text, str) or not text.strip():
        raise PortRangeError(f"{text!r} names no port; write {prefix}FIRST-LAST[:STEP], ranges joined by commas")
    out: List[str] = []
    for part in (p.strip() for p in text.split(",")):
        match = _PART.match(part)
        if not match:
            raise PortRangeError(f"{part!r} is not {prefix}FIRST[-LAST[:STEP]], like {example(os_name)}")
        if match["prefix"] != prefix:
            raise PortRangeError(f"{part!r}: {os_name} ports are named {prefix}N, not {match['prefix']}N")
        first = int(match["first"])
        last = int(match["last"]) if match["last"] is not None else first
        step = int(match["step"]) if match["step"] is not None else 1
        if last < first or step < 1 or last > MAX_PORT:
            raise PortRangeError(f"{part!r}: needs FIRST <= LAST <= {MAX_PORT} and STEP >= 1")
        out.extend(f"{prefix}{n}" for n in range(first, last + 1, step))
    duplicates = sorted({p for p in out if out.count(p) > 1}, key=number)
    if duplicates:
        raise PortRangeError(f"{text!r} names {', '.join(duplicates)} twice")
    return out


def example(os_name: str) -> str:
    return {"nvue": "swp1-32", "sonic": "Ethernet0-124:4"}[os_name]


def number(port: str) -> Tuple[str, int]:
    match = re.match(r"^([A-Za-z]+)([0-9]+)$", port)
    return (match.group(1), int(match.group(2))) if match else (port, -1)


def compress(ports: Iterable[str]) -> str:
    """Port names back to ranges in the grammar of ``expand``: swp1-4,swp7 and Ethernet0-28:4."""
    items = sorted(set(ports), key=number)
    out: List[str] = []
    i = 0
    while i < len(items):
        prefix, first = number(items[i])
        j = i
        step = number(items[i + 1])[1] - first if i + 1 < len(items) and number(items[i + 1])[0] == prefix else 0
        while step > 0 and j + 1 < len(items) and number(items[j + 1]) == (prefix, number(items[j])[1] + step):
            j += 1
        if j == i or (j == i + 1 and step > 1):
            out.append(items[i])  # a single port, or two that are not a run
            i += 1
            continue
        last = number(items[j])[1]
        out.append(f"{prefix}{first}-{last}" + (f":{step}" if step > 1 else ""))
        i = j + 1
    return ",".join(out)
