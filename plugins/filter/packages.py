# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over package-manager output shared by the doca_ofed and gpu_driver roles.

names | dpkg_selection_changes(query_stdout, selection): which of ``names`` do not have the dpkg
selection ``selection`` yet, read from the output of
``dpkg-query -W -f='${Package} ${Status}\\n' NAME...``. The Status field is "WANT ERROR STATUS"
(dpkg-query(1); "Status" in deb-control(5)); its first word is the selection that
``dpkg --set-selections`` and ansible.builtin.dpkg_selections write ("install", "hold", ...).
A name the output does not list is returned too (dpkg_selections then says what is wrong). One
read replaces a dpkg_selections call per package on a run where every selection is already right.
"""

from __future__ import annotations

from typing import Dict, Iterable, List

from ansible.errors import AnsibleFilterError

SELECTIONS = ("install", "hold", "deinstall", "purge")


def _wants(query_stdout: str) -> Dict[str, str]:
    wants: Dict[str, str] = {}
    for line in (query_stdout or "").splitlines():
        fields = line.split()
        if len(fields) >= 2:
            # Multi-arch packages print once per architecture: a name is held only if every one is.
            name, want = fields[0], fields[1]
            wants[name] = want if wants.get(name, want) == want else "mixed"
    return wants


def dpkg_selection_changes(names: Iterable[str], query_stdout: str, selection: str) -> List[str]:
    if selection not in SELECTIONS:
        raise AnsibleFilterError(
            f"dpkg_selection_changes: selection must be one of {', '.join(SELECTIONS)}, got {selection!r}"
        )
    wants = _wants(query_stdout)
    return [name for name in names or [] if wants.get(name) != selection]


class FilterModule:
    def filters(self):
        return {"dpkg_selection_changes": dpkg_selection_changes}
