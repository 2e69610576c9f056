# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Package names the roles share: the running kernel's headers, and which wanted packages the
plan's package read (ansible_facts.packages) does not hold."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional


def kernel_headers(family: Optional[str], kernel: Optional[str]) -> str:
    """The distribution's package with the headers of ``kernel`` (its generic one without a kernel)."""
    if family == "RedHat":
        return f"kernel-devel-{kernel}" if kernel else "kernel-devel"
    return f"linux-headers-{kernel}" if kernel else "linux-headers-generic"


def missing(wanted: Iterable[str], packages_facts: Optional[Dict[str, Any]]) -> List[str]:
    """The names in ``wanted`` that ``packages_facts`` (package_facts' {name: [entries]}) lacks, in order."""
    have = packages_facts or {}
    return [name for name in wanted or [] if not have.get(name)]
