# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A service's state and its process's effective resource limits, as systemd and the kernel print them.

* ``systemctl show --property=Id,LoadState,ActiveState,MainPID -- UNIT`` prints ``Key=value``
  lines (systemd's own property names; MainPID is 0 when the unit has no running main process;
  LoadState is ``not-found`` for a unit that is not installed).
* ``/proc/<pid>/limits`` (proc(5)) has one row per limit: its name, the soft and the hard limit
  (a number or ``unlimited``) and the units, in fixed-width columns; ``Max locked memory`` is
  RLIMIT_MEMLOCK in bytes.

Pure Python (3.8); no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Union

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

Limit = Union[int, str]  # bytes, or "unlimited"
_ROW = re.compile(r"^(?P<name>Max [a-z ]+?)\s{2,}(?P<soft>\S+)\s+(?P<hard>\S+)(?:\s+\S+)?\s*$")


def systemctl_show(text: str) -> Dict[str, str]:
    """``{property: value}`` of one unit's ``systemctl show`` output."""
    props: Dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            props[key.strip()] = value.strip()
    return props


def _limit(value: str, where: str) -> Limit:
    if value == "unlimited":
        return value
    if not value.isdigit():
        raise ParseError(f"{where}: {value!r} is neither a number nor 'unlimited'")
    return int(value)


def proc_limit(text: str, name: str = "Max locked memory") -> Optional[Dict[str, Limit]]:
    """``{soft, hard}`` of the row ``name`` of a /proc/<pid>/limits text, or None when it has none."""
    for line in text.splitlines():
        match = _ROW.match(line)
        if match and match.group("name") == name:
            where = f"/proc/<pid>/limits, {name}"
            return {"soft": _limit(match.group("soft"), where), "hard": _limit(match.group("hard"), where)}
    return None


def at_least(limit: Limit, kib: str) -> bool:
    """Whether an effective limit (bytes or "unlimited") is at least the planned one ("unlimited" or KiB)."""
    if limit == "unlimited":
        return True
    if kib == "unlimited":
        return False
    return int(limit) >= int(kib) * 1024


def shown(limit: Limit) -> str:
    """A limit in the planned unit: "unlimited" or KiB."""
    return "unlimited" if limit == "unlimited" else f"{int(limit) // 1024} KiB"
